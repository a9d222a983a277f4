//! Input latency per control, as issue 16 asks for it: for each of DP, TP, PP,
//! sequence length, micro-batch, global batch, model, GPU and schedule, the time from
//! the input event to every view recomputed (effects run, layout forced by the next
//! message) and to the frame that shows it painted, at the default scenario, at
//! Llama 3.1 405B, and on 16,384 GPUs. Printed as a table (median and p95 per input,
//! and pooled), never asserted: the figures depend on the machine.

use e2e::{
    assert_no_console_errors, measure_frame_aligned, measure_latency, percentile, Control, Page,
    Session,
};
use planner_core::edges::link;
use planner_core::input::hardware::{gpu_preset, Cluster};
use planner_core::input::scenario::{ModelChoice, Scenario};
use planner_core::resolve::presets;
use std::time::Duration;

/// Moves per input: `MESHPLAN_LATENCY_MOVES` (the figures in docs/measured-figures.md were taken
/// with 100, which puts 5 moves above the p95), 30 by default: every input is still moved at
/// each case and checked for console errors, and the suite stays within CI's time (the 27
/// tables of 100 moves took about six minutes of a 2-core machine's run).
fn moves() -> u32 {
    std::env::var("MESHPLAN_LATENCY_MOVES")
        .ok()
        .and_then(|v| v.parse().ok())
        .filter(|n| (10..=1000).contains(n))
        .unwrap_or(30)
}

/// A step slider, one step up per move (wrapping).
const fn slider(css: &'static str, name: &'static str) -> Control {
    Control {
        css,
        next_value: "String((Number(el.value) + 1) % (Number(el.max) + 1))",
        name,
    }
}

/// A select, the next option per move (wrapping; "custom" skipped).
const fn select(css: &'static str, name: &'static str) -> Control {
    Control {
        css,
        next_value: "(() => { const o = [...el.options].filter(x => x.value !== 'custom'); return o[(o.findIndex(x => x.value === el.value) + 1) % o.length].value; })()",
        name,
    }
}

/// How long a page may take to finish its idle warm-up (about 1–3 s on the 2-core
/// development machine at the default page).
const WARM_UP_WAIT: Duration = Duration::from_secs(60);

/// The nine inputs the issue names, in its order.
const INPUTS: [Control; 9] = [
    slider("[data-testid=input-dp]", "DP"),
    slider("[data-testid=input-tp]", "TP"),
    slider("[data-testid=input-pp]", "PP"),
    Control {
        css: "[data-testid=input-seq]",
        next_value: "el.value === '8192' ? '4096' : '8192'",
        name: "sequence",
    },
    Control {
        css: "[data-testid=input-mbs]",
        next_value: "el.value === '1' ? '2' : '1'",
        name: "micro-batch",
    },
    Control {
        css: "[data-testid=input-gbs]",
        next_value: "el.value === '1024' ? '2048' : '1024'",
        name: "global batch",
    },
    select("[data-testid=input-model]", "model"),
    select("[data-testid=input-gpu]", "GPU"),
    select("[data-testid=input-sched]", "schedule"),
];

