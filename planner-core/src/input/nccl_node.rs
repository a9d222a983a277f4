//! What NCCL's tuner reads about a node besides its link rates: the GPU generation (its
//! per-architecture latency and bandwidth rows), the host CPU (its network overhead and LL
//! cap) and whether the NVSwitch offers NVLink SHARP (NVLS). Each GPU preset states its usual
//! server's ([`crate::input::gpu_traits::GpuTraits::nccl`]); `None` for a GPU whose
//! collectives NCCL does not run (RCCL on MI300X) or whose server is not described, and the
//! communication model then keeps its α–β form.

use serde::{Deserialize, Serialize};

/// The GPU generation: picks NCCL's per-architecture rows (`compCapIndex`) and speed ladders.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NcclArch {
    /// sm80 (A100): Ampere rows, the generic speed ladders, no NVLS.
    Ampere,
    /// sm90 (H100, H200, H800): Hopper rows and ladders, NVLS where an NVSwitch offers it.
    Hopper,
    /// sm100 (B200, GB200): Blackwell rows and ladders.
    Blackwell,
    /// Anything older or unknown: NCCL's Volta row (sm70), the generic ladders, no NVLS.
    Other,
}

/// The host CPU of the nodes: NCCL's LL bandwidth cap across nodes and its network overhead
/// depend on it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NcclCpu {
    /// Intel x86 (DGX H100, DGX B200: Xeon).
    Intel,
    /// AMD x86 (DGX A100: EPYC).
    Amd,
    /// Not x86 (Grace, POWER) or another vendor: Intel's figures, and no x86-only rule.
    Other,
}

/// A node as NCCL's tuner sees it, apart from its link rates.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct NcclNode {
    /// GPU generation.
    pub arch: NcclArch,
    /// Host CPU.
    pub cpu: NcclCpu,
    /// The NVSwitch offers NVLink SHARP (multicast and in-switch reduction).
    pub nvls: bool,
}
