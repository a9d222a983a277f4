//! AMD CDNA 4 (gfx950): MI355X and MI350X, eight to a node on Infinity Fabric, collectives by
//! RCCL.

use crate::input::gpu_traits::{
    ComputeShares, DatasheetExtras, Fp4Formats, GpuTraits, IntraNodeShares, LinkShares, SheetFigure,
};
use crate::input::hardware::{gpu, DeviceName, GpuPreset, MIB, NO_SERVING_KERNELS};
use crate::input::intra_node_link::IntraNodeLink;
use crate::input::link_efficiency::XGMI_GFX94_SHARE;

/// No RCCL bus-bandwidth figure for gfx950's links was found: the documented fallback is the
/// share RCCL reaches on gfx942's Infinity Fabric (the previous generation of the same fully
/// connected 8-GPU xGMI mesh), until a gfx950 figure is measured; NICs at their line rate.
const XGMI_GFX950_LINKS: LinkShares = LinkShares {
    intra_node: Some(IntraNodeShares::uniform(XGMI_GFX94_SHARE)),
    inter_node: None,
};

/// rocm-smi `--showmeminfo vram` on MI355X nodes (public logs): "VRAM Total Memory (B):
/// 309220868096" = 294,896 MiB (288 GiB less 16 MiB, as the MI300X's 192 GiB less 16 MiB).
const GFX950_VRAM_MIB: f64 = 309_220_868_096.0 / MIB;

/// The traits of a gfx950 node: no server datasheet (host), RCCL (no NCCL node), gfx942's
/// link share, no measured share (the default curves; no FP8 layout rule found for CDNA), and the
/// part's own datasheet extras.
fn cdna4_traits(sheet: DatasheetExtras) -> GpuTraits {
    GpuTraits {
        host: None,
        nccl: None,
        links: XGMI_GFX950_LINKS,
        intra_node_link: IntraNodeLink::InfinityFabric,
        compute: ComputeShares::unmeasured(0.0),
        serving: NO_SERVING_KERNELS,
        sheet,
    }
}

/// MI355X (1400 W, liquid) and MI350X (1000 W, air): the same die and memory.
pub(super) fn presets() -> Vec<GpuPreset> {
    vec![
        GpuPreset {
            // Board power as the datasheet quoted below states it.
            board_power_w: 1400.0,
            // AMD Instinct MI355X datasheet: 256 compute units.
            multiprocessors: Some(256),
            device_names: &[DeviceName(&["mi355x"])],
            // AMD Instinct MI355X data sheet: 288 GB HBM3E at 8 TB/s, peak dense FP16/BF16
            // 2,516.6 TFLOPS, FP8 5,033.2, MXFP6 and MXFP4 10,066.3 (256 CUs at 2.4 GHz), 7 Infinity
            // Fabric links of 153.6 GB/s (1,075.2 GB/s), 1,400 W; the 400 Gb/s NIC per GPU of `gpu`.
            spec: gpu(
                "mi355x",
                "MI355X",
                (288.0, GFX950_VRAM_MIB),
                8.0,
                2516.6,
                5033.2,
                1075.2,
            ),
            traits: cdna4_traits(DatasheetExtras {
                fp6_flops_per_s: SheetFigure::Stated(10_066.3e12),
                fp4_flops_per_s: SheetFigure::Stated(10_066.3e12),
                fp4_formats: Fp4Formats::MxFp4,
            }),
        },
        GpuPreset {
            // Board power as the datasheet quoted below states it.
            board_power_w: 1000.0,
            // AMD Instinct MI350X datasheet: 256 compute units.
            multiprocessors: Some(256),
            device_names: &[DeviceName(&["mi350x"])],
            // AMD Instinct MI350X data sheet: 288 GB HBM3E at 8 TB/s, peak dense FP16/BF16
            // 2,306.9 TFLOPS, FP8 4,613.7, MXFP6 and MXFP4 9,227.5 (256 CUs at 2.2 GHz), Infinity
            // Fabric as the MI355X, 1,000 W. No public readout of its own: the MI355X's (same
            // eight 36 GB HBM3E stacks).
            spec: gpu(
                "mi350x",
                "MI350X",
                (288.0, GFX950_VRAM_MIB),
                8.0,
                2306.9,
                4613.7,
                1075.2,
            ),
            traits: cdna4_traits(DatasheetExtras {
                fp6_flops_per_s: SheetFigure::Stated(9_227.5e12),
                fp4_flops_per_s: SheetFigure::Stated(9_227.5e12),
                fp4_formats: Fp4Formats::MxFp4,
            }),
        },
    ]
}
