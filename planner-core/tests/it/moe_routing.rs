//! MoE routing (input/moe_routing.rs): the busiest EP rank's load under dropless routing,
//! a capacity factor with and without padding, and a measured imbalance; what it scales in
//! step time (expert GEMMs, the EP all-to-all) and memory (the expert-side activations); the
//! link and the checks at the edge; and the grouped-GEMM evidence for the expert GEMM rate.

use planner_core::edges::link;
use planner_core::evaluate::evaluate;
use planner_core::input::gemm_efficiency::GemmEfficiency;
use planner_core::input::hardware::gpu_preset;
use planner_core::input::hardware::gpu_traits;
use planner_core::input::layout::Layout;
use planner_core::input::moe_routing::{sampling_floor, MoeRouting};
use planner_core::input::scenario::{ModelChoice, Scenario};
use planner_core::memory::activations::{layer_activations, ActivationSetup, LayerKind};
use planner_core::resolve::presets::{default_scenario, model_preset};
use planner_core::time::comms::Purpose;

#[test]
fn random_routing_puts_the_busiest_rank_at_the_gaussian_maximum() {
    // Mixtral-like: 4,096 tokens per rank, top-2, EP 8: n = 8,192 pairs per rank on average;
    // 1 + √(2 ln 8) · √((1 − 1/8)/8192) by hand.
    assert!((sampling_floor(8, 8192.0) - 1.021_076_447).abs() < 1e-8);
    // DeepSeek-V3-like: top-8 of 256 over EP 64, 4,096 tokens per rank.
    assert!((sampling_floor(64, 32768.0) - 1.015_807_336).abs() < 1e-8);
    // One rank holds every expert: nothing to wait for.
    assert_eq!(sampling_floor(1, 10.0), 1.0);
    // Fewer tokens, a larger relative excess.
    assert!(sampling_floor(8, 64.0) > sampling_floor(8, 8192.0));
}

#[test]
fn a_capacity_caps_the_load_and_padding_fixes_it() {
    let floor = sampling_floor(16, 1000.0);
    let dropless = MoeRouting::default();
    assert_eq!(dropless.busiest_rank_load(16, 1000.0), floor);
    let capped = MoeRouting {
        capacity_factor: Some(1.01),
        ..MoeRouting::default()
    };
    // The floor here is 1.09: a 1.01 capacity drops the excess.
    assert!(floor > 1.05);
    assert_eq!(capped.busiest_rank_load(16, 1000.0), 1.01);
    let wide = MoeRouting {
        capacity_factor: Some(2.0),
        ..MoeRouting::default()
    };
    assert_eq!(wide.busiest_rank_load(16, 1000.0), floor);
    let padded = MoeRouting {
        capacity_factor: Some(1.25),
        pad_to_capacity: true,
        measured_busiest_load: Some(3.0),
    };
    // Padded: every expert computes its whole capacity, whatever the router did, even at EP 1.
    assert_eq!(padded.busiest_rank_load(16, 1000.0), 1.25);
    assert_eq!(padded.busiest_rank_load(1, 1000.0), 1.25);
    let measured = MoeRouting {
        measured_busiest_load: Some(1.6),
        ..MoeRouting::default()
    };
    assert_eq!(measured.busiest_rank_load(16, 1000.0), 1.6);
    let measured_capped = MoeRouting {
        capacity_factor: Some(1.25),
        ..measured
    };
    assert_eq!(measured_capped.busiest_rank_load(16, 1000.0), 1.25);
}

/// Mixtral 8x7B on 64 H100s, EP 8, TP 2 with sequence parallelism, micro-batch 1 of 4,096.
fn mixtral(routing: MoeRouting) -> Scenario {
    let mut s = default_scenario();
    s.model = ModelChoice::Preset("mixtral-8x7b".into());
    s.cluster.nodes = 8;
    s.training.seq_len = 4096;
    s.training.global_batch = 256;
    s.layout = Layout {
        tp: 2,
        sequence_parallel: true,
        ep: 8,
        dp: 32,
        pp: 1,
        micro_batch: 1,
        ..s.layout.clone()
    };
    s.overheads.moe_routing = routing;
    s
}

