//! End-to-end test of the step-time choices in the layout inputs: kernels and the overlap
//! switches. Choosing a value as a person would moves the step time to planner-core's native
//! figure for that scenario, each default's option names what the framework's default
//! resolves to, and the share link carries the choice.
//!
//! Ignored by a plain `cargo test`: it needs `dist/` (trunk build --release) and
//! chromedriver. Run:
//! `MESHPLAN_DIST=$PWD/dist CHROMEDRIVER=/usr/bin/chromedriver cargo test -p e2e --test step_choices -- --ignored --test-threads=1 --nocapture`.

use std::time::{Duration, Instant};

use e2e::page;
use e2e::{assert_no_console_errors, screenshot_path, Page, Session};
use planner_core::edges::link;
use planner_core::input::kernels::Kernels;
use planner_core::input::overlap::{OverlapChoice, Switch};
use planner_core::input::scenario::Scenario;
use planner_core::resolve::presets;
use planner_core::time::cost::{evaluate_scenario, CostOptions};
use serde_json::json;

const SETTLE: Duration = Duration::from_secs(10);

fn step_s(s: &Scenario) -> f64 {
    evaluate_scenario(s, CostOptions::default(), None)
        .expect("a valid scenario")
        .seconds
        .total
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * b.abs()
}

/// Polls the measured view's step time (`data-seconds`) until it equals `want`.
fn wait_step(session: &Session, want: f64) -> f64 {
    let deadline = Instant::now() + SETTLE;
    loop {
        let got: f64 = session
            .attr(page::STEP_TIME, "data-seconds")
            .expect("the step time")
            .and_then(|v| v.parse().ok())
            .unwrap_or(f64::NAN);
        if close(got, want) || Instant::now() > deadline {
            return got;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The text of `select`'s option `value`.
fn option_text(session: &Session, select: &str, value: &str) -> String {
    session
        .execute(
            "const o = document.querySelector(arguments[0] + ' option[value=\"' + arguments[1] + '\"]'); return o ? o.textContent : null;",
            vec![json!(select), json!(value)],
        )
        .expect("query the option")
        .as_str()
        .unwrap_or_default()
        .to_string()
}

/// One choice the test makes: the control, its link parameter, the value picked, and what
/// it sets in the native scenario.
struct Choice {
    css: &'static str,
    param: &'static str,
    value: &'static str,
    apply: fn(&mut Scenario),
}

#[test]
#[ignore = "needs dist/ and chromedriver: run via `cargo xtask test`"]
fn kernel_and_overlap_choices_move_the_step_time_to_planner_cores() {
    let page = Page::start().expect("start server and chromedriver");
    // The article's 512-GPU mesh (TP 8 × PP 4 × CP 4 × DP 4): TP, gradient and parameter
    // collectives all run, so each switch moves the step time.
    let sc = presets::article_mesh_scenario();
    let session = page.open(&link::encode(&sc)).expect("page loads");
    session.set_window_size(1440, 1400).unwrap();
    let loaded = wait_step(&session, step_s(&sc));
    assert!(close(loaded, step_s(&sc)), "{loaded} vs {}", step_s(&sc));

    // Each default names what the scenario's framework resolves it to.
    let fw = sc.overheads.framework;
    let applied = OverlapChoice::default().applied(fw);
    let resolved = |on: bool| if on { "overlapped" } else { "not overlapped" };
    for (css, on) in [
        (page::INPUT_OV_TP, applied.tp_comm),
        (page::INPUT_OV_GRAD, applied.grad_reduce),
        (page::INPUT_OV_PARAM, applied.param_gather),
        (page::INPUT_OV_EP, applied.ep_comm),
    ] {
        let text = option_text(&session, css, "default");
        assert!(
            text.starts_with(&format!("Default: {} (", resolved(on))),
            "{css}: {text:?}"
        );
    }
    let kernels_text = option_text(&session, page::INPUT_KERNELS, "default");
    assert!(
        kernels_text.starts_with(&format!(
            "Default: {} (",
            Kernels::FrameworkDefault.applied(fw).label()
        )),
        "{kernels_text:?}"
    );

    let choices = [
        Choice {
            css: page::INPUT_KERNELS,
            param: "kernels",
            value: "eager",
            apply: |s| s.overheads.kernels = Kernels::Eager,
        },
        Choice {
            css: page::INPUT_OV_TP,
            param: "ov_tp",
            value: "on",
            apply: |s| s.overheads.overlap.tp_comm = Switch::On,
        },
        Choice {
            css: page::INPUT_OV_GRAD,
            param: "ov_grad",
            value: "off",
            apply: |s| s.overheads.overlap.grad_reduce = Switch::Off,
        },
        Choice {
            css: page::INPUT_OV_PARAM,
            param: "ov_param",
            value: "off",
            apply: |s| s.overheads.overlap.param_gather = Switch::Off,
        },
    ];
    let mut want = sc.clone();
    for c in &choices {
        let before = step_s(&want);
        (c.apply)(&mut want);
        let after = step_s(&want);
        session.set_value(c.css, c.value).expect("choose the value");
        let shown = wait_step(&session, after);
        println!(
            "{}={}: step {before:.6} s → {after:.6} s (planner-core), page {shown:.6} s",
            c.param, c.value
        );
        assert!(
            close(shown, after),
            "{}={}: page {shown} vs planner-core {after}",
            c.param,
            c.value
        );
        assert!(
            !close(before, after),
            "{}={} does not move this scenario's step time: the check would be vacuous",
            c.param,
            c.value
        );
        // The share link carries it, once the inputs have been still for the URL's settle
        // time (app/src/share.rs URL_SETTLE).
        let url = session
            .wait_for_url(&format!("{}={}", c.param, c.value), SETTLE)
            .expect("the share link carries the choice");
        let query = url.split_once('?').map_or("", |(_, q)| q);
        let decoded = link::decode(query).expect("the share link decodes");
        assert_eq!(decoded.overheads.kernels, want.overheads.kernels);
        assert_eq!(decoded.overheads.overlap, want.overheads.overlap);
    }
    // The controls as chosen (a picture for the reader, under target/screenshots).
    let fieldset = session
        .execute(
            "const e = document.querySelector(arguments[0]); const f = e && e.closest('fieldset'); if (f) { f.setAttribute('data-shot', 'step-choices'); f.scrollIntoView({block: 'start'}); } return f !== null;",
            vec![json!(page::INPUT_KERNELS)],
        )
        .expect("find the controls' fieldset");
    if fieldset == json!(true) {
        session
            .element_screenshot(
                "fieldset[data-shot=step-choices]",
                &screenshot_path("step-time-choices"),
            )
            .expect("screenshot of the controls");
    }
    assert_no_console_errors(&session, "after the kernel and overlap choices");
}

/// The MoE routing choice: a capacity factor with padding moves an MoE model's step time to
/// planner-core's figure for it, and the share link carries it as `moe_cf` and `moe_pad`.
#[test]
#[ignore = "needs dist/ and chromedriver: run via `cargo xtask test`"]
fn moe_routing_choice_moves_the_step_time_and_the_link() {
    use planner_core::input::moe_routing::MoeRouting;
    let page = Page::start().expect("start server and chromedriver");
    // Mixtral 8x7B on 64 H100s with EP 8: the all-to-all and the expert GEMMs run at the
    // busiest rank's load.
    let mut sc = presets::mesh_scenario("mixtral-8x7b", 8, 4096, 256);
    sc.layout.tp = 2;
    sc.layout.pp = 1;
    sc.layout.cp = 1;
    sc.layout.dp = 32;
    sc.layout.ep = 8;
    sc.layout.virtual_stages = 1;
    sc.layout.schedule = planner_core::input::layout::Schedule::OneFOneB;
    sc.layout.sequence_parallel = true;
    sc.validate().expect("a valid scenario");
    let session = page.open(&link::encode(&sc)).expect("page loads");
    session.set_window_size(1440, 1400).unwrap();
    let loaded = wait_step(&session, step_s(&sc));
    assert!(close(loaded, step_s(&sc)), "{loaded} vs {}", step_s(&sc));
    assert_eq!(
        session
            .value(page::INPUT_MOE_CF)
            .expect("the routing choice"),
        json!("dropless")
    );

    let mut want = sc.clone();
    want.overheads.moe_routing = MoeRouting {
        capacity_factor: Some(1.25),
        pad_to_capacity: true,
        measured_busiest_load: None,
    };
    let (before, after) = (step_s(&sc), step_s(&want));
    assert!(
        after > before * 1.01,
        "{before} → {after}: padding must cost"
    );
    session
        .set_value(page::INPUT_MOE_CF, "cf1.25-pad")
        .expect("choose the routing");
    let shown = wait_step(&session, after);
    println!("moe routing cf1.25-pad: step {before:.6} s → {after:.6} s (planner-core), page {shown:.6} s");
    assert!(close(shown, after), "page {shown} vs planner-core {after}");
    let url = session
        .wait_for_url("moe_cf=1.25", SETTLE)
        .expect("the share link carries the capacity factor");
    let query = url.split_once('?').map_or("", |(_, q)| q);
    let decoded = link::decode(query).expect("the share link decodes");
    assert_eq!(decoded.overheads.moe_routing, want.overheads.moe_routing);

    assert_no_console_errors(&session, "after the MoE routing choice");
}
