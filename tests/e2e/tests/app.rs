//! End-to-end tests of the release build in headless Chromium.
//!
//! Ignored by a plain `cargo test`: they need `dist/` (trunk build --release)
//! and chromedriver. `cargo xtask test` runs them with `--ignored`, or:
//! `MESHPLAN_DIST=$PWD/dist CHROMEDRIVER=/usr/bin/chromedriver cargo test -p e2e -- --ignored --test-threads=1 --nocapture`.
//! Expected values come from planner-core, called natively here.

use std::time::Duration;

use e2e::page;
use e2e::{
    assert_no_console_errors, measure_latency, screenshot_path, strings, Page, Session, DP_SLIDER,
};
use planner_core::edges::link;
use planner_core::input::scenario::Scenario;
use planner_core::memory::state_terms::model_state;
use planner_core::resolve::presets;
use serde_json::json;

const SETTLE: Duration = Duration::from_secs(5);
/// WebDriver's key code for ArrowRight.
const ARROW_RIGHT: &str = "\u{E014}";
const ARROW_LEFT: &str = "\u{E012}";

fn bytes_attr(session: &Session, css: &str) -> f64 {
    session
        .attr(css, "data-bytes")
        .expect("read data-bytes")
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("{css} has no numeric data-bytes"))
}

fn zero3_bytes(s: &Scenario) -> f64 {
    let model = s.model_spec().expect("preset resolves");
    model_state(&model, &s.precision, &s.layout)[3].total_bytes
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1.0)
}

