//! "Will it fit": for one training scenario, the largest micro-batch and the longest
//! sequence that fit its GPU, and, when the scenario does not fit, the changes that make
//! it fit, cheapest first, each one a real scenario change priced by the memory and time
//! models ([`will_it_fit`]).
//!
//! "Fits" is the memory model's own test ([`crate::memory::training_memory`]): the peak
//! stage's device total (allocator-reserved bytes plus CUDA context and NCCL buffers) at
//! most `capacity × usable_fraction`. The peak comes from
//! [`crate::memory::stage_peak::peak_memory_bytes`], which equals `training_memory`'s
//! `peak_bytes` for the same inputs.
//!
//! Peak memory rises with the micro-batch and with the sequence length (every activation
//! term is a product of `b` and `s`, or `s²` for attention without flash; no model-state
//! term falls), so the largest fitting value is found by doubling then bisection
//! (`tests/it/fit.rs` checks the monotonicity on random scenarios).
//!
//! The fixes priced (each needs no change to the model's code, only to the scenario):
//! full activation recompute (gradient checkpointing), 8-bit Adam
//! ([`PrecisionRecipe::Adam8Bit`]), QLoRA (from LoRA or full fine-tuning, the adapter
//! settings kept), optimizer or parameter offload ([`Offload::SEARCH_VARIANTS`], with the
//! ZeRO stage each needs), and FSDP (ZeRO-3) over 2 to 8 GPUs. A paged optimizer is not a
//! fix here: the memory model counts bitsandbytes' paged state on the GPU (it pages out only
//! under pressure, [`crate::memory::adapters`]), so it cannot price what paging saves.
//!
//! **Cheapest** means the smallest increase in GPU-seconds per optimizer step (step time ×
//! GPUs of the layout): for every fix that keeps the GPU count this is the step-time
//! increase; a fix that adds GPUs pays for each of them. Ties go to the fix that leaves the
//! most memory free.
//!
//! **Combinations** (only when no single fix fits): greedy. From the current scenario, every
//! change not yet applied is priced on top of the changes so far; among those that lower the
//! peak, the one that saves the most memory per added GPU-second is applied (a change that
//! adds no time first, the largest saving among them); repeat until it fits or no change
//! lowers the peak. Then each applied change the result still fits without, at no more cost,
//! is dropped (latest first).

use serde::{Deserialize, Serialize};

use crate::input::finetune::FineTuneMode;
use crate::input::layout::{Recompute, ZeroStage};
use crate::input::model::{ModelSpec, ParamBreakdown};
use crate::input::offload::Offload;
use crate::input::precision::{Precision, PrecisionRecipe};
use crate::input::scenario::Scenario;
use crate::memory::stage_peak::peak_memory_bytes;
use crate::resolve::validate::layout_rule_violations;
use crate::time::cost::{CostOptions, StepModel};

/// Most GPUs the FSDP fix spreads the model over (one node of eight).
pub const MAX_FSDP_GPUS: u32 = 8;

/// One change to a scenario that lowers its peak memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum Change {
    /// Full activation recompute (gradient checkpointing): each layer keeps only its input.
    FullRecompute,
    /// 8-bit Adam moments (bitsandbytes), the precision recipe [`PrecisionRecipe::Adam8Bit`].
    Adam8Bit,
    /// QLoRA: NF4 base weights with the scenario's adapter settings.
    Qlora,
    /// Offload optimizer state (and parameters) to the host, at the ZeRO stage it needs.
    Offload {
        /// The offload choice.
        offload: Offload,
    },
    /// FSDP (ZeRO-3) data parallelism over this many GPUs.
    Fsdp {
        /// GPUs of the layout after the change.
        gpus: u32,
    },
}

impl Change {
    /// Stable identifier ("recompute-full", "adam-8bit", "qlora", "offload-opt-cpu", "fsdp-2").
    pub fn id(self) -> String {
        match self {
            Change::FullRecompute => "recompute-full".to_string(),
            Change::Adam8Bit => "adam-8bit".to_string(),
            Change::Qlora => "qlora".to_string(),
            Change::Offload { offload } => format!("offload-{}", offload.id()),
            Change::Fsdp { gpus } => format!("fsdp-{gpus}"),
        }
    }

    /// What a person reads.
    pub fn label(self) -> String {
        match self {
            Change::FullRecompute => "gradient checkpointing (full recompute)".to_string(),
            Change::Adam8Bit => "8-bit Adam (bitsandbytes)".to_string(),
            Change::Qlora => "QLoRA (NF4 base weights)".to_string(),
            Change::Offload { offload } => offload.label().to_string(),
            Change::Fsdp { gpus } => format!("FSDP (ZeRO-3) over {gpus} GPUs"),
        }
    }

