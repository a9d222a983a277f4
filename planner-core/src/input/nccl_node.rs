//! What NCCL's tuner reads about a node besides its link rates: the GPU generation (its
//! per-architecture latency and bandwidth rows), the host CPU (its network overhead and LL
//! cap) and whether the NVSwitch offers NVLink SHARP (NVLS). One record per GPU preset's
//! usual server; `None` for a GPU whose collectives NCCL does not run (RCCL on MI300X) or
//! whose server is not described, and the communication model then keeps its α–β form.

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

/// The NCCL node of GPU preset `gpu_id`'s usual server, or `None` (see the module docs).
pub fn nccl_node(gpu_id: &str) -> Option<NcclNode> {
    let node = |arch, cpu, nvls| Some(NcclNode { arch, cpu, nvls });
    match gpu_id {
        // NVIDIA DGX H100 / DGX H200 datasheets: 2× Intel Xeon Platinum 8480C, 4 third-generation
        // NVSwitches with NVLink SHARP; HGX H800 boards carry the same switch (NVLS all-reduce
        // measured on one, NVIDIA/nccl#1374); torchtitan's 96 GB H100s run in Grand Teton
        // servers (OCP Grand Teton spec: Intel Sapphire Rapids, HGX H100 baseboard).
        "h100-sxm" | "h100-96gb" | "h200" | "h800" => node(NcclArch::Hopper, NcclCpu::Intel, true),
        // NVIDIA DGX B200 datasheet: 2× Intel Xeon Platinum 8570, fifth-generation NVSwitch.
        "b200" => node(NcclArch::Blackwell, NcclCpu::Intel, true),
        // GB200 NVL72: Grace (Arm) hosts, NVLink Switch trays with SHARP.
        "gb200-nvl72" => node(NcclArch::Blackwell, NcclCpu::Other, true),
        // NVIDIA DGX A100 datasheet: 2× AMD EPYC 7742; its NVSwitch has no SHARP.
        "a100-40gb" | "a100-80gb" => node(NcclArch::Ampere, NcclCpu::Amd, false),
        _ => None,
    }
}
