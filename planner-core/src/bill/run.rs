//! A training run's bill: the steps its token budget takes, its ideal and expected wall time
//! once failures and checkpoints are paid ([`crate::bill::failures`]), its GPU-hours, dollars and
//! energy ([`crate::bill::energy`]), each an explained number.

use crate::bill::checkpoint::{checkpoint_size, write_s, CheckpointSize};
use crate::bill::energy::{busy_share, facility_w, gpu_average_w};
use crate::bill::failures::{goodput, mtbf_s, Goodput};
use crate::input::bill::{RunBill, CHINCHILLA_TOKENS_PER_PARAM};
use crate::input::hardware::gpu_board_power_w;
use crate::input::model::ModelSpec;
use crate::input::scenario::Scenario;
use crate::time::cost::{CostOptions, StepCost, StepModel};

/// Seconds in a day.
pub const S_PER_DAY: f64 = 86_400.0;

/// What the bill needs of one layout on one cluster.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RunShape {
    /// GPUs the run uses.
    pub gpus: f64,
    /// GPUs per node.
    pub gpus_per_node: f64,
    /// Predicted step time, seconds.
    pub step_s: f64,
    /// Tokens per optimizer step.
    pub tokens_per_step: f64,
    /// Share of a step the GPUs compute ([`busy_share`]).
    pub busy: f64,
    /// What a checkpoint writes.
    pub checkpoint: CheckpointSize,
    /// A GPU's board power, watts.
    pub board_power_w: f64,
    /// Ψ, the model's parameters (the default token budget).
    pub params: f64,
}

/// Why a bill has no figures.
#[derive(Clone, Debug, PartialEq)]
pub enum BillError {
    /// The GPU names no preset and the bill gives no board power.
    NoBoardPower,
    /// Failures come faster than the run recovers: it never finishes.
    NoProgress {
        /// The cluster's mean time between interruptions, seconds.
        mtbf_s: f64,
    },
}

impl std::fmt::Display for BillError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            BillError::NoBoardPower => write!(
                f,
                "bill_board_w: this GPU has no datasheet board power; give one"
            ),
            BillError::NoProgress { mtbf_s } => write!(
                f,
                "bill_fail: an interruption every {mtbf_s:.0} s leaves no time \
                 to train between restarts and checkpoints"
            ),
        }
    }
}

/// A run's bill as numbers (the search ranks by these; [`crate::bill::terms`] explains them).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BillNumbers {
    /// Tokens the run trains on (whole steps).
    pub tokens: f64,
    /// Optimizer steps.
    pub steps: f64,
    /// Steps × step time, seconds: the run with nothing failing.
    pub ideal_s: f64,
    /// The cluster's mean time between interruptions, seconds.
    pub mtbf_s: f64,
    /// One checkpoint write, seconds.
    pub checkpoint_s: f64,
    /// One restart: the restart time and reading the checkpoint back, seconds.
    pub restart_s: f64,
    /// Checkpoint interval, shares and goodput.
    pub goodput: Goodput,
    /// Ideal time over goodput, seconds.
    pub expected_s: f64,
    /// Interruptions expected over the run.
    pub interruptions: f64,
    /// GPUs × expected hours.
    pub gpu_hours: f64,
    /// A GPU's average draw, watts.
    pub gpu_w: f64,
    /// The facility's draw for the run, watts.
    pub facility_w: f64,
    /// Facility energy over the expected run, joules.
    pub energy_j: f64,
    /// GPU-hours at the charged hourly price, dollars.
    pub gpu_usd: f64,
    /// Energy at the electricity price, dollars (billed only when the GPUs are owned).
    pub electricity_usd: f64,
    /// What the run costs, dollars.
    pub total_usd: f64,
}

impl BillNumbers {
    /// Ideal wall time, days.
    pub fn ideal_days(&self) -> f64 {
        self.ideal_s / S_PER_DAY
    }

    /// Expected wall time, days.
    pub fn expected_days(&self) -> f64 {
        self.expected_s / S_PER_DAY
    }

    /// Tokens trained per joule of facility energy.
    pub fn tokens_per_j(&self) -> f64 {
        self.tokens / self.energy_j
    }
}

