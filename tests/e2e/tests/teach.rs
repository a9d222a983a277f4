//! End-to-end tests of the Learn section (teaching figures) and the PNG
//! download link on every chart canvas.
//!
//! Ignored by a plain `cargo test`; run with the others:
//! `MESHPLAN_DIST=$PWD/dist CHROMEDRIVER=/usr/bin/chromedriver cargo test -p e2e --test teach -- --ignored --test-threads=1 --nocapture`.
//! Expected values come from `planner_core::figures::teaching::teaching_figures`, called natively here.

use std::time::{Duration, Instant};

use e2e::page;
use e2e::{assert_no_console_errors, base64_decode, screenshot_path, Page, Session};
use planner_core::edges::link;
use planner_core::figures::teaching::{teaching_figures, TeachingFigures};
use planner_core::input::scenario::{ModelChoice, Scenario};
use planner_core::resolve::presets;
use planner_core::time::collectives::Collective;
use planner_core::time::cost::CostOptions;
use serde_json::json;

const LOAD: Duration = Duration::from_secs(30);
const SETTLE: Duration = Duration::from_secs(5);
/// WebDriver's key code for ArrowLeft.
const ARROW_LEFT: &str = "\u{E012}";
const TABS: [&str; 7] = [
    "collectives",
    "strategies",
    "ddp",
    "fsdp",
    "mlp",
    "cp",
    "ep",
];

fn figures(s: &Scenario) -> TeachingFigures {
    let model = s.model_spec().expect("preset resolves");
    teaching_figures(s, &model, &CostOptions::default())
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1.0)
}

fn num_attr(session: &Session, css: &str, name: &str) -> f64 {
    session
        .attr(css, name)
        .unwrap_or_else(|e| panic!("{css}: {e}"))
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("{css} has no numeric {name}"))
}

/// Every collective's use rows on the page equal planner-core's, and each
/// rank's bytes are the message times the op's busbw factor (2(n−1)/n for all-reduce).
fn check_collectives(session: &Session, figs: &TeachingFigures) -> Vec<(f64, f64, f64)> {
    let mut all_reduce = Vec::new();
    for demo in &figs.collectives {
        let id = demo.op.id();
        if demo.uses.is_empty() {
            session
                .wait_text(&page::collective_none(id), SETTLE, |_| true)
                .unwrap_or_else(|e| panic!("{id}: no uses, but no note: {e}"));
            continue;
        }
        let n_rows = session
            .execute(
                "return document.querySelectorAll(arguments[0]).length;",
                vec![json!(page::collective_uses(id))],
            )
            .unwrap()
            .as_u64()
            .unwrap_or(0);
        assert_eq!(n_rows as usize, demo.uses.len(), "{id}: rows on the page");
        for (i, u) in demo.uses.iter().enumerate() {
            let css = page::collective_use(id, i);
            let ranks = num_attr(session, &css, "data-ranks");
            let message = num_attr(session, &css, "data-message-bytes");
            let sent = num_attr(session, &css, "data-sent-bytes");
            assert_eq!(ranks as u64, u.ranks, "{css} ranks");
            assert!(
                close(message, u.message_bytes),
                "{css}: message {message} vs {}",
                u.message_bytes
            );
            assert!(
                close(sent, u.bytes_sent_per_rank_per_call),
                "{css}: sent {sent} vs {}",
                u.bytes_sent_per_rank_per_call
            );
            let n = u.ranks as f64;
            let factor = match demo.op {
                Collective::AllReduce => 2.0 * (n - 1.0) / n,
                _ => (n - 1.0) / n,
            };
            assert!(
                close(sent, factor * message),
                "{css}: {sent} ≠ {factor} × {message}"
            );
            if demo.op == Collective::AllReduce {
                all_reduce.push((ranks, message, sent));
            }
        }
    }
    all_reduce
}

