//! End-to-end: the fine-tuning section. A QLoRA setup on a 24 GB card with a sequence too
//! long for it shows the fixes planner-core computes natively for the same scenario, in the
//! same order; applying the first makes it fit and moves the link; the time per epoch is
//! planner-core's; the torchtune and TRL exports carry the setup; the "Fine-tune" example
//! opens the setup from the first screen. Screenshots: finetune-setup.png, will-it-fit.png,
//! finetune-exports.png.
//!
//! Ignored by a plain `cargo test` (needs `dist/` and chromedriver): `cargo xtask test`.

use std::time::Duration;

use e2e::page;
use e2e::{assert_no_console_errors, screenshot_path, strings, Page, Session};
use planner_core::edges::link;
use planner_core::input::scenario::Scenario;
use planner_core::view::fit::{fit_view, Dataset, FitView};
use serde_json::json;

const SETTLE: Duration = Duration::from_secs(10);

/// The fine-tuning preset (Llama 3.1 8B QLoRA, all linear layers, r = 16) on a custom 24 GB
/// card, at 4,096 tokens without recompute: over the card by the memory model.
fn query() -> String {
    let mut s = planner_core::view::presets::finetune_scenario();
    s.cluster.gpu.id = "custom-24gb".to_string();
    s.cluster.gpu.name = "24 GB card (custom)".to_string();
    s.cluster.gpu.memory_bytes = 24e9;
    s.cluster.gpu.datasheet_memory_bytes = 24e9;
    s.training.seq_len = 4096;
    s.layout.recompute = planner_core::input::layout::Recompute::None;
    link::encode(&s)
}

/// [`query`]'s card with LoRA (BF16 base) at 4,096 tokens without recompute: no single change
/// fits, so the answer is the greedy combination (the search's slowest path).
fn combination_query() -> String {
    let mut s = link::decode(&query()).expect("valid link");
    s.training.finetune.mode = planner_core::input::finetune::FineTuneMode::Lora;
    s.training.seq_len = 4096;
    link::encode(&s)
}

fn native(s: &Scenario) -> FitView {
    let model = s.model_spec().expect("preset resolves");
    fit_view(s, &model, Some(Dataset::Tokens { tokens: 1e7 }))
}

fn fix_ids_on_page(session: &Session) -> Vec<String> {
    let v = session
        .execute(
            "return Array.from(document.querySelectorAll(arguments[0])).map(e => e.dataset.fixId);",
            vec![json!(page::FIT_FIX)],
        )
        .expect("read fixes");
    strings(&v)
}

