//! Pipeline schedules: simulated timelines, bubbles and in-flight micro-batches.
//!
//! Each schedule is given as an ordered list of operations per stage (what the
//! framework's scheduler issues on that rank). [`timeline`] runs those lists
//! with a unit cost model and starts each operation as soon as its stage is
//! free and its inputs exist, so idle slots come out of the simulation. The
//! closed forms in [`bubble`] are checked against it in the tests.
//!
//! # Time unit
//! Time is counted in integer *ticks*. One *slot* is one stage's forward pass
//! of one micro-batch over all of its layers, and `ticks_per_slot` is `v` (the
//! virtual chunks per rank) so interleaved chunks, which hold `1/v` of a
//! stage's layers, cost whole ticks:
//! - forward `F` = 1 slot, full backward `B` = 2 slots (the usual 2× rule);
//! - zero bubble splits the backward into `B` (input gradient) = 1 slot and
//!   `W` (weight gradient) = 1 slot (Qi et al. 2023 use `T_F = T_B = T_W`);
//! - an interleaved chunk costs `1/v` of those, i.e. 1 tick forward, 2 ticks backward.
//!
//! # Two bubble definitions (label which one is shown)
//! - [`Bubble::idle_fraction`]: idle share of the whole `stages × makespan`
//!   grid, what the article draws: `(p−1)/(m+p−1)`.
//! - [`Bubble::overhead_vs_ideal`]: extra time relative to the bubble-free
//!   time `m × (F+B)`, what Megatron and the Ultra-Scale Playbook quote: `(p−1)/m`.

use serde::{Deserialize, Serialize};

use crate::base::explain::{Term, Unit};

pub use crate::input::layout::Schedule;

/// Largest micro-batch count a timeline is drawn for.
pub const MAX_TIMELINE_MICRO_BATCHES: u32 = 512;
/// Largest stage count a timeline is drawn for.
pub const MAX_TIMELINE_STAGES: u32 = 256;
/// Largest virtual-chunk count a timeline is drawn for.
pub const MAX_TIMELINE_VIRTUAL_STAGES: u32 = 32;
/// Largest `stages × micro_batches × virtual_stages` a timeline is drawn for
/// (keeps a timeline under a million ops and a few MB).
pub const MAX_TIMELINE_CELLS: u64 = 1 << 18;

/// What one operation computes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OpKind {
    /// Forward pass of one micro-batch through one stage (or chunk).
    Forward,
    /// Full backward pass (input and weight gradients together).
    Backward,
    /// Zero bubble's `B`: gradient with respect to the stage input only.
    BackwardInput,
    /// Zero bubble's `W`: gradient with respect to the weights only.
    BackwardWeight,
}

impl OpKind {
    /// Duration in slots under the unit cost model.
    pub fn slots(self) -> u32 {
        match self {
            OpKind::Forward | OpKind::BackwardInput | OpKind::BackwardWeight => 1,
            OpKind::Backward => 2,
        }
    }

    fn index(self) -> usize {
        match self {
            OpKind::Forward => 0,
            OpKind::Backward => 1,
            OpKind::BackwardInput => 2,
            OpKind::BackwardWeight => 3,
        }
    }
}

/// One operation placed in time.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Op {
    /// Pipeline stage (rank), 0-based.
    pub stage: u32,
    /// Micro-batch, 0-based.
    pub micro_batch: u32,
    /// Model chunk on this rank (interleaved), 0 otherwise.
    pub chunk: u32,
    /// What it computes.
    pub kind: OpKind,
    /// Start, in ticks.
    pub start_tick: u64,
    /// Duration, in ticks.
    pub duration_ticks: u64,
}

impl Op {
    /// End, in ticks.
    pub fn end_tick(&self) -> u64 {
        self.start_tick + self.duration_ticks
    }
}

/// A simulated schedule.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Timeline {
    /// The schedule simulated (`None` for a forward-only timeline).
    pub schedule: Option<Schedule>,
    /// Pipeline stages `p`.
    pub stages: u32,
    /// Micro-batches `m`.
    pub micro_batches: u32,
    /// Model chunks per rank `v` (1 unless interleaved).
    pub virtual_stages: u32,
    /// Ticks in one slot (one full-stage forward); equals `virtual_stages`.
    pub ticks_per_slot: u32,
    /// Every operation, in the order it was placed.
    pub ops: Vec<Op>,
}

