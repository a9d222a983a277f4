//! The run's bill section: a training run's days, GPU-hours, dollars and energy, what failures
//! and checkpoints cost, each an explained number; the inputs it was priced from, each marked
//! as the user's or as a cited default to replace. `meshplan bill` prints the same.

use serde::Serialize;

use crate::base::explain::Term;
use crate::bill::run::training_bill;
use crate::input::bill::{RunBill, DEFAULT_SOURCES};

/// What the rankings sort by.
pub use crate::bill::rank::RankKey;
use crate::input::model::ModelSpec;
use crate::input::scenario::Scenario;
use crate::search::mesh::{Knobs, MeshDims};

/// One input of the bill as the section lists it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct BillInput {
    /// Link key.
    pub key: &'static str,
    /// What it is.
    pub label: &'static str,
    /// Its value as the person reads it.
    pub value: String,
    /// Where the default comes from, when the value is the default; `None`: the user's own.
    pub default_source: Option<&'static str>,
}

/// The section.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct BillView {
    /// The inputs, in the order the section lists them.
    pub inputs: Vec<BillInput>,
    /// Every figure with its formula and the user's numbers, in reading order; empty when
    /// `error` says why there are none.
    pub terms: Vec<Term>,
    /// Why the run has no bill (no board power for a custom GPU, failures outpacing progress).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The leaders by time, dollars and energy ([`rank_leaders`]); empty until asked for.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub rankings: Vec<RankLeader>,
}

/// The bill of the scenario's own layout.
pub fn bill_view(scenario: &Scenario, model: &ModelSpec) -> BillView {
    let inputs = bill_inputs(&scenario.bill);
    match training_bill(scenario, model) {
        Ok(bill) => BillView {
            inputs,
            terms: bill.terms,
            error: None,
            rankings: Vec::new(),
        },
        Err(e) => BillView {
            inputs,
            terms: Vec::new(),
            error: Some(e.to_string()),
            rankings: Vec::new(),
        },
    }
}

/// The bill's plain numbers: link key, label, and how to read it from the inputs.
type NumberField = (&'static str, &'static str, fn(&RunBill) -> f64);

const NUMBERS: [NumberField; 9] = [
    ("bill_usd_h", "$ per GPU-hour (rented)", |b| {
        b.usd_per_gpu_hour
    }),
    ("bill_capex", "$ per GPU (owned)", |b| b.capex_usd_per_gpu),
    ("bill_years", "Amortisation, years", |b| {
        b.amortisation_years
    }),
    ("bill_kwh", "$ per kWh", |b| b.usd_per_kwh),
    ("bill_pue", "PUE", |b| b.pue),
    ("bill_node_w", "Node overhead, W", |b| b.node_overhead_w),
    ("bill_ckpt_gbs", "Checkpoint write, GB/s per node", |b| {
        b.checkpoint_write_gb_s_per_node
    }),
    ("bill_restart_s", "Restart, s", |b| b.restart_s),
    ("bill_fail", "Interruptions per GPU-hour", |b| {
        b.failures_per_gpu_hour
    }),
];

/// The inputs with their values; each default names its source.
pub fn bill_inputs(b: &RunBill) -> Vec<BillInput> {
    let d = RunBill::default();
    let row = |key, label, value: String, is_default: bool| BillInput {
        key,
        label,
        value,
        default_source: if is_default { source(key) } else { None },
    };
    let budget_default = b.tokens.is_none() && b.steps.is_none();
    let mut out = vec![
        row(
            "bill_tok",
            "Token budget",
            opt(b.tokens, "20 × Ψ"),
            budget_default,
        ),
        row(
            "bill_steps",
            "Steps",
            opt(b.steps.map(|s| s as f64), "from tokens"),
            false,
        ),
        row(
            "bill_price",
            "GPUs paid",
            b.price_kind.id().to_string(),
            false,
        ),
        row(
            "bill_board_w",
            "GPU board power, W",
            opt(b.board_power_w, "datasheet"),
            false,
        ),
    ];
    out.extend(
        NUMBERS
            .iter()
            .map(|(key, label, get)| row(key, label, short(get(b)), get(b) == get(&d))),
    );
    out
}

/// An optional number, or what stands in for it.
fn opt(v: Option<f64>, none: &str) -> String {
    v.map_or(none.to_string(), short)
}

