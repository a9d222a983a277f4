//! Ampere (sm80, sm86): A100 SXM and A800 SXM in DGX servers; the RTX A6000 and the A10,
//! PCIe cards in the PCIe server ([`super::pcie_server`]).

use crate::input::gpu_traits::{
    ComputeShares, DatasheetExtras, GpuTraits, IntraNodeShares, LinkShares,
};
use crate::input::hardware::{gpu, DeviceName, GpuPreset, GB, NO_SERVING_KERNELS};
use crate::input::host::dgx_host;
use crate::input::intra_node_link::IntraNodeLink;
use crate::input::link_efficiency::{HDR_200G_NIC_SHARE, NVLINK3_PER_LINK_SHARE, NVLINK3_SHARE};
use crate::input::nccl_node::{NcclArch, NcclCpu, NcclNode};

use super::pcie_server::{pcie_card, pcie_card_traits, PcieGen};

/// A100 SXM 40 GB and 80 GB and A800 SXM 80 GB in DGX servers, then the PCIe cards.
pub(super) fn presets() -> Vec<GpuPreset> {
    let mut all = vec![a100_40gb(), a100_80gb(), a800()];
    all.extend(pcie_cards());
    all
}

fn a100_40gb() -> GpuPreset {
    // modal-labs/modal-client PR #2797 (nvidia-smi totals of its fleet): A100 40GB 40960MiB.
    let mut a100_40 = gpu(
        "a100-40gb",
        "A100 SXM 40 GB",
        (40.0, 40_960.0),
        1.555,
        312.0,
        0.0,
        600.0,
    );
    // NVIDIA DGX A100 user guide (hardware overview): eight single-port ConnectX-6 200 Gb/s HDR
    // InfiniBand adapters for the compute fabric, one per GPU (200 Gb/s = 25 GB/s).
    a100_40.inter_node_bytes_per_s = 25.0 * GB;
    GpuPreset {
        device_names: &[DeviceName(&["a100", "40"])],
        // NVIDIA A100 datasheet (A100 80GB SXM / 40GB SXM column): "Max Thermal Design Power (TDP) 400W".
        board_power_w: 400.0,
        // NVIDIA A100 Tensor Core GPU Architecture whitepaper: 108 SMs.
        multiprocessors: Some(108),
        spec: a100_40,
        traits: GpuTraits {
            // NVIDIA DGX A100 user guide (hardware overview), 320 GB system: 1 TB RAM, 15 TB
            // (4 × 3.84 TB) U.2 NVMe, 2 × AMD EPYC 7742 (64 cores each); A100 datasheet:
            // PCIe Gen4 64 GB/s (both directions), 32 GB/s each way.
            host: Some(dgx_host(1.0, 4, 3.84, 32.0, 128)),
            nccl: Some(DGX_A100_NCCL),
            links: DGX_A100_LINKS,
            // No FP6/FP4 tensor cores on this architecture.
            sheet: DatasheetExtras::NO_FP4_UNITS,
            intra_node_link: IntraNodeLink::NvLink,
            compute: ComputeShares {
                hbm_stream_fraction: None,
                tensor_fraction_at_power_limit: 1.0,
                bf16_gemm_relative_to_h100: 1.0,
                fp8_gemm_relative_to_bf16: 1.0,
                fp8_transpose_bytes_per_element: 0.0,
            },
            serving: NO_SERVING_KERNELS,
        },
    }
}

fn a100_80gb() -> GpuPreset {
    // modal-labs/modal-client PR #2797: A100 80GB 81920MiB.
    let mut a100_80 = gpu(
        "a100-80gb",
        "A100 SXM 80 GB",
        (80.0, 81_920.0),
        2.039,
        312.0,
        0.0,
        600.0,
    );
    // The same DGX A100 fabric.
    a100_80.inter_node_bytes_per_s = 25.0 * GB;
    GpuPreset {
        device_names: &[DeviceName(&["a100"])],
        // NVIDIA A100 datasheet, A100 80GB SXM: "Max Thermal Design Power (TDP) 400W".
        board_power_w: 400.0,
        // NVIDIA A100 Tensor Core GPU Architecture whitepaper: 108 SMs.
        multiprocessors: Some(108),
        spec: a100_80,
        traits: GpuTraits {
            // The same guide, 640 GB system: 2 TB RAM, 30 TB (8 × 3.84 TB) U.2 NVMe.
            host: Some(dgx_host(2.0, 8, 3.84, 32.0, 128)),
            nccl: Some(DGX_A100_NCCL),
            links: DGX_A100_LINKS,
            // No FP6/FP4 tensor cores on this architecture.
            sheet: DatasheetExtras::NO_FP4_UNITS,
            intra_node_link: IntraNodeLink::NvLink,
            compute: ComputeShares {
                // Azure/AI-benchmarking-guide, Azure_Results/ND_A100_v4_results.md, "HBM
                // Bandwidth" (BabelStream on ND A100 v4, A100-SXM4-80GB, CUDA 12.5): Copy
                // 1.61 TB/s of the datasheet's 2.039 TB/s.
                hbm_stream_fraction: Some(1.61 / 2.039),
                tensor_fraction_at_power_limit: 1.0,
                bf16_gemm_relative_to_h100: 1.0,
                fp8_gemm_relative_to_bf16: 1.0,
                fp8_transpose_bytes_per_element: 0.0,
            },
            serving: NO_SERVING_KERNELS,
        },
    }
}