/// Why a timeline or bubble was refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PipelineError {
    /// A field is out of range; names the field and says why.
    Invalid {
        /// The offending field (`stages`, `micro_batches`, `virtual_stages`).
        field: &'static str,
        /// Why it was refused.
        reason: String,
    },
    /// The per-stage orders could not all run (a bug in an order, never user input).
    Deadlock,
}

impl std::fmt::Display for PipelineError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PipelineError::Invalid { field, reason } => write!(f, "{field}: {reason}"),
            PipelineError::Deadlock => write!(f, "pipeline schedule deadlocked"),
        }
    }
}

impl std::error::Error for PipelineError {}

fn invalid(field: &'static str, reason: impl Into<String>) -> PipelineError {
    PipelineError::Invalid {
        field,
        reason: reason.into(),
    }
}

/// An operation before it is placed in time.
#[derive(Clone, Copy, Debug)]
struct Planned {
    kind: OpKind,
    micro_batch: u32,
    chunk: u32,
}

fn fwd(micro_batch: u32, chunk: u32) -> Planned {
    Planned {
        kind: OpKind::Forward,
        micro_batch,
        chunk,
    }
}

fn planned(kind: OpKind, micro_batch: u32) -> Planned {
    Planned {
        kind,
        micro_batch,
        chunk: 0,
    }
}

fn check_sizes(stages: u32, micro_batches: u32, virtual_stages: u32) -> Result<(), PipelineError> {
    if stages == 0 || stages > MAX_TIMELINE_STAGES {
        return Err(invalid(
            "stages",
            format!("must be 1..={MAX_TIMELINE_STAGES}, got {stages}"),
        ));
    }
    if micro_batches == 0 || micro_batches > MAX_TIMELINE_MICRO_BATCHES {
        return Err(invalid(
            "micro_batches",
            format!("must be 1..={MAX_TIMELINE_MICRO_BATCHES} to draw, got {micro_batches}"),
        ));
    }
    if virtual_stages == 0 || virtual_stages > MAX_TIMELINE_VIRTUAL_STAGES {
        return Err(invalid(
            "virtual_stages",
            format!("must be 1..={MAX_TIMELINE_VIRTUAL_STAGES}, got {virtual_stages}"),
        ));
    }
    let cells = u64::from(stages) * u64::from(micro_batches) * u64::from(virtual_stages);
    if cells > MAX_TIMELINE_CELLS {
        return Err(invalid(
            "micro_batches",
            format!(
                "stages × micro-batches × chunks = {cells} exceeds {MAX_TIMELINE_CELLS}; too large to draw"
            ),
        ));
    }
    Ok(())
}

/// GPipe (Huang et al. 2019): all forwards, then all backwards.
fn gpipe_order(micro_batches: u32) -> Vec<Planned> {
    (0..micro_batches)
        .map(|i| fwd(i, 0))
        .chain((0..micro_batches).map(|i| planned(OpKind::Backward, i)))
        .collect()
}

/// 1F1B (Narayanan et al. 2021, PipeDream-Flush; Megatron `forward_backward_pipelining_without_interleaving`):
/// `p − s − 1` warm-up forwards, then alternate one forward and one backward, then drain.
fn one_f_one_b_order(stages: u32, micro_batches: u32, stage: u32) -> Vec<Planned> {
    let warmup = (stages - stage - 1).min(micro_batches);
    let mut order: Vec<Planned> = (0..warmup).map(|i| fwd(i, 0)).collect();
    let steady = micro_batches - warmup;
    for i in 0..steady {
        order.push(fwd(warmup + i, 0));
        order.push(planned(OpKind::Backward, i));
    }
    order.extend((steady..micro_batches).map(|i| planned(OpKind::Backward, i)));
    order
}

