//! The server every PCIe-card preset sits in (L40S, L4, A10, RTX A6000, RTX 6000 Ada, RTX PRO
//! 6000, GeForce RTX 4090 and 5090): eight cards joined by PCIe alone, one 200 Gb/s NIC port per
//! GPU. NVIDIA Enterprise Reference Architecture overview (docs.nvidia.com/reference-
//! architectures, "Enterprise RA Hardware Stack", RTX PRO AI Factory): the 2-8-5-200 node, "2 CPU
//! Sockets, 8 GPUs, 5 NICs, 8 ports @ 200Gbps on East-West GPU network", built with the RTX PRO
//! 6000 Blackwell Server Edition. NVIDIA AI Enterprise's reference architecture (compute-node
//! hardware) names "systems with L40S, L40, L4" beside its PCIe-optimized 2-8-5 node, "with
//! different configurations" it does not give: the 2-8-5-200 shape is taken for every PCIe card
//! here, an assumption. GeForce cards are not NVIDIA-certified for it; 8-card dual-socket
//! PCIe Gen5 builds of the RTX 5090 exist (autonomous-ai/autonomous-computer `8x-5090/README.md`)
//! and a workstation of 2–4 cards is `gpn`. The server's host is not in the reference
//! architecture: `host` is `None` (set `host_ram` and NVMe to offload).
//!
//! Collectives inside the node cross PCIe ([`crate::input::intra_node_link::IntraNodeLink::Pcie`]):
//! the intra-node link is the card's own x16 link at NCCL's count of it
//! ([`crate::input::link_efficiency::PCIE_NCCL_SHARE`]), priced by α–β. NCCL's tuner port
//! (time/nccl_algo.rs) replays the graph search of NVSwitch nodes only: a PCIe node's rings (the
//! `NCCL_HW_PCI` latency row, no LL128 where `typeIntra > PATH_NVB`, src/graph/tuning.cc) are not
//! ported, so `nccl` is `None`. The RTX A6000's optional 2-way NVLink bridge (112.5 GB/s) joins
//! pairs only: a group of more than two, and every node-wide collective, still crosses PCIe, so
//! the node is priced as PCIe.

use crate::input::gpu_traits::{
    ComputeShares, DatasheetExtras, GpuTraits, IntraNodeShares, LinkShares,
};
use crate::input::hardware::{gpu, GpuSpec, NO_SERVING_KERNELS};
use crate::input::intra_node_link::IntraNodeLink;
use crate::input::link_efficiency::{HDR_200G_NIC_SHARE, PCIE_NCCL_SHARE};

/// GPUs in one node of the 2-8-5-200 server.
pub const PCIE_SERVER_GPUS: u32 = 8;

/// Its east-west network per GPU per direction: one 200 Gb/s port (25 GB/s).
pub const PCIE_SERVER_NIC_BYTES_PER_S: f64 = 200e9 / 8.0;

/// The PCIe generation of a card's x16 link.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PcieGen {
    /// 16 GT/s: the datasheets' "PCIe Gen4 x16: 64 GB/s bidirectional".
    Gen4,
    /// 32 GT/s: "PCIe Gen5 x16: 128 GB/s bidirectional".
    Gen5,
}

impl PcieGen {
    /// The x16 link as the datasheets state it, both directions together, GB/s.
    pub fn gb_per_s_both_directions(self) -> f64 {
        match self {
            PcieGen::Gen4 => 64.0,
            PcieGen::Gen5 => 128.0,
        }
    }
}

/// A PCIe card's datasheet figures in this server: its intra-node link is its x16 link (half
/// the datasheet's two-way figure each way: 32 GB/s on Gen4, 64 on Gen5), its network one
/// 200 Gb/s port.
pub(super) fn pcie_card(
    id: &str,
    name: &str,
    memory: (f64, f64),
    memory_tb_per_s: f64,
    bf16_tflops: f64,
    fp8_tflops: f64,
    pcie: PcieGen,
) -> GpuSpec {
    let mut spec = gpu(
        id,
        name,
        memory,
        memory_tb_per_s,
        bf16_tflops,
        fp8_tflops,
        pcie.gb_per_s_both_directions(),
    );
    spec.inter_node_bytes_per_s = PCIE_SERVER_NIC_BYTES_PER_S;
    spec.gpus_per_node = PCIE_SERVER_GPUS;
    spec
}

/// PCIe at NCCL's count of the link; a 200 Gb/s port at the 24 GB/s NCCL's maintainers state
/// for a 200G NIC ([`HDR_200G_NIC_SHARE`]).
pub const PCIE_SERVER_LINKS: LinkShares = LinkShares {
    intra_node: Some(IntraNodeShares::uniform(PCIE_NCCL_SHARE)),
    inter_node: Some(HDR_200G_NIC_SHARE),
};

/// The traits of a PCIe card in this server: no host preset, α–β collectives over PCIe, no
/// serving-kernel measurement; `compute` and `sheet` are the card's own.
pub(super) fn pcie_card_traits(compute: ComputeShares, sheet: DatasheetExtras) -> GpuTraits {
    GpuTraits {
        sheet,
        host: None,
        nccl: None,
        links: PCIE_SERVER_LINKS,
        intra_node_link: IntraNodeLink::Pcie,
        compute,
        serving: NO_SERVING_KERNELS,
    }
}
