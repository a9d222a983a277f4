//! A parallel layout: group sizes and the per-strategy switches.

use serde::{Deserialize, Serialize};

pub use crate::input::stage_split::StageSplit;

/// ZeRO stage (Rajbhandari et al. 2020); stage 0 is replicated DDP, stage 3 is FSDP.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ZeroStage {
    /// Replicated data parallelism: everything on every rank.
    Ddp,
    /// Optimizer state sharded.
    Zero1,
    /// Optimizer state and gradients sharded.
    Zero2,
    /// Optimizer state, gradients and parameters sharded (FSDP).
    Zero3,
}

impl ZeroStage {
    /// All stages in order.
    pub const ALL: [ZeroStage; 4] = [
        ZeroStage::Ddp,
        ZeroStage::Zero1,
        ZeroStage::Zero2,
        ZeroStage::Zero3,
    ];

    /// 0..=3.
    pub fn number(self) -> u8 {
        match self {
            ZeroStage::Ddp => 0,
            ZeroStage::Zero1 => 1,
            ZeroStage::Zero2 => 2,
            ZeroStage::Zero3 => 3,
        }
    }

    /// From 0..=3.
    pub fn from_number(n: u8) -> Option<Self> {
        Self::ALL.get(usize::from(n)).copied()
    }

    /// "DDP", "ZeRO-1", ...
    pub fn label(self) -> &'static str {
        match self {
            ZeroStage::Ddp => "DDP",
            ZeroStage::Zero1 => "ZeRO-1",
            ZeroStage::Zero2 => "ZeRO-2",
            ZeroStage::Zero3 => "ZeRO-3",
        }
    }
}

/// Pipeline schedule.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Schedule {
    /// All forwards, then all backwards (Huang et al. 2019).
    Gpipe,
    /// One-forward-one-backward (PipeDream-Flush, Narayanan et al. 2021).
    OneFOneB,
    /// Interleaved 1F1B with `virtual_stages` chunks per rank (Narayanan et al. 2021 §2.2).
    Interleaved,
    /// Zero-bubble ZB-H1 (Qi et al. 2023): backward split into input- and weight-gradient halves.
    ZeroBubble,
}

impl Schedule {
    /// All schedules.
    pub const ALL: [Schedule; 4] = [
        Schedule::Gpipe,
        Schedule::OneFOneB,
        Schedule::Interleaved,
        Schedule::ZeroBubble,
    ];

    /// Stable identifier.
    pub fn id(self) -> &'static str {
        match self {
            Schedule::Gpipe => "gpipe",
            Schedule::OneFOneB => "1f1b",
            Schedule::Interleaved => "interleaved",
            Schedule::ZeroBubble => "zb",
        }
    }

    /// Parses [`Schedule::id`].
    pub fn from_id(id: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|s| s.id() == id)
    }

    /// Display label.
    pub fn label(self) -> &'static str {
        match self {
            Schedule::Gpipe => "GPipe",
            Schedule::OneFOneB => "1F1B",
            Schedule::Interleaved => "Interleaved 1F1B",
            Schedule::ZeroBubble => "Zero bubble (ZB-H1)",
        }
    }
}

/// Activation recomputation policy (Korthikanti et al. 2022).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Recompute {
    /// Save every activation the backward pass needs.
    None,
    /// Recompute the attention core (drops the `5as/h` term).
    Selective,
    /// Save only each layer's input and recompute the layer.
    Full,
}

impl Recompute {
    /// All policies.
    pub const ALL: [Recompute; 3] = [Recompute::None, Recompute::Selective, Recompute::Full];

    /// Stable identifier.
    pub fn id(self) -> &'static str {
        match self {
            Recompute::None => "none",
            Recompute::Selective => "selective",
            Recompute::Full => "full",
        }
    }

    /// Parses [`Recompute::id`].
    pub fn from_id(id: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|r| r.id() == id)
    }
}

/// Group sizes and switches of one parallel layout.
///
/// World size is `dp × tp × pp × cp`. The MoE layers fold the same `tp × cp × dp`
/// ranks of a stage into `expert_tp × ep × expert-dp` (Megatron Core's MoE parallel
/// folding, [`crate::parallel::fold`]), so `expert_tp × ep` must divide `tp × cp × dp` and
/// neither multiplies the world size.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Layout {
    /// Data-parallel degree (ZeRO shards over this group).
    pub dp: u32,
    /// Tensor-parallel degree.
    pub tp: u32,
    /// Pipeline stages.
    pub pp: u32,
    /// Context-parallel degree (sequence split).
    pub cp: u32,
    /// Expert-parallel degree (routed experts split).
    pub ep: u32,
    /// Expert-tensor-parallel degree: each routed expert's FFN is split over this many
    /// ranks (Megatron `--expert-tensor-parallel-size`). Megatron sets it to the TP size
    /// when the flag is unset (megatron/training/arguments.py); meshplan's default is 1,
    /// what its Megatron export has always written (`--expert-tensor-parallel-size 1`)
    /// and its expert memory and traffic always counted, so files and links without the
    /// field keep their meaning. Dense models ignore it.
    #[serde(default = "one", skip_serializing_if = "is_one")]
    pub expert_tp: u32,
    /// Virtual pipeline chunks per rank (interleaved schedule), 1 otherwise.
    pub virtual_stages: u32,
    /// Sequences per micro-batch per data-parallel rank.
    pub micro_batch: u32,
    /// Pipeline schedule.
    pub schedule: Schedule,
    /// ZeRO stage over the DP group.
    pub zero: ZeroStage,
    /// Activation recomputation.
    pub recompute: Recompute,
    /// Megatron sequence parallelism inside the TP group.
    pub sequence_parallel: bool,
    /// Decoder layers per pipeline chunk (Megatron's first/last-stage layers or
    /// embedding/loss accounting, torchtitan's lighter end stages, or a list); absent
    /// in a file or link = the even split.
    #[serde(default, skip_serializing_if = "StageSplit::is_even")]
    pub stage_split: StageSplit,
}

impl Layout {
    /// Micro-batches per optimizer step per pipeline: `ceil(global_batch / (dp × micro_batch))`
    /// (a batch that does not divide is flagged by `validate`; the last micro-batch is then short).
    pub fn micro_batches(&self, global_batch: u32) -> u32 {
        let per_step = u64::from(self.dp.max(1)) * u64::from(self.micro_batch.max(1));
        let m = u64::from(global_batch).div_ceil(per_step).max(1);
        u32::try_from(m).unwrap_or(u32::MAX)
    }

    /// GPUs the layout occupies: `dp × tp × pp × cp` (saturating: unvalidated degrees near
    /// `u32::MAX` would overflow `u64`, and validation compares this against the cluster).
    pub fn world_size(&self) -> u64 {
        [self.tp, self.pp, self.cp]
            .into_iter()
            .fold(u64::from(self.dp), |acc, d| {
                acc.saturating_mul(u64::from(d))
            })
    }
}

/// Serde default of [`Layout::expert_tp`].
fn one() -> u32 {
    1
}

/// The default is left out of written files, so files without expert-TP stay as they were.
fn is_one(v: &u32) -> bool {
    *v == 1
}

impl Default for Layout {
    fn default() -> Self {
        Layout {
            dp: 1,
            tp: 1,
            pp: 1,
            cp: 1,
            ep: 1,
            expert_tp: 1,
            virtual_stages: 1,
            micro_batch: 1,
            schedule: Schedule::OneFOneB,
            zero: ZeroStage::Ddp,
            recompute: Recompute::None,
            sequence_parallel: false,
            stage_split: StageSplit::Even,
        }
    }
}