/// Interleaved 1F1B (Narayanan et al. 2021 §2.2; Megatron `forward_backward_pipelining_with_interleaving`):
/// virtual micro-batch `k` runs chunk `(k / p) mod v` of micro-batch `(k / (p·v))·p + k mod p`
/// (backwards take chunks in reverse); `2(p − s − 1) + (v − 1)·p` warm-up forwards.
fn interleaved_order(
    stages: u32,
    micro_batches: u32,
    virtual_stages: u32,
    stage: u32,
) -> Vec<Planned> {
    let (p, v) = (stages, virtual_stages);
    let total = micro_batches * v;
    let micro_batch_of = |k: u32| (k / (p * v)) * p + k % p;
    let forward = |k: u32| fwd(micro_batch_of(k), (k / p) % v);
    let backward = |k: u32| Planned {
        kind: OpKind::Backward,
        micro_batch: micro_batch_of(k),
        chunk: v - 1 - (k / p) % v,
    };
    let warmup = (2 * (p - stage - 1) + (v - 1) * p).min(total);
    let mut order: Vec<Planned> = (0..warmup).map(forward).collect();
    let steady = total - warmup;
    for i in 0..steady {
        order.push(forward(warmup + i));
        order.push(backward(i));
    }
    order.extend((steady..total).map(backward));
    order
}

/// ZB-H1 (Qi et al. 2023, "Zero Bubble Pipeline Parallelism" §3.1, Fig. 3; reference
/// DeepSpeed schedule `ZeroBubbleH1Pipeline`): `p − s − 1` warm-up forwards, then `s` rounds
/// of F,B with W deferred, then F,B,W rounds, then B,W, then the deferred W's.
fn zero_bubble_h1_order(stages: u32, micro_batches: u32, stage: u32) -> Vec<Planned> {
    let m = micro_batches;
    let (mut forward, mut backward, mut weight) = (0, 0, 0);
    let mut order = Vec::new();
    for _ in 0..(stages - stage - 1) {
        if forward < m {
            order.push(fwd(forward, 0));
            forward += 1;
        }
    }
    for _ in 0..stage {
        if forward < m {
            order.push(fwd(forward, 0));
            order.push(planned(OpKind::BackwardInput, backward));
            forward += 1;
            backward += 1;
        }
    }
    while forward < m {
        order.push(fwd(forward, 0));
        order.push(planned(OpKind::BackwardInput, backward));
        order.push(planned(OpKind::BackwardWeight, weight));
        forward += 1;
        backward += 1;
        weight += 1;
    }
    while backward < m {
        order.push(planned(OpKind::BackwardInput, backward));
        order.push(planned(OpKind::BackwardWeight, weight));
        backward += 1;
        weight += 1;
    }
    order.extend((weight..m).map(|i| planned(OpKind::BackwardWeight, i)));
    order
}

/// Finish ticks of placed operations, indexed by kind, stage, chunk and micro-batch.
struct Finished {
    stages: usize,
    chunks: usize,
    micro_batches: usize,
    ticks: Vec<Option<u64>>,
}

impl Finished {
    fn new(stages: u32, chunks: u32, micro_batches: u32) -> Self {
        let (stages, chunks, micro_batches) =
            (stages as usize, chunks as usize, micro_batches as usize);
        Finished {
            stages,
            chunks,
            micro_batches,
            ticks: vec![None; 4 * stages * chunks * micro_batches],
        }
    }

    fn slot(&self, kind: OpKind, stage: u32, chunk: u32, micro_batch: u32) -> usize {
        ((kind.index() * self.stages + stage as usize) * self.chunks + chunk as usize)
            * self.micro_batches
            + micro_batch as usize
    }

    fn get(&self, kind: OpKind, stage: u32, chunk: u32, micro_batch: u32) -> Option<u64> {
        self.ticks[self.slot(kind, stage, chunk, micro_batch)]
    }

    fn set(&mut self, kind: OpKind, stage: u32, chunk: u32, micro_batch: u32, tick: u64) {
        let i = self.slot(kind, stage, chunk, micro_batch);
        self.ticks[i] = Some(tick);
    }
}

