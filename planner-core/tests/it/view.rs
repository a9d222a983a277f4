//! The page's sections as `view` builds them: the pipeline view's caption and example,
//! and `page_views` agreeing with each section's own builder.

use planner_core::input::layout::Schedule;
use planner_core::resolve::presets::{article_mesh_scenario, default_scenario};
use planner_core::view::{page_views, pipeline};

#[test]
fn the_caption_names_the_stages_the_grid_leaves_out() {
    let mut s = default_scenario();
    s.layout.pp = 40;
    let note = pipeline::pipeline(&s).grid_note;
    assert!(
        note.ends_with(
            "Drawn: stages 1 to 8 and 33 to 40; stages 9 to 32 repeat the pattern one slot later each and are not drawn."
        ),
        "{note}"
    );
    assert_eq!(pipeline::elided_stages(40), Some((8, 24)));
    s.layout.pp = 16;
    assert!(!pipeline::pipeline(&s).grid_note.contains("not drawn"));
    assert_eq!(pipeline::elided_stages(16), None);
}

#[test]
fn without_a_pipeline_the_grid_and_curve_are_an_example_at_four_stages() {
    let mut s = default_scenario();
    s.layout.pp = 1;
    let v = pipeline::pipeline(&s);
    assert_eq!((v.stages, v.curve_stages), (1, 4));
    assert_eq!(v.bubble.idle_fraction, 0.0);
    assert!(v.curve.iter().any(|(_, b)| b.idle_fraction > 0.0));
    let forward = pipeline::forward_only_grid(&v).expect("4 × 4 forward pass");
    assert_eq!((forward.stages, forward.micro_batches), (4, 4));
}

#[test]
fn a_stale_virtual_stage_count_does_not_change_a_one_f_one_b_view() {
    // The old evaluate.rs passed `vpp` to every schedule: 1F1B's ops counted v times.
    let mut s = article_mesh_scenario();
    s.layout.schedule = Schedule::OneFOneB;
    let plain = pipeline::pipeline(&s);
    s.layout.virtual_stages = 4;
    let stale = pipeline::pipeline(&s);
    assert_eq!(plain, stale);
    assert_eq!(stale.virtual_stages, 1);
    let t = stale
        .grid
        .as_ref()
        .expect("16 micro-batches on 4 stages draw");
    assert_eq!(t.bubble(), stale.bubble);
}

#[test]
fn page_views_are_each_sections_own_builder() {
    let s = article_mesh_scenario();
    let all = page_views(&s);
    let model = s.model_spec().expect("preset model");
    assert_eq!(all.pipeline, pipeline::pipeline(&s));
    assert_eq!(
        all.memory.as_ref().ok(),
        Some(&planner_core::view::memory::memory(&s, &model))
    );
    assert_eq!(
        all.issues,
        planner_core::view::issues::issues(&s, &Ok(model.clone()))
    );
    let eval = planner_core::evaluate::evaluate(&s).expect("valid");
    let serving = all.serving.as_ref().expect("serving");
    let from_eval = eval.serving.as_ref().expect("serving");
    assert_eq!(serving.plan, from_eval.plan);
    assert_eq!(
        all.memory.as_ref().map(|m| m.current().clone()).ok(),
        Some(eval.training)
    );
    assert!(serde_json::to_string(&all).is_ok());
}