#[test]
#[ignore = "needs dist/ and chromedriver: run via `cargo xtask test`"]
fn dp_slider_moves_zero3_to_the_planner_core_value() {
    let page = Page::start().expect("start server and chromedriver");
    let session = page.open("").expect("page loads");
    let before_dp: u32 = session.text(page::VALUE_DP).unwrap().parse().unwrap();
    let before = bytes_attr(&session, page::STATE_TOTAL_3);
    assert!(
        close(before, zero3_bytes(&presets::default_scenario())),
        "ZeRO-3 figure on load {before} differs from planner-core"
    );

    // Keyboard, as a user would: focus the slider and press ArrowRight.
    session
        .send_keys(page::INPUT_DP, ARROW_RIGHT)
        .expect("move the DP slider");
    let dp_text = session
        .wait_text(page::VALUE_DP, SETTLE, |t| t != before_dp.to_string())
        .expect("DP changes");
    let dp: u32 = dp_text.parse().unwrap();
    assert_eq!(dp, before_dp * 2, "the DP slider steps over powers of two");

    let mut expected = presets::default_scenario();
    expected.layout.dp = dp;
    let want = zero3_bytes(&expected);
    let deadline = std::time::Instant::now() + SETTLE;
    let mut got = bytes_attr(&session, page::STATE_TOTAL_3);
    while !close(got, want) && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
        got = bytes_attr(&session, page::STATE_TOTAL_3);
    }
    assert!(
        close(got, want),
        "ZeRO-3 after DP {dp}: page {got}, planner-core {want}"
    );
    assert!(got < before, "more DP ranks shard ZeRO-3 state thinner");
    // 16 × 8 = 128 GPUs on a 64-GPU cluster: flagged at the DP control, not clamped.
    let issue = session
        .wait_text(page::ISSUE_DP, SETTLE, |t| !t.is_empty())
        .expect("the DP control is flagged");
    println!("flag at DP: {issue}");
    // Once: the check of dp × tp × pp × cp against the cluster is a validation error and a
    // layout rule in planner-core, and the page showed both (the same fact twice).
    let flags = strings(
        &session
            .execute(
                "return [...document.querySelectorAll(arguments[0])].map(e => e.textContent);",
                vec![json!(page::ISSUE_DP)],
            )
            .expect("read the DP flags"),
    );
    let validation = expected.validate().expect_err("128 GPUs on 64");
    assert_eq!(validation.len(), 1, "{validation:?}");
    assert_eq!(flags.len(), 1, "the DP control's flags: {flags:?}");
    assert!(
        flags[0].contains(&validation[0].message),
        "flag {:?}, planner-core {:?}",
        flags[0],
        validation[0].message
    );
    println!("DP {before_dp} → {dp}: ZeRO-3 model state {before:.0} → {got:.0} bytes (planner-core {want:.0})");

    // The URL follows the input (replaceState is coalesced, so poll).
    let url_deadline = std::time::Instant::now() + SETTLE;
    loop {
        let url = session.current_url().unwrap();
        if url.contains(&format!("dp={dp}")) {
            break;
        }
        assert!(
            std::time::Instant::now() < url_deadline,
            "URL never showed dp={dp}: {url}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_no_console_errors(&session, "after moving DP");
}

/// The step time in the "Measured numbers" view, far below the fold, read
/// where it stands (not scrolled to).
fn step_seconds_unrevealed(session: &Session) -> f64 {
    session
        .execute(
            &format!(
                "return Number(document.querySelector('{}').dataset.seconds);",
                page::STEP_TIME
            ),
            vec![],
        )
        .ok()
        .and_then(|v| v.as_f64())
        .unwrap_or(f64::NAN)
}

/// A view far below the fold does not recompute while a slider moves at the top;
/// it catches up when it comes near the screen, and when the page prints.
#[test]
#[ignore = "needs dist/ and chromedriver: run via `cargo xtask test`"]
fn far_views_catch_up_when_scrolled_to_or_printed() {
    use planner_core::time::cost::{evaluate_scenario, CostOptions};
    let step = |s: &Scenario| {
        evaluate_scenario(s, CostOptions::default(), None)
            .expect("valid")
            .seconds
            .total
    };
    let page = Page::start().expect("start server and chromedriver");
    let session = page.open("").expect("page loads");
    let start = presets::default_scenario();
    let loaded = step_seconds_unrevealed(&session);
    assert!(close(loaded, step(&start)), "{loaded} vs {}", step(&start));

    session
        .send_keys(page::INPUT_DP, ARROW_LEFT)
        .expect("move the DP slider");
    let mut moved = start.clone();
    moved.layout.dp = start.layout.dp / 2;
    session
        .wait_text(page::VALUE_DP, SETTLE, |t| t == moved.layout.dp.to_string())
        .expect("DP changes");
    std::thread::sleep(Duration::from_millis(300));
    assert!(
        close(step_seconds_unrevealed(&session), loaded),
        "off screen, the view kept its last figure"
    );

    // Printing shows every view: each catches up before the page is laid out for print.
    session
        .execute_async(
            "const done = arguments[arguments.length - 1];
             window.dispatchEvent(new Event('beforeprint'));
             requestAnimationFrame(() => setTimeout(done, 0));",
            vec![],
        )
        .expect("beforeprint");
    let printed = step_seconds_unrevealed(&session);
    session
        .execute("window.dispatchEvent(new Event('afterprint'));", vec![])
        .expect("afterprint");
    println!(
        "step time far below the fold: {loaded:.4} s on load, {printed:.4} s when printing at DP {} (planner-core {:.4} s)",
        moved.layout.dp,
        step(&moved)
    );
    assert!(
        close(printed, step(&moved)),
        "{printed} vs {}",
        step(&moved)
    );
    assert!(!close(printed, loaded), "the DP move changes the step time");

    // Another move, then scrolled to: the view catches up as it comes near.
    session
        .send_keys(page::INPUT_DP, ARROW_LEFT)
        .expect("move the DP slider again");
    moved.layout.dp /= 2;
    session
        .wait_text(page::VALUE_DP, SETTLE, |t| t == moved.layout.dp.to_string())
        .expect("DP changes");
    let shown: f64 = session
        .attr(page::STEP_TIME, "data-seconds")
        .expect("scroll to the step time")
        .and_then(|v| v.parse().ok())
        .unwrap_or(f64::NAN);
    assert!(close(shown, step(&moved)), "{shown} vs {}", step(&moved));
    assert_no_console_errors(&session, "after printing");
}

#[test]
#[ignore = "needs dist/ and chromedriver: run via `cargo xtask test`"]
fn article_70b_on_64_gpus_reads_the_articles_numbers() {
    let page = Page::start().expect("start server and chromedriver");
    let session = page.open("").expect("page loads");
    session.set_window_size(1440, 2400).unwrap();
    session
        .click(page::EXAMPLE_ARTICLE_70B)
        .expect("load the article's example");
    session
        .wait_text(page::STATE_TOTAL_0, SETTLE, |t| t == "1,120 GB")
        .expect("DDP bar reads 1,120 GB");
    let texts: Vec<String> = (0..4)
        .map(|n| session.text(&page::state_total(n)).unwrap())
        .collect();
    assert_eq!(texts, ["1,120 GB", "293 GB", "155 GB", "17.5 GB"]);
    let exact: Vec<f64> = (0..4)
        .map(|n| bytes_attr(&session, &page::state_total(n)))
        .collect();
    for (got, want) in exact.iter().zip([1120e9, 293.125e9, 155.3125e9, 17.5e9]) {
        assert!(
            close(*got, want),
            "article figure: page {got}, expected {want}"
        );
    }
    println!("article 70B / 64 GPUs on the page: {texts:?}");

    // Hovering a bar segment shows its bytes and its formula with the numbers.
    let tip = session
        .execute_async(
            r#"
            const done = arguments[arguments.length - 1];
            const canvas = document.querySelector(arguments[0]);
            const tooltip = arguments[1];
            const box = canvas.getBoundingClientRect();
            const y = box.top + box.height * 0.8;
            (async () => {
                for (let x = box.left; x < box.right; x += 6) {
                    canvas.dispatchEvent(new MouseEvent('mousemove', {clientX: x, clientY: y, bubbles: true}));
                    await new Promise(r => setTimeout(r, 0));
                    const tip = document.querySelector(tooltip);
                    if (tip) { done(tip.innerText); return; }
                }
                done(null);
            })();
            "#,
            vec![json!(page::CHART_ZERO), json!(page::TOOLTIP)],
        )
        .expect("hover the chart");
    let tip = tip.as_str().unwrap_or_default().to_string();
    println!("tooltip over the DDP bar: {tip:?}");
    assert!(
        tip.contains("GB") && tip.contains('='),
        "tooltip shows bytes and a worked formula: {tip:?}"
    );
    session
        .execute(
            &format!(
                "document.querySelector('{}').dispatchEvent(new MouseEvent('mouseleave'));",
                page::CHART_ZERO
            ),
            vec![],
        )
        .unwrap();
    // Every term with its formula, keyboard-reachable, in the breakdown table.
    session
        .click(&format!("{} details summary", page::MEMORY_VIEW))
        .expect("open the breakdown");
    let rows = session
        .execute_async(
            &format!("const done = arguments[arguments.length - 1]; setTimeout(() => done(document.querySelectorAll('{} tbody tr').length), 100);", page::TERM_TABLE),
            vec![],
        )
        .unwrap();
    assert!(rows.as_u64().unwrap_or(0) >= 4, "term rows: {rows}");
    session
        .element_screenshot(page::MEMORY_VIEW, &screenshot_path("memory-article-70b"))
        .expect("screenshot");
    // The article's chart exactly: model state alone, ZeRO-3 the only bar under 80 GB.
    session.click(page::INCLUDE_OTHER).unwrap();
    std::thread::sleep(Duration::from_millis(200));
    session
        .element_screenshot(
            page::MEMORY_VIEW,
            &screenshot_path("memory-article-70b-state-only"),
        )
        .expect("screenshot");
    session.click(page::INCLUDE_OTHER).unwrap();
    session
        .screenshot(&screenshot_path("page-article-70b"))
        .expect("screenshot");
    assert_no_console_errors(&session, "on the article example");
}

#[test]
#[ignore = "needs dist/ and chromedriver: run via `cargo xtask test`"]
fn copied_link_restores_the_same_state_in_a_fresh_page() {
    let page = Page::start().expect("start server and chromedriver");
    let first = page.open("").expect("page loads");
    first.click(page::EXAMPLE_ARTICLE_MESH).unwrap();
    first.set_value(page::INPUT_SCHED, "interleaved").unwrap();
    first.set_value(page::INPUT_VPP, "1").unwrap();
    first.set_value(page::INPUT_ZERO, "2").unwrap();
    first.set_value(page::INPUT_SEQ, "16384").unwrap();
    first.click(page::COPY_LINK).unwrap();
    let link = first
        .attr(page::SHARE_LINK, "value")
        .unwrap()
        .unwrap_or_default();
    let link = if link.is_empty() {
        first
            .value(page::SHARE_LINK)
            .unwrap()
            .as_str()
            .unwrap_or_default()
            .to_string()
    } else {
        link
    };
    let query = link
        .split_once('?')
        .map(|(_, q)| q.to_string())
        .expect("link has a query");
    println!("share link: {link}");

    // The link decodes natively to the state that was set.
    let mut expected = presets::article_mesh_scenario();
    expected.layout.schedule = planner_core::input::layout::Schedule::Interleaved;
    expected.layout.virtual_stages = 2;
    expected.layout.zero = planner_core::input::layout::ZeroStage::Zero2;
    expected.training.seq_len = 16384;
    let decoded = link::decode(&query).expect("the copied link decodes strictly");
    assert_eq!(
        decoded, expected,
        "link holds exactly the state set on the page"
    );

    let ids = [
        page::STATE_TOTAL_0,
        page::STATE_TOTAL_3,
        page::PEAK_TOTAL_2,
        page::BUBBLE_IDLE,
        page::BUBBLE_OVERHEAD,
        page::PIPELINE_PMV,
    ];
    let read =
        |s: &Session| -> Vec<String> { ids.iter().map(|css| s.text(css).unwrap()).collect() };
    let before = read(&first);
    assert_no_console_errors(&first, "before copying");
    drop(first);

    let second = page.open(&query).expect("the link opens");
    assert_eq!(read(&second), before, "same figures in the fresh page");
    let link_again = second.value(page::SHARE_LINK).unwrap();
    assert_eq!(
        link_again.as_str(),
        Some(link.as_str()),
        "the fresh page shows the same link"
    );
    assert!(
        second
            .execute(
                &format!(
                    "return document.querySelector('{}') === null;",
                    page::LINK_NOTICE
                ),
                vec![]
            )
            .unwrap()
            == json!(true),
        "a good link shows no notice"
    );
    assert_no_console_errors(&second, "after opening the link");
}

#[test]
#[ignore = "needs dist/ and chromedriver: run via `cargo xtask test`"]
fn corrupted_link_names_the_bad_parameter_and_keeps_the_rest() {
    let page = Page::start().expect("start server and chromedriver");
    let mut good = presets::default_scenario();
    good.layout.dp = 4;
    let mut params: Vec<String> = link::encode(&good)
        .split('&')
        .filter(|p| !p.starts_with("tp="))
        .map(str::to_string)
        .collect();
    params.push("tp=banana".into());
    let query = params.join("&");
    let session = page.open(&query).expect("page still renders");
    let notice = session
        .wait_text(page::LINK_NOTICE, SETTLE, |t| !t.is_empty())
        .expect("a visible notice");
    assert!(notice.contains("tp"), "the notice names tp: {notice}");
    assert_eq!(
        session.text(page::VALUE_DP).unwrap(),
        "4",
        "the good parameters of the link are kept"
    );
    session
        .element_screenshot(page::LINK_NOTICE, &screenshot_path("corrupted-link-notice"))
        .unwrap();
    assert_no_console_errors(&session, "on a corrupted link");
    drop(session);

    let outdated = page.open("v=999&dp=2").expect("page still renders");
    let notice = outdated
        .wait_text(page::LINK_NOTICE, SETTLE, |t| !t.is_empty())
        .expect("a visible notice");
    assert!(
        notice.contains('v'),
        "the notice names the version: {notice}"
    );
    assert_no_console_errors(&outdated, "on an outdated link");
}

/// Links an adversary would send: a command smuggled into the model name, a zero
/// that divided, a model deep enough to hang the serving plan.
const HOSTILE_LINKS: [(&str, &str, &str); 3] = [
    (
        "injection",
        "v=1&model=custom&name=evil%0Acurl%20http%3A%2F%2F127.0.0.1%2Fx%20%7C%20sh%0A%23&layers=80&hidden=8192&heads=64&ffn=28672&vocab=128256&gpus=64&dp=8&tp=8",
        "name",
    ),
    ("gpu-gpn-zero", "v=1&gpu_gpn=0", "gpu_gpn"),
    (
        "ten-thousand-layers",
        "v=1&model=custom&name=deep&layers=10000&hidden=8192&heads=64&ffn=28672&vocab=128256&gpus=64&dp=8&tp=8&pp=3",
        "pp",
    ),
];

#[test]
#[ignore = "needs dist/ and chromedriver: run via `cargo xtask test`"]
fn hostile_links_name_their_field_and_the_page_stays_responsive() {
    let page = Page::start().expect("start server and chromedriver");
    for (name, query, field) in HOSTILE_LINKS {
        let session = page.open(query).expect("page renders");
        // A bad parameter is named in the link notice; a valid but unlayable one
        // (10,000 layers over pp = 3) at the layout's rule flags.
        let notice = session
            .wait_text(
                &format!("{}, {}", page::LINK_NOTICE, page::ISSUE_PP),
                SETTLE,
                |t| !t.is_empty(),
            )
            .unwrap_or_else(|e| panic!("{name}: no message: {e}"));
        assert!(
            notice.contains(field),
            "{name}: the message names {field}: {notice}"
        );
        if name == "injection" {
            let body = session.text("body").expect("body text");
            assert!(
                !body.contains("curl http"),
                "{name}: the smuggled command is shown nowhere as text"
            );
        }
        session.set_script_timeout(120_000).unwrap();
        let latency = measure_latency(&session, &DP_SLIDER, 40).expect("the slider still works");
        assert!(
            latency.work_ms.len() >= 30,
            "{name}: {} moves",
            latency.work_ms.len()
        );
        println!(
            "HOSTILE LINK {name}: {} DP slider moves after opening it:\n{}",
            latency.work_ms.len(),
            latency.summary()
        );
        session
            .screenshot(&screenshot_path(&format!("hostile-link-{name}")))
            .unwrap();
        assert_no_console_errors(&session, &format!("on the {name} link"));
    }
}

#[test]
#[ignore = "needs dist/ and chromedriver: run via `cargo xtask test`"]
fn screenshots_of_each_view() {
    let page = Page::start().expect("start server and chromedriver");
    let session = page.open("").expect("page loads");
    session.set_window_size(1440, 2600).unwrap();
    std::thread::sleep(Duration::from_millis(300));
    session
        .screenshot(&screenshot_path("page-default"))
        .unwrap();
    session
        .element_screenshot(page::MEMORY_VIEW, &screenshot_path("memory-default"))
        .unwrap();
    session
        .element_screenshot(page::SERVING_VIEW, &screenshot_path("serving-default"))
        .unwrap();
    // The article's pipeline figure: forward pass of 4 stages × 4 micro-batches,
    // 12 of 28 slots idle; and its bars, 43% / 16% / 9% for m = 4 / 16 / 32.
    session.click(page::FORWARD_ONLY).unwrap();
    let note = session
        .wait_text(page::GRID_NOTE, SETTLE, |t| t.contains("Forward pass only"))
        .unwrap();
    assert!(note.contains("12 of 28 slots idle"), "{note}");
    let shares = session.text(page::FORWARD_IDLE_SHARES).unwrap();
    assert_eq!(shares, "m = 4: 42.9% · m = 16: 15.8% · m = 32: 8.6%");
    // The grid's canvas keeps the backing store of the tallest grid (17 rows: no
    // reallocation when PP changes) and shows its top, 4 rows here: 34 + 4 × 26 + 8 px.
    let sizes = session
        .execute(
            "const c = document.querySelector(arguments[0]); return [c.clientHeight, c.height, window.devicePixelRatio];",
            vec![json!("[data-testid=chart-schedule]")],
        )
        .unwrap();
    let dpr = sizes[2].as_f64().unwrap();
    assert_eq!(sizes[0], json!(146), "{sizes}");
    assert_eq!(sizes[1].as_f64(), Some((484.0 * dpr).round()), "{sizes}");
    // Its PNG holds what the page shows, not the blank rows below.
    session
        .click("[data-testid=download-chart-schedule]")
        .unwrap();
    let href = session
        .attr("[data-testid=download-chart-schedule]", "href")
        .unwrap()
        .expect("the download link has the PNG");
    let png = e2e::base64_decode(href.trim_start_matches("data:image/png;base64,")).unwrap();
    let png_height = u32::from_be_bytes([png[20], png[21], png[22], png[23]]);
    assert_eq!(f64::from(png_height), (146.0 * dpr).round(), "PNG height");
    session
        .element_screenshot(
            page::PIPELINE_VIEW,
            &screenshot_path("pipeline-forward-article"),
        )
        .unwrap();
    session.click(page::FORWARD_ONLY).unwrap();
    session.click(page::EXAMPLE_ARTICLE_MESH).unwrap();
    for schedule in ["gpipe", "1f1b", "interleaved", "zb"] {
        session.set_value(page::INPUT_SCHED, schedule).unwrap();
        if schedule == "interleaved" {
            session.set_value(page::INPUT_VPP, "1").unwrap();
        }
        std::thread::sleep(Duration::from_millis(200));
        session
            .element_screenshot(
                page::PIPELINE_VIEW,
                &screenshot_path(&format!("pipeline-{schedule}")),
            )
            .unwrap();
    }
    session
        .element_screenshot(page::MEMORY_VIEW, &screenshot_path("memory-mesh"))
        .unwrap();
    // Dark theme (prefers-color-scheme), as a user with a dark OS theme sees it.
    session
        .cdp(
            "Emulation.setEmulatedMedia",
            json!({ "features": [{ "name": "prefers-color-scheme", "value": "dark" }] }),
        )
        .unwrap();
    std::thread::sleep(Duration::from_millis(300));
    session
        .element_screenshot(page::MEMORY_VIEW, &screenshot_path("memory-mesh-dark"))
        .unwrap();
    session
        .cdp(
            "Emulation.setEmulatedMedia",
            json!({ "features": [{ "name": "prefers-color-scheme", "value": "light" }] }),
        )
        .unwrap();
    // A laptop-sized window: the layout must still hold.
    session.set_window_size(1280, 800).unwrap();
    std::thread::sleep(Duration::from_millis(300));
    session
        .screenshot(&screenshot_path("page-laptop-1280x800"))
        .unwrap();
    assert_no_console_errors(&session, "while taking screenshots");
}

#[test]
#[ignore = "needs dist/ and chromedriver: run via `cargo xtask test`"]
fn every_preset_gpu_and_schedule_renders_without_errors() {
    let page = Page::start().expect("start server and chromedriver");
    let session = page.open("").expect("page loads");
    // PP 4 so every schedule is drawn from the layout itself.
    session.set_value(page::INPUT_PP, "2").unwrap();
    for preset in planner_core::resolve::presets::model_presets() {
        session.set_value(page::INPUT_MODEL, preset.id).unwrap();
        for schedule in ["gpipe", "1f1b", "interleaved", "zb"] {
            session.set_value(page::INPUT_SCHED, schedule).unwrap();
            let total = session
                .wait_text(page::STATE_TOTAL_3, SETTLE, |t| t.ends_with('B'))
                .unwrap_or_else(|e| panic!("{} / {schedule}: {e}", preset.id));
            assert!(!total.is_empty());
        }
        let kv = session.text(page::KV_PER_TOKEN).unwrap_or_default();
        println!(
            "{}: ZeRO-3 state {}, KV/token {kv}",
            preset.id,
            session.text(page::STATE_TOTAL_3).unwrap()
        );
    }
    // Custom shapes: the preset's shapes become editable fields.
    session.set_value(page::INPUT_MODEL, "custom").unwrap();
    let before = session.text(page::STATE_TOTAL_3).unwrap();
    session.set_value(page::INPUT_LAYERS, "7").unwrap();
    let after = session
        .wait_text(page::STATE_TOTAL_3, SETTLE, |t| t != before)
        .expect("editing a custom shape recomputes");
    println!("custom model, 7 layers: ZeRO-3 state {before} → {after}");
    for gpu in planner_core::input::hardware::gpu_presets() {
        session.set_value(page::INPUT_GPU, &gpu.id).unwrap();
        session
            .wait_text(page::STATE_TOTAL_3, SETTLE, |t| t.ends_with('B'))
            .unwrap();
    }
    assert_no_console_errors(&session, "across presets, GPUs and schedules");
}

#[test]
#[ignore = "needs dist/ and chromedriver: run via `cargo xtask test`"]
fn console_error_check_is_not_vacuous() {
    let page = Page::start().expect("start server and chromedriver");
    let session = page.open("").expect("page loads");
    assert_no_console_errors(&session, "on load");
    session
        .execute("console.error('e2e-probe');", vec![])
        .unwrap();
    let logs = session.console_logs().unwrap();
    assert!(
        logs.iter()
            .any(|l| l.level == "SEVERE" && l.message.contains("e2e-probe")),
        "the browser log reader sees console.error: {logs:?}"
    );
}

#[test]
#[ignore = "needs dist/ and chromedriver: run via `cargo xtask test`"]
fn responsiveness_of_a_slider_move_is_measured() {
    let page = Page::start().expect("start server and chromedriver");
    let session = page.open("").expect("page loads");
    session.set_script_timeout(300_000).unwrap();
    let latency = measure_latency(&session, &DP_SLIDER, 240).expect("measure");
    assert!(
        latency.work_ms.len() >= 200,
        "measured {} moves",
        latency.work_ms.len()
    );
    println!(
        "RESPONSIVENESS over {} DP slider moves (headless Chromium, performance.now()):\n{}",
        latency.work_ms.len(),
        latency.summary()
    );
    assert_no_console_errors(&session, "during the slider moves");
}

#[test]
#[ignore = "needs dist/ and chromedriver: run via `cargo xtask test`"]
fn accuracy_section_shows_the_validation_summary_and_the_nearest_runs() {
    use planner_core::edges::validation::{nearness, parse_runs, validate_run, PUBLIC_RUNS_JSON};
    let page = Page::start().expect("start server and chromedriver");
    let session = page.open("").expect("page loads");
    // Nothing is evaluated before the section is opened. (The worker itself may already be
    // fetched: the mesh explorer near the first screen searches in it, views/mesh.rs.)
    assert!(session
        .attr(page::ACCURACY_DONE, "data-worker-ms")
        .map(|v| v.is_none())
        .unwrap_or(true));
    assert_eq!(
        session.text(page::ACCURACY_DONE).unwrap_or_default(),
        "",
        "the validation ran before the section was opened"
    );
    let worker_fetched = r#"return performance.getEntriesByType('resource').some(e => e.name.includes('app-worker'));"#;
    session
        .click(page::ACCURACY_OPEN)
        .expect("open the section");
    session
        .wait_text(page::ACCURACY_DONE, Duration::from_secs(60), |t| {
            !t.is_empty()
        })
        .expect("the worker's validation arrives");
    assert_eq!(
        session
            .execute(worker_fetched, vec![])
            .expect("read resource timings"),
        serde_json::Value::Bool(true),
        "the section's result came without its worker"
    );

    // The same numbers as planner-core natively.
    let native = planner_core::edges::validation::run_validation(
        PUBLIC_RUNS_JSON,
        planner_core::edges::validation::ValidationOptions { search: false },
    )
    .expect("dataset");
    let all = native
        .by_quantity
        .iter()
        .find(|g| g.group == planner_core::edges::validation::ALL_GROUP)
        .expect("all group");
    let css = format!(
        "{} tr[data-group='{}'] td[data-median]",
        page::ACCURACY_SUMMARY,
        planner_core::edges::validation::ALL_GROUP
    );
    let page_median: f64 = session
        .attr(&css, "data-median")
        .expect("read")
        .and_then(|v| v.parse().ok())
        .expect("numeric median");
    let native_median = all.stats.median.expect("compared rows");
    assert!(
        close(page_median, native_median),
        "page median {page_median}, planner-core {native_median}"
    );
    // Beside it, the rows that entered later: their error when first seen and today, as
    // planner-core summarises them.
    for (groups, attr) in [
        (&native.first_seen, "data-first-median"),
        (&native.first_seen_today, "data-today-median"),
    ] {
        let g = groups.first().expect("a first-seen group");
        let css = format!(
            "{} tr[data-group='{}'] td[{attr}]",
            page::ACCURACY_FIRST_SEEN,
            g.group
        );
        let shown: f64 = session
            .attr(&css, attr)
            .expect("read")
            .and_then(|v| v.parse().ok())
            .expect("numeric median");
        let want = g.stats.median.expect("compared rows");
        assert!(
            close(shown, want),
            "{attr}: page {shown}, planner-core {want}"
        );
    }

    // The nearest rows to the default scenario, ranked as planner-core ranks them.
    let s = presets::default_scenario();
    let model = s.model_spec().expect("preset");
    let runs = parse_runs(PUBLIC_RUNS_JSON).expect("dataset");
    let mut scored: Vec<(f64, usize)> = runs
        .iter()
        .enumerate()
        .filter(|(_, r)| validate_run(r).0.comparison.is_some())
        .map(|(i, r)| {
            let d = nearness(
                r,
                model.params() / 1e9,
                s.cluster.world_size(),
                &s.cluster.gpu.id,
                s.layout.tp,
                s.layout.pp,
            );
            (d, i)
        })
        .collect();
    scored.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
    let first = session
        .attr(&format!("{} tbody tr", page::ACCURACY_NEAREST), "data-id")
        .expect("read")
        .expect("a nearest row");
    assert_eq!(first, runs[scored[0].1].id);

    let attr = |name: &str| -> f64 {
        session
            .attr(page::ACCURACY_DONE, name)
            .ok()
            .flatten()
            .and_then(|v| v.parse().ok())
            .unwrap_or(f64::NAN)
    };
    println!(
        "ACCURACY SECTION: {} rows validated in the worker in {:.1} ms ({} compared); {:.1} ms wall from opening the section to the summary, worker download and start included",
        runs.len(),
        attr("data-worker-ms"),
        attr("data-compared-rows"),
        attr("data-wall-ms")
    );
    session
        .element_screenshot(page::ACCURACY_VIEW, &screenshot_path("accuracy-section"))
        .unwrap();
    assert_no_console_errors(&session, "with the accuracy section open");
}

/// Waits until `css`'s `data-bytes` equals planner-core's `want` (the view recomputes
/// off the input path), asserts it does, and returns what the page shows.
fn page_bytes_equal(session: &Session, css: &str, want: f64) -> f64 {
    let deadline = std::time::Instant::now() + SETTLE;
    let mut got = bytes_attr(session, css);
    while !close(got, want) && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
        got = bytes_attr(session, css);
    }
    assert!(close(got, want), "{css}: page {got}, planner-core {want}");
    got
}

