//! End-to-end: the offload control. Picking ZeRO-Offload drops the memory view's peak to
//! the value planner-core computes natively, and the host-memory table shows the node's
//! total as planner-core's term gives it.
//!
//! Ignored by a plain `cargo test` (needs `dist/` and chromedriver): `cargo xtask test`.

use std::time::{Duration, Instant};

use e2e::{assert_no_console_errors, screenshot_path, Session};
use planner_core::edges::link;
use planner_core::input::offload::Offload;
use planner_core::input::scenario::Scenario;
use planner_core::memory::training_memory::training_memory;

const SETTLE: Duration = Duration::from_secs(5);
/// Llama 3.1 70B on 8 nodes of 8 H100s, TP 8 × DP 8, ZeRO-3.
const QUERY: &str = "v=1&model=llama-3.1-70b&zero=3";

fn bytes_on_page(session: &Session, css: &str) -> Option<f64> {
    session
        .attr(css, "data-bytes")
        .ok()
        .flatten()
        .and_then(|v| v.parse().ok())
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1.0)
}

fn wait_for(session: &Session, css: &str, want: f64) -> Option<f64> {
    let deadline = Instant::now() + SETTLE;
    loop {
        let got = bytes_on_page(session, css);
        if got.is_some_and(|g| close(g, want)) || Instant::now() >= deadline {
            return got;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
#[ignore = "needs dist/ and chromedriver: run via `cargo xtask test`"]
fn zero_offload_lowers_the_peak_and_shows_host_memory() {
    let page = e2e::Page::start().expect("start server and chromedriver");
    let session = page.open(QUERY).expect("page loads");
    let mut s: Scenario = link::decode(QUERY).expect("valid link");
    let model = s.model_spec().expect("preset resolves");
    let before = training_memory(&s, &model).peak_bytes;
    let got = wait_for(&session, "[data-testid=peak-total-3]", before);
    assert!(
        got.is_some_and(|g| close(g, before)),
        "no offload: page {got:?}, planner-core {before}"
    );

    session
        .set_value("[data-testid=input-offload]", "opt-cpu")
        .expect("pick ZeRO-Offload");
    s.training.offload = Offload::OptimizerCpu;
    let mem = training_memory(&s, &model);
    let got = wait_for(&session, "[data-testid=peak-total-3]", mem.peak_bytes);
    assert!(
        got.is_some_and(|g| close(g, mem.peak_bytes)),
        "offload peak: page {got:?}, planner-core {}",
        mem.peak_bytes
    );
    assert!(mem.peak_bytes < before);
    let host = mem.host.expect("host memory");
    let css = "[data-testid='host-term-host.ram_per_node']";
    let got = wait_for(&session, css, host.ram_bytes_per_node);
    assert!(
        got.is_some_and(|g| close(g, host.ram_bytes_per_node)),
        "host RAM per node: page {got:?}, planner-core {}",
        host.ram_bytes_per_node
    );
    println!(
        "peak per GPU {before:.0} B → {:.0} B with ZeRO-Offload; host {:.0} B per node of {:.0} B",
        mem.peak_bytes, host.ram_bytes_per_node, host.node_ram_bytes
    );

    // The link carries the choice.
    session
        .wait_for_url("offload=opt-cpu", SETTLE)
        .expect("URL shows offload");
    session.set_window_size(1440, 2600).expect("resize");
    std::thread::sleep(Duration::from_millis(300));
    session
        .element_screenshot(
            "[data-testid=memory-view]",
            &screenshot_path("memory-offload"),
        )
        .expect("screenshot");
    assert_no_console_errors(&session, "after picking offload");
}
