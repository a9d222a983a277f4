//! The share of a link's line rate that NCCL's (or RCCL's) collectives reach as nccl-tests
//! *bus* bandwidth on a GPU preset's node, per link and, where the sources differ, per
//! operation. The cluster's link figures stay the datasheet's line rates; the assumed
//! communication model ([`crate::time::collectives`]) prices each collective at line rate ×
//! share, and a calibration's measured α–β replaces both. Each GPU preset states which of
//! these shares its node's links reach ([`crate::input::gpu_traits::LinkShares`]); a GPU (or
//! link) without a cited figure keeps the line rate (share `None`).

use crate::input::gpu_traits::IntraNodeShares;

/// NVIDIA/nccl `src/graph/topo.h` `SM90_NVLINK_BW` 20.6 GB/s: the bandwidth NCCL's topology
/// counts per NVLink 4 link, of its 25 GB/s per direction (18 links = 450 GB/s on H100);
/// the same ~370 GB/s busBw NCCL's maintainers state for H100 collectives other than
/// all-reduce, or with `NCCL_ALGO=RING` (NVIDIA/nccl-tests issue #212, sjeaugey: "450GB/s is
/// the line rate. With the protocol overhead (~20%) NCCL can get an effective NVLink
/// bandwidth of 370GB/s").
pub const NVLINK4_RING_SHARE: f64 = 20.6 / 25.0;

/// NVIDIA/nccl-tests issue #212 (sjeaugey): all-reduce uses NVLink SHARP (NVLS) by default on
/// H100, "On 8 GPUs, you should reach a peak busBw of ~480GB/s" of the 450 GB/s line rate
/// (NVLS reduces in the switch, so its busBw is not the wire's); Azure/AI-benchmarking-guide
/// `Azure_Results/ND_H100_v5_results.md` measures 478.87 GB/s (NVLS, 8 GB, 8 GPUs) and
/// `ND_H200_v5_results.md` 479.98 GB/s. NCCL's tuner (`src/graph/tuning.cc`, NVLS) keeps an
/// NVLS all-reduce's busBw independent of the rank count, so the 8-GPU figure stands for
/// smaller groups too.
pub const NVLINK4_NVLS_ALL_REDUCE_SHARE: f64 = 480.0 / 450.0;

/// NVIDIA/nccl `src/graph/topo.h` `SM100_NVLINK_BW` 40.1 GB/s per NVLink 5 link, of its
/// 50 GB/s per direction (18 links = 900 GB/s on B200/GB200). No NVLS all-reduce figure for
/// Blackwell from NCCL's maintainers or a published benchmark was found, so all-reduce takes
/// this ring share too.
pub const NVLINK5_RING_SHARE: f64 = 40.1 / 50.0;

/// NVIDIA/nccl-tests issue #149 (sjeaugey): A100's 12 NVLink 3 links of 25 GB/s per
/// direction (300 GB/s) give "~20GB/s effective bandwidth" each, and "other bottlenecks on
/// the GPUs limits it to ~230GB/s"; Azure/AI-benchmarking-guide
/// `Azure_Results/ND_A100_v4_results.md` measures an 8-GPU all-reduce at 231.58 GB/s busbw
/// (8 GB). A100 has no NVLink SHARP: every operation takes this share.
pub const NVLINK3_SHARE: f64 = 230.0 / 300.0;

/// NVIDIA/nccl `src/graph/topo.h` `SM80_NVLINK_BW` 20.0 GB/s: the bandwidth NCCL's topology
/// counts per NVLink 3 link, of its 25 GB/s per direction. Where the links, not the GPU, limit
/// (A800: 8 links, 8 × 20 = 160 GB/s, under the ~230 GB/s [`NVLINK3_SHARE`] cites for A100's
/// 12), a ring reaches this share.
pub const NVLINK3_PER_LINK_SHARE: f64 = 20.0 / 25.0;

/// NVIDIA/nccl `src/graph/topo.cc` `ncclTopoAddPci`: a PCIe link counts `width × speed / 80`
/// GB/s, `kvDictPciGen` giving the speed per lane in 100 Mbps ("16.0 GT/s PCIe" 120, "32.0 GT/s
/// PCIe" 240): a Gen4 x16 link 24 GB/s and a Gen5 x16 link 48 GB/s, of the 32 and 64 GB/s per
/// direction the datasheets state (64 and 128 GB/s both directions). A path through the host
/// (`addInterStep`, src/graph/paths.cc: GPU → CPU → GPU when P2P is off, as on GeForce cards)
/// keeps the smaller of its two PCIe legs, so this share holds for P2P and SHM alike. Not
/// counted: `INTEL_P2P_OVERHEAD` (src/graph/topo.h, ×6/5 PCIe traffic for GPU-to-GPU copies
/// through an Intel root complex, `followPath` in src/graph/search.cc) and the inter-socket
/// link a ring over both CPUs of a dual-socket server crosses (`ncclTopoGetInterCpuBw`: AMD 16,
/// Sapphire Rapids 22, Emerald Rapids 40 GB/s), which lowers a node-wide ring where it is the
/// slower link.
pub const PCIE_NCCL_SHARE: f64 = 24.0 / 32.0;

/// ROCm/rccl issue #1210 (gilbertlee-amd): "After protocol and error correction overheads,
/// the max theoretical per-direction bandwidth for gfx94 devices is 48GB/s" per xGMI link
/// (RCCL `src/graph/topo.h` `ncclTopoXGMISpeed`), of the 64 GB/s per link the MI300X
/// platform datasheet states (7 links = the preset's 448 GB/s per direction). MI325X is the
/// same gfx942 die and links.
pub const XGMI_GFX94_SHARE: f64 = 48.0 / 64.0;

/// NVIDIA/nccl-tests issue #290 (AddyLaddy, NCCL team): "For NDR @ 400Gbps you should see
/// 46-48GB/s per NIC" of its 50 GB/s line rate; the midpoint, 47 GB/s.
pub const NDR_400G_NIC_SHARE: f64 = 47.0 / 50.0;

/// NVIDIA/nccl-tests issue #119 (sjeaugey): "We usually consider 24GB/s is the peak
/// performance per 200G NIC" of its 25 GB/s line rate (and 96 GB/s measured there for four
/// HDR NICs together).
pub const HDR_200G_NIC_SHARE: f64 = 24.0 / 25.0;

/// NVLink 4 behind an NVSwitch with NVLink SHARP (HGX H100/H200/H800 boards): all-reduce at
/// [`NVLINK4_NVLS_ALL_REDUCE_SHARE`], every other operation at [`NVLINK4_RING_SHARE`].
pub const NVLINK4_NVSWITCH: IntraNodeShares = IntraNodeShares {
    all_reduce: NVLINK4_NVLS_ALL_REDUCE_SHARE,
    other_ops: NVLINK4_RING_SHARE,
};