    /// Applies the change to `scenario`.
    pub fn apply(self, scenario: &mut Scenario) {
        match self {
            Change::FullRecompute => scenario.layout.recompute = Recompute::Full,
            Change::Adam8Bit => {
                let activation_bytes = scenario.precision.activation_bytes;
                scenario.precision = Precision {
                    activation_bytes,
                    ..Precision::from_recipe(PrecisionRecipe::Adam8Bit)
                };
            }
            Change::Qlora => scenario.training.finetune.mode = FineTuneMode::Qlora,
            Change::Offload { offload } => {
                scenario.training.offload = offload;
                scenario.layout.zero = scenario.layout.zero.max(zero_for(offload));
            }
            Change::Fsdp { gpus } => {
                scenario.layout.dp = gpus;
                scenario.layout.zero = ZeroStage::Zero3;
                let world = scenario.layout.world_size();
                if scenario.cluster.world_size() < world {
                    let gpn = u64::from(scenario.cluster.gpus_per_node.max(1));
                    scenario.cluster.nodes = u32::try_from(world.div_ceil(gpn)).unwrap_or(1);
                }
            }
        }
    }

    /// Whether the change would alter `scenario` at all.
    fn changes(self, scenario: &Scenario) -> bool {
        match self {
            Change::FullRecompute => scenario.layout.recompute != Recompute::Full,
            Change::Adam8Bit => scenario.precision.recipe != PrecisionRecipe::Adam8Bit,
            Change::Qlora => scenario.training.finetune.mode != FineTuneMode::Qlora,
            Change::Offload { offload } => scenario.training.offload != offload,
            Change::Fsdp { gpus } => {
                let dp = scenario.layout.dp;
                gpus > dp || (gpus == dp && scenario.layout.zero != ZeroStage::Zero3)
            }
        }
    }
}

/// `scenario` with `changes` applied in order.
pub fn applied(scenario: &Scenario, changes: &[Change]) -> Scenario {
    let mut s = scenario.clone();
    for c in changes {
        c.apply(&mut s);
    }
    s
}

/// The ZeRO stage an offload choice needs: DeepSpeed's offload_config.py makes
/// `offload_optimizer` valid with stages 1 to 3, and `offload_param` and NVMe (ZeRO-Infinity)
/// stage 3 only ([`crate::resolve::offload_rules::zero_problem`]); ZeRO-Offload (Ren et al.
/// 2021 §4) runs on stage 2, which moves the fp32 gradients to the CPU with the optimizer.
fn zero_for(offload: Offload) -> ZeroStage {
    match offload {
        Offload::None => ZeroStage::Ddp,
        Offload::OptimizerCpu => ZeroStage::Zero2,
        Offload::OptimizerNvme
        | Offload::OptimizerParamsCpu
        | Offload::OptimizerParamsNvme
        | Offload::Fsdp2Cpu => ZeroStage::Zero3,
    }
}

/// A scenario's memory and time, as the fit search reads them.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Priced {
    /// Peak bytes per GPU (the device total of the peak stage).
    pub peak_bytes: f64,
    /// Whether the peak is at most the usable bytes.
    pub fits: bool,
    /// Seconds per optimizer step.
    pub step_s: f64,
    /// GPUs of the layout.
    pub gpus: u64,
}

impl Priced {
    /// GPU-seconds per optimizer step: what "cheapest" compares.
    pub fn gpu_seconds(&self) -> f64 {
        self.step_s * self.gpus as f64
    }
}

/// One fix: the changes applied together and what the scenario costs after them.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Fix {
    /// The changes, in the order applied (one for a single fix).
    pub changes: Vec<Change>,
    /// The scenario after them, priced.
    pub after: Priced,
    /// `after.step_s − current step_s`, seconds (negative when it is faster).
    pub step_delta_s: f64,
    /// `after.gpu_seconds() − current gpu_seconds()`: the cost fixes are ordered by.
    pub gpu_seconds_delta: f64,
}

/// The answer for one scenario.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FitReport {
    /// The scenario as it is.
    pub current: Priced,
    /// `capacity × usable_fraction`, bytes.
    pub usable_bytes: f64,
    /// Largest micro-batch that fits at the current sequence length, up to `global_batch / dp`;
    /// `None` when not even one sequence fits.
    pub max_micro_batch: Option<u32>,
    /// Micro-batches above `global_batch / dp` were not tried (the batch caps the search).
    pub micro_batch_capped: bool,
    /// Longest sequence, tokens, that fits at the current micro-batch; `None` when one token does not.
    pub max_seq_len: Option<u32>,
    /// Fixes that make the scenario fit, cheapest first; empty when it fits already. Single
    /// changes first; the greedy combination only when no single change fits.
    pub fixes: Vec<Fix>,
}