#[test]
#[ignore = "needs dist/ and chromedriver: run via `cargo xtask test`"]
fn too_long_a_sequence_lists_planner_cores_fixes_and_applying_one_fits() {
    let page = Page::start().expect("start server and chromedriver");
    let q = query();
    let session = page.open(&q).expect("page loads");
    let s = link::decode(&q).expect("valid link");
    let want = native(&s);
    let report = want.report.as_ref().expect("valid scenario");
    assert!(!report.current.fits && !want.fixes.is_empty());
    session
        .wait_text(page::FIT_CURRENT, SETTLE, |t| t.contains("does not fit"))
        .expect("the section says it does not fit");
    let ids: Vec<String> = want.fixes.iter().map(|f| f.id.clone()).collect();
    assert_eq!(
        fix_ids_on_page(&session),
        ids,
        "fixes on the page vs planner-core"
    );
    let mbs = session.text(page::FIT_MAX_SEQ).expect("longest sequence");
    let longest = report.max_seq_len.expect("some sequence fits");
    assert!(mbs.contains(&format!("{longest} tokens")), "{mbs}");

    session.set_window_size(1440, 2200).expect("resize");
    session.reveal(page::FINETUNE_VIEW).expect("reveal");
    std::thread::sleep(Duration::from_millis(300));
    session
        .element_screenshot(page::FINETUNE_SETUP, &screenshot_path("finetune-setup"))
        .expect("screenshot");
    session
        .element_screenshot(page::FINETUNE_VIEW, &screenshot_path("will-it-fit"))
        .expect("screenshot");

    // Apply the cheapest fix: the page takes planner-core's fixed scenario, which fits.
    session.click(page::FIT_APPLY_0).expect("apply");
    session
        .wait_text(page::FIT_CURRENT, SETTLE, |t| t.contains(": fits"))
        .expect("fits after the fix");
    let fixed = want.fixes[0].scenario.clone();
    let fixed_query = link::encode(&fixed);
    let url = session
        .wait_for_url(&fixed_query, SETTLE)
        .expect("the link carries the fixed scenario");
    assert!(url.ends_with(&fixed_query), "{url}");
    // Ten million packed tokens: planner-core's steps for the fixed scenario.
    let epoch = native(&fixed)
        .epoch
        .expect("dataset given")
        .expect("packed tokens");
    session
        .wait_text(page::EPOCH_TIME, SETTLE, |t| {
            t.starts_with(&format!("{} steps", epoch.steps))
        })
        .expect("epoch steps");

    // The exports carry the setup.
    let torchtune = session
        .text(&page::export_text("torchtune"))
        .expect("torchtune export");
    assert!(torchtune.contains("qlora_llama3_1_8b"), "{torchtune}");
    let trl = session.text(&page::export_text("trl")).expect("trl export");
    assert!(
        trl.contains("BitsAndBytesConfig(load_in_4bit=True"),
        "{trl}"
    );
    session
        .element_screenshot(
            &page::export_text("trl"),
            &screenshot_path("finetune-exports"),
        )
        .expect("screenshot");

    let ms = session
        .execute(
            "return [window.__meshplanMs?.fit ?? 0, window.__meshplanRuns?.fit ?? 0];",
            vec![],
        )
        .expect("timing");
    println!("fit view in wasm: {ms} (total ms, runs)");
    assert_no_console_errors(&session, "after applying a fix");
}

#[test]
#[ignore = "needs dist/ and chromedriver: run via `cargo xtask test`"]
fn the_fine_tune_example_opens_the_setup_in_one_click() {
    let page = Page::start().expect("start server and chromedriver");
    let session = page.open("").expect("page loads");
    session
        .click(page::EXAMPLE_FINETUNE)
        .expect("click the example");
    session
        .wait_for_url("ft=qlora", SETTLE)
        .expect("the link carries the fine-tuning setup");
    session
        .wait_text(page::FINETUNE_SETUP, SETTLE, |t| t.contains("QLoRA"))
        .expect("setup shows QLoRA");
    assert_eq!(
        session.attr(page::INPUT_PACK, "type").expect("pack toggle"),
        Some("checkbox".to_string())
    );
    assert_no_console_errors(&session, "after the fine-tune example");
}

#[test]
#[ignore = "needs dist/ and chromedriver: run via `cargo xtask test`"]
fn a_combination_is_listed_as_planner_core_finds_it_and_timed() {
    let page = Page::start().expect("start server and chromedriver");
    let q = combination_query();
    let session = page.open(&q).expect("page loads");
    let want = native(&link::decode(&q).expect("valid link"));
    assert_eq!(want.fixes.len(), 1, "one greedy combination");
    assert!(want.fixes[0].fix.changes.len() > 1);
    session
        .wait_text(page::FIT_CURRENT, SETTLE, |t| t.contains("does not fit"))
        .expect("the section says it does not fit");
    assert_eq!(fix_ids_on_page(&session), vec![want.fixes[0].id.clone()]);
    let ms = session
        .execute(
            "return [window.__meshplanMs?.fit ?? 0, window.__meshplanRuns?.fit ?? 0];",
            vec![],
        )
        .expect("timing");
    println!("fit view with a greedy combination in wasm: {ms} (total ms, runs)");
    assert_no_console_errors(&session, "with a combination listed");
}
