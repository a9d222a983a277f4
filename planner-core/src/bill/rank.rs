//! The mesh search's feasible candidates priced as whole runs and ranked by what the person
//! signing off asks first: the expected wall-clock, the dollars, or the energy. At one cluster
//! size the dollars of a rented run follow the time; the energy does not (a GPU waiting in the
//! bubble or on the network draws less than one computing), and owned GPUs add the electricity.

use serde::{Deserialize, Serialize};

use crate::bill::checkpoint::checkpoint_size;
use crate::bill::energy::busy_share;
use crate::bill::run::{bill_numbers, BillNumbers, RunShape};
use crate::input::model::ModelSpec;
use crate::input::scenario::Scenario;
use crate::search::mesh::Feasible;

/// What a ranking puts first.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RankKey {
    /// Shortest expected wall-clock.
    #[default]
    Time,
    /// Fewest dollars.
    Dollars,
    /// Least facility energy.
    Energy,
}

impl RankKey {
    /// Every key.
    pub const ALL: [RankKey; 3] = [RankKey::Time, RankKey::Dollars, RankKey::Energy];

    /// Stable identifier.
    pub fn id(self) -> &'static str {
        match self {
            RankKey::Time => "time",
            RankKey::Dollars => "dollars",
            RankKey::Energy => "energy",
        }
    }

    /// Parses [`RankKey::id`].
    pub fn from_id(id: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|k| k.id() == id)
    }

    /// The figure this key minimises.
    pub fn of(self, n: &BillNumbers) -> f64 {
        match self {
            RankKey::Time => n.expected_s,
            RankKey::Dollars => n.total_usd,
            RankKey::Energy => n.energy_j,
        }
    }
}

/// One feasible candidate priced as a whole run.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PricedCandidate {
    /// The candidate.
    pub candidate: Feasible,
    /// Its bill.
    pub bill: BillNumbers,
}

/// The shape of a search candidate on the scenario's cluster.
pub fn candidate_shape(
    scenario: &Scenario,
    model: &ModelSpec,
    c: &Feasible,
    board_power_w: f64,
) -> RunShape {
    let layout = c.layout();
    let gpn = scenario.cluster.gpus_per_node;
    let t = &scenario.training;
    RunShape {
        gpus: layout.world_size() as f64,
        gpus_per_node: f64::from(gpn.max(1)),
        step_s: c.step_s,
        tokens_per_step: f64::from(t.global_batch) * f64::from(t.seq_len),
        busy: busy_share(c.step_s, c.bubble_s, c.exposed_comm_s),
        checkpoint: checkpoint_size(model, &scenario.precision, &layout, gpn),
        board_power_w,
        params: model.params(),
    }
}

/// The candidates priced under the scenario's bill; one whose run never finishes (failures
/// outpace it) is left out.
pub fn price_candidates(
    scenario: &Scenario,
    model: &ModelSpec,
    feasible: &[Feasible],
    board_power_w: f64,
) -> Vec<PricedCandidate> {
    feasible
        .iter()
        .filter_map(|c| {
            let shape = candidate_shape(scenario, model, c, board_power_w);
            let bill = bill_numbers(&shape, &scenario.bill).ok()?;
            Some(PricedCandidate {
                candidate: *c,
                bill,
            })
        })
        .collect()
}

/// Sorts `priced` by `key`, a candidate resting on a known underestimate after the rest (as the
/// search ranks them).
pub fn rank_by(priced: &mut [PricedCandidate], key: RankKey) {
    priced.sort_by(|a, b| {
        let caveat = |p: &PricedCandidate| p.candidate.caveat.is_some();
        caveat(a)
            .cmp(&caveat(b))
            .then(key.of(&a.bill).total_cmp(&key.of(&b.bill)))
    });
}

/// The index of the leader under each key ([`RankKey::ALL`]'s order); `None` when nothing
/// was priced.
pub fn leaders(priced: &[PricedCandidate]) -> [Option<usize>; 3] {
    RankKey::ALL.map(|key| {
        (0..priced.len()).min_by(|&a, &b| {
            let caveat = |i: usize| priced[i].candidate.caveat.is_some();
            caveat(a)
                .cmp(&caveat(b))
                .then(key.of(&priced[a].bill).total_cmp(&key.of(&priced[b].bill)))
        })
    })
}