/// Tokens and steps of the budget: the steps given, or `⌈tokens / tokens per step⌉` of the
/// tokens given, or of `20 Ψ` (Chinchilla) when neither is.
pub fn tokens_and_steps(bill: &RunBill, tokens_per_step: f64, params: f64) -> (f64, f64) {
    let steps = match bill.steps {
        Some(steps) => steps as f64,
        None => {
            let tokens = bill.tokens.unwrap_or(CHINCHILLA_TOKENS_PER_PARAM * params);
            (tokens / tokens_per_step.max(1.0)).ceil()
        }
    };
    (steps * tokens_per_step, steps)
}

/// The bill of `shape` under `bill`.
pub fn bill_numbers(shape: &RunShape, bill: &RunBill) -> Result<BillNumbers, BillError> {
    let (tokens, steps) = tokens_and_steps(bill, shape.tokens_per_step, shape.params);
    let ideal_s = steps * shape.step_s;
    let mtbf = mtbf_s(bill.failures_per_gpu_hour, shape.gpus);
    let checkpoint_s = write_s(
        shape.checkpoint.per_node_bytes,
        bill.checkpoint_write_gb_s_per_node,
    );
    // Reading the checkpoint back at the write bandwidth (no separate read figure is asked).
    let restart_s = bill.restart_s + checkpoint_s;
    let g = goodput(checkpoint_s, restart_s, mtbf).ok_or(BillError::NoProgress { mtbf_s: mtbf })?;
    let expected_s = ideal_s / g.goodput;
    let gpu_w = gpu_average_w(shape.board_power_w, shape.busy);
    let facility = facility_w(
        shape.gpus,
        gpu_w,
        bill.node_overhead_w,
        shape.gpus_per_node,
        bill.pue,
    );
    let energy_j = facility * expected_s;
    let gpu_hours = shape.gpus * expected_s / 3_600.0;
    let gpu_usd = gpu_hours * bill.usd_per_gpu_hour_charged();
    let electricity_usd = energy_j / 3.6e6 * bill.usd_per_kwh;
    let total_usd = gpu_usd
        + if bill.bills_electricity() {
            electricity_usd
        } else {
            0.0
        };
    Ok(BillNumbers {
        tokens,
        steps,
        ideal_s,
        mtbf_s: mtbf,
        checkpoint_s,
        restart_s,
        goodput: g,
        expected_s,
        interruptions: bill.failures_per_gpu_hour * gpu_hours,
        gpu_hours,
        gpu_w,
        facility_w: facility,
        energy_j,
        gpu_usd,
        electricity_usd,
        total_usd,
    })
}

/// The board power the bill prices: the bill's own figure, else the GPU preset's.
pub fn board_power_w(scenario: &Scenario) -> Result<f64, BillError> {
    scenario
        .bill
        .board_power_w
        .or_else(|| gpu_board_power_w(&scenario.cluster.gpu.id))
        .ok_or(BillError::NoBoardPower)
}

/// The shape of the scenario's own layout, from its step time.
pub fn scenario_shape(
    scenario: &Scenario,
    model: &ModelSpec,
    step: &StepCost,
) -> Result<RunShape, BillError> {
    let gpn = scenario.cluster.gpus_per_node;
    let exposed: f64 = step.seconds.exposed_comm.iter().sum();
    Ok(RunShape {
        gpus: scenario.layout.world_size() as f64,
        gpus_per_node: f64::from(gpn.max(1)),
        step_s: step.seconds.total,
        tokens_per_step: step.tokens_per_step,
        busy: busy_share(step.seconds.total, step.seconds.bubble, exposed),
        checkpoint: checkpoint_size(model, &scenario.precision, &scenario.layout, gpn),
        board_power_w: board_power_w(scenario)?,
        params: model.params(),
    })
}

/// The scenario's step under its time model (calibrated when the user switched that on).
pub fn scenario_step(scenario: &Scenario, model: &ModelSpec) -> StepCost {
    StepModel::for_scenario(model, scenario, CostOptions::default()).evaluate(&scenario.layout)
}

/// A training run's bill, explained.
#[derive(Clone, Debug, PartialEq)]
pub struct TrainingBill {
    /// What the bill was priced from.
    pub shape: RunShape,
    /// The figures.
    pub numbers: BillNumbers,
    /// The figures explained, in reading order ([`crate::bill::terms::bill_terms`]).
    pub terms: Vec<crate::base::explain::Term>,
}