/// The operations `op` on `stage` waits for: `(kind, stage, chunk)` of the same micro-batch.
/// Forwards flow stage 0 → p−1 through chunk 0, then wrap to stage 0 of chunk 1 (interleaved);
/// backwards flow the other way, and start after the last forward. At most two, returned
/// without allocating (the simulation asks once per attempt to place an op).
fn dependencies(op: Planned, stage: u32, stages: u32, chunks: u32) -> Deps {
    let mut deps = Deps::default();
    match op.kind {
        OpKind::Forward => {
            if stage > 0 {
                deps.push((OpKind::Forward, stage - 1, op.chunk));
            } else if op.chunk > 0 {
                deps.push((OpKind::Forward, stages - 1, op.chunk - 1));
            }
        }
        OpKind::Backward | OpKind::BackwardInput => {
            deps.push((OpKind::Forward, stage, op.chunk));
            // The gradient arrives from the next stage, or from stage 0 of the next chunk.
            if stage + 1 < stages {
                deps.push((op.kind, stage + 1, op.chunk));
            } else if op.chunk + 1 < chunks {
                deps.push((op.kind, 0, op.chunk + 1));
            }
        }
        OpKind::BackwardWeight => deps.push((OpKind::BackwardInput, stage, op.chunk)),
    }
    deps
}

/// Up to two dependencies of an op, inline.
#[derive(Clone, Copy)]
struct Deps {
    items: [(OpKind, u32, u32); 2],
    len: usize,
}

impl Default for Deps {
    fn default() -> Self {
        Deps {
            items: [(OpKind::Forward, 0, 0); 2],
            len: 0,
        }
    }
}

impl Deps {
    fn push(&mut self, dep: (OpKind, u32, u32)) {
        if let Some(slot) = self.items.get_mut(self.len) {
            *slot = dep;
            self.len += 1;
        }
    }

    fn as_slice(&self) -> &[(OpKind, u32, u32)] {
        &self.items[..self.len]
    }
}

/// Runs per-stage orders: each op starts when its stage is free and its inputs are done.
fn simulate(
    schedule: Option<Schedule>,
    stages: u32,
    micro_batches: u32,
    virtual_stages: u32,
    orders: Vec<Vec<Planned>>,
) -> Result<Timeline, PipelineError> {
    let ticks_per_slot = u64::from(virtual_stages);
    // A chunk holds 1/v of a stage's layers, so its ops cost 1/v of a slot.
    let chunk_ticks = if schedule == Some(Schedule::Interleaved) {
        1
    } else {
        ticks_per_slot
    };
    let mut finished = Finished::new(stages, virtual_stages, micro_batches);
    let mut next = vec![0usize; stages as usize];
    let mut free_at = vec![0u64; stages as usize];
    let total: usize = orders.iter().map(Vec::len).sum();
    let mut ops = Vec::with_capacity(total);
    while ops.len() < total {
        let mut progressed = false;
        for stage in 0..stages {
            let si = stage as usize;
            while let Some(&op) = orders[si].get(next[si]) {
                let deps = dependencies(op, stage, stages, virtual_stages);
                let mut ready_at = free_at[si];
                let mut ready = true;
                for &(kind, s, c) in deps.as_slice() {
                    match finished.get(kind, s, c, op.micro_batch) {
                        Some(t) => ready_at = ready_at.max(t),
                        None => {
                            ready = false;
                            break;
                        }
                    }
                }
                if !ready {
                    break;
                }
                let duration = u64::from(op.kind.slots()) * chunk_ticks;
                let end = ready_at + duration;
                finished.set(op.kind, stage, op.chunk, op.micro_batch, end);
                free_at[si] = end;
                next[si] += 1;
                ops.push(Op {
                    stage,
                    micro_batch: op.micro_batch,
                    chunk: op.chunk,
                    kind: op.kind,
                    start_tick: ready_at,
                    duration_ticks: duration,
                });
                progressed = true;
            }
        }
        if !progressed {
            return Err(PipelineError::Deadlock);
        }
    }
    Ok(Timeline {
        schedule,
        stages,
        micro_batches,
        virtual_stages,
        ticks_per_slot: virtual_stages,
        ops,
    })
}