fn wait_for_attr(session: &Session, css: &str, name: &str, want: f64) -> f64 {
    let deadline = Instant::now() + SETTLE;
    loop {
        let got = session
            .attr(css, name)
            .ok()
            .flatten()
            .and_then(|v| v.parse::<f64>().ok());
        if let Some(g) = got {
            if close(g, want) {
                return g;
            }
        }
        assert!(
            Instant::now() < deadline,
            "{css} {name}: {got:?}, want {want}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
#[ignore = "needs dist/ and chromedriver: run via `cargo xtask test`"]
fn learn_figures_follow_planner_core_and_a_slider() {
    let page = Page::start().expect("start server and chromedriver");
    let session = page.open("").expect("page loads");
    session
        .execute(
            &format!(
                "document.querySelector('{}').scrollIntoView();",
                page::LEARN_VIEW
            ),
            vec![],
        )
        .unwrap();
    let mut scenario = presets::default_scenario();
    session
        .wait_text(page::COLL_ALL_REDUCE, LOAD, |_| true)
        .expect("the collectives tab shows");
    // Default: sequence parallel and ZeRO-1, so TP and gradients use reduce-scatter/all-gather.
    check_collectives(&session, &figures(&scenario));
    // Sequence parallel off: TP's collectives become all-reduces.
    session.click(page::INPUT_SP).unwrap();
    scenario.layout.sequence_parallel = false;
    let figs = figures(&scenario);
    let first = figs.collectives[0]
        .uses
        .first()
        .expect("TP all-reduces without SP");
    wait_for_attr(
        &session,
        page::COLL_ALL_REDUCE_USE_0,
        "data-sent-bytes",
        first.bytes_sent_per_rank_per_call,
    );
    let before = check_collectives(&session, &figs);
    println!(
        "all-reduce uses at TP {}: (ranks, message, sent/rank) {before:?}",
        scenario.layout.tp
    );

    // Move TP down one step by keyboard: the all-reduce group and its bytes follow.
    let tp_before: u32 = session.text(page::VALUE_TP).unwrap().parse().unwrap();
    session.send_keys(page::INPUT_TP, ARROW_LEFT).unwrap();
    let tp: u32 = session
        .wait_text(page::VALUE_TP, SETTLE, |t| t != tp_before.to_string())
        .unwrap()
        .parse()
        .unwrap();
    assert_eq!(tp * 2, tp_before);
    scenario.layout.tp = tp;
    let figs_after = figures(&scenario);
    let first = &figs_after.collectives[0].uses[0];
    wait_for_attr(
        &session,
        page::COLL_ALL_REDUCE_USE_0,
        "data-sent-bytes",
        first.bytes_sent_per_rank_per_call,
    );
    let after = check_collectives(&session, &figs_after);
    assert_ne!(before, after, "the all-reduce figures change with TP");
    println!("all-reduce uses at TP {tp}: {after:?}");

    // The other tabs show planner-core's numbers for this layout.
    session.click(page::LEARN_TAB_MLP).unwrap();
    let mlp = figs_after.mlp.as_ref().expect("MLP split");
    session
        .wait_text(page::MLP_TP, SETTLE, |t| t == mlp.tp.to_string())
        .expect("MLP at the layout's TP");
    session.click(page::LEARN_TAB_CP).unwrap();
    let cp = figs_after.cp.as_ref().expect("CP figure");
    session
        .wait_text(page::CP_RANKS, SETTLE, |t| t == cp.cp.to_string())
        .expect("CP ranks");
    session.click(page::LEARN_TAB_EP).unwrap();
    let ep = figs_after.ep.as_ref().expect("EP figure");
    session
        .wait_text(page::EP_CAPACITY, SETTLE, |t| t == ep.capacity.to_string())
        .expect("EP capacity");
    session
        .wait_text(page::EP_EXPERTS, SETTLE, |t| {
            t == format!("{} / {}", ep.experts, ep.top_k)
        })
        .expect("EP experts");
    println!(
        "MLP tp {}, all-reduce message {} B; CP {} ranks, K/V {} B per step; EP capacity {} ({} dropped)",
        mlp.tp, mlp.forward[0].message_bytes, cp.cp, cp.kv_bytes_per_step, ep.capacity, ep.dropped
    );
    assert_no_console_errors(&session, "on the Learn section");
}

/// Clicks every chart's PNG link (downloads suppressed) and checks the data URL is a PNG of the canvas.
fn check_downloads(session: &Session, prefix: &str) -> usize {
    session
        .execute(
            "window.addEventListener('click', e => { if (e.target.closest('.chart-download')) e.preventDefault(); }, true);",
            vec![],
        )
        .unwrap();
    let ids = session
        .execute(
            "return [...document.querySelectorAll('.chart canvas')].map(c => c.dataset.testid).filter(id => id.startsWith(arguments[0]));",
            vec![json!(prefix)],
        )
        .unwrap();
    let ids: Vec<String> = ids
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|v| v.as_str().map(str::to_string))
        .collect();
    for id in &ids {
        let link = page::download(id);
        session
            .execute(
                "document.querySelector(arguments[0]).scrollIntoView({block: 'center'});",
                vec![json!(link)],
            )
            .unwrap();
        session
            .click(&link)
            .unwrap_or_else(|e| panic!("click {link}: {e}"));
        let href = session.attr(&link, "href").unwrap().unwrap_or_default();
        let b64 = href
            .strip_prefix("data:image/png;base64,")
            .unwrap_or_else(|| panic!("{link}: href is not a PNG data URL: {:.60}", href));
        let png = base64_decode(b64).expect("base64 decodes");
        assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n", "{link}: PNG signature");
        assert_eq!(&png[12..16], b"IHDR");
        let w = u32::from_be_bytes([png[16], png[17], png[18], png[19]]);
        let h = u32::from_be_bytes([png[20], png[21], png[22], png[23]]);
        let size = session
            .execute(
                // The part on screen: the whole canvas, or the top the schedule grid shows of
                // its fixed backing store (charts::show_top), scaled to backing pixels.
                "const c = document.querySelector(arguments[0]); return [c.width, Math.min(c.height, Math.round(c.clientHeight * c.width / c.clientWidth))];",
                vec![json!(page::testid(id))],
            )
            .unwrap();
        assert_eq!(
            (u64::from(w), u64::from(h)),
            (size[0].as_u64().unwrap(), size[1].as_u64().unwrap()),
            "{link}: PNG size equals the canvas as shown"
        );
        assert!(w > 100 && h > 50, "{link}: {w}×{h}");
        let name = session.attr(&link, "download").unwrap().unwrap_or_default();
        assert_eq!(name, format!("meshplan-{id}.png"));
        println!("{id}: {w}×{h} PNG, {} bytes", png.len());
    }
    ids.len()
}

#[test]
#[ignore = "needs dist/ and chromedriver: run via `cargo xtask test`"]
fn every_chart_downloads_as_a_png() {
    let page = Page::start().expect("start server and chromedriver");
    let session = page.open("").expect("page loads");
    let mut total = check_downloads(&session, "chart-");
    for tab in TABS.iter().skip(1) {
        session.click(&page::learn_tab(tab)).unwrap();
        std::thread::sleep(Duration::from_millis(150));
        total += check_downloads(&session, "chart-teach-");
    }
    let unlinked = session
        .execute(
            "return document.querySelectorAll('.chart canvas').length - document.querySelectorAll('.chart .chart-download').length;",
            vec![],
        )
        .unwrap();
    assert_eq!(unlinked.as_i64(), Some(0), "every canvas has a PNG link");
    // Memory (2) + pipeline (2) + four collectives, then one on each other tab.
    assert!(total >= 14, "checked {total} chart downloads");
    println!("{total} chart PNG downloads checked");
    assert_no_console_errors(&session, "after PNG downloads");
}

fn shoot_tabs(session: &Session, prefix: &str) {
    for tab in TABS {
        session.click(&page::learn_tab(tab)).unwrap();
        std::thread::sleep(Duration::from_millis(300));
        session
            .element_screenshot(
                page::LEARN_VIEW,
                &screenshot_path(&format!("learn-{prefix}-{tab}")),
            )
            .unwrap();
    }
}

#[test]
#[ignore = "needs dist/ and chromedriver: run via `cargo xtask test`"]
fn screenshots_of_every_teaching_figure() {
    let page = Page::start().expect("start server and chromedriver");
    let session = page.open("").expect("page loads");
    session.set_window_size(1440, 2000).unwrap();
    shoot_tabs(&session, "default");
    // The article's 512-GPU mesh: TP 8 × PP 4 × CP 4 × DP 4.
    session.click(page::EXAMPLE_ARTICLE_MESH).unwrap();
    std::thread::sleep(Duration::from_millis(300));
    shoot_tabs(&session, "mesh");
    // Dark theme, as a user with a dark OS theme sees it.
    session
        .cdp(
            "Emulation.setEmulatedMedia",
            json!({ "features": [{ "name": "prefers-color-scheme", "value": "dark" }] }),
        )
        .unwrap();
    shoot_tabs(&session, "mesh-dark");
    assert_no_console_errors(&session, "while taking screenshots");
    drop(session);
    // A MoE model with expert parallelism: Mixtral 8×7B, EP 8 over DP 8.
    let mut moe = presets::default_scenario();
    moe.model = ModelChoice::Preset("mixtral-8x7b".into());
    moe.layout.tp = 1;
    moe.layout.dp = 64;
    moe.layout.ep = 8;
    let session = page.open(&link::encode(&moe)).expect("page loads");
    session.set_window_size(1440, 2000).unwrap();
    // The Learn section recomputes only near the screen: bring it there first.
    session
        .execute(
            &format!(
                "document.querySelector('{}').scrollIntoView(); return true;",
                page::LEARN_VIEW
            ),
            vec![],
        )
        .unwrap();
    let ep = figures(&moe).ep.expect("EP figure");
    session.click(page::LEARN_TAB_EP).unwrap();
    session
        .wait_text(page::EP_EXPERTS, SETTLE, |t| {
            t == format!("{} / {}", ep.experts, ep.top_k)
        })
        .expect("Mixtral's experts");
    session
        .wait_text(page::EP_DROPPED, SETTLE, |t| {
            t == format!("{} / {}", ep.dropped, ep.padded)
        })
        .expect("Mixtral's drops");
    println!(
        "Mixtral EP {}: {} tokens, capacity {}, dropped {}, padded {}",
        ep.ep, ep.tokens, ep.capacity, ep.dropped, ep.padded
    );
    shoot_tabs(&session, "mixtral");
    assert_no_console_errors(&session, "on a MoE layout");
}