/// Measures every input on a freshly opened `query`, restoring the page between inputs,
/// and prints one table.
fn table(page: &Page, case: &str, query: &str) {
    let mut pooled_work = Vec::new();
    let mut pooled_frame = Vec::new();
    let mut pooled_aligned = Vec::new();
    let mut rows = Vec::new();
    let mut views = Vec::new();
    let mut warm_ms = Vec::new();
    for control in &INPUTS {
        // A fresh page per input: one input's last value does not change the next's case.
        let session: Session = page.open(query).expect("page loads");
        session.set_script_timeout(600_000).unwrap();
        // A person reaches for a control seconds after the page appears: the moves start once
        // the page's idle warm-up has visited the states one control away, as they would
        // then (`just_loaded` times PP moves that start at once).
        warm_ms.push(
            session
                .wait_for_warm_up(WARM_UP_WAIT)
                .expect("the warm-up finishes"),
        );
        session
            .execute(
                "window.__meshplanMs = {}; window.__meshplanRuns = {};",
                vec![],
            )
            .unwrap();
        let l = measure_latency(&session, control, moves()).expect("measure");
        // Read before the frame-start series runs: the views' timings are per move of the
        // random-phase series only.
        views.push(format!(
            "  {:<13} {}",
            control.name,
            view_costs(&session, l.work_ms.len())
        ));
        assert!(
            l.work_ms.len() as u32 >= moves() * 9 / 10,
            "{}: measured {} moves",
            control.name,
            l.work_ms.len()
        );
        let aligned = measure_frame_aligned(&session, control, moves()).expect("measure aligned");
        assert_no_console_errors(&session, control.name);
        rows.push(format!(
            "  {:<13} {}",
            control.name,
            columns(&l.work_ms, &l.frame_ms, &aligned)
        ));
        pooled_work.extend(l.work_ms);
        pooled_frame.extend(l.frame_ms);
        pooled_aligned.extend(aligned);
    }
    pooled_work.sort_by(f64::total_cmp);
    pooled_frame.sort_by(f64::total_cmp);
    pooled_aligned.sort_by(f64::total_cmp);
    warm_ms.sort_by(f64::total_cmp);
    println!(
        "LATENCY PER INPUT, {case} ({} moves each, started once the page's idle warm-up had finished, {:.0}–{:.0} ms after navigation; ms; work = input → views recomputed and layout done (forced at the next task or frame, whichever comes first), frame = input → painted frame, both with the input at a random phase of the frame; at frame start = input dispatched as a frame begins, as Chromium delivers a drag, → that frame rendered):",
        moves(),
        warm_ms.first().copied().unwrap_or(f64::NAN),
        warm_ms.last().copied().unwrap_or(f64::NAN),
    );
    println!("  {:<13} {}", "input", HEADER);
    for r in rows {
        println!("{r}");
    }
    println!(
        "  {:<13} {}",
        "pooled",
        columns(&pooled_work, &pooled_frame, &pooled_aligned)
    );
    println!(
        "VIEW WORK PER MOVE, {case} (app/src/perf.rs timings: ms per move, runs per move; the rest of a move is Leptos, the DOM and layout):"
    );
    for v in views {
        println!("{v}");
    }
}

/// The table's column titles: p50, p95 and max of each series.
const HEADER: &str = "work p50      p95      max | frame p50      p95      max | at frame start p50      p95      max";

/// One row's figures under [`HEADER`] (each series sorted).
fn columns(work: &[f64], frame: &[f64], aligned: &[f64]) -> String {
    let three = |v: &[f64]| {
        format!(
            "{:>8.2} {:>8.2} {:>8.2}",
            percentile(v, 0.5),
            percentile(v, 0.95),
            v.last().copied().unwrap_or(f64::NAN)
        )
    };
    format!(
        "{} | {} |           {}",
        three(work),
        three(frame),
        three(aligned)
    )
}

/// The harness's own floor: a page whose slider sets one `<output>`'s text, served by the
/// same server in the same Chromium and window, moved as the release page's inputs are.
/// Its frame figures are what the measurement costs with next to no page: with the input
/// at a random phase, the wait for the next frame alone (up to 16.7 ms at 60 Hz).
const FLOOR_PAGE: &str = r#"<!doctype html>
<html lang="en"><head><meta charset="utf-8" /><title>floor</title><link rel="icon" href="data:," /></head>
<body><input type="range" id="s" min="0" max="7" value="0" data-testid="input-dp"><output id="o">0</output>
<script>const s = document.getElementById('s'), o = document.getElementById('o'); s.addEventListener('input', () => { o.textContent = String(2 ** Number(s.value)); });</script>
</body></html>
"#;

#[test]
#[ignore = "needs chromedriver: run via `cargo xtask test`"]
fn the_harness_floor_is_timed() {
    let root = e2e::workspace_root().join("target").join("latency-floor");
    std::fs::create_dir_all(&root).expect("create the floor page's folder");
    std::fs::write(root.join("index.html"), FLOOR_PAGE).expect("write the floor page");
    let page = Page::serve_dir_with(&root, Default::default()).expect("serve the floor page");
    let session = page.session().expect("browser");
    session.set_window_size(1440, 1100).expect("window");
    session.goto(&page.url()).expect("open the floor page");
    session.set_script_timeout(600_000).unwrap();
    let control = slider("[data-testid=input-dp]", "floor slider");
    let l = measure_latency(&session, &control, moves() * 3).expect("measure");
    let aligned = measure_frame_aligned(&session, &control, moves() * 3).expect("measure aligned");
    println!(
        "LATENCY FLOOR (a slider setting one <output>, same server, browser and window; {} moves, ms):",
        moves() * 3
    );
    println!("  {:<13} {}", "input", HEADER);
    println!(
        "  {:<13} {}",
        "floor slider",
        columns(&l.work_ms, &l.frame_ms, &aligned)
    );
}

