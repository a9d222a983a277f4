//! The run's bill on the article's 70B / 512-GPU mesh and on 405B over 16,384 H100: every figure
//! present with its formula, the figures consistent with each other by hand, and the inputs
//! carried by links and refused by name.

use planner_core::bill::run::training_bill;
use planner_core::edges::link::{decode, encode};
use planner_core::input::bill::{PriceKind, FAILURES_PER_GPU_HOUR};
use planner_core::input::scenario::Scenario;
use planner_core::resolve::presets::{article_mesh_scenario, mesh_scenario};
use planner_core::view::bill::bill_view;

/// Llama 3.1 405B on 2,048 nodes of 8 H100, 2,048 × 8,192 tokens a step, TP 8 × PP 16 × DP 128
/// (the layout the Llama 3 paper states for its 8K stage, Table 4).
pub fn llama_405b_16k() -> Scenario {
    let mut s = mesh_scenario("llama-3.1-405b", 2_048, 8_192, 2_048);
    s.layout.tp = 8;
    s.layout.pp = 16;
    s.layout.cp = 1;
    s.layout.dp = 128;
    s
}

#[test]
fn the_article_mesh_bill_holds_together_by_hand() {
    let s = article_mesh_scenario();
    let model = s.model_spec().expect("preset");
    let bill = training_bill(&s, &model).expect("a bill");
    let n = &bill.numbers;
    // Chinchilla budget: ⌈20 Ψ / tokens per step⌉ steps of 64 × 32,768 tokens.
    let per_step = 64.0 * 32_768.0;
    assert_eq!(n.steps, (20.0 * model.params() / per_step).ceil());
    // Expected = ideal / goodput, GPU-hours = 512 × expected hours, rented: dollars = GPU-hours × $3.78.
    assert!((n.expected_s - n.ideal_s / n.goodput.goodput).abs() < 1e-6);
    assert!((n.gpu_hours - 512.0 * n.expected_s / 3_600.0).abs() < 1e-6);
    assert!((n.total_usd - n.gpu_hours * 3.78).abs() < 1e-3);
    // 512 GPUs at Llama 3's rate: M = 3,600 / (1.9733e-5 × 512) = 356,323 s.
    assert!((n.mtbf_s - 3_600.0 / (FAILURES_PER_GPU_HOUR * 512.0)).abs() < 1e-6);
    assert!(n.goodput.goodput > 0.9 && n.goodput.goodput < 1.0);
    let keys: Vec<&str> = bill.terms.iter().map(|t| t.key.as_str()).collect();
    for key in [
        "bill.ideal_days",
        "bill.expected_days",
        "bill.gpu_hours",
        "bill.dollars",
        "bill.energy",
        "bill.tokens_per_joule",
        "bill.interruptions",
        "bill.checkpoint_size",
        "bill.checkpoint_write",
        "bill.interval",
        "bill.restart_cost",
        "bill.goodput",
    ] {
        assert!(keys.contains(&key), "{key} missing from {keys:?}");
    }
    // The failure rate reads in the formulas as the user typed its order of magnitude.
    let interruptions = bill.terms.iter().find(|t| t.key == "bill.interruptions");
    assert!(
        interruptions.is_some_and(|t| t.worked.starts_with("1.973e-5 × ")),
        "{interruptions:?}"
    );
    for t in &bill.terms {
        assert!(t.value.is_finite(), "{}: {}", t.key, t.value);
        assert!(!t.formula.is_empty() && !t.worked.is_empty(), "{}", t.key);
    }
}

#[test]
fn at_16k_gpus_failures_cost_more_than_at_512() {
    let big = llama_405b_16k();
    let model = big.model_spec().expect("preset");
    let bill = training_bill(&big, &model).expect("a bill");
    let n = bill.numbers;
    // 405B × 14 B (bf16 weights, fp32 master and two moments) ≈ 5.67 TB of checkpoint.
    assert!((bill.shape.checkpoint.total_bytes - 14.0 * model.params()).abs() < 1.0);
    // Llama 3: one interruption about every three hours on 16,384 GPUs (M = 11,135 s).
    assert!((n.mtbf_s - 11_135.08).abs() < 0.1, "{}", n.mtbf_s);
    let small = article_mesh_scenario();
    let m70 = small.model_spec().expect("preset");
    let g512 = training_bill(&small, &m70)
        .expect("a bill")
        .numbers
        .goodput
        .goodput;
    assert!(n.goodput.goodput < g512, "{} vs {g512}", n.goodput.goodput);
    assert!((n.gpu_hours / 16_384.0 - n.expected_s / 3_600.0).abs() < 1e-6);
}

#[test]
fn owning_the_gpus_bills_the_electricity_apart() {
    let mut s = article_mesh_scenario();
    s.bill.price_kind = PriceKind::Owned;
    let model = s.model_spec().expect("preset");
    let n = training_bill(&s, &model).expect("a bill").numbers;
    // $24,875 / (6 × 8,760 h) per GPU-hour, plus kWh × $0.0806.
    let rate = 24_875.0 / (6.0 * 8_760.0);
    let kwh = n.energy_j / 3.6e6;
    assert!((n.total_usd - (n.gpu_hours * rate + kwh * 0.0806)).abs() < 1e-3);
}

