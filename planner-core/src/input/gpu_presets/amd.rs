//! AMD CDNA 3 (gfx942): MI300X and MI325X, on Infinity Fabric, collectives by RCCL.

use crate::input::gpu_traits::{
    ComputeShares, DatasheetExtras, GpuTraits, IntraNodeShares, LinkShares,
};
use crate::input::hardware::{gpu, DeviceName, GpuPreset, MIB, NO_SERVING_KERNELS};
use crate::input::intra_node_link::IntraNodeLink;
use crate::input::link_efficiency::XGMI_GFX94_SHARE;

/// gfx942 Infinity Fabric at RCCL's per-link share; MI300X/MI325X run RCCL over their servers'
/// 400 Gb/s NICs: no RCCL figure for them was found, so the line rate stays.
const XGMI_GFX94_LINKS: LinkShares = LinkShares {
    intra_node: Some(IntraNodeShares::uniform(XGMI_GFX94_SHARE)),
    inter_node: None,
};

/// MI300X and MI325X: no server datasheet cited, RCCL (not NCCL) collectives.
pub(super) fn presets() -> Vec<GpuPreset> {
    // ROCm/legacy-rocm-build issue #4750 (rocm-smi --showmeminfo vram, MI300X in SPX mode):
    // "VRAM Total Memory (B): 206141652992" = 196,592 MiB.
    let mut mi300x = gpu(
        "mi300x",
        "MI300X",
        (192.0, 206_141_652_992.0 / MIB),
        5.3,
        1307.0,
        2615.0,
        896.0,
    );
    mi300x.gpus_per_node = 8;
    // AMD Instinct MI325X datasheet: 256 GB HBM3E at 6 TB/s, MI300X's compute (CDNA 3,
    // 1307 TFLOPS dense BF16, 2615 FP8) and Infinity Fabric links (896 GB/s per GPU).
    // Capacity derived, no public readout found: 8 HBM3E stacks of 32 GiB = 262,144 MiB,
    // less the 16 MiB MI300X's rocm-smi withholds from its 8 × 24 GiB (196,608 − 196,592).
    let mi325x = gpu(
        "mi325x",
        "MI325X",
        (256.0, 262_128.0),
        6.0,
        1307.0,
        2615.0,
        896.0,
    );
    vec![
        GpuPreset {
            device_names: &[DeviceName(&["mi300x"])],
            // AMD Instinct MI300X datasheet: peak total board power 750 W.
            board_power_w: 750.0,
            // AMD Instinct MI300X datasheet: 304 compute units.
            multiprocessors: Some(304),
            spec: mi300x,
            traits: GpuTraits {
                host: None,
                nccl: None,
                links: XGMI_GFX94_LINKS,
                // No FP6/FP4 tensor cores on this architecture.
                sheet: DatasheetExtras::NO_FP4_UNITS,
                intra_node_link: IntraNodeLink::InfinityFabric,
                compute: ComputeShares {
                    // Azure/AI-benchmarking-guide, Azure_Results/ND_MI300X_v5_results.md, "HBM
                    // Bandwidth" (BabelStream on ND MI300X v5, ROCm 6.2): Copy 4.11 TB/s of the
                    // datasheet's 5.3 TB/s.
                    hbm_stream_fraction: Some(4.11 / 5.3),
                    tensor_fraction_at_power_limit: 1.0,
                    // AMD MI300X: 668.4 of 1300 TFLOPS (51.4%, torch 2.5.1+rocm6.3,
                    // PYTORCH_TUNABLEOP_ENABLED=1) against the H100 SXM's 794.5 of 989 (80.3%).
                    bf16_gemm_relative_to_h100: 0.514 / 0.803,
                    // MI300X: the table's FP8 row is empty; Azure/AI-benchmarking-guide
                    // Azure_Results/ND_MI300X_v5_results.md, "GEMM HipBLASLt" FP8: 1159.23
                    // TFLOPS at 8192³ of the datasheet's 2615 (44.3%), over the table's BF16 51.4%.
                    fp8_gemm_relative_to_bf16: (1159.23 / 2615.0) / 0.514,
                    // No FP8 layout rule found for CDNA 3.
                    fp8_transpose_bytes_per_element: 0.0,
                },
                serving: NO_SERVING_KERNELS,
            },
        },
        GpuPreset {
            device_names: &[DeviceName(&["mi325x"])],
            // AMD Instinct MI325X datasheet: peak total board power 1000 W.
            board_power_w: 1000.0,
            // AMD Instinct MI325X datasheet: 304 compute units.
            multiprocessors: Some(304),
            spec: mi325x,
            traits: GpuTraits {
                host: None,
                nccl: None,
                // The same gfx942 die and links as the MI300X.
                links: XGMI_GFX94_LINKS,
                // No FP6/FP4 tensor cores on this architecture.
                sheet: DatasheetExtras::NO_FP4_UNITS,
                intra_node_link: IntraNodeLink::InfinityFabric,
                // The MI325X's own BF16 matmul share; no HBM or FP8 measurement of its own, and
                // the MI300X's are not carried over.
                compute: ComputeShares {
                    hbm_stream_fraction: None,
                    tensor_fraction_at_power_limit: 1.0,
                    // AMD MI325X: BF16 784.9 of 1300 TFLOPS (60.4%, torch 2.6.0+rocm6.2.4,
                    // PYTORCH_TUNABLEOP_ENABLED=1, 1000 W) against the H100 SXM's 80.3%
                    // (ml-engineering MAMF table).
                    bf16_gemm_relative_to_h100: 0.604 / 0.803,
                    fp8_gemm_relative_to_bf16: 1.0,
                    fp8_transpose_bytes_per_element: 0.0,
                },
                serving: NO_SERVING_KERNELS,
            },
        },
    ]
}
