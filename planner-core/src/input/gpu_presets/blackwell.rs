//! Blackwell: B200 and GB200 NVL72 (sm100) on NVLink 5; the RTX PRO 6000 Blackwell and the
//! GeForce RTX 5090 (GB202, sm120), PCIe cards in the PCIe server ([`super::pcie_server`]).

use crate::input::gpu_traits::{
    ComputeShares, DatasheetExtras, Fp4Formats, GpuTraits, IntraNodeShares, LinkShares, SheetFigure,
};
use crate::input::hardware::{gpu, DeviceName, GpuPreset, GB, NO_SERVING_KERNELS};
use crate::input::host::{dgx_host, HostSpec};
use crate::input::intra_node_link::IntraNodeLink;
use crate::input::link_efficiency::{NDR_400G_NIC_SHARE, NVLINK5_RING_SHARE};
use crate::input::nccl_node::{NcclArch, NcclCpu, NcclNode};

use super::pcie_server::{pcie_card, pcie_card_traits, PcieGen};

/// B200 (DGX B200) and GB200 NVL72, then the GB202 PCIe cards.
pub(super) fn presets() -> Vec<GpuPreset> {
    let mut all = sxm_presets();
    all.extend(gb202_cards());
    all
}

/// B200 (DGX B200) and GB200 NVL72.
fn sxm_presets() -> Vec<GpuPreset> {
    // NVIDIA GB200 NVL72 datasheet, per GPU (rack totals / 72): 186 GB HBM3e at 8 TB/s,
    // 2.5 PFLOPS dense BF16, 5 PFLOPS dense FP8, NVLink 5 at 1.8 TB/s; all 72 GPUs share
    // one NVLink domain, so the rack is the "node" for TP and EP. Public nvidia-smi
    // readouts of "NVIDIA GB200" (1200 W) show 189471MiB.
    let mut gb200 = gpu(
        "gb200-nvl72",
        "GB200 NVL72 (186 GB)",
        (186.0, 189_471.0),
        8.0,
        2500.0,
        5000.0,
        1800.0,
    );
    gb200.gpus_per_node = 72;
    vec![
        GpuPreset {
            device_names: &[DeviceName(&["b200"])],
            // NVIDIA/TensorRT-LLM issue #10278 (cited below): nvidia-smi shows "NVIDIA B200" at a 1000 W cap.
            board_power_w: 1000.0,
            // B200 as CUDA reports it (multiProcessorCount 148; FlashAttention 4 and CUTLASS examples size their grids to 148 SMs).
            multiprocessors: Some(148),
            // NVIDIA/TensorRT-LLM issue #10278 (nvidia-smi, "NVIDIA B200", 1000 W): 183359MiB.
            spec: gpu(
                "b200",
                "B200 180 GB",
                (180.0, 183_359.0),
                8.0,
                2250.0,
                4500.0,
                1800.0,
            ),
            traits: GpuTraits {
                // NVIDIA DGX B200 user guide: 2 TB RAM (4 TB optional), 8 × 3.84 TB U.2 NVMe,
                // 2 × Xeon Platinum 8570 (56 cores each, PCIe Gen5 hosts: 64 GB/s each way per
                // GPU).
                host: Some(dgx_host(2.0, 8, 3.84, 64.0, 112)),
                // NVIDIA DGX B200 datasheet: 2× Intel Xeon Platinum 8570, fifth-generation
                // NVSwitch.
                nccl: Some(NcclNode {
                    arch: NcclArch::Blackwell,
                    cpu: NcclCpu::Intel,
                    nvls: true,
                }),
                links: NVLINK5_NDR_LINKS,
                intra_node_link: IntraNodeLink::NvLink,
                compute: ComputeShares {
                    hbm_stream_fraction: None,
                    tensor_fraction_at_power_limit: 1.0,
                    // B200 SXM: BF16 1745.0 of 2250 TFLOPS (77.6%, torch 2.7.1+cu128) against the
                    // H100 SXM's 794.5 of 989 (80.3%) (ml-engineering MAMF table).
                    bf16_gemm_relative_to_h100: 0.776 / 0.803,
                    // B200 SXM: FP8 3432.5 of 4500 (76.3%), BF16 1745.0 of 2250 (77.6%).
                    fp8_gemm_relative_to_bf16: 0.763 / 0.776,
                    // Blackwell runs FP8 GEMMs in any layout.
                    fp8_transpose_bytes_per_element: 0.0,
                },
                serving: NO_SERVING_KERNELS,
                sheet: DatasheetExtras {
                    // NVIDIA DGX B200 datasheet (8 GPUs): FP8/FP6 72 PFLOPS and FP4 144 PFLOPS, both
                    // with sparsity: 4.5 and 9 PFLOPS dense per GPU.
                    fp6_flops_per_s: SheetFigure::Stated(4.5e15),
                    fp4_flops_per_s: SheetFigure::Stated(9.0e15),
                    fp4_formats: Fp4Formats::NvFp4AndMxFp4,
                },
            },
        },
        GpuPreset {
            device_names: &[DeviceName(&["gb200"])],
            // Public nvidia-smi readouts of "NVIDIA GB200" (cited above) show a 1200 W cap.
            board_power_w: 1200.0,
            // the superchip's B200 GPUs, 148 SMs as the B200 preset.
            multiprocessors: Some(148),
            spec: gb200,
            traits: GpuTraits {
                host: Some(nvl72_grace_host()),
                nccl: Some(NVL72_NCCL_NODE),
                links: NVLINK5_NDR_LINKS,
                intra_node_link: IntraNodeLink::NvLink,
                compute: ComputeShares {
                    hbm_stream_fraction: None,
                    tensor_fraction_at_power_limit: 1.0,
                    // GB200: BF16 1822.0 of 2500 TFLOPS (72.9%, torch 2.10.0.dev20250916+cu130)
                    // against the H100 SXM's 80.3% (ml-engineering MAMF table).
                    bf16_gemm_relative_to_h100: 0.729 / 0.803,
                    // GB200: FP8 3615.6 of 5000 (72.3%), BF16 1822.0 of 2500 (72.9%).
                    fp8_gemm_relative_to_bf16: 0.723 / 0.729,
                    fp8_transpose_bytes_per_element: 0.0,
                },
                serving: NO_SERVING_KERNELS,
                sheet: DatasheetExtras {
                    // NVIDIA GB200 NVL72 datasheet (72 GPUs): FP8/FP6 720 PFLOPS and FP4 1,440
                    // PFLOPS, with sparsity: 5 and 10 PFLOPS dense per GPU.
                    fp6_flops_per_s: SheetFigure::Stated(5.0e15),
                    fp4_flops_per_s: SheetFigure::Stated(10.0e15),
                    fp4_formats: Fp4Formats::NvFp4AndMxFp4,
                },
            },
        },
    ]
}

