//! The training framework whose memory semantics a scenario follows: which transient
//! tensors its loss holds and which PyTorch counter its logs report. The choice is
//! explicit because frameworks differ on exactly these points.

use serde::{Deserialize, Serialize};

/// Whose memory semantics the transients follow.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Framework {
    /// The article's accounting (ZeRO paper model state, Korthikanti activations, one fp32
    /// copy of the logits): no framework-specific transient.
    #[default]
    Article,
    /// Megatron-Core: vocab-parallel cross entropy on an fp32 copy of the logits, computed
    /// and differentiated in place.
    MegatronCore,
    /// torchtitan: fp32 logits (`self.output(h).float()`) into `F.cross_entropy`, the
    /// reserved peak in its logs.
    Torchtitan,
}

impl Framework {
    /// All frameworks, in display order.
    pub const ALL: [Framework; 3] = [
        Framework::Article,
        Framework::MegatronCore,
        Framework::Torchtitan,
    ];

    /// Stable identifier used in links and the CLI.
    pub fn id(self) -> &'static str {
        match self {
            Framework::Article => "article",
            Framework::MegatronCore => "megatron-core",
            Framework::Torchtitan => "torchtitan",
        }
    }

    /// Parses [`Framework::id`].
    pub fn from_id(id: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|f| f.id() == id)
    }

    /// What the page says it used.
    pub fn label(self) -> &'static str {
        match self {
            Framework::Article => "the article's accounting (no framework transients)",
            Framework::MegatronCore => "Megatron-Core semantics",
            Framework::Torchtitan => "torchtitan semantics",
        }
    }
}