/// Simulates a full training step (forwards and backwards) of `schedule`.
///
/// `virtual_stages` is used by [`Schedule::Interleaved`] only, which (as in Megatron)
/// also needs `micro_batches % stages == 0`; other schedules run with one chunk.
/// Refuses more than [`MAX_TIMELINE_MICRO_BATCHES`] micro-batches (drawing bound).
pub fn timeline(
    schedule: Schedule,
    stages: u32,
    micro_batches: u32,
    virtual_stages: u32,
) -> Result<Timeline, PipelineError> {
    check_sizes(stages, micro_batches, virtual_stages)?;
    let v = if schedule == Schedule::Interleaved {
        virtual_stages
    } else {
        1
    };
    if schedule == Schedule::Interleaved && stages > 1 && !micro_batches.is_multiple_of(stages) {
        return Err(invalid(
            "micro_batches",
            format!(
                "interleaved 1F1B needs micro-batches divisible by stages ({micro_batches} % {stages} ≠ 0)"
            ),
        ));
    }
    let orders = (0..stages)
        .map(|stage| match schedule {
            Schedule::Gpipe => gpipe_order(micro_batches),
            Schedule::OneFOneB => one_f_one_b_order(stages, micro_batches, stage),
            Schedule::Interleaved => interleaved_order(stages, micro_batches, v, stage),
            Schedule::ZeroBubble => zero_bubble_h1_order(stages, micro_batches, stage),
        })
        .collect();
    simulate(Some(schedule), stages, micro_batches, v, orders)
}

/// Simulates the forward pass only (the article's figure: 4 stages × 4 micro-batches
/// over 7 slots, 12 of 28 slots idle).
pub fn forward_only_timeline(stages: u32, micro_batches: u32) -> Result<Timeline, PipelineError> {
    check_sizes(stages, micro_batches, 1)?;
    let orders = (0..stages)
        .map(|_| (0..micro_batches).map(|i| fwd(i, 0)).collect())
        .collect();
    simulate(None, stages, micro_batches, 1, orders)
}

impl Timeline {
    /// Time from the first start to the last end, in ticks.
    pub fn makespan_ticks(&self) -> u64 {
        self.ops.iter().map(Op::end_tick).max().unwrap_or(0)
    }

    /// Busy ticks of one stage.
    pub fn busy_ticks(&self, stage: u32) -> u64 {
        self.ops
            .iter()
            .filter(|op| op.stage == stage)
            .map(|op| op.duration_ticks)
            .sum()
    }

    /// Idle stage-ticks over the whole `stages × makespan` grid.
    pub fn idle_ticks(&self) -> u64 {
        let grid = u64::from(self.stages) * self.makespan_ticks();
        let busy: u64 = self.ops.iter().map(|op| op.duration_ticks).sum();
        grid - busy
    }

    /// Idle share of the `stages × makespan` grid (the article's definition).
    pub fn idle_fraction(&self) -> f64 {
        let grid = u64::from(self.stages) * self.makespan_ticks();
        if grid == 0 {
            return 0.0;
        }
        self.idle_ticks() as f64 / grid as f64
    }

    /// `(makespan − ideal) / ideal` where ideal is the busiest stage's work
    /// (Megatron's and the Playbook's definition).
    pub fn overhead_vs_ideal(&self) -> f64 {
        let ideal = self.busy_ticks_per_stage().into_iter().max().unwrap_or(0);
        if ideal == 0 {
            return 0.0;
        }
        (self.makespan_ticks() - ideal) as f64 / ideal as f64
    }

    /// Busy ticks of every stage, in one pass.
    pub fn busy_ticks_per_stage(&self) -> Vec<u64> {
        let mut busy = vec![0u64; self.stages as usize];
        for op in &self.ops {
            if let Some(b) = busy.get_mut(op.stage as usize) {
                *b += op.duration_ticks;
            }
        }
        busy
    }

    /// Both bubble measures of this simulation.
    pub fn bubble(&self) -> Bubble {
        Bubble {
            idle_fraction: self.idle_fraction(),
            overhead_vs_ideal: self.overhead_vs_ideal(),
        }
    }

