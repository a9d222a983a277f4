//! Which communication a scenario overlaps with compute: tensor-parallel collectives
//! with their GEMMs, the data-parallel gradient reduction with backward, the distributed
//! optimizer's parameter all-gather with the next forward, the expert-parallel all-to-alls
//! with another micro-batch's compute. Each switch follows the
//! scenario's framework unless set; how an overlapped or exposed collective is priced is
//! [`crate::time::cost`]'s.

use serde::{Deserialize, Serialize};

use crate::input::framework::Framework;
use crate::input::layout::{Layout, Recompute};

/// One overlap switch: the framework's default, or set.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Switch {
    /// What the scenario's framework does by default.
    #[default]
    Default,
    /// Overlapped.
    On,
    /// Not overlapped: on the critical path.
    Off,
}

impl Switch {
    /// All values, in display order.
    pub const ALL: [Switch; 3] = [Switch::Default, Switch::On, Switch::Off];

    /// Stable identifier used in links and the CLI.
    pub fn id(self) -> &'static str {
        match self {
            Switch::Default => "default",
            Switch::On => "on",
            Switch::Off => "off",
        }
    }

    /// `On` or `Off`: a switch set, never left to the framework.
    pub fn set(on: bool) -> Self {
        if on {
            Switch::On
        } else {
            Switch::Off
        }
    }

    /// Parses [`Switch::id`].
    pub fn from_id(id: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|s| s.id() == id)
    }

    fn or(self, default: bool) -> bool {
        match self {
            Switch::Default => default,
            Switch::On => true,
            Switch::Off => false,
        }
    }
}

/// The scenario's overlap choices.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct OverlapChoice {
    /// TP collectives pipelined with the GEMMs they feed (Megatron `--tp-comm-overlap`).
    #[serde(default)]
    pub tp_comm: Switch,
    /// Gradient reduce-scatter / all-reduce during backward (Megatron `--overlap-grad-reduce`).
    #[serde(default)]
    pub grad_reduce: Switch,
    /// Distributed optimizer's parameter all-gather during the next forward
    /// (Megatron `--overlap-param-gather`).
    #[serde(default)]
    pub param_gather: Switch,
    /// EP dispatch/combine all-to-alls hidden behind another micro-batch's compute
    /// (Megatron `--overlap-moe-expert-parallel-comm`, its combined 1F1B schedule).
    #[serde(default)]
    pub ep_comm: Switch,
}

/// The switches after the framework's defaults: true = overlapped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AppliedOverlap {
    /// TP collectives pipelined with their GEMMs.
    pub tp_comm: bool,
    /// Gradient reduction hidden behind backward.
    pub grad_reduce: bool,
    /// Parameter all-gather hidden behind forward.
    pub param_gather: bool,
    /// EP all-to-alls of one micro-batch hidden behind another's compute.
    pub ep_comm: bool,
}

impl OverlapChoice {
    /// Every switch set as `applied` resolved it, so a later change of framework does not
    /// change what overlaps.
    pub fn spelled_out(applied: AppliedOverlap) -> Self {
        OverlapChoice {
            tp_comm: Switch::set(applied.tp_comm),
            grad_reduce: Switch::set(applied.grad_reduce),
            param_gather: Switch::set(applied.param_gather),
            ep_comm: Switch::set(applied.ep_comm),
        }
    }

    /// True when every switch is the framework's default (serde leaves it out).
    pub fn is_default(&self) -> bool {
        *self == OverlapChoice::default()
    }

    /// The switches under `framework`'s defaults:
    /// - the article's accounting: gradients and parameter gathers overlapped (the
    ///   article's DDP/ZeRO timing), TP not;
    /// - Megatron-Core: all three off, as megatron/training/arguments.py defines
    ///   `--overlap-grad-reduce`, `--overlap-param-gather` and `--tp-comm-overlap`
    ///   (`action='store_true'`, default False);
    /// - torchtitan (FSDP2): reduce-scatters and all-gathers run on their own streams beside
    ///   compute by default (torch.distributed.fsdp fully_shard), async TP off
    ///   (`parallelism.enable_async_tensor_parallel` defaults to false);
    /// - DeepSpeed ZeRO: no TP of its own; gradient reduction overlaps backward only with
    ///   `zero_optimization.overlap_comm`, off unless set for stages 1–2 (deepspeed.ai
    ///   docs/config-json; DeepSpeed's zero/config.py turns it on for stage 3 when unset,
    ///   which this stage-free default does not see: set `ov_grad=on` for such runs);
    ///   ZeRO-3 prefetches the next parameters (`stage3_prefetch_bucket_size`), so gathers
    ///   overlap.
    ///
    /// EP overlap is off under every framework: Megatron-Core's `overlap_moe_expert_parallel_comm`
    /// defaults to False (megatron/core/model_parallel_config.py), torchtitan and DeepSpeed
    /// have no such schedule, and the article prices the all-to-alls exposed.
    pub fn applied(self, framework: Framework) -> AppliedOverlap {
        let (tp, grad, param) = match framework {
            Framework::Article => (false, true, true),
            Framework::MegatronCore => (false, false, false),
            Framework::Torchtitan => (false, true, true),
            Framework::DeepSpeed | Framework::DeepSpeed2021 | Framework::HfDeepSpeed => {
                (false, false, true)
            }
            // Transformers under DDP (torch/nn/parallel/distributed.py: bucketed all-reduce
            // hooks fire during backward) or FSDP (prefetching gathers): both overlap.
            // torchtune's distributed recipes shard with FSDP2 (prefetching, overlapped).
            Framework::HfTransformers | Framework::Torchtune => (false, true, true),
        };
        AppliedOverlap {
            tp_comm: self.tp_comm.or(tp),
            grad_reduce: self.grad_reduce.or(grad),
            param_gather: self.param_gather.or(param),
            ep_comm: self.ep_comm.or(false),
        }
    }
}

/// Why `layout` cannot run Megatron's EP all-to-all overlap, if it cannot: the checks of
/// megatron/core/transformer/transformer_config.py `__post_init__` under
/// `overlap_moe_expert_parallel_comm` (expert parallelism, no full recompute, virtual
/// stages when pp > 1). Its other requirements (alltoall or flex dispatcher, BF16/FP16
/// parameters, at most one MTP layer, no `--moe-shared-expert-overlap`) are not scenario
/// choices here.
pub fn ep_overlap_blocker(layout: &Layout) -> Option<&'static str> {
    if layout.ep <= 1 {
        Some("it needs expert parallelism (ep > 1)")
    } else if layout.recompute == Recompute::Full {
        Some("it needs full recompute off")
    } else if layout.pp > 1 && layout.virtual_stages <= 1 {
        Some("with pp > 1 it needs virtual pipeline stages")
    } else {
        None
    }
}
