//! Which kernels run a decoder layer's memory-bound work: the framework's fused
//! kernels, PyTorch eager (one kernel per op), or `torch.compile` (Inductor's fused
//! chains). The op list each choice implies, and its HBM traffic, is
//! [`crate::time::elementwise`]'s; this module is only the choice a scenario carries.

use serde::{Deserialize, Serialize};

use crate::input::framework::Framework;

/// How the norms, activations, residuals and rotary embeddings of a layer run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Kernels {
    /// What the scenario's framework does by default: Megatron-Core's fused kernels for
    /// Megatron-Core and the article; eager for torchtitan (its `compile.enable` defaults
    /// to false, torchtitan/config/job_config.py).
    #[default]
    FrameworkDefault,
    /// Megatron-Core with Transformer Engine: fused norm, RoPE, bias-activation and
    /// bias-dropout-add kernels.
    Fused,
    /// PyTorch eager: every op of the model code is its own kernel.
    Eager,
    /// `torch.compile`: Inductor fuses each chain of pointwise ops and reductions
    /// between two GEMMs (or attention) into one kernel.
    Compiled,
}

impl Kernels {
    /// All choices, in display order.
    pub const ALL: [Kernels; 4] = [
        Kernels::FrameworkDefault,
        Kernels::Fused,
        Kernels::Eager,
        Kernels::Compiled,
    ];

    /// Stable identifier used in links and the CLI.
    pub fn id(self) -> &'static str {
        match self {
            Kernels::FrameworkDefault => "default",
            Kernels::Fused => "fused",
            Kernels::Eager => "eager",
            Kernels::Compiled => "compile",
        }
    }

    /// Parses [`Kernels::id`].
    pub fn from_id(id: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|k| k.id() == id)
    }

    /// What the page says it used.
    pub fn label(self) -> &'static str {
        match self {
            Kernels::FrameworkDefault => "the framework's default kernels",
            Kernels::Fused => "Megatron-Core fused kernels",
            Kernels::Eager => "PyTorch eager (one kernel per op)",
            Kernels::Compiled => "torch.compile (fused pointwise chains)",
        }
    }

    /// True for [`Kernels::FrameworkDefault`] (serde leaves it out).
    pub fn is_default(&self) -> bool {
        *self == Kernels::FrameworkDefault
    }

    /// The op list that applies under `framework`: never [`Kernels::FrameworkDefault`].
    pub fn applied(self, framework: Framework) -> Kernels {
        match (self, framework) {
            (Kernels::FrameworkDefault, Framework::Torchtitan) => Kernels::Eager,
            // Transformers' modeling code runs its norms, RoPE and activations as eager ops.
            (
                Kernels::FrameworkDefault,
                Framework::HfTransformers | Framework::HfDeepSpeed | Framework::Torchtune,
            ) => Kernels::Eager,
            (Kernels::FrameworkDefault, _) => Kernels::Fused,
            (k, _) => k,
        }
    }
}
