//! The inverse training question: "train the token budget by a deadline (and within a budget)"
//! → the smallest cluster that does it, from the node counts the person lists or the powers of
//! two, and its mesh; every smaller size with the reason it fails (too slow, too expensive, does
//! not fit, failures outpace it). Each size runs the full mesh search; its candidates are
//! priced as whole runs ([`crate::bill::rank`]).

use serde::{Deserialize, Serialize};

use crate::bill::rank::{price_candidates, PricedCandidate};
use crate::bill::run::{board_power_w, BillError, S_PER_DAY};
use crate::input::bill::{Goals, MAX_DEADLINE_GPUS};
use crate::input::model::ModelSpec;
use crate::input::scenario::Scenario;
use crate::search::mesh::{search, Knobs, MeshDims, SearchSpace};
use crate::time::cost::{CostOptions, StepModel};

/// What the run must meet.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TrainingGoal {
    /// Expected wall-clock allowed, days.
    pub deadline_days: f64,
    /// Dollars allowed; `None`: no budget.
    pub budget_usd: Option<f64>,
    /// Node counts to try; empty: the powers of two up to `max_gpus`.
    pub node_counts: Vec<u32>,
    /// Largest cluster the powers of two reach, GPUs.
    pub max_gpus: u64,
    /// Search every size, not stopping at the first that meets the goal and the next above it.
    pub every_size: bool,
}

impl Default for TrainingGoal {
    fn default() -> Self {
        TrainingGoal {
            deadline_days: 30.0,
            budget_usd: None,
            node_counts: Vec::new(),
            max_gpus: 65_536,
            every_size: false,
        }
    }
}

/// How one size fares.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// A mesh finishes by the deadline within the budget.
    Meets,
    /// Its fastest mesh finishes after the deadline.
    TooSlow,
    /// A mesh finishes in time, but none within the budget.
    TooExpensive,
    /// No mesh fits the GPUs' memory.
    DoesNotFit,
    /// Interruptions come faster than the run recovers.
    NoProgress,
}

impl Verdict {
    /// In words.
    pub fn message(self) -> &'static str {
        match self {
            Verdict::Meets => "meets the deadline and the budget",
            Verdict::TooSlow => "too slow: its fastest mesh misses the deadline",
            Verdict::TooExpensive => "too expensive: in time, but over the budget",
            Verdict::DoesNotFit => "does not fit: no mesh fits the GPUs' memory",
            Verdict::NoProgress => "failures outpace the run: it never finishes",
        }
    }
}

/// The mesh a size is judged by, priced.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct SizedPlan {
    /// Group sizes.
    pub dims: MeshDims,
    /// Switches.
    pub knobs: Knobs,
    /// Step time, s.
    pub step_s: f64,
    /// Expected wall-clock, days.
    pub expected_days: f64,
    /// Dollars.
    pub total_usd: f64,
    /// Facility energy, J.
    pub energy_j: f64,
    /// Useful time over wall time.
    pub goodput: f64,
}

/// One cluster size and how it fares.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SizeOutcome {
    /// Nodes.
    pub nodes: u32,
    /// GPUs.
    pub gpus: u64,
    /// How it fares.
    pub verdict: Verdict,
    /// Meets: its cheapest mesh in time; otherwise its fastest (none when nothing fits).
    pub plan: Option<SizedPlan>,
    /// Meshes that fit.
    pub feasible_meshes: u64,
}

/// The answer and every size searched, smallest first.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DeadlineAnswer {
    /// Index in `sizes` of the smallest size that meets the goal.
    pub answer: Option<usize>,
    /// Each size searched.
    pub sizes: Vec<SizeOutcome>,
}

/// The node counts to try: the goal's, ascending, else powers of two up to `max_gpus`.
pub fn node_counts(goal: &TrainingGoal, gpus_per_node: u32) -> Vec<u32> {
    let mut counts = goal.node_counts.clone();
    if counts.is_empty() {
        let gpn = u64::from(gpus_per_node.max(1));
        counts = (0..32)
            .map(|k| 1u32 << k)
            .take_while(|&n| u64::from(n) * gpn <= goal.max_gpus.max(gpn))
            .collect();
    }
    counts.sort_unstable();
    counts.dedup();
    counts.retain(|&n| n > 0);
    counts
}

impl TrainingGoal {
    /// The goal the scenario's bill asks ([`Goals`]: deadline, budget, node counts; the powers
    /// of two up to [`MAX_DEADLINE_GPUS`] when none are listed).
    pub fn of(goals: &Goals) -> Self {
        TrainingGoal {
            deadline_days: goals.deadline_days,
            budget_usd: goals.budget_usd,
            node_counts: goals.node_counts.clone(),
            max_gpus: MAX_DEADLINE_GPUS,
            every_size: false,
        }
    }
}