fn padded(cf: f64) -> MoeRouting {
    MoeRouting {
        capacity_factor: Some(cf),
        pad_to_capacity: true,
        measured_busiest_load: None,
    }
}

#[test]
fn padding_to_capacity_scales_what_the_busiest_rank_receives_and_keeps() {
    let base = evaluate(&mixtral(padded(1.0))).expect("valid");
    let wide = evaluate(&mixtral(padded(1.5))).expect("valid");
    let a2a = |e: &planner_core::evaluate::Evaluation| {
        e.step
            .comms
            .iter()
            .find(|c| c.purpose == Purpose::EpDispatchCombine)
            .map(|c| c.message_bytes)
            .expect("an EP all-to-all")
    };
    // tokens 4096/2 (SP) · top-2 · h 4096 · 2 B at capacity 1.0, × 1.5 padded.
    assert_eq!(a2a(&base), 2048.0 * 2.0 * 4096.0 * 2.0);
    assert_eq!(a2a(&wide), 1.5 * a2a(&base));
    // The expert GEMMs run 1.5× the tokens (at a slightly better rate), so compute grows but
    // by less than the routed experts' share of it would at a fixed rate.
    assert!(wide.step.seconds.compute > base.step.seconds.compute);
    assert!(wide.step.seconds.total > base.step.seconds.total);
    // Model FLOPs count the routed tokens, not the padding: MFU falls.
    assert!(wide.step.mfu < base.step.mfu);
    // Memory: the expert-side activations of the busiest rank grow by half.
    let expert_bytes = |s: &Scenario| {
        let model = model_preset("mixtral-8x7b").expect("preset");
        let setup = ActivationSetup::new(
            &s.layout,
            &s.training,
            &s.activations,
            &s.precision,
            s.overheads.moe_routing,
            s.overheads.framework,
        );
        layer_activations(&model, LayerKind::Moe, &setup)
            .iter()
            .filter(|t| t.op == "moe.expert" || t.op == "moe.dispatch" || t.op == "moe.combine")
            .map(|t| t.bytes)
            .sum::<f64>()
    };
    let (b, w) = (
        expert_bytes(&mixtral(padded(1.0))),
        expert_bytes(&mixtral(padded(1.5))),
    );
    assert!(b > 0.0, "the expert tensors are listed");
    assert!((w / b - 1.5).abs() < 1e-9, "{w} / {b}");
    assert!(wide.training.peak_bytes > base.training.peak_bytes);
}

#[test]
fn dropless_routing_prices_the_sampling_floor_and_a_measured_load_above_it() {
    let dropless = evaluate(&mixtral(MoeRouting::default())).expect("valid");
    let measured = evaluate(&mixtral(MoeRouting {
        measured_busiest_load: Some(1.3),
        ..MoeRouting::default()
    }))
    .expect("valid");
    let balanced = evaluate(&mixtral(padded(1.0))).expect("valid");
    assert!(dropless.step.seconds.total > balanced.step.seconds.total);
    assert!(measured.step.seconds.total > dropless.step.seconds.total);
}

#[test]
fn routing_changes_nothing_for_a_dense_model() {
    let mut s = default_scenario();
    let a = evaluate(&s).expect("valid");
    s.overheads.moe_routing = padded(2.0);
    let b = evaluate(&s).expect("valid");
    assert_eq!(a.step.seconds.total, b.step.seconds.total);
    assert_eq!(a.training.peak_bytes, b.training.peak_bytes);
}

