//! The bill's numbers explained: each a [`Term`] with its formula and the user's numbers in it.

use crate::base::explain::{fmt_bytes, fmt_num, Term, Unit};
use crate::bill::energy::WAITING_POWER_SHARE;
use crate::bill::run::{BillNumbers, RunShape, S_PER_DAY};
use crate::input::bill::RunBill;
use crate::serving::latency::term;

/// A rate as a formula reads it: scientific below 0.001 (`1.973e-5`), else [`fmt_num`].
fn rate(x: f64) -> String {
    if x != 0.0 && x.abs() < 1e-3 {
        format!("{x:.3e}")
    } else {
        fmt_num(x)
    }
}

/// Every term of the bill, in reading order: budget and time, failures, energy, dollars.
pub fn bill_terms(shape: &RunShape, bill: &RunBill, n: &BillNumbers) -> Vec<Term> {
    let mut out = time_terms(shape, n);
    out.extend(failure_terms(shape, bill, n));
    out.extend(energy_terms(shape, bill, n));
    out.extend(dollar_terms(bill, n));
    out
}

fn time_terms(shape: &RunShape, n: &BillNumbers) -> Vec<Term> {
    vec![
        term(
            "bill.steps",
            "Optimizer steps",
            Unit::Count,
            n.steps,
            "steps = ⌈tokens / tokens per step⌉",
            format!(
                "⌈{} / {}⌉ = {}",
                fmt_num(n.tokens),
                fmt_num(shape.tokens_per_step),
                fmt_num(n.steps)
            ),
            "the token budget given, or 20 tokens per parameter (Chinchilla) when none is",
        ),
        term(
            "bill.ideal_days",
            "Ideal wall-clock",
            Unit::Days,
            n.ideal_days(),
            "steps × step time / 86,400",
            format!(
                "{} × {} s / 86,400 = {} days",
                fmt_num(n.steps),
                fmt_num(shape.step_s),
                fmt_num(n.ideal_days())
            ),
            "every step at the predicted step time, nothing failing",
        ),
        term(
            "bill.expected_days",
            "Expected wall-clock",
            Unit::Days,
            n.expected_days(),
            "ideal days / goodput",
            format!(
                "{} / {} = {} days",
                fmt_num(n.ideal_days()),
                fmt_num(n.goodput.goodput),
                fmt_num(n.expected_days())
            ),
            "failures, restarts and checkpoints at the rates below",
        ),
    ]
}

fn failure_terms(shape: &RunShape, bill: &RunBill, n: &BillNumbers) -> Vec<Term> {
    let c = &shape.checkpoint;
    vec![
        term(
            "bill.checkpoint_size",
            "Checkpoint size",
            Unit::Bytes,
            c.total_bytes,
            "Ψ × (weight + optimizer-state bytes per parameter)",
            format!(
                "{} × {} B = {}",
                fmt_num(shape.params),
                fmt_num(c.bytes_per_param),
                fmt_bytes(c.total_bytes)
            ),
            "working weights and optimizer state; gradients are not saved",
        ),
        term(
            "bill.checkpoint_per_node",
            "Checkpoint written per node",
            Unit::Bytes,
            c.per_node_bytes,
            "GPUs per node × the busiest rank's share of its stage's state",
            format!(
                "{} × {} = {}",
                fmt_num(shape.gpus_per_node.min(shape.gpus)),
                fmt_bytes(c.per_rank_bytes),
                fmt_bytes(c.per_node_bytes)
            ),
            "fully parallel save (Megatron dist_checkpointing, PyTorch DCP): each tensor written \
             once, split over the ranks that hold it, whatever the ZeRO stage",
        ),
        term(
            "bill.checkpoint_write",
            "Checkpoint write",
            Unit::Seconds,
            n.checkpoint_s,
            "C = bytes per node / write bandwidth per node",
            format!(
                "{} / {} GB/s = {} s",
                fmt_bytes(c.per_node_bytes),
                fmt_num(bill.checkpoint_write_gb_s_per_node),
                fmt_num(n.checkpoint_s)
            ),
            "a blocking write; every node writes at once at its own bandwidth",
        ),
        mtbf_term(shape, bill, n),
        term(
            "bill.interval",
            "Checkpoint interval (Young)",
            Unit::Seconds,
            n.goodput.interval_s,
            "τ = √(2 C M)",
            format!(
                "√(2 × {} s × {} s) = {} s",
                fmt_num(n.checkpoint_s),
                fmt_num(n.mtbf_s),
                fmt_num(n.goodput.interval_s)
            ),
            "Young 1974, eq. 3: the interval that minimises lost time while C ≪ M",
        ),
        term(
            "bill.restart_cost",
            "Restart cost",
            Unit::Seconds,
            n.restart_s,
            "R = restart time + checkpoint read",
            format!(
                "{} s + {} s = {} s",
                fmt_num(bill.restart_s),
                fmt_num(n.checkpoint_s),
                fmt_num(n.restart_s)
            ),
            "the checkpoint read back at its write bandwidth",
        ),
        goodput_term(n),
        term(
            "bill.interruptions",
            "Expected interruptions",
            Unit::Count,
            n.interruptions,
            "λ × GPU-hours",
            format!(
                "{} × {} = {}",
                rate(bill.failures_per_gpu_hour),
                fmt_num(n.gpu_hours),
                fmt_num(n.interruptions)
            ),
            "failures independent and memoryless, at one GPU's rate times the GPUs",
        ),
    ]
}

