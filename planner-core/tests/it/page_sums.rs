//! The sums the page used to work out itself, now in planner-core: the memory
//! view's categories, totals, legend and usable share (`memory_summary`), the
//! teaching drawings' durations and held bytes (`teaching_sums`), and the
//! measured view's step times (`calibrated_step`).

use planner_core::base::explain::Term;
use planner_core::edges::import_sniff::{fit_measurements, read_measurements, NcclContext};
use planner_core::figures::memory_summary::{
    is_model_state, is_sharded, legend, other_bytes, other_terms, peak_terms, stacked_bar_bytes,
    usable_fraction, TermCategory,
};
use planner_core::figures::teaching::{fsdp_lanes, FsdpLane, HeldMemory, LaneBar};
use planner_core::input::layout::ZeroStage;
use planner_core::input::scenario::Measured;
use planner_core::memory::state_terms::model_state_for;
use planner_core::memory::training_memory::{training_memory, TrainingMemory};
use planner_core::resolve::presets::{article_70b_scenario, default_scenario};
use planner_core::time::calibrated_step::{step_times, StepTimes};
use planner_core::time::cost::{evaluate_scenario, CostOptions};

fn close(a: f64, b: f64, rel: f64) -> bool {
    (a - b).abs() <= rel * b.abs().max(1e-300)
}

#[test]
fn categories_follow_the_keys_planner_core_writes_in_the_page_palette_order() {
    let cases = [
        ("model_state.weights", TermCategory::Weights, 0),
        ("model_state.gradients", TermCategory::Gradients, 1),
        ("model_state.optimizer", TermCategory::Optimizer, 2),
        // "adapter_optimizer" holds no "grad"/"weight" but "optim": optimizer first.
        ("model_state.adapter_optimizer", TermCategory::Optimizer, 2),
        ("model_state.adapter_gradients", TermCategory::Gradients, 1),
        ("activations.layers", TermCategory::Activations, 3),
        ("activations.outside_layers", TermCategory::OutsideLayers, 4),
        ("zero3.gathered", TermCategory::Gathered, 5),
        ("nccl_buffers", TermCategory::Nccl, 6),
        ("cuda_context", TermCategory::Other, 7),
        // Holds "activation" too, but is a transient: the earlier rule wins.
        (
            "activations.recompute_transient",
            TermCategory::Transient,
            8,
        ),
        ("loss.transient", TermCategory::Transient, 8),
        ("overheads.DDP_Bucket", TermCategory::Bucket, 9),
    ];
    for (key, want, index) in cases {
        assert_eq!(TermCategory::of_key(key), want, "{key}");
        assert_eq!(want.index(), index, "{key}");
    }
    // Every category has its own palette slot.
    let mut idx: Vec<usize> = TermCategory::ALL.iter().map(|c| c.index()).collect();
    idx.dedup();
    assert_eq!(idx, (0..10).collect::<Vec<_>>());
}

#[test]
fn zero_bars_stack_to_the_articles_numbers() {
    let s = article_70b_scenario();
    let model = s.model_spec().expect("model");
    let bars = model_state_for(
        &model,
        &s.precision,
        &s.layout,
        &s.training,
        s.overheads.framework,
    );
    // Ψ = 70e9, 64-way DP, mixed-precision Adam: 2 B weights + 2 B grads + 12 B optimizer.
    // DDP 16Ψ = 1120 GB; ZeRO-1 4Ψ + 12Ψ/64 = 280 + 13.125 = 293.125 GB;
    // ZeRO-2 2Ψ + 14Ψ/64 = 140 + 15.3125 = 155.3125 GB; ZeRO-3 16Ψ/64 = 17.5 GB.
    let want = [1120e9, 293.125e9, 155.3125e9, 17.5e9];
    assert_eq!(bars.len(), 4);
    for (bar, want) in bars.iter().zip(want) {
        assert!(
            close(stacked_bar_bytes(bar, None), want, 1e-9),
            "{:?}: {} vs {want}",
            bar.zero,
            stacked_bar_bytes(bar, None)
        );
    }
    // With the other terms stacked: model state + the peak stage's non-model-state terms.
    let mut z3 = s.clone();
    z3.layout.zero = ZeroStage::Zero3;
    let m = training_memory(&z3, &model);
    let other = other_bytes(&m);
    assert!(other > 0.0, "activations at least");
    assert!(close(
        stacked_bar_bytes(&bars[3], Some(&m)),
        17.5e9 + other,
        1e-12
    ));
}

#[test]
fn other_terms_and_model_state_split_the_peak_stage() {
    let m = default_memory();
    let terms = peak_terms(&m);
    assert!(!terms.is_empty());
    let state: f64 = terms
        .iter()
        .filter(|t| is_model_state(t))
        .map(|t| t.value)
        .sum();
    let all: f64 = terms.iter().map(|t| t.value).sum();
    assert!(close(state + other_bytes(&m), all, 1e-12));
    assert!(other_terms(&m).all(|t| !t.key.starts_with("model_state")));
    // ZeRO-1 shards the optimizer state only: some model-state term is "(sharded)", weights are not.
    assert!(terms.iter().any(|t| is_model_state(t) && is_sharded(t)));
    assert!(terms
        .iter()
        .filter(|t| TermCategory::of_key(&t.key) == TermCategory::Weights && is_model_state(t))
        .all(|t| !is_sharded(t)));
    // A peak index past the stages falls back to the first stage.
    let mut off = m.clone();
    off.peak_stage = 99;
    assert_eq!(peak_terms(&off), m.stages[0].terms.as_slice());
}

/// The default scenario's training memory (Llama 3.1 70B, TP 8 × DP 8, ZeRO-1).
fn default_memory() -> TrainingMemory {
    let s = default_scenario();
    training_memory(&s, &s.model_spec().expect("model"))
}