/// A number as typed: plain, or scientific below 0.001 (`1.973e-5`).
fn short(x: f64) -> String {
    if x != 0.0 && x.abs() < 1e-3 {
        format!("{x:.3e}")
    } else {
        format!("{x}")
    }
}

fn source(key: &str) -> Option<&'static str> {
    DEFAULT_SOURCES
        .iter()
        .find(|(k, _)| *k == key)
        .map(|(_, s)| *s)
}

/// One ranking's leader: the mesh that comes first when the search's meshes are priced as whole
/// runs and ranked by `key`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RankLeader {
    /// `time`, `dollars` or `energy`.
    pub key: &'static str,
    /// The mesh, `DP 4 × TP 8 × PP 4 × CP 4 × EP 1, ZeRO-1, mbs 1`.
    pub mesh: String,
    /// Expected wall-clock, days.
    pub expected_days: f64,
    /// Dollars.
    pub total_usd: f64,
    /// Facility energy, J.
    pub energy_j: f64,
}

/// The leaders of the three rankings of the scenario's cluster (the fastest meshes of the full
/// mesh search, priced): one row per key, in [`RankKey::ALL`]'s order; empty when nothing fits
/// or the GPU has no board power.
pub fn rank_leaders(scenario: &Scenario, model: &ModelSpec) -> Vec<RankLeader> {
    rank_leaders_with_progress(scenario, model, &mut |_, _| {})
}

/// (TP, PP, CP) blocks the rankings' search runs between two progress calls.
const BLOCKS_PER_PROGRESS: usize = 8;

/// [`rank_leaders`], calling `progress(blocks searched, blocks in all)` as the search goes
/// (the page's worker posts it): the same search, run a few blocks at a time.
pub fn rank_leaders_with_progress(
    scenario: &Scenario,
    model: &ModelSpec,
    progress: &mut dyn FnMut(usize, usize),
) -> Vec<RankLeader> {
    use crate::bill::rank::{leaders, price_candidates, RankKey};
    let Ok(board) = crate::bill::run::board_power_w(scenario) else {
        return Vec::new();
    };
    let step = crate::time::cost::StepModel::for_scenario(
        model,
        scenario,
        crate::time::cost::CostOptions::default(),
    );
    let space = crate::search::mesh::SearchSpace {
        max_rejected: 0,
        ..crate::search::mesh::SearchSpace::default()
    };
    let mut search =
        crate::search::mesh::SlicedSearch::new(model.clone(), scenario.clone(), space, step);
    while !search.step(BLOCKS_PER_PROGRESS) {
        let (done, all) = search.progress();
        progress(done, all);
    }
    let result = search.finish();
    let priced = price_candidates(scenario, model, &result.feasible, board);
    RankKey::ALL
        .iter()
        .zip(leaders(&priced))
        .filter_map(|(key, i)| {
            let p = priced.get(i?)?;
            Some(RankLeader {
                key: key.id(),
                mesh: mesh_label(&p.candidate.dims, &p.candidate.knobs),
                expected_days: p.bill.expected_days(),
                total_usd: p.bill.total_usd,
                energy_j: p.bill.energy_j,
            })
        })
        .collect()
}

/// A mesh as the section names it: `DP 4 × TP 8 × PP 4 × CP 4 × EP 1, ZeRO-1, mbs 1`.
fn mesh_label(d: &MeshDims, k: &Knobs) -> String {
    format!(
        "DP {} × TP {} × PP {} × CP {} × EP {}, {}, mbs {}",
        d.dp,
        d.tp,
        d.pp,
        d.cp,
        d.ep,
        k.zero.label(),
        k.micro_batch
    )
}

/// The inverse questions' inputs as the section lists them (link key, label, value); none is
/// a cited default, so `default_source` says what an empty one stands for.
pub fn goal_inputs(b: &RunBill) -> Vec<BillInput> {
    let g = &b.goals;
    let row = |key, label, value: String| BillInput {
        key,
        label,
        value,
        default_source: None,
    };
    let list = |items: Vec<String>| items.join(",");
    vec![
        row("bill_days", "Deadline, days", short(g.deadline_days)),
        row("bill_budget", "Budget, $", opt(g.budget_usd, "")),
        row(
            "bill_nodes",
            "Node counts (empty: powers of two)",
            list(g.node_counts.iter().map(ToString::to_string).collect()),
        ),
        row("fleet_rps", "Requests per second", short(g.rate_rps)),
        row("fleet_ttft_ms", "p99 TTFT bound, ms", opt(g.ttft_ms, "")),
        row("fleet_tpot_ms", "TPOT bound, ms", opt(g.tpot_ms, "")),
        row(
            "fleet_gpus",
            "GPU types (empty: every priced one)",
            list(g.fleet_gpus.clone()),
        ),
    ]
}

