//! End-to-end tests of the serving latency section (release build, headless Chromium):
//! TPOT follows planner-core's native value when the concurrency changes, a deployment row
//! applies its layout, and the section's work is timed with performance.now(). The curve and
//! the search run in the page's Web Worker (`app-worker`, `planner_core::edges::serving_page`): the
//! page's figures appear once its reply lands, and the timings are the worker's own.
//! Run via `cargo xtask test` (they are ignored by a plain `cargo test`).

use std::time::{Duration, Instant};

use e2e::page;
use e2e::{
    assert_no_console_errors, frame_states_of_reruns, rerun_marked, screenshot_path, Page, Session,
    FRAME_CATEGORIES,
};
use planner_core::edges::link;
use planner_core::edges::serving_page::search_inputs;
use planner_core::resolve::presets;
use planner_core::search::deployment::serve_search;
use planner_core::serving::latency::{serving_time, ServingLoad};

/// The worker's download, start and first answer (search included) on a loaded machine.
const SETTLE: Duration = Duration::from_secs(20);

fn load(concurrency: u32) -> ServingLoad {
    ServingLoad {
        concurrency,
        ..ServingLoad::default()
    }
}

fn seconds_attr(session: &Session, css: &str) -> Option<f64> {
    session
        .attr(css, "data-seconds")
        .ok()
        .flatten()
        .and_then(|v| v.parse().ok())
}