    /// Peak number of micro-batches whose activations a stage holds: forwards done
    /// whose freeing op (full backward, or `W` for zero bubble) has not finished,
    /// counted in whole micro-batches (an interleaved chunk is `1/v`).
    pub fn peak_in_flight(&self, stage: u32) -> f64 {
        let mut events: Vec<(u64, i64)> = Vec::new();
        for op in self.ops.iter().filter(|op| op.stage == stage) {
            match op.kind {
                OpKind::Forward if self.schedule.is_some() => events.push((op.start_tick, 1)),
                OpKind::Backward | OpKind::BackwardWeight => events.push((op.end_tick(), -1)),
                _ => {}
            }
        }
        // Frees at a tick are applied before allocations at the same tick.
        events.sort_by_key(|&(t, d)| (t, d));
        let (mut now, mut peak) = (0i64, 0i64);
        for (_, d) in events {
            now += d;
            peak = peak.max(now);
        }
        peak as f64 / f64::from(self.virtual_stages)
    }
}

/// Pipeline bubble under both definitions in use. Never show one under the other's label.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Bubble {
    /// Idle share of the `stages × makespan` grid: `(p−1)/(m+p−1)` for GPipe/1F1B
    /// (the article's 3/7, 3/19, 3/35 at p = 4).
    pub idle_fraction: f64,
    /// Extra time relative to the bubble-free time: `(p−1)/m` for GPipe/1F1B
    /// (Megatron, Ultra-Scale Playbook).
    pub overhead_vs_ideal: f64,
}

/// Closed-form bubble of `schedule` with `p` stages, `m` micro-batches and `v` chunks.
///
/// With `b` = bubble time and `t` = ideal time per stage, `overhead = b/t` and
/// `idle = b/(t+b)`. Zero bubble uses the paper's `m ≥ p` form; for `m < p` the
/// simulation's makespan `2m + 2p − 1` in closed form (equal to [`timeline`]'s
/// bubble wherever a timeline can be drawn, and O(1) for any `p`, `m`). Inputs of 0
/// are treated as 1.
pub fn bubble(schedule: Schedule, p: u32, m: u32, v: u32) -> Bubble {
    let (p, m, v) = (p.max(1), m.max(1), v.max(1));
    let pf = f64::from(p);
    let mf = f64::from(m);
    // (bubble, ideal) per stage, in slots.
    let (bubble_slots, ideal_slots) = match schedule {
        // Narayanan et al. 2021 §2.2.1: bubble (p−1)(t_f+t_b) over ideal m(t_f+t_b).
        Schedule::Gpipe | Schedule::OneFOneB => (3.0 * (pf - 1.0), 3.0 * mf),
        // Narayanan et al. 2021 §2.2.2: interleaving divides the bubble by v.
        Schedule::Interleaved => (3.0 * (pf - 1.0) / f64::from(v), 3.0 * mf),
        // Qi et al. 2023 §3.1: ZB-H1 bubble (p−1)(T_F+T_B−T_W) with T_F = T_B = T_W = 1.
        Schedule::ZeroBubble => {
            if m < p {
                return zero_bubble_few_micro_batches(p, m);
            }
            (pf - 1.0, 3.0 * mf)
        }
    };
    Bubble {
        idle_fraction: bubble_slots / (ideal_slots + bubble_slots),
        overhead_vs_ideal: bubble_slots / ideal_slots,
    }
}

/// ZB-H1 with fewer micro-batches than stages (`m < p`), where the paper's form does
/// not hold: the simulated makespan is `2m + 2p − 1` slots (`3m + p − 1` plus `p − m`
/// slots the short warm-up cannot fill; checked against [`timeline`] in the tests), and
/// every stage is busy `3m` slots. Computed as [`Timeline::bubble`] computes it from the
/// simulation, in integers, so both give the same floats; a closed form because the
/// mesh search asks for it once per candidate and a simulation costs `O(p·m)`.
fn zero_bubble_few_micro_batches(p: u32, m: u32) -> Bubble {
    let (p, m) = (u64::from(p), u64::from(m));
    let makespan = 2 * m + 2 * p - 1;
    let busy = 3 * m;
    let grid = p * makespan;
    Bubble {
        idle_fraction: (grid - p * busy) as f64 / grid as f64,
        overhead_vs_ideal: (makespan - busy) as f64 / busy as f64,
    }
}