/// The bill of the scenario's own layout.
pub fn training_bill(scenario: &Scenario, model: &ModelSpec) -> Result<TrainingBill, BillError> {
    let step = scenario_step(scenario, model);
    let shape = scenario_shape(scenario, model, &step)?;
    let numbers = bill_numbers(&shape, &scenario.bill)?;
    let terms = crate::bill::terms::bill_terms(&shape, &scenario.bill, &numbers);
    Ok(TrainingBill {
        shape,
        numbers,
        terms,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::input::bill::PriceKind;

    fn shape() -> RunShape {
        RunShape {
            gpus: 16.0,
            gpus_per_node: 8.0,
            step_s: 10.0,
            tokens_per_step: 1e6,
            busy: 0.8,
            checkpoint: CheckpointSize {
                bytes_per_param: 14.0,
                total_bytes: 14e9,
                per_rank_bytes: 0.875e9,
                per_node_bytes: 7e9,
            },
            board_power_w: 700.0,
            params: 1e9,
        }
    }

    #[test]
    fn a_run_with_no_failures_by_hand() {
        let bill = RunBill {
            tokens: Some(1e9),
            failures_per_gpu_hour: 0.0,
            usd_per_gpu_hour: 2.0,
            ..RunBill::default()
        };
        let n = bill_numbers(&shape(), &bill).expect("bill");
        // 1e9 tokens / 1e6 per step = 1,000 steps × 10 s = 10,000 s; goodput 1.
        assert_eq!(
            (n.steps, n.ideal_s, n.expected_s),
            (1_000.0, 10_000.0, 10_000.0)
        );
        // 16 GPUs × 10,000 s / 3,600 = 44.44 GPU-hours × $2 = $88.89.
        assert!((n.gpu_hours - 44.444_444).abs() < 1e-5);
        assert!((n.total_usd - 88.888_889).abs() < 1e-5);
        // Facility 29,053.44 W (energy.rs) × 10,000 s = 2.905e8 J = 80.70 kWh.
        assert!((n.energy_j - 2.905_344e8).abs() < 1.0);
        // 1e9 tokens / 2.905344e8 J = 3.442 tokens/J.
        assert!((n.tokens_per_j() - 3.441_94).abs() < 1e-4);
        // Rented: the electricity is in the hourly price, not billed apart.
        assert_eq!(n.total_usd, n.gpu_usd);
    }

    #[test]
    fn failures_checkpoints_and_ownership_by_hand() {
        let bill = RunBill {
            tokens: Some(1e9),
            // 1e-3 per GPU-hour × 16 GPUs: 0.016 per hour, M = 225,000 s.
            failures_per_gpu_hour: 1e-3,
            // 7e9 bytes per node / 1 GB/s = 7 s per checkpoint; restart 93 + 7 = 100 s.
            checkpoint_write_gb_s_per_node: 1.0,
            restart_s: 93.0,
            price_kind: PriceKind::Owned,
            ..RunBill::default()
        };
        let n = bill_numbers(&shape(), &bill).expect("bill");
        assert!((n.mtbf_s - 225_000.0).abs() < 1e-6);
        assert_eq!((n.checkpoint_s, n.restart_s), (7.0, 100.0));
        // τ = √(2 × 7 × 225,000) = 1,774.82 s; checkpoint share 7 / 1,781.82 = 0.0039286;
        // failure share (100 + 890.91) / 225,000 = 0.0044040; goodput 0.99170 × 0.99607 = 0.991684.
        assert!((n.goodput.interval_s - 1_774.824).abs() < 1e-3);
        assert!(
            (n.goodput.goodput - 0.991_684).abs() < 1e-6,
            "{:?}",
            n.goodput
        );
        // Owned: $24,875 / (6 × 8,760) = $0.473269 per GPU-hour, plus the electricity:
        // GPU-hours 16 × 10,083.9 / 3,600; kWh = 29,053.44 W × 10,083.9 s / 3.6e6.
        let hours = 16.0 * n.expected_s / 3_600.0;
        let kwh = 29_053.44 * n.expected_s / 3.6e6;
        assert!((n.total_usd - (hours * 0.473_269 + kwh * 0.0806)).abs() < 1e-3);
        // Interruptions: 1e-3 × GPU-hours.
        assert!((n.interruptions - 1e-3 * hours).abs() < 1e-12);
    }

    #[test]
    fn a_custom_gpu_without_a_board_power_is_refused_by_name() {
        let mut s = crate::resolve::presets::default_scenario();
        s.cluster.gpu.id = "custom".into();
        let e = board_power_w(&s).expect_err("no preset");
        assert!(e.to_string().starts_with("bill_board_w"));
        s.bill.board_power_w = Some(300.0);
        assert_eq!(board_power_w(&s), Ok(300.0));
    }
}