#[test]
fn bill_inputs_travel_in_links_and_are_refused_by_name() {
    let mut s = article_mesh_scenario();
    s.bill.tokens = Some(15e12);
    s.bill.pue = 1.1;
    s.bill.price_kind = PriceKind::Reserved;
    s.bill.failures_per_gpu_hour = 2.5e-5;
    let q = encode(&s);
    assert!(
        q.contains("bill_pue=1.1") && q.contains("bill_price=reserved"),
        "{q}"
    );
    assert_eq!(decode(&q), Ok(s));
    for (bad, key) in [
        ("bill_pue=0.5", "bill_pue"),
        ("bill_fail=2", "bill_fail"),
        ("bill_ckpt_gbs=0", "bill_ckpt_gbs"),
        ("bill_tok=-1", "bill_tok"),
        ("bill_tok=1e12&bill_steps=10", "bill_steps"),
        ("bill_price=spot", "bill_price"),
    ] {
        let errors = decode(&format!("v=1&{bad}")).expect_err(bad);
        assert!(errors.iter().any(|e| e.field == key), "{bad}: {errors:?}");
    }
}

#[test]
fn a_custom_gpu_has_no_bill_until_it_gets_a_board_power() {
    let mut s = article_mesh_scenario();
    s.cluster.gpu.id = "my-gpu".into();
    let model = s.model_spec().expect("preset");
    let v = bill_view(&s, &model);
    assert!(v.terms.is_empty());
    assert!(v
        .error
        .as_deref()
        .is_some_and(|e| e.starts_with("bill_board_w")));
    s.bill.board_power_w = Some(500.0);
    assert!(bill_view(&s, &model).error.is_none());
}

#[test]
fn the_smallest_cluster_for_405b_by_a_deadline_and_why_smaller_ones_fail() {
    use planner_core::bill::deadline::{smallest_cluster, TrainingGoal, Verdict};
    let mut s = llama_405b_16k();
    s.bill.tokens = Some(15.6e12);
    let model = s.model_spec().expect("preset");
    let goal = TrainingGoal {
        deadline_days: 90.0,
        node_counts: vec![1, 16, 2_048],
        ..TrainingGoal::default()
    };
    let a = smallest_cluster(&s, &model, &goal).expect("an answer");
    let verdicts: Vec<Verdict> = a.sizes.iter().map(|o| o.verdict).collect();
    assert_eq!(
        verdicts,
        [Verdict::DoesNotFit, Verdict::TooSlow, Verdict::Meets],
        "{a:?}"
    );
    assert_eq!(a.answer, Some(2));
    let plan = a.sizes[2].plan.expect("a mesh");
    assert!(plan.expected_days <= 90.0);
    // The same sizes with $1 to spend: the one in time is too expensive, none meets.
    let broke = TrainingGoal {
        budget_usd: Some(1.0),
        ..goal
    };
    let b = smallest_cluster(&s, &model, &broke).expect("an answer");
    assert_eq!(b.answer, None);
    assert_eq!(b.sizes[2].verdict, Verdict::TooExpensive);
}

#[test]
fn each_rankings_leader_is_the_least_under_its_key() {
    use planner_core::bill::rank::{leaders, price_candidates, RankKey};
    use planner_core::search::mesh::{search, SearchSpace};
    use planner_core::time::cost::{CostOptions, StepModel};
    let mut s = article_mesh_scenario();
    s.bill.price_kind = PriceKind::Owned;
    s.bill.usd_per_kwh = 0.3;
    let model = s.model_spec().expect("preset");
    let step = StepModel::for_scenario(&model, &s, CostOptions::default());
    let result = search(&model, &s, &SearchSpace::default(), &step);
    let priced = price_candidates(&s, &model, &result.feasible, 700.0);
    assert!(priced.len() > 3);
    for (key, leader) in RankKey::ALL.iter().zip(leaders(&priced)) {
        let best = &priced[leader.expect("a leader")];
        for p in priced.iter().filter(|p| p.candidate.caveat.is_none()) {
            assert!(key.of(&best.bill) <= key.of(&p.bill), "{key:?}");
        }
    }
}

#[test]
fn the_fewest_gpus_for_a_request_rate_per_gpu_type_cheapest_first() {
    use planner_core::bill::fleet::{fleet_for_rate, FleetGoal};
    let s = article_mesh_scenario();
    let model = s.model_spec().expect("preset");
    let gpus = ["a100-80gb", "h100-sxm", "no-such-gpu"].map(String::from);
    let mut goal = FleetGoal::new(20.0, (Some(2.0), Some(0.05)), gpus.to_vec());
    goal.prices = vec![("a100-80gb".into(), 1.0)];
    let a = fleet_for_rate(&s, &model, &goal);
    assert_eq!(a.options.len(), 2, "{a:?}");
    assert_eq!(a.refused.len(), 1);
    for o in &a.options {
        // ⌈R / unit rate⌉ units of unit GPUs, and that is the fewest that hold the rate.
        assert_eq!(o.units, (20.0 / o.unit_rps).ceil() as u64);
        assert_eq!(o.gpus, o.units * o.unit_gpus);
        assert!((o.units - 1) as f64 * o.unit_rps < 20.0);
        assert!(o.idle_facility_w < o.facility_w);
    }
    // The given price replaces the list price; the ranking is by dollars per million tokens.
    assert_eq!(
        a.options
            .iter()
            .find(|o| o.gpu == "a100-80gb")
            .and_then(|o| o.usd_per_gpu_hour),
        Some(1.0)
    );
    let cost: Vec<f64> = a
        .options
        .iter()
        .map(|o| o.usd_per_m_tokens.expect("priced"))
        .collect();
    assert!(cost.windows(2).all(|w| w[0] <= w[1]), "{cost:?}");
}