/// torchtitan's Table 1 run (Llama 3.1 8B, FSDP 8 on H100 96GB, local batch 2, seq 8192,
/// op-level selective AC) opened from a link: the memory view shows the allocated and
/// reserved peaks planner-core computes natively, and switching the framework to the
/// article's accounting moves both to planner-core's values for that.
#[test]
#[ignore = "needs dist/ and chromedriver: run via `cargo xtask test`"]
fn memory_view_shows_allocated_and_reserved_peaks_of_planner_core() {
    use planner_core::input::framework::Framework;
    use planner_core::input::hardware::{gpu_preset, Cluster};
    use planner_core::input::layout::{Recompute, ZeroStage};
    use planner_core::input::scenario::ModelChoice;

    let mut s = presets::default_scenario();
    s.model = ModelChoice::Preset("llama-3.1-8b".into());
    s.cluster = Cluster::of(gpu_preset("h100-96gb").expect("preset"), 1);
    s.training.seq_len = 8192;
    s.training.global_batch = 16;
    s.layout.dp = 8;
    s.layout.tp = 1;
    s.layout.micro_batch = 2;
    s.layout.zero = ZeroStage::Zero3;
    s.layout.recompute = Recompute::Selective;
    s.layout.sequence_parallel = false;
    s.overheads.framework = Framework::Torchtitan;
    let native = |sc: &Scenario| {
        let model = sc.model_spec().expect("preset resolves");
        planner_core::memory::training_memory::training_memory(sc, &model)
    };
    let want = native(&s);

    let page = Page::start().expect("start server and chromedriver");
    let session = page.open(&link::encode(&s)).expect("the link opens");
    session
        .reveal(page::MEMORY_PEAKS)
        .expect("scroll to the peaks");
    let allocated = page_bytes_equal(&session, page::PEAK_ALLOCATED, want.peak_allocated_bytes);
    let reserved = page_bytes_equal(&session, page::PEAK_RESERVED, want.peak_reserved_bytes);
    let device = page_bytes_equal(&session, page::PEAK_DEVICE, want.peak_bytes);
    assert!(allocated < reserved && reserved < device);
    let label = session.text(page::MEMORY_FRAMEWORK).unwrap();
    assert_eq!(label, Framework::Torchtitan.label());
    println!(
        "torchtitan T1 on the page: allocated {allocated:.0} B, reserved {reserved:.0} B ({:.1} GiB; published 82.4 GiB), device {device:.0} B",
        reserved / (1u64 << 30) as f64
    );
    let shot = screenshot_path("memory-peaks-torchtitan");
    session
        .element_screenshot(page::MEMORY_VIEW, &shot)
        .expect("screenshot");

    // The article's accounting: no loss transient, Korthikanti's selective recompute.
    session
        .set_value(page::INPUT_FRAMEWORK, Framework::Article.id())
        .expect("switch the framework");
    let mut article = s.clone();
    article.overheads.framework = Framework::Article;
    let want_article = native(&article);
    let allocated_article = page_bytes_equal(
        &session,
        page::PEAK_ALLOCATED,
        want_article.peak_allocated_bytes,
    );
    let reserved_article = page_bytes_equal(
        &session,
        page::PEAK_RESERVED,
        want_article.peak_reserved_bytes,
    );
    assert!(
        reserved_article > reserved,
        "Korthikanti's selective keeps more than torchtitan's op policy"
    );
    println!(
        "article accounting: allocated {allocated_article:.0} B, reserved {reserved_article:.0} B"
    );
    assert_no_console_errors(&session, "after switching the framework");
}