/// The smallest cluster that meets `goal`, each size searched in full.
pub fn smallest_cluster(
    scenario: &Scenario,
    model: &ModelSpec,
    goal: &TrainingGoal,
) -> Result<DeadlineAnswer, BillError> {
    smallest_cluster_with_progress(scenario, model, goal, &mut |_, _| {})
}

/// [`smallest_cluster`], calling `progress(sizes searched, sizes listed)` before each size
/// (the page's worker posts it; the last size searched may come before the list's end).
pub fn smallest_cluster_with_progress(
    scenario: &Scenario,
    model: &ModelSpec,
    goal: &TrainingGoal,
    progress: &mut dyn FnMut(usize, usize),
) -> Result<DeadlineAnswer, BillError> {
    let board = board_power_w(scenario)?;
    let mut sizes = Vec::new();
    let mut answer = None;
    let counts = node_counts(goal, scenario.cluster.gpus_per_node);
    for (i, &nodes) in counts.iter().enumerate() {
        progress(i, counts.len());
        let outcome = judge_size(scenario, model, goal, nodes, board);
        if outcome.verdict == Verdict::Meets && answer.is_none() {
            answer = Some(sizes.len());
        }
        sizes.push(outcome);
        if answer.is_some_and(|a| sizes.len() > a + 1) && !goal.every_size {
            break;
        }
    }
    Ok(DeadlineAnswer { answer, sizes })
}

/// The search's space for a size: every mesh and knob, no offload fallback (an offloaded run is
/// never the fast one), the 20 fastest meshes kept to be priced.
fn space() -> SearchSpace {
    SearchSpace {
        offload_fallback: false,
        max_results: 20,
        max_rejected: 0,
        ..SearchSpace::default()
    }
}

/// One size: the full mesh search on `nodes` nodes, its fastest meshes priced and judged.
pub fn judge_size(
    scenario: &Scenario,
    model: &ModelSpec,
    goal: &TrainingGoal,
    nodes: u32,
    board_w: f64,
) -> SizeOutcome {
    let mut sc = scenario.clone();
    sc.cluster.nodes = nodes;
    let step_model = StepModel::for_scenario(model, &sc, CostOptions::default());
    let result = search(model, &sc, &space(), &step_model);
    let priced = price_candidates(&sc, model, &result.feasible, board_w);
    let (verdict, chosen) = verdict(goal, &priced, result.feasible.is_empty());
    SizeOutcome {
        nodes,
        gpus: sc.cluster.world_size(),
        verdict,
        plan: chosen.map(plan_of),
        feasible_meshes: result.feasible_meshes,
    }
}

/// The verdict and the candidate it rests on: the cheapest that meets the goal, else the
/// fastest.
fn verdict<'a>(
    goal: &TrainingGoal,
    priced: &'a [PricedCandidate],
    nothing_fits: bool,
) -> (Verdict, Option<&'a PricedCandidate>) {
    let in_time = |p: &&PricedCandidate| p.bill.expected_s <= goal.deadline_days * S_PER_DAY;
    let in_budget = |p: &&PricedCandidate| goal.budget_usd.is_none_or(|b| p.bill.total_usd <= b);
    let cheapest = priced
        .iter()
        .filter(in_time)
        .filter(in_budget)
        .min_by(|a, b| a.bill.total_usd.total_cmp(&b.bill.total_usd));
    if cheapest.is_some() {
        return (Verdict::Meets, cheapest);
    }
    let fastest = priced
        .iter()
        .min_by(|a, b| a.bill.expected_s.total_cmp(&b.bill.expected_s));
    match fastest {
        None if nothing_fits => (Verdict::DoesNotFit, None),
        None => (Verdict::NoProgress, None),
        Some(f) if in_time(&f) => (Verdict::TooExpensive, Some(f)),
        Some(f) => (Verdict::TooSlow, Some(f)),
    }
}

fn plan_of(p: &PricedCandidate) -> SizedPlan {
    SizedPlan {
        dims: p.candidate.dims,
        knobs: p.candidate.knobs,
        step_s: p.candidate.step_s,
        expected_days: p.bill.expected_s / S_PER_DAY,
        total_usd: p.bill.total_usd,
        energy_j: p.bill.energy_j,
        goodput: p.bill.goodput.goodput,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn powers_of_two_stop_at_the_largest_cluster() {
        let goal = TrainingGoal {
            max_gpus: 64,
            ..TrainingGoal::default()
        };
        // 1, 2, 4, 8 nodes of 8 GPUs: 8 × 8 = 64 GPUs, the last within 64.
        assert_eq!(node_counts(&goal, 8), vec![1, 2, 4, 8]);
        let listed = TrainingGoal {
            node_counts: vec![16, 8, 8, 0, 24],
            ..TrainingGoal::default()
        };
        assert_eq!(node_counts(&listed, 8), vec![8, 16, 24]);
    }
}