/// One cluster size of the deadline question.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct DeadlineRow {
    /// Nodes.
    pub nodes: u32,
    /// GPUs.
    pub gpus: u64,
    /// `meets`, `too_slow`, `too_expensive`, `does_not_fit` or `no_progress`.
    pub verdict: &'static str,
    /// The verdict in words.
    pub why: &'static str,
    /// The mesh it is judged by (`DP × TP × PP × CP × EP, ZeRO, mbs`): the cheapest in time when it meets the
    /// goal, else the fastest; `None` when nothing fits.
    pub mesh: Option<String>,
    /// That mesh's step time, s.
    pub step_s: f64,
    /// Its expected wall-clock, days.
    pub expected_days: f64,
    /// Its dollars.
    pub total_usd: f64,
    /// Its facility energy, J.
    pub energy_j: f64,
    /// Its goodput.
    pub goodput: f64,
}

/// The deadline question's answer.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct DeadlineView {
    /// Index in `rows` of the smallest size that meets the goal.
    pub answer: Option<usize>,
    /// Each size searched, smallest first.
    pub rows: Vec<DeadlineRow>,
    /// Why there is no answer at all (no board power for the GPU).
    pub error: Option<String>,
}

/// "Train the token budget by the bill's deadline (within its budget)": the smallest of the
/// node counts the bill lists (else the powers of two) whose full mesh search meets it, and
/// every size searched; `progress(sizes searched, sizes listed)` before each size.
pub fn deadline_view(
    scenario: &Scenario,
    model: &ModelSpec,
    progress: &mut dyn FnMut(usize, usize),
) -> DeadlineView {
    use crate::bill::deadline::{smallest_cluster_with_progress, TrainingGoal};
    let goal = TrainingGoal::of(&scenario.bill.goals);
    match smallest_cluster_with_progress(scenario, model, &goal, progress) {
        Ok(a) => DeadlineView {
            answer: a.answer,
            rows: a
                .sizes
                .iter()
                .map(|o| {
                    let p = o.plan.as_ref();
                    let num =
                        |f: fn(&crate::bill::deadline::SizedPlan) -> f64| p.map_or(f64::NAN, f);
                    DeadlineRow {
                        nodes: o.nodes,
                        gpus: o.gpus,
                        verdict: verdict_id(o.verdict),
                        why: o.verdict.message(),
                        mesh: p.map(|p| mesh_label(&p.dims, &p.knobs)),
                        step_s: num(|p| p.step_s),
                        expected_days: num(|p| p.expected_days),
                        total_usd: num(|p| p.total_usd),
                        energy_j: num(|p| p.energy_j),
                        goodput: num(|p| p.goodput),
                    }
                })
                .collect(),
            error: None,
        },
        Err(e) => DeadlineView {
            error: Some(e.to_string()),
            ..DeadlineView::default()
        },
    }
}

fn verdict_id(v: crate::bill::deadline::Verdict) -> &'static str {
    use crate::bill::deadline::Verdict;
    match v {
        Verdict::Meets => "meets",
        Verdict::TooSlow => "too_slow",
        Verdict::TooExpensive => "too_expensive",
        Verdict::DoesNotFit => "does_not_fit",
        Verdict::NoProgress => "no_progress",
    }
}

/// The serving fleet question's answer: every allowed GPU type's fewest GPUs for the bill's
/// request rate within its TTFT and TPOT bounds, cheapest per million output tokens first,
/// and the types that cannot meet it with why.
pub use crate::bill::fleet::{FleetAnswer, FleetOption};

/// "R requests/s at TTFT ≤ x and TPOT ≤ y" for the bill's goals ([`crate::input::bill::Goals`]).
pub fn fleet_view(scenario: &Scenario, model: &ModelSpec) -> FleetAnswer {
    use crate::bill::fleet::{fleet_for_rate, FleetGoal};
    fleet_for_rate(scenario, model, &FleetGoal::of(&scenario.bill.goals))
}
