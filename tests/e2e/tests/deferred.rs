//! The deferred sections (topology, learn, model import, measured numbers, exports) come
//! in their own wasm module, imported by the page once its first chart is drawn
//! (`app/src/deferred.rs`). These tests check the two modules hold one scenario, that the
//! second download waits for the first chart, and that a module that fails to load
//! costs those sections only.

use std::time::Duration;

use e2e::page;
use e2e::{assert_no_console_errors, Page};
use planner_core::edges::export::exports;
use planner_core::edges::link;
use planner_core::resolve::presets;
use serde_json::json;

const WAIT: Duration = Duration::from_secs(20);

/// Waits until the Megatron-LM export's text (its `textContent`, as written) is `want`.
fn wait_megatron_export(session: &e2e::Session, want: &str, what: &str) {
    let deadline = std::time::Instant::now() + WAIT;
    let mut last = json!(null);
    while std::time::Instant::now() < deadline {
        last = session
            .execute(
                "const pre = document.querySelector(arguments[0]); return pre ? pre.textContent : null;",
                vec![json!(page::export_text("megatron"))],
            )
            .expect("read the export");
        if last.as_str() == Some(want) {
            return;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("{what}: the Megatron-LM export is {last}, planner-core writes {want:?}");
}

/// The Megatron-LM export as planner-core writes it for `s`.
fn megatron_export(s: &planner_core::input::scenario::Scenario) -> String {
    let model = s.model_spec().expect("preset model");
    exports(s, &model)
        .into_iter()
        .find(|e| e.id == "megatron")
        .expect("a Megatron-LM export")
        .text
}

#[test]
#[ignore = "needs dist/ and chromedriver: run via `cargo xtask test`"]
fn deferred_sections_load_after_the_first_chart_and_follow_the_page() {
    let page = Page::start().expect("start server and chromedriver");
    let mesh = presets::article_mesh_scenario();
    let session = page.open(&link::encode(&mesh)).expect("open");

    // The second module's request starts after the page's first chart was drawn.
    let timing = session
        .execute(
            "const chart = performance.getEntriesByName('meshplan:first-chart')[0];
             const wasm = performance.getEntriesByType('resource')
               .find(r => r.name.endsWith('/app-deferred_bg.wasm'));
             const first = performance.getEntriesByType('resource')
               .find(r => /\\/app-[0-9a-f]+_bg\\.wasm$/.test(r.name));
             return { chart: chart ? chart.startTime : null,
                      deferred: wasm ? wasm.startTime : null,
                      page: first ? first.startTime : null };",
            vec![],
        )
        .expect("read the timeline");
    let chart = timing["chart"].as_f64().expect("a first-chart mark");
    let deferred = timing["deferred"]
        .as_f64()
        .expect("the deferred module was fetched");
    assert!(
        timing["page"].as_f64().is_some(),
        "the page's own module is in the timeline: {timing}"
    );
    assert!(
        deferred >= chart,
        "the deferred module was requested at {deferred:.1} ms, before the first chart at {chart:.1} ms"
    );
    println!(
        "DEFERRED MODULE: first chart at {chart:.1} ms, deferred module requested at {deferred:.1} ms"
    );

    // Page → deferred: the link the page opened reaches the exports.
    session
        .reveal(page::EXPORTS_VIEW)
        .expect("scroll to the exports");
    wait_megatron_export(
        &session,
        &megatron_export(&mesh),
        "the exports show the opened link's layout",
    );

    // A page control changes the scenario: the exports follow.
    session
        .click(page::EXAMPLE_DEFAULT)
        .expect("click the default example");
    wait_megatron_export(
        &session,
        &megatron_export(&presets::default_scenario()),
        "the exports follow the page's scenario",
    );
    assert_no_console_errors(&session, "across the page and the deferred sections");
}

#[test]
#[ignore = "needs dist/ and chromedriver: run via `cargo xtask test`"]
fn a_deferred_module_that_fails_to_load_says_so_and_the_page_still_works() {
    let page = Page::start().expect("start server and chromedriver");
    let session = page.session().expect("browser");
    session.set_window_size(1440, 1100).expect("window size");
    session
        .cdp("Network.enable", json!({}))
        .expect("network domain");
    session
        .cdp(
            "Network.setBlockedURLs",
            json!({ "urls": ["*app-deferred_bg.wasm"] }),
        )
        .expect("block the deferred module");
    session.goto(&page.url()).expect("navigate");
    session
        .wait_text(page::STATE_TOTAL_3, WAIT, |t| t.ends_with('B'))
        .expect("the page's own views draw");
    let note = session
        .wait_text(page::DEFERRED_VIEWS, WAIT, |t| {
            t.contains("could not be loaded")
        })
        .expect("the container says the sections could not load");
    assert!(note.contains("Reload"), "{note}");
    assert_eq!(
        session
            .attr(page::DEFERRED_VIEWS, "data-ready")
            .expect("read")
            .as_deref(),
        Some("failed")
    );

    // The page's controls and views go on without the deferred sections.
    let before = session.text(page::STATE_TOTAL_3).expect("read");
    session
        .click(page::EXAMPLE_ARTICLE_70B)
        .expect("click an example");
    session
        .wait_text(page::STATE_TOTAL_3, WAIT, |t| t != before)
        .expect("the memory view follows the example");
}