/// Micro-batches whose activations `stage` (0-based) holds at its peak.
///
/// GPipe holds all `m`; 1F1B holds `min(p − s, m)` (its warm-up depth plus one);
/// interleaved holds `(2(p−s−1) + (v−1)p + 1)/v` chunks' worth, which at stage 0 is
/// `p·(1 + (p−1)/(p·v))` — Korthikanti et al. 2022 §4.2.3 write `1 + (p−1)/(p·m)`
/// with `m` there meaning the interleaving depth, i.e. our `v`. ZB-H1 keeps each
/// micro-batch until its deferred `W`: `min(p, m)` on every stage, the same peak as
/// 1F1B's first stage (Qi et al. 2023 §3.1).
pub fn in_flight_micro_batches(schedule: Schedule, p: u32, m: u32, v: u32, stage: u32) -> f64 {
    // In u64: p, m and v come from the user, and m·v or (v−1)·p can pass 2^32.
    let (p, m, v) = (
        u64::from(p.max(1)),
        u64::from(m.max(1)),
        u64::from(v.max(1)),
    );
    let stage = u64::from(stage).min(p - 1);
    match schedule {
        Schedule::Gpipe => m as f64,
        Schedule::OneFOneB => (p - stage).min(m) as f64,
        Schedule::Interleaved => {
            let chunks = (2 * (p - stage - 1) + (v - 1) * p + 1).min(m * v);
            chunks as f64 / v as f64
        }
        Schedule::ZeroBubble => p.min(m) as f64,
    }
}

/// The two bubble measures as labelled [`Term`]s (value in `bytes` is a fraction).
pub fn bubble_terms(schedule: Schedule, p: u32, m: u32, v: u32) -> [Term; 2] {
    let b = bubble(schedule, p, m, v);
    let (p, m, v) = (p.max(1), m.max(1), v.max(1));
    let (idle_formula, idle_worked, over_formula, over_worked, source) = match schedule {
        Schedule::Gpipe | Schedule::OneFOneB => (
            "(p−1)/(m+p−1)".to_string(),
            format!("({p}−1)/({m}+{p}−1)"),
            "(p−1)/m".to_string(),
            format!("({p}−1)/{m}"),
            "balanced stages, B = 2F, no communication (Narayanan et al. 2021 §2.2)",
        ),
        Schedule::Interleaved => (
            "(p−1)/(v·m+p−1)".to_string(),
            format!("({p}−1)/({v}·{m}+{p}−1)"),
            "(p−1)/(v·m)".to_string(),
            format!("({p}−1)/({v}·{m})"),
            "v chunks per rank each 1/v of the stage (Narayanan et al. 2021 §2.2.2)",
        ),
        Schedule::ZeroBubble if m < p => (
            "(2p−1−m)/(2m+2p−1)".to_string(),
            format!("(2·{p}−1−{m})/(2·{m}+2·{p}−1)"),
            "(2p−1−m)/(3m)".to_string(),
            format!("(2·{p}−1−{m})/(3·{m})"),
            "ZB-H1 with T_F = T_B = T_W and m < p: the simulated makespan is 2m+2p−1 slots (Qi et al. 2023 §3.1 give the m ≥ p form)",
        ),
        Schedule::ZeroBubble => (
            "(p−1)/(3m+p−1)".to_string(),
            format!("({p}−1)/(3·{m}+{p}−1)"),
            "(p−1)/(3m)".to_string(),
            format!("({p}−1)/(3·{m})"),
            "ZB-H1 with T_F = T_B = T_W, m ≥ p (Qi et al. 2023 §3.1)",
        ),
    };
    let term =
        |key: &str, label: &str, value: f64, (formula, worked): (String, String), what: &str| {
            Term {
                key: key.to_string(),
                label: label.to_string(),
                unit: Unit::Fraction,
                value,
                formula,
                worked: format!("{worked} = {:.1}%", 100.0 * value),
                assumption: format!("{what}; {source}"),
            }
        };
    [
        term(
            "pipeline.idle_fraction",
            "Idle share of the schedule",
            b.idle_fraction,
            (idle_formula, idle_worked),
            "idle slots / (stages × makespan)",
        ),
        term(
            "pipeline.overhead_vs_ideal",
            "Bubble overhead vs ideal time",
            b.overhead_vs_ideal,
            (over_formula, over_worked),
            "bubble time / bubble-free time",
        ),
    ]
}
