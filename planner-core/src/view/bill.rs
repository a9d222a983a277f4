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
    let result = crate::search::mesh::search(model, scenario, &space, &step);
    let priced = price_candidates(scenario, model, &result.feasible, board);
    RankKey::ALL
        .iter()
        .zip(leaders(&priced))
        .filter_map(|(key, i)| {
            let p = priced.get(i?)?;
            let (d, k) = (p.candidate.dims, p.candidate.knobs);
            Some(RankLeader {
                key: key.id(),
                mesh: format!(
                    "DP {} × TP {} × PP {} × CP {} × EP {}, {}, mbs {}",
                    d.dp,
                    d.tp,
                    d.pp,
                    d.cp,
                    d.ep,
                    k.zero.label(),
                    k.micro_batch
                ),
                expected_days: p.bill.expected_days(),
                total_usd: p.bill.total_usd,
                energy_j: p.bill.energy_j,
            })
        })
        .collect()
}
