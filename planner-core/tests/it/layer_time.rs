//! One decoder layer's forward + backward time (time/layer_time.rs): the marginal layer of the
//! step model, checked for what a leak of per-step terms into it would break.

use planner_core::input::layout::{Layout, Recompute};
use planner_core::input::model::ModelSpec;
use planner_core::input::scenario::Scenario;
use planner_core::resolve::presets::model_preset;
use planner_core::time::cost::CostOptions;
use planner_core::time::layer_time::{decoder_layer_seconds, LayerTimeError};

/// Llama 3.1 70B on one node of H100 SXM at 4,096 tokens (cost.rs's scenario).
fn scenario(layout: Layout, global_batch: u32) -> Scenario {
    super::cost::scenario("llama-3.1-70b", 1, 4096, global_batch, layout)
}

fn tp8(recompute: Recompute) -> Layout {
    Layout {
        tp: 8,
        micro_batch: 2,
        recompute,
        sequence_parallel: true,
        ..Layout::default()
    }
}

fn layer(model: &ModelSpec, layout: Layout, global_batch: u32) -> f64 {
    let sc = scenario(layout, global_batch);
    decoder_layer_seconds(model, &sc, &sc.layout, CostOptions::default())
        .expect("priced")
        .fwd_bwd_seconds
}

#[test]
fn a_layer_costs_the_same_in_a_shallow_and_a_deep_model() {
    // The LM head, embedding and loss are per model, not per layer: if any leaked into the
    // marginal layer, a 20-layer model's layer would differ from an 80-layer one's.
    let deep = model_preset("llama-3.1-70b").expect("preset");
    let mut shallow = deep.clone();
    shallow.layers = 20;
    let (d, s) = (
        layer(&deep, tp8(Recompute::None), 2),
        layer(&shallow, tp8(Recompute::None), 2),
    );
    assert!(d > 0.0);
    assert!((d / s - 1.0).abs() < 1e-9, "{d} vs {s}");
}

#[test]
fn a_layer_is_priced_per_micro_batch() {
    // Eight micro-batches per step take eight times one micro-batch's layer time.
    let m = model_preset("llama-3.1-70b").expect("preset");
    let one = layer(&m, tp8(Recompute::None), 2);
    let eight = layer(&m, tp8(Recompute::None), 16);
    assert!((one / eight - 1.0).abs() < 1e-9, "{one} vs {eight}");
}

#[test]
fn recompute_adds_to_the_backward_in_korthikantis_order() {
    // Korthikanti et al. 2022 Table 4: none < selective < full.
    let m = model_preset("llama-3.1-70b").expect("preset");
    let price = |r: Recompute| {
        let sc = scenario(tp8(r), 2);
        decoder_layer_seconds(&m, &sc, &sc.layout, CostOptions::default()).expect("priced")
    };
    let (none, sel, full) = (
        price(Recompute::None),
        price(Recompute::Selective),
        price(Recompute::Full),
    );
    assert_eq!(none.recompute_seconds, 0.0);
    assert!(sel.recompute_seconds > 0.0 && sel.recompute_seconds < full.recompute_seconds);
    assert!(none.fwd_bwd_seconds < sel.fwd_bwd_seconds);
    assert!(sel.fwd_bwd_seconds < full.fwd_bwd_seconds);
    // Full recompute also repeats the layer's forward TP collectives (comms.rs TpRecompute).
    assert!(full.exposed_comm_seconds > none.exposed_comm_seconds);
    assert!(
        none.exposed_comm_seconds > 0.0,
        "TP 8 communicates inside the layer"
    );
}

#[test]
fn a_pipelined_layout_or_a_one_layer_model_is_refused_by_name() {
    let m = model_preset("llama-3.1-70b").expect("preset");
    let piped = Layout {
        pp: 4,
        ..tp8(Recompute::None)
    };
    let sc = scenario(piped, 8);
    let e = decoder_layer_seconds(&m, &sc, &sc.layout, CostOptions::default()).expect_err("pp");
    assert_eq!(e, LayerTimeError::Pipelined(4));
    assert!(e.to_string().contains("pp = 4"));
    let mut one = m.clone();
    one.layers = 1;
    let sc = scenario(tp8(Recompute::None), 2);
    let e = decoder_layer_seconds(&one, &sc, &sc.layout, CostOptions::default())
        .expect_err("one layer");
    assert_eq!(e, LayerTimeError::TooFewLayers(1));
}
