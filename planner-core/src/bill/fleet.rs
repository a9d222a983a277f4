//! A serving fleet's bill and the inverse serving question: "R requests/s at TTFT ≤ x and
//! TPOT ≤ y" → for each GPU type allowed, the fewest GPUs that hold the rate (copies of the best
//! deployment the deployment search finds on a reference cluster of that GPU), ranked by dollars
//! per million output tokens; with each, joules per million output tokens and the fleet's idle
//! power at low load.

use serde::{Deserialize, Serialize};

use crate::bill::energy::{facility_w, gpu_average_w, WAITING_POWER_SHARE};
use crate::input::bill::{list_usd_per_gpu_hour, Goals, RunBill};
use crate::input::hardware::{gpu_board_power_w, gpu_presets, Cluster};
use crate::input::model::ModelSpec;
use crate::input::scenario::Scenario;
use crate::search::deployment::{
    serve_search, Pools, RankedDeployment, ServeSearchSpace, ServeTarget,
};
use crate::serving::latency::ServingLoad;

/// Nodes of the reference cluster each GPU type is searched on: room for a replica of two
/// pipeline stages of a node each, and copies of smaller ones.
pub const REFERENCE_NODES: u32 = 4;

/// What the fleet must serve.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FleetGoal {
    /// Requests per second.
    pub rate_rps: f64,
    /// Latency bounds.
    pub target: ServeTarget,
    /// Prompt and output tokens per request.
    pub load: ServingLoad,
    /// GPU presets allowed, by id.
    pub gpu_ids: Vec<String>,
    /// Prices per GPU-hour by id, in place of the list prices.
    pub prices: Vec<(String, f64)>,
}

impl FleetGoal {
    /// `rate_rps` within the bounds (p99 TTFT, mean TPOT) on `gpu_ids` at the list prices, the
    /// default request mix, the concurrency ladder from 1.
    pub fn new(
        rate_rps: f64,
        (ttft_s, tpot_s): (Option<f64>, Option<f64>),
        gpu_ids: Vec<String>,
    ) -> Self {
        FleetGoal {
            rate_rps,
            target: ServeTarget {
                ttft_s,
                tpot_s,
                ..ServeTarget::default()
            },
            load: ServingLoad {
                concurrency: 1,
                ..ServingLoad::default()
            },
            gpu_ids,
            prices: Vec::new(),
        }
    }
}

impl FleetGoal {
    /// The goal the scenario's bill asks ([`Goals`]: rate, TTFT and TPOT bounds, the GPU
    /// types), at the list prices and the default request mix.
    pub fn of(goals: &Goals) -> Self {
        FleetGoal::new(
            goals.rate_rps,
            (
                goals.ttft_ms.map(|ms| ms / 1e3),
                goals.tpot_ms.map(|ms| ms / 1e3),
            ),
            goals.fleet_gpu_ids(),
        )
    }
}

/// The fleet of one GPU type.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FleetOption {
    /// GPU preset id.
    pub gpu: String,
    /// The deployment copied ([`crate::search::deployment::Deployment::label`] of one unit).
    pub unit: String,
    /// GPUs in one unit (a replica, or a whole disaggregated deployment).
    pub unit_gpus: u64,
    /// Requests per second one unit serves within the target.
    pub unit_rps: f64,
    /// Units the rate needs: `⌈R / unit rate⌉`.
    pub units: u64,
    /// GPUs of the fleet.
    pub gpus: u64,
    /// Share of the fleet's capacity the rate uses.
    pub load_share: f64,
    /// Price per GPU-hour, when known.
    pub usd_per_gpu_hour: Option<f64>,
    /// Dollars per million output tokens: `GPUs × price / (R × output × 3,600) × 1e6`.
    pub usd_per_m_tokens: Option<f64>,
    /// Facility joules per million output tokens at this rate.
    pub j_per_m_tokens: f64,
    /// The facility's draw at this rate, W.
    pub facility_w: f64,
    /// The facility's draw with the fleet idle (every GPU at its waiting share), W.
    pub idle_facility_w: f64,
}

/// Every GPU type's fleet, cheapest per million tokens first (unpriced last), and the types
/// that cannot meet the target with why.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FleetAnswer {
    /// Fleets that meet the target.
    pub options: Vec<FleetOption>,
    /// `(gpu id, why)` for each type with no fleet.
    pub refused: Vec<(String, String)>,
}

/// The fewest GPUs of each allowed type that serve `goal`, ranked by dollars per million tokens.
pub fn fleet_for_rate(scenario: &Scenario, model: &ModelSpec, goal: &FleetGoal) -> FleetAnswer {
    let mut answer = FleetAnswer {
        options: Vec::new(),
        refused: Vec::new(),
    };
    for id in &goal.gpu_ids {
        match fleet_of_type(scenario, model, goal, id) {
            Ok(option) => answer.options.push(option),
            Err(why) => answer.refused.push((id.clone(), why)),
        }
    }
    answer.options.sort_by(|a, b| {
        let key = |o: &FleetOption| o.usd_per_m_tokens.unwrap_or(f64::INFINITY);
        key(a).total_cmp(&key(b)).then(a.gpus.cmp(&b.gpus))
    });
    answer
}

