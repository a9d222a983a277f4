//! How FSDP (ZeRO-3) holds parameters and gradients across the micro-batches of one step,
//! as each framework runs it: whether a unit's parameters are resharded after its forward
//! and after its backward, and whether the gradient reduce-scatter waits for the last
//! micro-batch. It sets both the communication (how many gathers and reduce-scatters a
//! step pays) and the memory (what stays unsharded), so memory and time read one record.
//!
//! Under pipeline parallelism torchtitan keeps each stage's parameters unsharded for the
//! whole step and PyTorch's pipeline stage defers the gradient reduce-scatter to the last
//! backward, accumulating a full unsharded gradient in the reduce dtype:
//! - torchtitan `torchtitan/distributed/fsdp.py` `get_fsdp_reshard_after_forward_policy`
//!   (b5bcd76): `"default"` → `not pp_enabled` ("For PP, by default do not reshard after
//!   forward to avoid per-microbatch all-gathers"); hard-wired the same way before PR #822;
//! - PyTorch `torch/distributed/pipelining/stage.py` `backward_maybe_with_nosync`:
//!   `set_reshard_after_backward(False)`, `set_requires_gradient_sync(False)` on every
//!   micro-batch but the last;
//! - PyTorch `_fully_shard/_fsdp_param.py` `to_accumulated_grad_if_needed`: with gradient
//!   sync off the unsharded gradient accumulates in `reduce_dtype` (torchtitan's
//!   `mixed_precision_reduce = "float32"`);
//! - the Llama 3 paper (arXiv 2407.21783 §3.3.2): "for model shards we do not reshard after
//!   forward computation to avoid an extra all-gather communication during backward passes",
//!   and "we use FP32 gradient accumulation during backward computation over multiple
//!   micro-batches and also reduce-scatter gradients in FP32".
//!
//! Without pipelining FSDP2 reshards after forward and after backward (its default for
//! non-root modules, `fully_shard` docstring) and reduce-scatters every micro-batch
//! (Zhao et al. 2023 §3.3); DeepSpeed's ZeRO-3 partitions at every micro-batch too
//! (deepspeedai/DeepSpeed#338), and its pipeline engine runs ZeRO-1 at most.

use crate::input::framework::Framework;

/// Bytes per element of the unsharded gradient FSDP accumulates with sync deferred:
/// torchtitan's `mixed_precision_reduce = "float32"` (its only allowed value,
/// `torchtitan/config/configs.py` `TrainingConfig`).
pub const DEFERRED_GRAD_BYTES: f64 = 4.0;

/// What FSDP keeps between micro-batches of one step.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FsdpSemantics {
    /// Parameters are freed after a unit's forward and gathered again for its backward.
    pub reshard_after_forward: bool,
    /// Parameters are freed after a unit's backward (gathered again next micro-batch).
    pub reshard_after_backward: bool,
    /// Gradients are reduce-scattered once, after the last micro-batch's backward; until
    /// then they accumulate unsharded.
    pub defer_grad_sync: bool,
}

impl FsdpSemantics {
    /// FSDP's own defaults: reshard after forward and backward, reduce every micro-batch.
    pub const PER_MICROBATCH: FsdpSemantics = FsdpSemantics {
        reshard_after_forward: true,
        reshard_after_backward: true,
        defer_grad_sync: false,
    };

    /// torchtitan under pipelining: gather once per step, reduce once per step.
    pub const ONCE_PER_STEP: FsdpSemantics = FsdpSemantics {
        reshard_after_forward: false,
        reshard_after_backward: false,
        defer_grad_sync: true,
    };

    /// The semantics `framework` runs FSDP with at `pp` pipeline stages.
    pub fn of(framework: Framework, pp: u32) -> FsdpSemantics {
        match framework {
            // The article's accounting follows the open FSDP + PP stack (torchtitan) and the
            // published 405B runs' own statement (module docs).
            Framework::Torchtitan | Framework::Article if pp > 1 => Self::ONCE_PER_STEP,
            _ => Self::PER_MICROBATCH,
        }
    }

    /// Every parameter of the stage is unsharded at the backward peak: kept after forward,
    /// or kept across micro-batches.
    pub fn holds_stage_unsharded(self) -> bool {
        !self.reshard_after_forward || !self.reshard_after_backward
    }

    /// Forward all-gathers per unit per step, over `m` micro-batches.
    pub fn forward_gathers(self, m: f64) -> f64 {
        if self.reshard_after_backward {
            m
        } else {
            1.0
        }
    }

    /// Backward all-gathers per unit per step (0 when forward's parameters are kept).
    pub fn backward_gathers(self, m: f64) -> f64 {
        if self.reshard_after_forward {
            m
        } else {
            0.0
        }
    }

    /// Gradient reduce-scatters per unit per step.
    pub fn reduce_scatters(self, m: f64) -> f64 {
        if self.defer_grad_sync {
            1.0
        } else {
            m
        }
    }

    /// In words, for the explanations.
    pub fn describe(self) -> &'static str {
        if self == Self::ONCE_PER_STEP {
            "FSDP under pipelining as torchtitan runs it: parameters gathered once per step and kept unsharded, gradients accumulated unsharded in fp32 and reduce-scattered after the last micro-batch"
        } else {
            "FSDP per micro-batch: each unit gathered for its forward and again for its backward, gradients reduce-scattered every micro-batch"
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn torchtitan_gathers_once_per_step_only_under_pipelining() {
        let pp = FsdpSemantics::of(Framework::Torchtitan, 8);
        assert_eq!(pp.forward_gathers(32.0), 1.0);
        assert_eq!(pp.backward_gathers(32.0), 0.0);
        assert_eq!(pp.reduce_scatters(32.0), 1.0);
        assert!(pp.holds_stage_unsharded());
        let flat = FsdpSemantics::of(Framework::Torchtitan, 1);
        assert_eq!(flat.forward_gathers(4.0), 4.0);
        assert_eq!(flat.backward_gathers(4.0), 4.0);
        assert_eq!(flat.reduce_scatters(4.0), 4.0);
        assert!(!flat.holds_stage_unsharded());
        assert_eq!(
            FsdpSemantics::of(Framework::DeepSpeed, 8),
            FsdpSemantics::PER_MICROBATCH
        );
    }
}
