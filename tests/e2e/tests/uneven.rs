//! End-to-end test of the stage-split control: choosing Llama 3 405B's PP 16 split (7 layers
//! on the first and last stage) in the layout inputs shows, in the pipeline view, the split
//! and the pacing stage planner-core computes natively, and the share link carries it.
//!
//! Ignored by a plain `cargo test`: it needs `dist/` (trunk build --release) and
//! chromedriver. Run:
//! `MESHPLAN_DIST=$PWD/dist CHROMEDRIVER=/usr/bin/chromedriver cargo test -p e2e --test uneven -- --ignored --test-threads=1 --nocapture`.

use std::time::Duration;

use e2e::page;
use e2e::{assert_no_console_errors, Page};
use planner_core::edges::link;
use planner_core::input::hardware::Cluster;
use planner_core::input::layout::StageSplit;
use planner_core::input::scenario::ModelChoice;
use planner_core::resolve::presets;
use planner_core::view::pipeline::stage_split_view;

const SETTLE: Duration = Duration::from_secs(10);

#[test]
#[ignore = "needs dist/ and chromedriver: run via `cargo xtask test`"]
fn choosing_an_uneven_split_shows_planner_cores_stages() {
    let page = Page::start().expect("start server and chromedriver");
    // 405B on 256 nodes of 8 H100: TP 8 × PP 16 × DP 16 (126 layers do not split over 16).
    let mut sc = presets::article_mesh_scenario();
    sc.model = ModelChoice::Preset("llama-3.1-405b".into());
    sc.cluster = Cluster {
        nodes: 256,
        ..sc.cluster
    };
    sc.training.seq_len = 8192;
    sc.training.global_batch = 256;
    sc.layout.tp = 8;
    sc.layout.pp = 16;
    sc.layout.cp = 1;
    sc.layout.dp = 16;
    sc.layout.virtual_stages = 1;
    sc.layout.schedule = planner_core::input::layout::Schedule::OneFOneB;
    let session = page.open(&link::encode(&sc)).expect("page loads");
    session.set_window_size(1440, 1400).unwrap();

    // The control offers the split; choose it as a person would.
    session
        .set_value(page::INPUT_SPLIT, "fl:7:7")
        .expect("split select");
    let mut want = sc.clone();
    want.layout.stage_split = StageSplit::FirstLast {
        first: Some(7),
        last: Some(7),
    };
    let model = want.model_spec().expect("preset");
    let view = stage_split_view(&model, &want).expect("a valid uneven split");
    let layers: Vec<String> = view.layers_per_stage.iter().map(u32::to_string).collect();
    let expected = format!(
        "{}; layers per stage {}",
        view.description,
        layers.join(" ")
    );
    let shown = session
        .wait_text(page::PIPELINE_SPLIT, SETTLE, |t| !t.is_empty())
        .expect("the pipeline view shows the split");
    assert_eq!(shown, expected);
    assert!(
        shown.ends_with("7 8 8 8 8 8 8 8 8 8 8 8 8 8 8 7"),
        "{shown}"
    );
    let pace = session.text(page::PIPELINE_SPLIT_PACE).unwrap();
    assert_eq!(
        pace,
        format!(
            "stage {} sets the pace: {:.3} × the average stage's layers",
            view.pacing_stage, view.pacing_layer_scale
        )
    );
    assert_eq!(view.pacing_stage, 1);
    // The share link carries it, once the inputs have been still for the URL's settle time
    // (app/src/share.rs URL_SETTLE): reading the URL at once raced it.
    session
        .wait_for_url("split=fl", SETTLE)
        .expect("the share link carries the split");
    assert_no_console_errors(&session, "after choosing a stage split");
}