fn term(key: &str, label: &str, bytes: f64) -> Term {
    let mut t = peak_terms(&default_memory())[0].clone();
    t.key = key.to_string();
    t.label = label.to_string();
    t.value = bytes;
    t
}

#[test]
fn legend_names_model_state_once_without_its_sharding() {
    let mut m = default_memory();
    m.peak_stage = 0;
    m.stages[0].terms = vec![
        term("model_state.optimizer", "Optimizer state (replicated)", 1.0),
        term("model_state.optimizer", "Optimizer state (sharded)", 2.0),
        term("activations.layers", "Activations (layers)", 3.0),
        term("activations.layers", "Activations (layers)", 4.0),
    ];
    let got = legend(&m);
    assert_eq!(
        got,
        vec![
            (TermCategory::Optimizer, "Optimizer state".to_string()),
            // Not model state: the label stays whole, parentheses included.
            (
                TermCategory::Activations,
                "Activations (layers)".to_string()
            ),
        ]
    );
}

#[test]
fn usable_share_is_shown_only_when_visibly_below_capacity() {
    let mut m = default_memory();
    m.capacity_bytes = 80e9;
    m.usable_bytes = 72e9;
    // 72 / 80 = 0.9.
    assert!(close(usable_fraction(&m).expect("below"), 0.9, 1e-12));
    // 79.93 GB is 99.9125 % of 80 GB: not below the 99.9 % line.
    m.usable_bytes = 79.93e9;
    assert_eq!(usable_fraction(&m), None);
    m.usable_bytes = 79.9e9; // 99.875 %
    assert!(close(usable_fraction(&m).expect("below"), 0.99875, 1e-12));
}

#[test]
fn teaching_sums_add_the_held_parts_and_time_the_bars() {
    let bar = LaneBar {
        lane: FsdpLane::Forward,
        start_s: 1.5e-3,
        end_s: 4.0e-3,
        message_bytes: 0.0,
    };
    assert!(close(bar.duration_s(), 2.5e-3, 1e-12));
    let held = HeldMemory {
        start_s: 0.0,
        end_s: 1.0,
        shard_bytes: 1e9,
        gathered_weight_bytes: 2e9,
        full_grad_bytes: 0.5e9,
    };
    assert!(close(held.held_bytes(), 3.5e9, 1e-12));

    // Article 70B, ZeRO-3 over 64: one layer is 70e9/80 = 875e6 parameters; at most the
    // layer's shards plus its gathered BF16 weights (2 B × 875e6 = 1.75 GB) and full BF16
    // gradients (another 1.75 GB) are held at once, never less than the gathered weights.
    let mut sc = article_70b_scenario();
    sc.layout.zero = ZeroStage::Zero3;
    let model = sc.model_spec().expect("model");
    let f = fsdp_lanes(&sc, &model, &CostOptions::default());
    let max = f.max_held_bytes();
    let by_hand = f.memory.iter().map(|m| m.held_bytes()).fold(0.0, f64::max);
    assert_eq!(max, by_hand);
    assert!(max >= 1.75e9, "{max}");
    assert!(
        max <= 1.75e9 + 1.75e9 + 16.0 * 875e6 / 64.0 * 1.0001,
        "{max}"
    );
}

fn nccl_calibrated(enabled: bool) -> planner_core::input::scenario::Scenario {
    let mut s = default_scenario();
    let text = include_str!("../../../tests/e2e/fixtures/synthetic-nccl-all-reduce-8gpu.txt");
    let m = read_measurements(text, &NcclContext::default()).expect("fixture");
    let summary = fit_measurements(&m.comm, &m.gemm, &s.cluster.gpu)
        .expect("fit")
        .summary;
    s.calibration = Some(Measured { summary, enabled });
    s
}

#[test]
fn step_times_follow_the_calibration_switch() {
    let plain = default_scenario();
    let t = step_times(&plain);
    let a = evaluate_scenario(&plain, CostOptions::default(), None)
        .expect("cost")
        .seconds
        .total;
    assert_eq!(t.assumed_s, Some(a));
    assert_eq!(t.measured_s, None);
    assert_eq!(t.current, Ok(a));
    assert_eq!(t.measured_vs_assumed(), None);

    for enabled in [true, false] {
        let s = nccl_calibrated(enabled);
        let t = step_times(&s);
        let m = evaluate_scenario(
            &s,
            CostOptions::default(),
            s.calibration.as_ref().map(|c| &c.summary),
        )
        .expect("cost")
        .seconds
        .total;
        assert_eq!(t.assumed_s, Some(a));
        assert_eq!(t.measured_s, Some(m));
        assert_eq!(t.current, Ok(if enabled { m } else { a }));
        let f = t.measured_vs_assumed().expect("both");
        assert!(close(f, (m - a) / a, 1e-12));
    }
    // (1.1 − 1.0) / 1.0 = +10 %; an assumed time of 0 gives no ratio.
    let by_hand = StepTimes {
        assumed_s: Some(1.0),
        measured_s: Some(1.1),
        current: Ok(1.1),
    };
    assert!(close(
        by_hand.measured_vs_assumed().expect("ratio"),
        0.1,
        1e-12
    ));
    let zero = StepTimes {
        assumed_s: Some(0.0),
        ..by_hand
    };
    assert_eq!(zero.measured_vs_assumed(), None);
}

#[test]
fn an_invalid_scenario_names_its_field_in_the_current_step_time() {
    let mut s = default_scenario();
    s.training.seq_len = 0; // outside 1..=MAX_SEQ_LEN: link parameter `seq`.
    let t = step_times(&s);
    let e = t.current.expect_err("invalid");
    assert!(e.starts_with("seq: "), "{e}");
}