fn a800() -> GpuPreset {
    // NVIDIA A800 40GB/80GB datasheet (SXM4 80GB): the A100's figures (80 GB HBM2e at 2,039
    // GB/s, BF16 Tensor Core 312 TFLOPS dense of "624*" with sparsity, max TDP 400 W, PCIe Gen4
    // 64 GB/s), NVLink cut to 400 GB/s. dexmal/dexbotic issue #41 (nvidia-smi, "NVIDIA
    // A800-SXM4-80GB", 400 W): 81920MiB, the A100 80GB's total.
    let mut a800 = gpu(
        "a800",
        "A800 SXM 80 GB",
        (80.0, 81_920.0),
        2.039,
        312.0,
        0.0,
        400.0,
    );
    // NVIDIA DGX A800 datasheet: the DGX A100's chassis and fabric with eight A800 80GB GPUs,
    // eight 200 Gb/s compute NICs, one per GPU (25 GB/s).
    a800.inter_node_bytes_per_s = 25.0 * GB;
    GpuPreset {
        device_names: &[DeviceName(&["a800"])],
        // NVIDIA A800 SXM4 datasheet (cited above): max TDP 400 W.
        board_power_w: 400.0,
        // A800 datasheet: 6,912 CUDA cores, 64 per Ampere GA100 SM.
        multiprocessors: Some(108),
        spec: a800,
        traits: GpuTraits {
            // The DGX A100 640 GB system's host (2 TB RAM, 8 × 3.84 TB NVMe, 2 × EPYC 7742).
            host: Some(dgx_host(2.0, 8, 3.84, 32.0, 128)),
            nccl: Some(DGX_A100_NCCL),
            // A800's 8 NVLink 3 links (200 GB/s each way) at NCCL's 20 GB/s per link: 160 GB/s,
            // where the A100's 12 links hit its ~230 GB/s GPU limit first.
            links: LinkShares {
                intra_node: Some(IntraNodeShares::uniform(NVLINK3_PER_LINK_SHARE)),
                inter_node: Some(HDR_200G_NIC_SHARE),
            },
            // No FP6/FP4 tensor cores on this architecture.
            sheet: DatasheetExtras::NO_FP4_UNITS,
            intra_node_link: IntraNodeLink::NvLink,
            // The A100's GA100 die; its own HBM share is not measured and the A100's is not
            // carried over (the MAMF table's A100 BF16 row is not lower than the H100's: 1).
            compute: ComputeShares::unmeasured(0.0),
            serving: NO_SERVING_KERNELS,
        },
    }
}

/// The RTX A6000 and the A10 (GA102, sm86; no FP8 tensor cores): PCIe Gen4 cards.
fn pcie_cards() -> Vec<GpuPreset> {
    vec![
        GpuPreset {
            device_names: &[DeviceName(&["a6000"])],
            // NVIDIA RTX A6000 datasheet (cited below): max power consumption 300 W.
            board_power_w: 300.0,
            // RTX A6000 datasheet: 10,752 CUDA cores, 128 per GA102 SM.
            multiprocessors: Some(84),
            // NVIDIA Ampere GA102 GPU architecture whitepaper (v2), RTX A6000: "Peak BF16 Tensor
            // TFLOPS with FP32 Accumulate 154.8/309.7" (dense/sparse; the professional card runs
            // FP32 accumulation at the full rate); NVIDIA RTX A6000 datasheet: 48 GB GDDR6 with
            // ECC at 768 GB/s, max power 300 W, PCI Express Gen 4 x16, NVLink "2-way low profile
            // (2-slot and 3-slot bridges)" at 112.5 GB/s bidirectional, pairs only (the node is
            // priced as PCIe, pcie_server.rs). Public nvidia-smi readouts of "NVIDIA RTX A6000"
            // (300 W, ECC off) show 49140MiB.
            spec: pcie_card(
                "rtx-a6000",
                "RTX A6000 48 GB",
                (48.0, 49_140.0),
                0.768,
                154.8,
                0.0,
                PcieGen::Gen4,
            ),
            traits: pcie_card_traits(
                ComputeShares::unmeasured(0.0),
                DatasheetExtras::NO_FP4_UNITS,
            ),
        },
        GpuPreset {
            device_names: &[DeviceName(&["a10"])],
            // NVIDIA A10 datasheet (cited below): max TDP 150 W.
            board_power_w: 150.0,
            // A10 datasheet: 9,216 CUDA cores, 128 per GA102 SM.
            multiprocessors: Some(72),
            // NVIDIA A10 datasheet: BF16 Tensor Core "125 TF | 250 TF*" (dense | with sparsity),
            // 24 GB GDDR6 at 600 GB/s, max TDP 150 W, PCIe Gen4 64 GB/s. Public nvidia-smi
            // readouts of "NVIDIA A10" (150 W, ECC off) show 24564MiB.
            spec: pcie_card(
                "a10",
                "A10 24 GB",
                (24.0, 24_564.0),
                0.6,
                125.0,
                0.0,
                PcieGen::Gen4,
            ),
            traits: pcie_card_traits(
                ComputeShares::unmeasured(0.0),
                DatasheetExtras::NO_FP4_UNITS,
            ),
        },
    ]
}

/// NVIDIA DGX A100 (and DGX A800) datasheet: 2× AMD EPYC 7742; its NVSwitch has no SHARP.
const DGX_A100_NCCL: NcclNode = NcclNode {
    arch: NcclArch::Ampere,
    cpu: NcclCpu::Amd,
    nvls: false,
};

/// NVLink 3 through the A100's NVSwitch; one 200 Gb/s HDR NIC per GPU (the DGX A100 fabric
/// above).
const DGX_A100_LINKS: LinkShares = LinkShares {
    intra_node: Some(IntraNodeShares::uniform(NVLINK3_SHARE)),
    inter_node: Some(HDR_200G_NIC_SHARE),
};
