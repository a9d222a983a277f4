//! End-to-end: the fine-tuning mode control. Switching to QLoRA makes the memory view's
//! peak fall to the value planner-core computes natively for the same scenario.
//!
//! Ignored by a plain `cargo test` (needs `dist/` and chromedriver): `cargo xtask test`.

use std::time::{Duration, Instant};

use e2e::page;
use e2e::{assert_no_console_errors, screenshot_path, Page, Session};
use planner_core::edges::link;
use planner_core::input::finetune::FineTuneMode;
use planner_core::input::scenario::Scenario;
use planner_core::memory::training_memory::training_memory;

const SETTLE: Duration = Duration::from_secs(5);
/// Llama 3.1 8B on one node of 8 H100s, DP 8, ZeRO-1.
const QUERY: &str = "v=1&model=llama-3.1-8b&gpus=8&dp=8&tp=1&pp=1&zero=1";

fn peak_on_page(session: &Session) -> f64 {
    session
        .attr(page::PEAK_TOTAL_1, "data-bytes")
        .expect("read data-bytes")
        .and_then(|v| v.parse().ok())
        .expect("numeric data-bytes")
}

fn peak_native(s: &Scenario) -> f64 {
    let model = s.model_spec().expect("preset resolves");
    training_memory(s, &model).peak_bytes
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1.0)
}

fn wait_for_peak(session: &Session, want: f64) -> f64 {
    let deadline = Instant::now() + SETTLE;
    let mut got = peak_on_page(session);
    while !close(got, want) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
        got = peak_on_page(session);
    }
    got
}

#[test]
#[ignore = "needs dist/ and chromedriver: run via `cargo xtask test`"]
fn switching_to_qlora_drops_the_peak_to_the_planner_core_value() {
    let page = Page::start().expect("start server and chromedriver");
    let session = page.open(QUERY).expect("page loads");
    let mut s = link::decode(QUERY).expect("valid link");
    let full = wait_for_peak(&session, peak_native(&s));
    assert!(
        close(full, peak_native(&s)),
        "full fine-tuning peak: page {full}, planner-core {}",
        peak_native(&s)
    );

    session
        .set_value(page::INPUT_FT, "qlora")
        .expect("pick QLoRA");
    s.training.finetune.mode = FineTuneMode::Qlora;
    let want = peak_native(&s);
    let got = wait_for_peak(&session, want);
    assert!(
        close(got, want),
        "QLoRA peak: page {got}, planner-core {want}"
    );
    assert!(got < 0.5 * full, "QLoRA {got} vs full {full}");
    println!(
        "peak per GPU: full fine-tuning {full:.0} B → QLoRA {got:.0} B (planner-core {want:.0} B)"
    );

    // Rank and targets appear with the mode; all linear layers at r = 64 moves the peak again.
    session
        .set_value(page::INPUT_LORA_MOD, "q,k,v,o,gate,up,down")
        .expect("pick all linears");
    session
        .set_value(page::INPUT_LORA_R, "64")
        .expect("set the rank");
    s.training.finetune.lora.targets =
        planner_core::input::finetune::LoraTargets::from_flags([true; 7]);
    s.training.finetune.lora.rank = 64;
    let want = peak_native(&s);
    let got = wait_for_peak(&session, want);
    assert!(
        close(got, want),
        "QLoRA r=64 peak: page {got}, planner-core {want}"
    );

    // The link carries the mode.
    let deadline = Instant::now() + SETTLE;
    loop {
        let url = session.current_url().expect("url");
        if url.contains("ft=qlora") && url.contains("lora_r=64") {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "URL never showed the mode: {url}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    session.set_window_size(1440, 2600).expect("resize");
    std::thread::sleep(Duration::from_millis(300));
    session
        .element_screenshot(page::MEMORY_VIEW, &screenshot_path("memory-qlora"))
        .expect("screenshot");
    session
        .screenshot(&screenshot_path("page-qlora"))
        .expect("screenshot");
    assert_no_console_errors(&session, "after switching to QLoRA");
}