/// One GPU type's fleet: the deployment search on [`REFERENCE_NODES`] nodes of it, the unit
/// that needs the fewest GPUs for the rate, and its bill.
fn fleet_of_type(
    scenario: &Scenario,
    model: &ModelSpec,
    goal: &FleetGoal,
    id: &str,
) -> Result<FleetOption, String> {
    let spec = gpu_presets()
        .into_iter()
        .find(|g| g.id == id)
        .ok_or_else(|| format!("no GPU preset '{}'", crate::base::free_text::one_line(id)))?;
    let board_w = gpu_board_power_w(id).ok_or("no board power")?;
    let mut sc = scenario.clone();
    sc.cluster = Cluster::of(spec, REFERENCE_NODES);
    let space = ServeSearchSpace {
        max_rejected: 0,
        ..ServeSearchSpace::default()
    };
    let result =
        serve_search(model, &sc, &goal.load, &goal.target, &space).map_err(|e| e.to_string())?;
    let best = result
        .ranked
        .iter()
        .map(|r| unit_of(r, goal.load.output_tokens))
        .min_by(|a, b| fleet_gpus(a, goal.rate_rps).cmp(&fleet_gpus(b, goal.rate_rps)))
        .ok_or("no deployment meets the target on this GPU")?;
    let price = goal
        .prices
        .iter()
        .find(|(g, _)| g == id)
        .map(|(_, p)| *p)
        .or_else(|| list_usd_per_gpu_hour(id));
    Ok(priced(
        id,
        best,
        (goal.rate_rps, goal.load.output_tokens),
        price,
        (board_w, sc.cluster.gpus_per_node, &scenario.bill),
    ))
}

/// A unit of a ranked deployment: its label, GPUs and requests per second.
fn unit_of(r: &RankedDeployment, output_tokens: u32) -> (String, u64, f64) {
    let per_request = f64::from(output_tokens.max(1));
    match r.deployment.pools {
        Pools::Aggregated { tp, pp, replicas } => (
            format!("TP {tp} PP {pp}"),
            u64::from(tp) * u64::from(pp),
            r.throughput_per_s / f64::from(replicas.max(1)) / per_request,
        ),
        Pools::Disaggregated(_) => (r.label.clone(), r.gpus, r.throughput_per_s / per_request),
    }
}

/// GPUs a fleet of `unit` needs for `rate`: `⌈R / unit rate⌉ × unit GPUs`.
fn fleet_gpus(unit: &(String, u64, f64), rate: f64) -> u64 {
    units_for(rate, unit.2).saturating_mul(unit.1)
}

fn units_for(rate: f64, unit_rps: f64) -> u64 {
    if unit_rps > 0.0 {
        (rate / unit_rps).ceil().max(1.0) as u64
    } else {
        u64::MAX
    }
}

/// The fleet's bill: GPUs, dollars and joules per million output tokens, idle power.
fn priced(
    id: &str,
    (unit, unit_gpus, unit_rps): (String, u64, f64),
    (rate, output_tokens): (f64, u32),
    price: Option<f64>,
    (board_w, gpn, bill): (f64, u32, &RunBill),
) -> FleetOption {
    let units = units_for(rate, unit_rps);
    let gpus = units.saturating_mul(unit_gpus);
    let load_share = (rate / (units as f64 * unit_rps)).min(1.0);
    let tokens_per_s = rate * f64::from(output_tokens);
    let n = gpus as f64;
    let gpn = f64::from(gpn.max(1));
    let busy_w = gpu_average_w(board_w, load_share);
    let facility = facility_w(n, busy_w, bill.node_overhead_w, gpn, bill.pue);
    let idle = facility_w(
        n,
        board_w * WAITING_POWER_SHARE,
        bill.node_overhead_w,
        gpn,
        bill.pue,
    );
    FleetOption {
        gpu: id.to_string(),
        unit,
        unit_gpus,
        unit_rps,
        units,
        gpus,
        load_share,
        usd_per_gpu_hour: price,
        usd_per_m_tokens: price.map(|p| n * p / (tokens_per_s * 3_600.0) * 1e6),
        j_per_m_tokens: facility / tokens_per_s * 1e6,
        facility_w: facility,
        idle_facility_w: idle,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fleet_by_hand() {
        // Units of 8 GPUs serving 2.5 req/s each; 10 req/s of 256 output tokens: 4 units, 32 GPUs,
        // full load. $2/GPU-hour: 32 × 2 / (2,560 tokens/s × 3,600) × 1e6 = $6.944 per M tokens.
        let bill = RunBill::default();
        let f = priced(
            "h100-sxm",
            ("TP 8 PP 1".into(), 8, 2.5),
            (10.0, 256),
            Some(2.0),
            (700.0, 8, &bill),
        );
        assert_eq!((f.units, f.gpus), (4, 32));
        assert!((f.load_share - 1.0).abs() < 1e-12);
        assert!((f.usd_per_m_tokens.expect("priced") - 6.944_444).abs() < 1e-5);
        // 32 × (700 + 4,600/8) × 1.56 = 63,648 W; / 2,560 tokens/s × 1e6 = 24.86e6 J per M tokens.
        assert!((f.facility_w - 63_648.0).abs() < 1e-6);
        assert!((f.j_per_m_tokens - 63_648.0 / 2_560.0 * 1e6).abs() < 1e-3);
        // Idle: 32 × (700 × 145/700 + 575) × 1.56 = 32 × 720 × 1.56 = 35,942.4 W.
        assert!((f.idle_facility_w - 35_942.4).abs() < 1e-6);
    }
}