/// What every probe of one search shares: the model and its parameter count.
struct Probe<'a> {
    model: &'a ModelSpec,
    params: ParamBreakdown,
}

impl Probe<'_> {
    fn peak_bytes(&self, s: &Scenario) -> f64 {
        peak_memory_bytes(
            self.model,
            &self.params,
            &s.precision,
            &s.layout,
            &s.training,
            &s.activations,
            &s.overheads,
        )
    }

    fn fits(&self, s: &Scenario) -> bool {
        self.peak_bytes(s) <= usable_bytes(s)
    }

    /// Memory and time of `s`, or `None` when its layout breaks a rule (a fix must run).
    fn priced(&self, s: &Scenario) -> Option<Priced> {
        if s.validate().is_err()
            || layout_rule_violations(self.model, s)
                .iter()
                .any(|v| v.is_error())
        {
            return None;
        }
        let peak_bytes = self.peak_bytes(s);
        let step = StepModel::for_scenario(self.model, s, CostOptions::default());
        let step_s = step.seconds(&s.layout, &step.placement(&s.layout)).total;
        Some(Priced {
            peak_bytes,
            fits: peak_bytes <= usable_bytes(s),
            step_s,
            gpus: s.layout.world_size(),
        })
    }
}

/// `capacity × usable_fraction`: what [`crate::memory::training_memory`] compares against.
fn usable_bytes(s: &Scenario) -> f64 {
    s.cluster.gpu.memory_bytes * s.overheads.usable_fraction
}

/// The largest `x` in `lo..=hi` with `fits(x)`, for a `fits` that holds up to some point and
/// not after; `None` when `fits(lo)` fails. Doubling from `lo`, then bisection: O(log hi) calls.
pub fn largest_fitting(lo: u32, hi: u32, mut fits: impl FnMut(u32) -> bool) -> Option<u32> {
    if lo > hi || !fits(lo) {
        return None;
    }
    let (mut good, mut bad) = (lo, None);
    while bad.is_none() && good < hi {
        let next = good.saturating_mul(2).clamp(good + 1, hi);
        if fits(next) {
            good = next;
        } else {
            bad = Some(next);
        }
    }
    let mut bad = bad.unwrap_or(hi.saturating_add(1));
    while bad - good > 1 {
        let mid = good + (bad - good) / 2;
        if fits(mid) {
            good = mid;
        } else {
            bad = mid;
        }
    }
    Some(good)
}

/// The largest micro-batch that fits `scenario` at its sequence length, and whether the global
/// batch (`global_batch / dp` sequences per rank) capped the search.
fn max_micro_batch(probe: &Probe, scenario: &Scenario) -> (Option<u32>, bool) {
    let cap = (scenario.training.global_batch / scenario.layout.dp.max(1)).max(1);
    let mut s = scenario.clone();
    let found = largest_fitting(1, cap, |b| {
        s.layout.micro_batch = b;
        probe.fits(&s)
    });
    (found, found == Some(cap))
}

/// The longest sequence that fits `scenario` at its micro-batch.
fn max_seq_len(probe: &Probe, scenario: &Scenario) -> Option<u32> {
    let mut s = scenario.clone();
    largest_fitting(1, crate::base::bounds::MAX_SEQ_LEN, |len| {
        s.training.seq_len = len;
        probe.fits(&s)
    })
}

/// Every change that could apply to `scenario`: one entry per kind, and FSDP at every GPU count
/// from 2 to [`MAX_FSDP_GPUS`] (ZeRO-3 over the GPUs it already has included) when the layout
/// is data-parallel only (TP, PP and CP 1: what a fine-tuning run on a few GPUs is; FSDP then
/// spans every GPU).
fn candidates(scenario: &Scenario) -> Vec<Change> {
    let mut out = vec![Change::FullRecompute, Change::Adam8Bit, Change::Qlora];
    out.extend(
        Offload::SEARCH_VARIANTS
            .into_iter()
            .map(|offload| Change::Offload { offload }),
    );
    let l = &scenario.layout;
    if l.tp == 1 && l.pp == 1 && l.cp == 1 {
        out.extend((2..=MAX_FSDP_GPUS).map(|gpus| Change::Fsdp { gpus }));
    }
    out.retain(|c| c.changes(scenario));
    out
}

