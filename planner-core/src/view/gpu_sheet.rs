//! The GPU's datasheet as the page lists it: every figure its preset states, and for each one
//! the preset does not state, what is missing (no such unit on the part, or no published figure)
//! instead of a guess.

use crate::input::gpu_traits::{Fp4Formats, SheetFigure};
use crate::input::hardware::{GpuSpec, GB, GIB};

/// One line of the sheet.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SheetRow {
    /// What the figure is.
    pub label: &'static str,
    /// The figure with its unit, or why there is none.
    pub value: String,
}

/// What the sheet says where a record states no figure.
pub const NOT_STATED: &str = "not published for this part (no figure in its preset)";

/// The datasheet lines of `gpu` (a custom GPU lists its editable figures and names the rest
/// as not stated).
pub fn gpu_sheet(gpu: &GpuSpec) -> Vec<SheetRow> {
    let sheet = gpu.traits().sheet;
    let row = |label, value: String| SheetRow { label, value };
    let pflops = |flops_per_s: f64| format!("{:.3} PFLOPS dense", flops_per_s / 1e15);
    let figure = |f: SheetFigure, unit: &dyn Fn(f64) -> String| match f {
        SheetFigure::Stated(v) => unit(v),
        SheetFigure::NotOnThisPart => "no such tensor-core mode on this part".to_string(),
        SheetFigure::NotStated => NOT_STATED.to_string(),
    };
    let fp4_formats = match sheet.fp4_formats {
        Fp4Formats::None => "",
        Fp4Formats::NvFp4AndMxFp4 => " (NVFP4, MXFP4)",
        Fp4Formats::MxFp4 => " (MXFP4)",
    };
    vec![
        row(
            "Memory",
            format!(
                "{:.0} GB sold, {:.1} GiB as the device reports it",
                gpu.label_memory_bytes() / GB,
                gpu.memory_bytes / GIB
            ),
        ),
        row(
            "HBM bandwidth",
            format!("{:.2} TB/s", gpu.hbm_bytes_per_s / 1e12),
        ),
        row("BF16", pflops(gpu.bf16_flops_per_s)),
        row(
            "FP8",
            if gpu.fp8_flops_per_s > 0.0 {
                pflops(gpu.fp8_flops_per_s)
            } else {
                "no FP8 tensor cores".to_string()
            },
        ),
        row("FP6", figure(sheet.fp6_flops_per_s, &pflops)),
        row(
            "FP4",
            figure(sheet.fp4_flops_per_s, &|v| {
                format!("{}{fp4_formats}", pflops(v))
            }),
        ),
        row(
            "Scale-up link",
            format!(
                "{:.0} GB/s each way, {} GPUs per domain",
                gpu.intra_node_bytes_per_s / GB,
                gpu.gpus_per_node
            ),
        ),
        row(
            "NIC per GPU",
            format!("{:.0} Gb/s each way", gpu.inter_node_bytes_per_s * 8.0 / GB),
        ),
        row(
            "Board power",
            match crate::input::hardware::gpu_board_power_w(&gpu.id) {
                Some(w) => format!("{w:.0} W"),
                None => NOT_STATED.to_string(),
            },
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::input::hardware::gpu_preset;

    fn value(id: &str, label: &str) -> String {
        let gpu = gpu_preset(id).expect("preset");
        gpu_sheet(&gpu)
            .into_iter()
            .find(|r| r.label == label)
            .map(|r| r.value)
            .expect("row")
    }

    #[test]
    fn stated_absent_and_unstated_figures_read_apart() {
        // GB300 NVL72: 1,080 PFLOPS dense FP4 over 72 GPUs = 15 each.
        assert_eq!(
            value("gb300-nvl72", "FP4"),
            "15.000 PFLOPS dense (NVFP4, MXFP4)"
        );
        assert_eq!(value("mi355x", "FP4"), "10.066 PFLOPS dense (MXFP4)");
        assert_eq!(value("gb300-nvl72", "Board power"), "1400 W");
        // 800 Gb/s ConnectX-8: 100 GB/s × 8 = 800 Gb/s.
        assert_eq!(value("b300", "NIC per GPU"), "800 Gb/s each way");
        assert_eq!(
            value("h100-sxm", "FP4"),
            "no such tensor-core mode on this part"
        );
        // H100 SXM5: 700 W (its preset's board_power_w, the datasheet's maximum TDP).
        assert_eq!(value("h100-sxm", "Board power"), "700 W");
        // 275,040 MiB = 268.6 GiB.
        assert_eq!(
            value("b300", "Memory"),
            "288 GB sold, 268.6 GiB as the device reports it"
        );
    }

    #[test]
    fn a_custom_gpu_names_what_it_does_not_state() {
        let mut gpu = gpu_preset("h100-sxm").expect("preset");
        gpu.id = "my-gpu".into();
        let rows = gpu_sheet(&gpu);
        let fp4 = rows.iter().find(|r| r.label == "FP4").expect("row");
        assert_eq!(fp4.value, NOT_STATED);
    }
}