/// An NVL72 rack's Grace hosts, the rack being the "node" (72 GPUs). NVIDIA GB200 NVL72 and
/// GB300 NVL72 datasheets: up to 17 TB LPDDR5X per rack (36 Grace × 480 GB), 2,592 Arm
/// Neoverse V2 cores (36 × 72), NVLink-C2C 900 GB/s (both directions) per Grace shared by its
/// two GPUs: 225 GB/s each way per GPU. Local NVMe per tray is not on the datasheets: 0 until set.
pub(super) fn nvl72_grace_host() -> HostSpec {
    HostSpec {
        ram_bytes: 36.0 * 480e9,
        nvme_bytes: 0.0,
        nvme_read_bytes_per_s: 0.0,
        nvme_write_bytes_per_s: 0.0,
        host_link_bytes_per_s: 900.0 / 2.0 / 2.0 * GB,
        cpu_cores: 36 * 72,
    }
}

/// An NVL72 rack as NCCL's tuner sees it: Grace (Arm) hosts, NVLink Switch trays with SHARP.
pub(super) const NVL72_NCCL_NODE: NcclNode = NcclNode {
    arch: NcclArch::Blackwell,
    cpu: NcclCpu::Other,
    nvls: true,
};

/// GB202 (sm120) cards in the PCIe server: the RTX PRO 6000 Blackwell and the GeForce RTX 5090.
/// NVIDIA/TransformerEngine transformer_engine/common/transformer_engine.cpp
/// `nvte_is_non_tn_fp8_gemm_supported`: any FP8 layout only on sm 100–119 and 130+, so sm120
/// FP8 GEMMs are TN-only, as Hopper's (one more FP8 write per cast element).
fn gb202_cards() -> Vec<GpuPreset> {
    vec![
        GpuPreset {
            device_names: &[DeviceName(&["6000", "rtx", "pro"])],
            // NVIDIA RTX PRO 6000 Blackwell Workstation Edition datasheet (cited below): 600 W.
            board_power_w: 600.0,
            // RTX PRO 6000 Blackwell datasheet: 24,064 CUDA cores, 128 per GB202 SM.
            multiprocessors: Some(188),
            // The Workstation Edition (Server and Max-Q editions map here by name: the same 188
            // SMs and 96 GB). NVIDIA RTX Blackwell GPU architecture whitepaper, RTX PRO 6000
            // Blackwell Workstation Edition: "Peak FP16/BF16 Tensor TFLOPS with FP32 Accumulate
            // 503.8/1007.6", "Peak FP8 Tensor TFLOPS with FP32 Accumulate 1007.6/2015.2"
            // (dense/sparse), 96 GB GDDR7 with ECC at 1,792 GB/s (512-bit, 28 Gbps), 600 W, PCIe
            // Gen 5 x16, no NVLink. MarcoPizeta/flash-next-rtxpro6000-bench HARDWARE.md
            // (nvidia-smi, "NVIDIA RTX PRO 6000 Blackwell Workstation Edition", 600 W): 97887 MiB.
            spec: pcie_card(
                "rtx-pro-6000",
                "RTX PRO 6000 Blackwell 96 GB",
                (96.0, 97_887.0),
                1.792,
                503.8,
                1007.6,
                PcieGen::Gen5,
            ),
            traits: pcie_card_traits(
                ComputeShares::unmeasured(1.0),
                // GB202 has FP4 tensor cores; their rates are not entered in this record.
                DatasheetExtras::NOT_STATED,
            ),
        },
        GpuPreset {
            device_names: &[DeviceName(&["5090"])],
            // NVIDIA GeForce RTX 5090 specifications (cited below): total graphics power 575 W.
            board_power_w: 575.0,
            // GeForce RTX 5090 specifications: 21,760 CUDA cores, 128 per GB202 SM.
            multiprocessors: Some(170),
            // NVIDIA RTX Blackwell GPU architecture whitepaper, GeForce RTX 5090: "Peak FP16
            // Tensor TFLOPS with FP32 Accumulate 209.5/419" and "Peak FP8 Tensor TFLOPS with
            // FP32 Accumulate 419/838" (dense/sparse: GeForce runs FP32 accumulation at half the
            // FP16-accumulate rate, 419/838, and training accumulates in FP32; BF16 as FP16),
            // 32 GB GDDR7 at 1,792 GB/s, 575 W, PCIe Gen 5 x16, no NVLink and, in the GeForce
            // driver, no P2P (NCCL goes through host memory, input/intra_node_link.rs).
            // noonghunna/club-3090 issue #617 (nvidia-smi, "NVIDIA GeForce RTX 5090"): 32607MiB.
            spec: pcie_card(
                "rtx-5090",
                "GeForce RTX 5090 32 GB",
                (32.0, 32_607.0),
                1.792,
                209.5,
                419.0,
                PcieGen::Gen5,
            ),
            traits: pcie_card_traits(
                ComputeShares::unmeasured(1.0),
                // GB202 has FP4 tensor cores; their rates are not entered in this record.
                DatasheetExtras::NOT_STATED,
            ),
        },
    ]
}

/// NVLink 5 at NCCL's per-link ring share for every operation (no Blackwell NVLS figure); one
/// 400 Gb/s NDR NIC per GPU under NCCL (`gpu`: 50 GB/s).
const NVLINK5_NDR_LINKS: LinkShares = LinkShares {
    intra_node: Some(IntraNodeShares::uniform(NVLINK5_RING_SHARE)),
    inter_node: Some(NDR_400G_NIC_SHARE),
};