/// How many visits the page's idle warm-up has made (`window.__meshplanRuns.warm_up`).
fn warm_up_visits(session: &Session) -> f64 {
    session
        .execute("return (window.__meshplanRuns || {}).warm_up || 0;", vec![])
        .unwrap()
        .as_f64()
        .unwrap_or(0.0)
}

/// What a person sees of the page, read in one script: the views' figures, the controls'
/// values and options, the URL, the scroll offset and what each chart drew.
const SNAPSHOT: &str = r#"
const texts = arguments[0].map(css => [...document.querySelectorAll(css)].map(e => e.textContent));
const controls = [...document.querySelectorAll('aside.controls input, aside.controls select')]
  .map(e => [e.dataset.testid || e.id, e.value, e.tagName === 'SELECT' ? e.options.length : 0]);
const charts = [...document.querySelectorAll('canvas')].map(c => [c.dataset.testid, c.width, c.height, c.toDataURL()]);
return JSON.stringify({ texts, controls, charts, url: location.href, scroll: window.scrollY });
"#;

#[test]
#[ignore = "needs dist/ and chromedriver: run via `cargo xtask test`"]
fn the_idle_warm_up_leaves_the_page_as_it_found_it() {
    let page = Page::start().expect("start server and chromedriver");
    // The page's timeline (app/src/perf.rs) records each visit's start and duration.
    let session = page
        .open_with("", Some("window.__meshplanTimeline = [];"))
        .expect("page loads");
    let watched = json!([
        page::testid("memory-view"),
        page::testid("pipeline-view"),
        page::MEMORY_PEAKS,
        page::GRID_NOTE,
        page::value("pp"),
        "[data-testid^=issue-]",
    ]);
    let before = session.execute(SNAPSHOT, vec![watched.clone()]).unwrap();
    let runs_before = warm_up_visits(&session);
    let finished = session
        .wait_for_warm_up(Duration::from_secs(60))
        .expect("the warm-up finishes");
    let visits = warm_up_visits(&session);
    let after = session.execute(SNAPSHOT, vec![watched]).unwrap();
    let mut each_ms = e2e::numbers(
        &session
            .execute(
                "return (window.__meshplanTimeline || []).filter(e => e[0] === 'warm_up').map(e => e[2]);",
                vec![],
            )
            .unwrap(),
    );
    each_ms.sort_by(f64::total_cmp);
    println!(
        "WARM-UP: {visits:.0} visits ({runs_before:.0} before the first snapshot), finished {finished:.0} ms after navigation; a visit (there and back, layout forced) took median {:.1} ms, p95 {:.1} ms, max {:.1} ms, {:.0} ms in all",
        e2e::percentile(&each_ms, 0.5),
        e2e::percentile(&each_ms, 0.95),
        each_ms.last().copied().unwrap_or(f64::NAN),
        each_ms.iter().sum::<f64>()
    );
    // The default page's neighbours: its DP, TP and PP positions alone are 18 of them.
    assert!(visits >= 18.0, "the warm-up visited {visits} states");
    assert!(
        before == after,
        "the page changed under the warm-up:\nbefore {before}\nafter  {after}"
    );
    assert_no_console_errors(&session, "during the warm-up");
}

