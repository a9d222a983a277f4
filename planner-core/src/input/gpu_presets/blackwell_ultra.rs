//! Blackwell Ultra (sm103): B300 in the HGX B300 baseboard and GB300 NVL72, on NVLink 5 with one
//! 800 Gb/s ConnectX-8 SuperNIC per GPU.

use crate::input::gpu_traits::{
    ComputeShares, DatasheetExtras, Fp4Formats, GpuTraits, IntraNodeShares, LinkShares, SheetFigure,
};
use crate::input::hardware::{gpu, DeviceName, GpuPreset, GB, NO_SERVING_KERNELS};

use super::blackwell::{nvl72_grace_host, NVL72_NCCL_NODE};
use crate::input::intra_node_link::IntraNodeLink;
use crate::input::link_efficiency::NVLINK5_RING_SHARE;
use crate::input::nccl_node::{NcclArch, NcclCpu, NcclNode};

/// NVLink 5 at NCCL's per-link ring share (the B200's link, the same fifth-generation NVLink and
/// switch); the 800 Gb/s NIC's share under NCCL is not measured: its line rate applies.
const NVLINK5_XDR_LINKS: LinkShares = LinkShares {
    intra_node: Some(IntraNodeShares::uniform(NVLINK5_RING_SHARE)),
    inter_node: None,
};

/// No measured GEMM, HBM or serving-kernel share on sm103 yet: the default curves at the
/// datasheet rates. TransformerEngine transformer_engine.cpp `nvte_is_non_tn_fp8_gemm_supported`:
/// any FP8 layout on sm 100-119, so no transposed FP8 copy.
const UNMEASURED_SM103: ComputeShares = ComputeShares::unmeasured(0.0);

/// NVIDIA ConnectX-8 SuperNIC: 800 Gb/s, one per GPU on both platforms (HGX B300 "networking
/// bandwidth 1.6 TB/s" for 8 GPUs, both directions; GB300 NVL72 "72 ConnectX-8"): 100 GB/s each way.
const CX8_BYTES_PER_S: f64 = 100.0 * GB;

/// B300 (HGX B300, 8 GPUs) and GB300 NVL72 (72 GPUs in one NVLink domain).
pub(super) fn presets() -> Vec<GpuPreset> {
    // NVIDIA HGX B300 specifications (8 GPUs): FP16/BF16 36 PFLOPS and FP8/FP6 72 PFLOPS with
    // sparsity (2.25 and 4.5 dense per GPU), up to 2.3 TB HBM3e (288 GB a GPU), NVLink 5 at
    // 1.8 TB/s a GPU; NVIDIA technical blog "Inside NVIDIA Blackwell Ultra" (2025): 8 TB/s HBM3e.
    // Public nvidia-smi readouts of "NVIDIA B300 SXM6 AC" (driver 580 and 610, cap 1100 W): 275040MiB.
    let mut b300 = gpu(
        "b300",
        "B300 288 GB (HGX)",
        (288.0, 275_040.0),
        8.0,
        2250.0,
        4500.0,
        1800.0,
    );
    b300.inter_node_bytes_per_s = CX8_BYTES_PER_S;
    // NVIDIA GB300 NVL72 datasheet, per GPU (rack / 72): FP16/BF16 360 PFLOPS and FP8/FP6 720
    // PFLOPS with sparsity (2.5 and 5 dense), 20 TB HBM3e at 576 TB/s (8 TB/s), NVLink 5 at 1.8
    // TB/s in one 72-GPU domain. Public nvidia-smi readouts of "NVIDIA GB300" (cap 1400 W): 284208MiB.
    let mut gb300 = gpu(
        "gb300-nvl72",
        "GB300 NVL72 (288 GB)",
        (288.0, 284_208.0),
        8.0,
        2500.0,
        5000.0,
        1800.0,
    );
    gb300.gpus_per_node = 72;
    gb300.inter_node_bytes_per_s = CX8_BYTES_PER_S;
    vec![
        GpuPreset {
            // Board power as the datasheet quoted below states it.
            board_power_w: 1100.0,
            // B300 as CUDA reports it (160 SMs; Modular's MAX kernels size partitions to B300's 160 SMs).
            multiprocessors: Some(160),
            device_names: &[DeviceName(&["b300"])],
            spec: b300,
            traits: GpuTraits {
                // No HGX B300 server datasheet with host RAM and drives is cited: offload asks
                // for `host_ram`.
                host: None,
                // NVIDIA DGX B300 datasheet: 2× Intel Xeon 6776P, fifth-generation NVLink switch.
                nccl: Some(NcclNode {
                    arch: NcclArch::Blackwell,
                    cpu: NcclCpu::Intel,
                    nvls: true,
                }),
                links: NVLINK5_XDR_LINKS,
                intra_node_link: IntraNodeLink::NvLink,
                compute: UNMEASURED_SM103,
                serving: NO_SERVING_KERNELS,
                sheet: DatasheetExtras {
                    // The HGX B300 table: FP8/FP6 72 PFLOPS with sparsity, 4.5 dense per GPU.
                    fp6_flops_per_s: SheetFigure::Stated(4.5e15),
                    // The HGX B300 table: FP4 144 | 105 PFLOPS (sparse | dense), 13.125 dense a GPU.
                    fp4_flops_per_s: SheetFigure::Stated(13.125e15),
                    fp4_formats: Fp4Formats::NvFp4AndMxFp4,
                    // The readouts above: power cap 1100 W.
                },
            },
        },
        GpuPreset {
            // Board power as the datasheet quoted below states it.
            board_power_w: 1400.0,
            // the superchip's B300 GPUs, 160 SMs as the B300 preset.
            multiprocessors: Some(160),
            device_names: &[DeviceName(&["gb300"])],
            spec: gb300,
            traits: GpuTraits {
                // The GB200's rack host and NCCL node (the same Grace trays and NVLink Switch).
                host: Some(nvl72_grace_host()),
                nccl: Some(NVL72_NCCL_NODE),
                links: NVLINK5_XDR_LINKS,
                intra_node_link: IntraNodeLink::NvLink,
                compute: UNMEASURED_SM103,
                serving: NO_SERVING_KERNELS,
                sheet: DatasheetExtras {
                    // The GB300 NVL72 datasheet: FP8/FP6 720 PFLOPS with sparsity, 5 dense a GPU.
                    fp6_flops_per_s: SheetFigure::Stated(5.0e15),
                    // The datasheet: FP4 1,440 | 1,080 PFLOPS (sparse | dense), 15 dense a GPU.
                    fp4_flops_per_s: SheetFigure::Stated(15.0e15),
                    fp4_formats: Fp4Formats::NvFp4AndMxFp4,
                    // The readouts above: power cap 1400 W.
                },
            },
        },
    ]
}