#[test]
fn the_link_carries_the_routing_and_the_edge_names_its_fields() {
    let s = mixtral(MoeRouting {
        capacity_factor: Some(1.25),
        pad_to_capacity: true,
        measured_busiest_load: Some(1.4),
    });
    let query = link::encode(&s);
    assert!(query.contains("moe_cf=1.25"), "{query}");
    assert!(query.contains("moe_pad=1"), "{query}");
    assert!(query.contains("moe_load=1.4"), "{query}");
    assert_eq!(link::decode(&query).expect("round trip"), s);
    // The default writes nothing.
    assert!(!link::encode(&mixtral(MoeRouting::default())).contains("moe_"));

    let fields = crate::models_validate::invalid_fields;
    let pad_alone = mixtral(MoeRouting {
        pad_to_capacity: true,
        ..MoeRouting::default()
    });
    assert_eq!(fields(&pad_alone), ["moe_pad"]);
    assert_eq!(fields(&mixtral(padded(0.0))), ["moe_cf"]);
    let under = mixtral(MoeRouting {
        measured_busiest_load: Some(0.5),
        ..MoeRouting::default()
    });
    assert_eq!(fields(&under), ["moe_load"]);
    assert!(link::decode(&format!("{query}&moe_cf=x")).is_err());
}

/// DeepGEMM's H800 FP8 grouped GEMMs (README at 327ec92, "Grouped GEMMs for MoE models"):
/// (M per group, N, K, TFLOP/s). The expert GEMMs are priced by the dense curve at the
/// tokens per expert; on these rows it lands within 30% everywhere and within 10% at the
/// median (the curve reads one dimension and cannot see the narrower K = 2048).
#[test]
fn the_gemm_curve_at_tokens_per_expert_tracks_deepgemms_grouped_gemms() {
    let rows = [
        (8192.0, 4096.0, 7168.0, 1346.0),
        (8192.0, 7168.0, 2048.0, 1214.0),
        (4096.0, 4096.0, 7168.0, 1346.0),
        (4096.0, 7168.0, 2048.0, 1214.0),
        (1024.0, 4096.0, 7168.0, 1233.0),
        (1024.0, 7168.0, 2048.0, 925.0),
        (512.0, 4096.0, 7168.0, 1040.0),
        (512.0, 7168.0, 2048.0, 916.0),
        (256.0, 4096.0, 7168.0, 932.0),
        (256.0, 7168.0, 2048.0, 815.0),
    ];
    let h800 = gpu_preset("h800").expect("preset");
    let curve = GemmEfficiency::default();
    let mut errors: Vec<f64> = rows
        .iter()
        .map(|&(m, n, k, measured): &(f64, f64, f64, f64)| {
            let share =
                curve.at(m.min(n).min(k)) * gpu_traits("h800").compute.fp8_gemm_relative_to_bf16;
            (share * h800.fp8_flops_per_s / 1e12 / measured - 1.0).abs()
        })
        .collect();
    errors.sort_by(f64::total_cmp);
    let median = (errors[4] + errors[5]) / 2.0;
    assert!(median <= 0.10, "{errors:?}");
    assert!(errors[9] <= 0.30, "{errors:?}");
}

#[test]
fn the_pages_choices_round_trip_and_keep_a_measured_load() {
    use planner_core::input::moe_routing::CHOICES;
    let measured = MoeRouting {
        measured_busiest_load: Some(1.3),
        ..MoeRouting::default()
    };
    for c in CHOICES {
        let r = measured.with_choice(c.id).expect("a listed choice");
        assert_eq!(r.choice_id(), Some(c.id));
        assert_eq!(r.measured_busiest_load, Some(1.3));
        // Padding only with a capacity factor, as the edge requires.
        assert!(
            !r.pad_to_capacity || r.capacity_factor.is_some(),
            "{}",
            c.id
        );
    }
    assert_eq!(MoeRouting::default().choice_id(), Some("dropless"));
    assert!(measured.with_choice("cf3").is_none());
    assert_eq!(padded(1.1).choice_id(), None);
}
