//! Which communication a scenario overlaps with compute: tensor-parallel collectives
//! with their GEMMs, the data-parallel gradient reduction with backward, the distributed
//! optimizer's parameter all-gather with the next forward. Each switch follows the
//! scenario's framework unless set; how an overlapped or exposed collective is priced is
//! [`crate::time::cost`]'s.

use serde::{Deserialize, Serialize};

use crate::input::framework::Framework;

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
}

impl OverlapChoice {
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
    pub fn applied(self, framework: Framework) -> AppliedOverlap {
        let (tp, grad, param) = match framework {
            Framework::Article => (false, true, true),
            Framework::MegatronCore => (false, false, false),
            Framework::Torchtitan => (false, true, true),
            Framework::DeepSpeed => (false, false, true),
        };
        AppliedOverlap {
            tp_comm: self.tp_comm.or(tp),
            grad_reduce: self.grad_reduce.or(grad),
            param_gather: self.param_gather.or(param),
        }
    }
}