/// PP moves on the default page from the moment it is ready, without waiting for the idle
/// warm-up: what a person who drags at once meets (the first move ends the warm-up,
/// app/src/warm_up.rs). Printed beside the table, which starts after the warm-up.
fn just_loaded(page: &Page) {
    let pp = &INPUTS[2];
    let session: Session = page.open("").expect("page loads");
    session.set_script_timeout(600_000).unwrap();
    let l = measure_latency(&session, pp, moves()).expect("measure");
    let warmed = session
        .wait_for_warm_up(WARM_UP_WAIT)
        .expect("the warm-up finishes");
    // `Latency`'s series are ascending.
    let (work, frame) = (&l.work_ms, &l.frame_ms);
    println!(
        "LATENCY ON A PAGE JUST LOADED, default scenario ({} PP moves starting as soon as the page is ready, before its warm-up has finished: the first move ends it, {warmed:.0} ms after navigation; ms):",
        moves()
    );
    println!(
        "  {:<13} work p50 {:>6.2} p95 {:>6.2} max {:>6.2} | frame p50 {:>6.2} p95 {:>6.2} max {:>6.2}",
        pp.name,
        percentile(work, 0.5),
        percentile(work, 0.95),
        work.last().copied().unwrap_or(f64::NAN),
        percentile(frame, 0.5),
        percentile(frame, 0.95),
        frame.last().copied().unwrap_or(f64::NAN),
    );
}

/// The timed views' work per move (`window.__meshplanMs` / `__meshplanRuns` over
/// `moves`), costliest first, the first six.
fn view_costs(session: &Session, moves: usize) -> String {
    let v = session
        .execute(
            "return [window.__meshplanMs || {}, window.__meshplanRuns || {}];",
            vec![],
        )
        .unwrap_or_default();
    let per_move = |x: &serde_json::Value| x.as_f64().unwrap_or(0.0) / moves.max(1) as f64;
    let mut costs: Vec<(String, f64, f64)> = v[0]
        .as_object()
        .map(|ms| {
            ms.iter()
                .map(|(name, t)| (name.clone(), per_move(t), per_move(&v[1][name])))
                .collect()
        })
        .unwrap_or_default();
    // The warm-up (app/src/warm_up.rs) has finished before the moves start (`table`); were
    // it to run during them, it would be in idle callbacks between moves: reported apart.
    let warm_up = costs
        .iter()
        .position(|(name, _, _)| name == "warm_up")
        .map(|i| costs.remove(i));
    costs.sort_by(|a, b| b.1.total_cmp(&a.1));
    let views = costs
        .iter()
        .take(6)
        .map(|(name, ms, runs)| format!("{name} {ms:.2} ms ×{runs:.2}"))
        .collect::<Vec<_>>()
        .join(", ");
    match warm_up {
        Some((_, ms, runs)) => format!(
            "{views}; between the moves, the idle-time warm-up ran {:.0} times, {:.0} ms in all",
            runs * moves as f64,
            ms * moves as f64
        ),
        None => views,
    }
}

#[test]
#[ignore = "needs dist/ and chromedriver: run via `cargo xtask test`"]
fn every_input_is_timed_at_the_default_405b_and_16k_gpus() {
    let page = Page::start().expect("start server and chromedriver");
    just_loaded(&page);
    table(&page, "default scenario", "");

    let mut big: Scenario = presets::default_scenario();
    big.model = ModelChoice::Preset("llama-3.1-405b".into());
    table(&page, "Llama 3.1 405B", &link::encode(&big));

    // The mesh test's 16,384-GPU case (2048 × 8 H100); the page opens at its top.
    let mut huge = big.clone();
    huge.cluster = Cluster::of(gpu_preset("h100-sxm").expect("h100"), 2048);
    huge.training.seq_len = 8192;
    huge.training.global_batch = 1024;
    huge.layout.tp = 8;
    huge.layout.pp = 16;
    huge.layout.dp = 128;
    huge.layout.micro_batch = 1;
    table(&page, "405B on 16,384 GPUs", &link::encode(&huge));
}