/// Polls until the page's TPOT equals `want` (relative 1e-9), returning what it shows.
fn wait_tpot(session: &Session, want: f64) -> f64 {
    let deadline = Instant::now() + SETTLE;
    loop {
        let got = seconds_attr(session, page::SERVE_TPOT).unwrap_or(f64::NAN);
        if (got - want).abs() <= 1e-9 * want.abs() || Instant::now() > deadline {
            return got;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Polls until the section shows no "computing…" note (every request answered).
fn wait_idle(session: &Session) {
    let deadline = Instant::now() + SETTLE;
    loop {
        let busy = session
            .execute(
                &format!(
                    "return document.querySelector('{}') !== null;",
                    page::SERVE_COMPUTING
                ),
                vec![],
            )
            .expect("query the computing note");
        if busy == serde_json::json!(false) {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "the serving worker never answered"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The section's accumulated performance.now() time and runs of a `perf::timed` name.
fn timed_ms(session: &Session, name: &str) -> (f64, f64) {
    let v = session
        .execute(
            "return [(window.__meshplanMs || {})[arguments[0]] || 0, (window.__meshplanRuns || {})[arguments[0]] || 0];",
            vec![serde_json::json!(name)],
        )
        .expect("read timings");
    (v[0].as_f64().unwrap_or(0.0), v[1].as_f64().unwrap_or(0.0))
}

#[test]
#[ignore = "needs dist/ and chromedriver: run via `cargo xtask test`"]
fn tpot_follows_concurrency_and_a_deployment_row_applies_its_layout() {
    let page = Page::start().expect("start server and chromedriver");
    let session = page.open("").expect("page loads");
    session.set_window_size(1440, 2600).unwrap();
    session.reveal(page::SERVING_VIEW).unwrap();
    let base = presets::default_scenario();

    // On load: the scenario's replica (TP 8) at its target concurrency.
    let c0 = base.serving.target_concurrency;
    let want0 = serving_time(&base, &load(c0)).expect("native").tpot.value;
    let got0 = wait_tpot(&session, want0);
    assert!(
        (got0 - want0).abs() <= 1e-9 * want0,
        "TPOT at c = {c0}: page {got0}, planner-core {want0}"
    );

    // The numbers came from the worker: its loader was fetched, and once its reply landed
    // the "computing…" note is gone.
    let fetched = session
        .execute(
            "return performance.getEntriesByType('resource').some(e => e.name.includes('app-worker'));",
            vec![],
        )
        .expect("resource timing");
    assert_eq!(
        fetched,
        serde_json::json!(true),
        "the serving worker was not fetched"
    );
    wait_idle(&session);

    // Change the concurrency as a user would, in its field.
    for c in [64u32, 4] {
        session
            .set_value(page::INPUT_SERVE_CONC, &c.to_string())
            .unwrap();
        let mut sc = base.clone();
        sc.serving.target_concurrency = c;
        let want = serving_time(&sc, &load(c)).expect("native").tpot.value;
        let got = wait_tpot(&session, want);
        assert!(
            (got - want).abs() <= 1e-9 * want,
            "TPOT at c = {c}: page {got}, planner-core {want}"
        );
        println!(
            "concurrency {c}: TPOT {:.3} ms (planner-core {:.3} ms)",
            got * 1e3,
            want * 1e3
        );
    }

    // The deployment table is planner-core's ranking; clicking row 0 applies its shape.
    let model = base.model_spec().expect("preset");
    let (target, space) = search_inputs(2.0, 0.05);
    let r = serve_search(&model, &base, &load(1), &target, &space).expect("native search");
    let best = r.ranked.first().expect("a deployment meets the target");
    let row = session
        .wait_text(page::DEPLOY_ROW_0, SETTLE, |t| !t.is_empty())
        .expect("deployment table");
    assert!(
        row.contains(&best.label),
        "row 0 {row:?}, planner-core {}",
        best.label
    );
    wait_idle(&session);
    session
        .element_screenshot(page::SERVING_VIEW, &screenshot_path("serving-latency"))
        .unwrap();
    session.click(page::DEPLOY_ROW_0).unwrap();
    let (tp, _pp) = best.deployment.serving_shape();
    session
        .wait_text(page::VALUE_SERVE_TP, SETTLE, |t| t == tp.to_string())
        .expect("the row's TP is applied");
    let c = best.deployment.concurrency;
    let mut applied = base.clone();
    applied.serving.tp = tp;
    applied.serving.pp = best.deployment.serving_shape().1;
    applied.serving.target_concurrency = c;
    let want = serving_time(&applied, &load(c)).expect("native").tpot.value;
    let got = wait_tpot(&session, want);
    assert!(
        (got - want).abs() <= 1e-9 * want,
        "after applying {}: page TPOT {got}, planner-core {want}",
        best.label
    );
    // The share link carries the applied deployment. It is read back with planner-core's own
    // decoder rather than searched for `serve_tp=`: a field at its default is left out of the
    // link, and the best deployment may keep the scenario's TP.
    let url_deadline = Instant::now() + SETTLE;
    loop {
        let url = session.current_url().unwrap();
        let query = url.split_once('?').map(|(_, q)| q).unwrap_or_default();
        let (linked, _) = link::decode_lenient(query);
        if linked.serving.tp == applied.serving.tp
            && linked.serving.pp == applied.serving.pp
            && linked.serving.target_concurrency == c
        {
            break;
        }
        assert!(
            Instant::now() < url_deadline,
            "the URL never carried TP {tp}, PP {} and concurrency {c}: {url}",
            applied.serving.pp
        );
        std::thread::sleep(Duration::from_millis(50));
    }

    // Cost of the section, performance.now() in the page (perf::timed).
    let (search_ms, search_runs) = timed_ms(&session, "serving-search");
    let (curve_ms, curve_runs) = timed_ms(&session, "serving-latency");
    assert!(search_runs >= 1.0 && curve_runs >= 3.0);
    println!(
        "SERVING SECTION (headless Chromium, performance.now() in the worker): deployment search {:.1} ms per run over {search_runs} run(s); latency curve {:.2} ms per run over {curve_runs} run(s)",
        search_ms / search_runs,
        curve_ms / curve_runs
    );
    // Applying a row or moving the concurrency does not search again.
    assert_eq!(
        search_runs, 1.0,
        "the search reran on a concurrency or layout change"
    );

    // The deployment search again (a new TTFT target), and the gaps between the page's
    // animation frames from the edit until its answer is drawn: the search runs in the
    // worker, so only the edit's own work and drawing the answer take the page's frames.
    let gaps = session
        .execute_async(
            r#"
            const done = arguments[arguments.length - 1];
            const el = document.querySelector(arguments[0]);
            const busy = arguments[1];
            el.value = '1500';
            el.dispatchEvent(new Event('input', {bubbles: true}));
            el.dispatchEvent(new Event('change', {bubbles: true}));
            const gaps = [], marks = [], frameGaps = []; let last = performance.now(); let seen = false; let more = -1; const t0 = last; let lastFrame;
            function tick(frameAt) {
                const t = performance.now(); gaps.push(t - last); last = t;
                // The frame's own begin time too: a callback that ran late in its frame reads as
                // a long gap and a short one after it; a skipped frame reads as a long one here.
                if (lastFrame !== undefined) { frameGaps.push(frameAt - lastFrame); }
                lastFrame = frameAt;
                // What the frame's callback saw: b = computing, i = idle, then the chart's points.
                marks.push((document.querySelector(busy) ? 'b' : 'i') + document.querySelectorAll('[data-testid=tradeoff-chart] circle').length);
                seen = seen || document.querySelector(busy) !== null;
                // Answered: the note came and went (or 20 s passed), then two more frames
                // recorded one gap each (a nested requestAnimationFrame spans two frames: it
                // read as one 33 ms gap).
                if (more < 0 && ((seen && document.querySelector(busy) === null) || t - t0 > 20000)) { more = 2; }
                if (more === 0) { done({gaps, marks, frameGaps}); return; }
                if (more > 0) { more -= 1; }
                requestAnimationFrame(tick);
            }
            requestAnimationFrame(tick);
            "#,
            vec![
                serde_json::json!("[data-testid=input-serve_ttft_ms]"),
                serde_json::json!(page::SERVE_COMPUTING),
            ],
        )
        .expect("frames during the deployment search");
    let recorded = gaps;
    let mut gaps: Vec<f64> = e2e::numbers(&recorded["gaps"]);
    let marks = e2e::strings(&recorded["marks"]);
    let in_order = gaps
        .iter()
        .enumerate()
        .map(|(i, g)| format!("{g:.1}[{}]", marks.get(i).map_or("", String::as_str)))
        .collect::<Vec<_>>()
        .join(" ");
    gaps.sort_by(f64::total_cmp);
    let mut frame_gaps: Vec<f64> = e2e::numbers(&recorded["frameGaps"]);
    let frames_in_order = frame_gaps
        .iter()
        .map(|g| format!("{g:.1}"))
        .collect::<Vec<_>>()
        .join(" ");
    frame_gaps.sort_by(f64::total_cmp);
    let uptime = std::process::Command::new("uptime")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_default();
    println!("  every gap in order (b = computing, i = idle, then the chart's points): {in_order}\n  uptime: {uptime}");
    println!(
        "  the frames' begin times (rAF's timestamp; a skipped frame shows as a gap of two frames): median {:.1} ms, max {:.1} ms over {} intervals; in order: {frames_in_order}",
        e2e::percentile(&frame_gaps, 0.5),
        frame_gaps.last().copied().unwrap_or(f64::NAN),
        frame_gaps.len(),
    );
    let (rerun_ms, rerun_runs) = timed_ms(&session, "serving-search");
    println!(
        "DEPLOYMENT SEARCH rerun (TTFT target 1.5 s): frame gaps on the page while it ran in the worker: median {:.1} ms, p95 {:.1} ms, max {:.1} ms ({} frames); searches run {rerun_runs} (worker total {rerun_ms:.0} ms)",
        e2e::percentile(&gaps, 0.5),
        e2e::percentile(&gaps, 0.95),
        gaps.last().copied().unwrap_or(f64::NAN),
        gaps.len(),
    );
    assert_no_console_errors(&session, "after the serving section");
}

/// Reruns of the deployment search counted with Chrome's own frame reporter
/// (`e2e::frame_states`): from the TTFT edit to its answer drawn and two frames more, with
/// the section on screen. The gaps between `requestAnimationFrame` callbacks printed above
/// can read long when a callback runs late in a frame still shown on time; this counts the
/// frames that were dropped or shown without the page's update.
const TTFT_FIELD: &str = "[data-testid=input-serve_ttft_ms]";

#[test]
#[ignore = "needs dist/ and chromedriver: run via `cargo xtask test`"]
fn deployment_search_by_chromes_own_frame_count() {
    const RERUNS: usize = 5;
    let page = Page::start().expect("start server and chromedriver");
    let session = page.open_traced("", FRAME_CATEGORIES).expect("page loads");
    session.set_script_timeout(120_000).unwrap();
    wait_idle(&session);
    // The TTFT field at the top of the window, the deployments' table under it.
    session
        .execute(
            "document.querySelector(arguments[0]).scrollIntoView({block: 'start'});",
            vec![serde_json::json!(TTFT_FIELD)],
        )
        .expect("scroll");
    std::thread::sleep(Duration::from_millis(300));
    wait_idle(&session);
    // Answered: a search more than before the edit (perf::timed's count) and no
    // "computing…" note left.
    let before = "(window.__meshplanRuns || {})['serving-search'] || 0";
    let finished = format!(
        "return ((window.__meshplanRuns || {{}})['serving-search'] || 0) > before && document.querySelector('{}') === null;",
        page::SERVE_COMPUTING
    );
    for k in 0..RERUNS {
        let ttft = if k % 2 == 0 { "1500" } else { "2500" };
        let answered =
            rerun_marked(&session, k, TTFT_FIELD, ttft, before, &finished, 2).expect("rerun");
        assert!(answered, "rerun {k} (TTFT {ttft} ms) was never answered");
        wait_idle(&session);
        std::thread::sleep(Duration::from_millis(500));
    }
    let (counts, lines) =
        frame_states_of_reruns(&session, RERUNS, "from the edit to its answer drawn")
            .expect("the reruns' frames");
    assert!(
        counts.iter().all(|c| c.frames() >= 2),
        "frames per rerun: {counts:?}"
    );
    println!(
        "DEPLOYMENT SEARCH, CHROME'S OWN FRAME COUNT ({RERUNS} reruns, TTFT target 1.5 ⇄ 2.5 s, deployments on screen, in a traced session; PipelineReporter from the edit to the answer drawn + 2 frames):\n{lines}"
    );
    assert_no_console_errors(&session, "during the traced reruns");
}