/// `changes` applied to `base`, priced, as a [`Fix`] against `current`; `None` when the result
/// breaks a rule.
fn fix(probe: &Probe, base: &Scenario, changes: Vec<Change>, current: &Priced) -> Option<Fix> {
    let after = probe.priced(&applied(base, &changes))?;
    Some(Fix {
        changes,
        step_delta_s: after.step_s - current.step_s,
        gpu_seconds_delta: after.gpu_seconds() - current.gpu_seconds(),
        after,
    })
}

/// Cheapest first; ties: the lower peak.
fn cheaper(a: &Fix, b: &Fix) -> std::cmp::Ordering {
    a.gpu_seconds_delta
        .total_cmp(&b.gpu_seconds_delta)
        .then(a.after.peak_bytes.total_cmp(&b.after.peak_bytes))
}

/// Single changes that make `scenario` fit, cheapest first (FSDP at its fewest fitting GPUs only).
fn single_fixes(probe: &Probe, scenario: &Scenario, current: &Priced) -> Vec<Fix> {
    let mut out: Vec<Fix> = Vec::new();
    for change in candidates(scenario) {
        let more_gpus_listed = matches!(change, Change::Fsdp { .. })
            && out
                .iter()
                .any(|f| matches!(f.changes[..], [Change::Fsdp { .. }]));
        if more_gpus_listed {
            continue;
        }
        if let Some(f) = fix(probe, scenario, vec![change], current) {
            if f.after.fits {
                out.push(f);
            }
        }
    }
    out.sort_by(cheaper);
    out
}

/// How much a step towards a combination is worth, from the state `before` it: memory saved
/// per added GPU-second; a change that adds no time ranks above every one that does, by the
/// memory it saves.
fn worth(f: &Fix, before: &Priced) -> (bool, f64) {
    let saved = before.peak_bytes - f.after.peak_bytes;
    let cost = f.after.gpu_seconds() - before.gpu_seconds();
    if cost <= 0.0 {
        (true, saved)
    } else {
        (false, saved / cost)
    }
}

/// The greedy combination (module doc); `None` when no sequence of changes fits.
fn greedy_fix(probe: &Probe, scenario: &Scenario, current: &Priced) -> Option<Fix> {
    let mut applied: Vec<Change> = Vec::new();
    let mut at = *current;
    let mut remaining = candidates(scenario);
    while !remaining.is_empty() {
        let best = remaining
            .iter()
            .filter_map(|&c| {
                let mut changes = applied.clone();
                changes.push(c);
                fix(probe, scenario, changes, current)
            })
            .filter(|f| f.after.peak_bytes < at.peak_bytes)
            .max_by(|a, b| {
                let (wa, wb) = (worth(a, &at), worth(b, &at));
                wa.0.cmp(&wb.0).then(wa.1.total_cmp(&wb.1))
            })?;
        let last = *best.changes.last()?;
        if best.after.fits {
            return Some(pruned(probe, scenario, best, current));
        }
        at = best.after;
        applied = best.changes;
        // A larger FSDP group replaces a smaller one; every other change applies once.
        remaining.retain(|&c| match (c, last) {
            (Change::Fsdp { gpus }, Change::Fsdp { gpus: done }) => gpus > done,
            _ => c != last,
        });
    }
    None
}

/// `fix` without the changes it still fits without (latest first), when leaving them out
/// costs no more.
fn pruned(probe: &Probe, scenario: &Scenario, mut fix_: Fix, current: &Priced) -> Fix {
    for i in (0..fix_.changes.len()).rev() {
        let mut fewer = fix_.changes.clone();
        fewer.remove(i);
        if let Some(f) = fix(probe, scenario, fewer, current) {
            if f.after.fits && f.gpu_seconds_delta <= fix_.gpu_seconds_delta {
                fix_ = f;
            }
        }
    }
    fix_
}

/// Will `scenario` fit: its largest micro-batch and sequence, and the fixes when it does not
/// (module doc). `model` is the scenario's resolved model. `None` when the scenario itself
/// breaks a range or layout rule (nothing is priced for an invalid layout).
pub fn will_it_fit(scenario: &Scenario, model: &ModelSpec) -> Option<FitReport> {
    let probe = Probe {
        model,
        params: model.param_breakdown(),
    };
    let current = probe.priced(scenario)?;
    let (max_micro_batch, micro_batch_capped) = max_micro_batch(&probe, scenario);
    let max_seq_len = max_seq_len(&probe, scenario);
    let fixes = if current.fits {
        Vec::new()
    } else {
        let singles = single_fixes(&probe, scenario, &current);
        if singles.is_empty() {
            greedy_fix(&probe, scenario, &current).into_iter().collect()
        } else {
            singles
        }
    };
    Some(FitReport {
        current,
        usable_bytes: usable_bytes(scenario),
        max_micro_batch,
        micro_batch_capped,
        max_seq_len,
        fixes,
    })
}