#[test]
#[ignore = "needs dist/ and chromedriver: run via `cargo xtask test`"]
fn a_move_ends_the_warm_up_and_keeps_the_persons_state() {
    let page = Page::start().expect("start server and chromedriver");
    let session = page.open("").expect("page loads");
    // One DP slider step, as soon as the page is ready (the warm-up takes about 3 s here).
    let moved_to = session
        .execute(
            "const el = document.querySelector(arguments[0]);
             el.value = String((Number(el.value) + 1) % (Number(el.max) + 1));
             el.dispatchEvent(new Event('input', {bubbles: true}));
             el.dispatchEvent(new Event('change', {bubbles: true}));
             return el.value;",
            vec![json!(page::INPUT_DP)],
        )
        .unwrap();
    // Read in the task after the move's: a visit runs within one task, so none is half done.
    let before = warm_up_visits(&session);
    let finished = session
        .wait_for_warm_up(Duration::from_secs(10))
        .expect("the warm-up ends after the move");
    let visits = warm_up_visits(&session);
    println!(
        "WARM-UP ENDED BY A MOVE: {before} visits by the move, {visits} in all, ended {finished:.0} ms after navigation"
    );
    assert_eq!(
        session.value(page::INPUT_DP).unwrap(),
        moved_to,
        "the slider keeps the person's value"
    );
    // Every idle callback checks the scenario before it visits: none after the move.
    assert_eq!(visits, before, "visits went on after the move");
}

