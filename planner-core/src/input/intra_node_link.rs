//! What joins the GPUs inside one node: the link a node's collectives cross, named where the
//! views draw intra-node traffic and priced by its own per-step latency. Each GPU preset states
//! its usual server's ([`crate::input::gpu_traits::GpuTraits::intra_node_link`]); the link's
//! bandwidth is the preset's `intra_node_bytes_per_s` and its share
//! ([`crate::input::link_efficiency`]).

use serde::{Deserialize, Serialize};

/// The intra-node link of a GPU's usual server.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum IntraNodeLink {
    /// NVLink through NVSwitches (HGX/DGX baseboards, NVL72 racks): every GPU reaches every other.
    NvLink,
    /// AMD Infinity Fabric (xGMI), GPU to GPU.
    InfinityFabric,
    /// PCIe only: every collective crosses each GPU's PCIe link and the host's root complex.
    /// NVIDIA/nccl src/graph/paths.cc `ncclTopoCheckP2p`: P2P only up to `PATH_PXB` (GPUs under
    /// one PCIe switch) by default and only where NVML reports P2P read and write (GeForce
    /// drivers report none; src/transport/p2p.cc `p2pCanConnect` also asks
    /// `cudaDeviceCanAccessPeer`); otherwise `ncclTopoComputePaths` diverts "all traffic through
    /// the CPU" (`addInterStep`) and the SHM transport (src/transport/shm.cc) copies through host
    /// memory, each GPU's PCIe link still carrying its send and its receive.
    Pcie,
    /// A custom GPU: the link is not stated.
    Unstated,
}

impl IntraNodeLink {
    /// The link's name as the views print it.
    pub fn name(self) -> &'static str {
        match self {
            IntraNodeLink::NvLink => "NVLink",
            IntraNodeLink::InfinityFabric => "Infinity Fabric",
            IntraNodeLink::Pcie => "PCIe",
            IntraNodeLink::Unstated => "in-node link",
        }
    }

    /// NCCL's latency of one ring step of the Simple protocol (what bandwidth-sized messages
    /// run) on this link, seconds: NVIDIA/nccl src/graph/tuning.cc `hwLatencies`, ring Simple,
    /// `NCCL_HW_NVLINK` 3.4 µs and `NCCL_HW_PCI` 5.7 µs (its per-call base latency is not
    /// counted). Infinity Fabric and an unstated link keep the NVLink figure: RCCL's own table
    /// is not ported.
    pub fn ring_step_latency_s(self) -> f64 {
        match self {
            IntraNodeLink::Pcie => 5.7e-6,
            IntraNodeLink::NvLink | IntraNodeLink::InfinityFabric | IntraNodeLink::Unstated => {
                3.4e-6
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::IntraNodeLink;

    #[test]
    fn pcie_steps_cost_nccls_pci_latency() {
        assert_eq!(IntraNodeLink::Pcie.ring_step_latency_s(), 5.7e-6);
        assert_eq!(IntraNodeLink::NvLink.ring_step_latency_s(), 3.4e-6);
        assert_eq!(IntraNodeLink::Pcie.name(), "PCIe");
    }
}