fn mtbf_term(shape: &RunShape, bill: &RunBill, n: &BillNumbers) -> Term {
    term(
        "bill.mtbf",
        "Time between interruptions",
        Unit::Seconds,
        n.mtbf_s,
        "M = 3,600 / (λ × N)",
        format!(
            "3,600 / ({} × {}) = {} s",
            rate(bill.failures_per_gpu_hour),
            fmt_num(shape.gpus),
            fmt_num(n.mtbf_s)
        ),
        "one GPU's interruption stops the whole synchronous job",
    )
}

fn goodput_term(n: &BillNumbers) -> Term {
    let g = &n.goodput;
    term(
        "bill.goodput",
        "Goodput",
        Unit::Fraction,
        g.goodput,
        "(1 − (R + (τ + C)/2) / M) × (1 − C / (τ + C))",
        format!(
            "(1 − ({} + ({} + {})/2) / {}) × (1 − {} / ({} + {})) = {}",
            fmt_num(n.restart_s),
            fmt_num(g.interval_s),
            fmt_num(n.checkpoint_s),
            fmt_num(n.mtbf_s),
            fmt_num(n.checkpoint_s),
            fmt_num(g.interval_s),
            fmt_num(n.checkpoint_s),
            fmt_num(g.goodput)
        ),
        "each failure costs the restart and half an interval of work; each interval its write",
    )
}

fn energy_terms(shape: &RunShape, bill: &RunBill, n: &BillNumbers) -> Vec<Term> {
    vec![
        term(
            "bill.gpu_power",
            "GPU average power",
            Unit::Watts,
            n.gpu_w,
            "P_board × (busy + (1 − busy) × waiting share)",
            format!(
                "{} W × ({} + {} × {}) = {} W",
                fmt_num(shape.board_power_w),
                fmt_num(shape.busy),
                fmt_num(1.0 - shape.busy),
                fmt_num(WAITING_POWER_SHARE),
                fmt_num(n.gpu_w)
            ),
            "datasheet board power while computing, the idle draw measured on an H100 while \
             waiting in the bubble or on exposed communication",
        ),
        term(
            "bill.facility_power",
            "Facility power",
            Unit::Watts,
            n.facility_w,
            "N × (P_gpu + node overhead / GPUs per node) × PUE",
            format!(
                "{} × ({} + {} / {}) W × {} = {} W",
                fmt_num(shape.gpus),
                fmt_num(n.gpu_w),
                fmt_num(bill.node_overhead_w),
                fmt_num(shape.gpus_per_node),
                fmt_num(bill.pue),
                fmt_num(n.facility_w)
            ),
            "the same draw through checkpoints and restarts",
        ),
        term(
            "bill.energy",
            "Energy",
            Unit::Joules,
            n.energy_j,
            "facility power × expected wall-clock",
            format!(
                "{} W × {} s = {} MWh",
                fmt_num(n.facility_w),
                fmt_num(n.expected_s),
                fmt_num(n.energy_j / 3.6e9)
            ),
            "facility energy, PUE included",
        ),
        term(
            "bill.tokens_per_joule",
            "Tokens per joule",
            Unit::TokensPerJoule,
            n.tokens_per_j(),
            "tokens / energy",
            format!(
                "{} / {} J = {}",
                fmt_num(n.tokens),
                fmt_num(n.energy_j),
                fmt_num(n.tokens_per_j())
            ),
            "facility energy",
        ),
    ]
}

fn dollar_terms(bill: &RunBill, n: &BillNumbers) -> Vec<Term> {
    let rate = bill.usd_per_gpu_hour_charged();
    let electricity_note = if bill.bills_electricity() {
        "owned: billed apart"
    } else {
        "rented: inside the hourly price, shown for reference"
    };
    vec![
        term(
            "bill.gpu_hours",
            "GPU-hours",
            Unit::GpuHours,
            n.gpu_hours,
            "N × expected wall-clock hours",
            format!(
                "{} × {} h = {}",
                fmt_num(n.gpu_hours / (n.expected_s / 3_600.0)),
                fmt_num(n.expected_s / 3_600.0),
                fmt_num(n.gpu_hours)
            ),
            "every GPU held for the whole run, restarts and checkpoints included",
        ),
        term(
            "bill.gpu_dollars",
            "GPU dollars",
            Unit::Dollars,
            n.gpu_usd,
            "GPU-hours × price per GPU-hour",
            format!(
                "{} × ${} = ${}",
                fmt_num(n.gpu_hours),
                fmt_num(rate),
                fmt_num(n.gpu_usd)
            ),
            hourly_note(bill),
        ),
        term(
            "bill.electricity_dollars",
            "Electricity",
            Unit::Dollars,
            n.electricity_usd,
            "energy in kWh × price per kWh",
            format!(
                "{} kWh × ${} = ${}",
                fmt_num(n.energy_j / 3.6e6),
                fmt_num(bill.usd_per_kwh),
                fmt_num(n.electricity_usd)
            ),
            electricity_note,
        ),
        term(
            "bill.dollars",
            "Run cost",
            Unit::Dollars,
            n.total_usd,
            "GPU dollars (+ electricity when owned)",
            format!("${}", fmt_num(n.total_usd)),
            "storage, network egress and staff not counted",
        ),
    ]
}

fn hourly_note(bill: &RunBill) -> &'static str {
    match bill.price_kind {
        crate::input::bill::PriceKind::OnDemand => "on-demand list price",
        crate::input::bill::PriceKind::Reserved => "reserved (committed-term) price",
        crate::input::bill::PriceKind::Owned => "owned: purchase / (amortisation years × 8,760 h)",
    }
}

/// Seconds as days, for the view's headline.
pub fn days(s: f64) -> f64 {
    s / S_PER_DAY
}