#[test]
#[ignore = "needs dist/ and chromedriver: run via `cargo xtask test`"]
fn the_warm_up_waits_while_the_controls_are_scrolled() {
    let page = Page::start().expect("start server and chromedriver");
    let session = page.open("").expect("page loads");
    // The controls' panel scrolled down: a neighbour with fewer controls would clamp it.
    let scrolled = session
        .execute(
            "const a = document.querySelector('aside.controls'); a.scrollTop = 400; return a.scrollTop;",
            vec![],
        )
        .unwrap()
        .as_f64()
        .unwrap_or(0.0);
    assert!(scrolled > 0.0, "the controls' panel scrolls at 1440 × 1100");
    let before = warm_up_visits(&session);
    std::thread::sleep(Duration::from_secs(2));
    let during = warm_up_visits(&session);
    let still = session
        .execute(
            "return [document.querySelector('aside.controls').scrollTop, document.documentElement.dataset.warmUp || null];",
            vec![],
        )
        .unwrap();
    println!(
        "WARM-UP WITH THE CONTROLS SCROLLED: {before} visits, {during} two seconds later; panel at {} px, warm-up {}",
        still[0], still[1]
    );
    assert_eq!(during, before, "no visit while the panel is scrolled");
    assert_eq!(
        still[0].as_f64(),
        Some(scrolled),
        "the panel stays where it was"
    );
    assert_eq!(still[1], json!(null), "the warm-up waits rather than ends");
    session
        .execute(
            "document.querySelector('aside.controls').scrollTop = 0;",
            vec![],
        )
        .unwrap();
    session
        .wait_for_warm_up(Duration::from_secs(60))
        .expect("back at the top, the warm-up goes on and ends");
}
