//! GPUs and clusters: memory, compute rates and the two communication domains.
//!
//! Figures are vendor datasheet dense rates (see `shared/reference/domain-notes.md`);
//! every field is editable, and a benchmark report replaces them with measurements. The
//! presets themselves live one family per file in [`crate::input::gpu_presets`]: adding a GPU
//! is one record there (docs/adding-a-gpu.md).

use std::sync::OnceLock;

use serde::{Deserialize, Serialize};

use crate::input::gpu_traits::{GpuTraits, ServingKernels, CUSTOM_GPU_TRAITS};
use crate::input::intra_node_link::IntraNodeLink;

/// Decimal gigabyte, as the article and vendors count memory.
pub const GB: f64 = 1e9;
/// Binary gibibyte, what `nvidia-smi` and PyTorch report.
pub const GIB: f64 = 1024.0 * 1024.0 * 1024.0;
/// Binary mebibyte, the unit of `nvidia-smi`'s memory column.
pub const MIB: f64 = 1024.0 * 1024.0;

impl GpuSpec {
    /// The capacity a label shows: the datasheet's decimal figure, or the device's when
    /// the datasheet's is not stated.
    pub fn label_memory_bytes(&self) -> f64 {
        if self.datasheet_memory_bytes > 0.0 {
            self.datasheet_memory_bytes
        } else {
            self.memory_bytes
        }
    }

    /// What the GPU's preset states besides its datasheet figures (its server's host, its
    /// node as NCCL sees it, measured link and kernel shares): the preset's record for a
    /// preset id, whatever figures were edited; [`CUSTOM_GPU_TRAITS`] for any other id.
    pub fn traits(&self) -> &'static GpuTraits {
        gpu_traits(&self.id)
    }

    /// What joins the GPUs of its usual server ([`GpuTraits::intra_node_link`]).
    pub fn intra_node_link(&self) -> IntraNodeLink {
        self.traits().intra_node_link
    }
}

/// One GPU model.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GpuSpec {
    /// Stable identifier ("h100-sxm"); a preset's id also names its traits
    /// ([`GpuSpec::traits`]), so files and links carry the id alone.
    pub id: String,
    /// Display name.
    pub name: String,
    /// Device memory in bytes as the device reports it (`nvidia-smi`'s total, `rocm-smi`'s
    /// VRAM total): what fits are compared against.
    pub memory_bytes: f64,
    /// Memory as the datasheet sells it, decimal bytes ("80 GB" = 80e9): the label the
    /// article's chart draws. 0 = not stated (a custom GPU): labels use `memory_bytes`.
    #[serde(default)]
    pub datasheet_memory_bytes: f64,
    /// HBM bandwidth, bytes per second.
    pub hbm_bytes_per_s: f64,
    /// Dense BF16 tensor rate, FLOP per second.
    pub bf16_flops_per_s: f64,
    /// Dense FP8 tensor rate, FLOP per second (0 when unsupported).
    pub fp8_flops_per_s: f64,
    /// Intra-node link bandwidth per GPU per direction, bytes per second
    /// (NVLink "900 GB/s" on datasheets is both directions: 450 GB/s each way).
    pub intra_node_bytes_per_s: f64,
    /// Network bandwidth per GPU per direction, bytes per second (one 400 Gb/s NIC = 50 GB/s).
    pub inter_node_bytes_per_s: f64,
    /// GPUs in one node of the usual server.
    pub gpus_per_node: u32,
}

/// A link class: bandwidth per GPU per direction and per-message latency.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LinkSpec {
    /// Bytes per second per GPU per direction.
    pub bytes_per_s: f64,
    /// Latency per message step, seconds (the α of an α–β model).
    pub latency_s: f64,
}

/// A cluster: identical nodes of `gpus_per_node` GPUs.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Cluster {
    /// The GPU in every slot.
    pub gpu: GpuSpec,
    /// Nodes.
    pub nodes: u32,
    /// GPUs per node.
    pub gpus_per_node: u32,
    /// NVLink/NVSwitch (or PCIe) inside a node.
    pub intra_node: LinkSpec,
    /// Network between nodes (InfiniBand/RoCE).
    pub inter_node: LinkSpec,
    /// Host RAM, NVMe and host link of a node ([`crate::input::host`]); absent = the GPU's server
    /// preset ([`GpuTraits::host`]), which files and links then leave out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<crate::input::host::HostSpec>,
}

/// Whether a TP group of `tp` ranks stays inside one node of `gpus_per_node` GPUs for every
/// group: ranks fill nodes TP-first (the innermost axis of the rank order), so a TP larger
/// than the node, or one that does not divide it (TP 6 on 8-GPU nodes puts ranks 6–11 on two
/// nodes), sends some group's per-layer collectives over the network. The placement prices the
/// group through rank 0, which would not see the straddle.
pub fn tp_within_node(tp: u32, gpus_per_node: u32) -> bool {
    tp <= gpus_per_node && gpus_per_node.is_multiple_of(tp.max(1))
}

impl Cluster {
    /// `nodes` nodes of the GPU's usual server, links from its datasheet.
    pub fn of(gpu: GpuSpec, nodes: u32) -> Self {
        Cluster {
            gpus_per_node: gpu.gpus_per_node,
            // NCCL's own latency model, per ring step of the Simple protocol it runs bandwidth-
            // sized messages with (NVIDIA/nccl src/graph/tuning.cc `hwLatencies`, ring: NVLink
            // 3.4 µs, PCI 5.7 µs, network 14.0 µs; its per-call base latency is not counted here):
            // the node's own link (input/intra_node_link.rs).
            intra_node: LinkSpec {
                bytes_per_s: gpu.intra_node_bytes_per_s,
                latency_s: gpu.traits().intra_node_link.ring_step_latency_s(),
            },
            inter_node: LinkSpec {
                bytes_per_s: gpu.inter_node_bytes_per_s,
                latency_s: 14e-6,
            },
            gpu,
            nodes,
            host: None,
        }
    }

    /// The node's host: `host` when set, else the GPU's server preset; `None` when neither.
    pub fn host_spec(&self) -> Option<crate::input::host::HostSpec> {
        self.host.clone().or_else(|| self.gpu.traits().host.clone())
    }

    /// Total GPUs.
    pub fn world_size(&self) -> u64 {
        u64::from(self.nodes) * u64::from(self.gpus_per_node)
    }
}

/// A GPU's datasheet figures as a spec in the DGX-class server (`gpus_per_node` 8, one 400 Gb/s
/// NIC per GPU); `intra_node_gb_per_s_both_directions` is its NVLink (or, on a PCIe card, its
/// PCIe x16 link) as the datasheet states it, both directions together.
pub(crate) fn gpu(
    id: &str,
    name: &str,
    (memory_gb, reported_mib): (f64, f64),
    hbm_tb_per_s: f64,
    bf16_tflops: f64,
    fp8_tflops: f64,
    intra_node_gb_per_s_both_directions: f64,
) -> GpuSpec {
    GpuSpec {
        id: id.to_string(),
        name: name.to_string(),
        memory_bytes: reported_mib * MIB,
        datasheet_memory_bytes: memory_gb * GB,
        hbm_bytes_per_s: hbm_tb_per_s * 1e12,
        bf16_flops_per_s: bf16_tflops * 1e12,
        fp8_flops_per_s: fp8_tflops * 1e12,
        intra_node_bytes_per_s: intra_node_gb_per_s_both_directions / 2.0 * GB,
        // NVIDIA DGX H100/H200 and B200 user guides (hardware overview): eight GPUs on the
        // baseboard, eight single-port ConnectX-7 400 Gb/s adapters for the compute fabric, one
        // per GPU (400 Gb/s = 50 GB/s).
        inter_node_bytes_per_s: 50.0 * GB,
        gpus_per_node: 8,
    }
}

/// One GPU preset: its datasheet figures, every trait and the names the driver gives the GPU,
/// stated together in its family's file ([`crate::input::gpu_presets`]).
#[derive(Clone)]
pub(crate) struct GpuPreset {
    /// Datasheet figures (editable once chosen).
    pub(crate) spec: GpuSpec,
    /// What the preset states besides them ([`GpuSpec::traits`]).
    pub(crate) traits: GpuTraits,
    /// The device names that name this preset ([`gpu_preset_for_device`]).
    pub(crate) device_names: &'static [DeviceName],
    /// Board power at the datasheet's limit (TDP, total board or graphics power), watts:
    /// what a run's energy is priced from ([`gpu_board_power_w`]).
    pub(crate) board_power_w: f64,
    /// Streaming multiprocessors (AMD: compute units), the units a GEMM's tiles are spread
    /// over in waves ([`crate::time::gemm_shape`]); `None` where no datasheet states it.
    pub(crate) multiprocessors: Option<u32>,
}

/// A device name as the driver prints it ("NVIDIA H100 80GB HBM3", "NVIDIA GeForce RTX 4090"),
/// matched in lower case: every part occurs in the name, the first one not followed by a letter
/// or a digit, so "a10" does not name an A100, "l4" an L40S, nor "h20" an H200.
#[derive(Clone, Copy, Debug)]
pub(crate) struct DeviceName(pub(crate) &'static [&'static str]);

impl DeviceName {
    /// Whether `name` (lower case) is this device's name.
    fn matches(&self, name: &str) -> bool {
        let Some((first, rest)) = self.0.split_first() else {
            return false;
        };
        let bounded = name.match_indices(first).any(|(at, m)| {
            !name[at + m.len()..]
                .chars()
                .next()
                .is_some_and(|c| c.is_ascii_alphanumeric())
        });
        bounded && rest.iter().all(|part| name.contains(part))
    }

    /// How much of a name this pattern pins down: parts, then letters (so "gb200" outranks
    /// "b200", and "h100" with "96" outranks "h100").
    fn specificity(&self) -> (usize, usize) {
        (self.0.len(), self.0.iter().map(|p| p.len()).sum())
    }
}

/// GPU presets (vendor datasheets, dense rates). Capacity is what the device reports
/// (`nvidia-smi`'s "Memory-Usage" total in MiB, `rocm-smi`'s "VRAM Total Memory"), each
/// from a public readout cited above it; the datasheet's decimal GB stays the label.
/// A GPU sold as "80 GB" carries 80 GiB of HBM; the driver keeps a few hundred MiB of
/// it, so `nvidia-smi` shows 81,559 MiB (79.6 GiB, 85.5e9 bytes) on an H100 SXM.
pub fn gpu_presets() -> Vec<GpuSpec> {
    preset_table().iter().map(|p| p.spec.clone()).collect()
}

/// The traits of the preset with this id ([`GpuSpec::traits`]); [`CUSTOM_GPU_TRAITS`] for an
/// id no preset has.
pub fn gpu_traits(id: &str) -> &'static GpuTraits {
    static CUSTOM: GpuTraits = CUSTOM_GPU_TRAITS;
    preset_table()
        .iter()
        .find(|p| p.spec.id == id)
        .map_or(&CUSTOM, |p| &p.traits)
}

/// The board power of the GPU preset `id` at its datasheet limit, watts; `None` for a GPU whose
/// id names no preset (a custom GPU: the bill then asks for the figure).
pub fn gpu_board_power_w(id: &str) -> Option<f64> {
    preset_table()
        .iter()
        .find(|p| p.spec.id == id)
        .map(|p| p.board_power_w)
}

/// The streaming multiprocessors (compute units) of the GPU preset `id`; `None` for a custom
/// GPU or a preset whose datasheet does not state them.
pub fn gpu_multiprocessors(id: &str) -> Option<u32> {
    preset_table()
        .iter()
        .find(|p| p.spec.id == id)
        .and_then(|p| p.multiprocessors)
}

/// Every preset, built once, in the order the page lists them.
fn preset_table() -> &'static [GpuPreset] {
    static TABLE: OnceLock<Vec<GpuPreset>> = OnceLock::new();
    TABLE.get_or_init(crate::input::gpu_presets::all)
}

/// No serving-kernel measurement applies.
pub(crate) const NO_SERVING_KERNELS: ServingKernels = ServingKernels {
    custom_all_reduce: false,
    xqa_fp8_kv: false,
    graph_kernel_launch: false,
    fp8_weight_stream: false,
};

/// The preset with this id.
pub fn gpu_preset(id: &str) -> Option<GpuSpec> {
    gpu_presets().into_iter().find(|g| g.id == id)
}

/// The preset the driver's device name names, by the device names each preset lists in its
/// family's file ("NVIDIA H100 80GB HBM3" → `h100-sxm`, "NVIDIA A100-SXM4-40GB" → `a100-40gb`,
/// "NVIDIA GeForce RTX 4090" → `rtx-4090`): the most specific match, the first in table order
/// among equals; `None` for other devices.
pub fn gpu_preset_for_device(name: &str) -> Option<GpuSpec> {
    let n = name.to_ascii_lowercase();
    let mut best: Option<((usize, usize), &GpuPreset)> = None;
    for preset in preset_table() {
        let matched = preset
            .device_names
            .iter()
            .filter(|d| d.matches(&n))
            .map(DeviceName::specificity)
            .max();
        if let Some(s) = matched {
            if best.is_none_or(|(b, _)| s > b) {
                best = Some((s, preset));
            }
        }
    }
    best.map(|(_, p)| p.spec.clone())
}

#[cfg(test)]
mod device_name_tests {
    use super::gpu_preset_for_device;

    #[test]
    fn driver_names_map_to_presets() {
        let id = |n: &str| gpu_preset_for_device(n).map(|g| g.id);
        assert_eq!(id("NVIDIA H100 80GB HBM3").as_deref(), Some("h100-sxm"));
        assert_eq!(id("NVIDIA H200").as_deref(), Some("h200"));
        assert_eq!(id("NVIDIA H100 96GB HBM2e").as_deref(), Some("h100-96gb"));
        assert_eq!(id("NVIDIA H800").as_deref(), Some("h800"));
        assert_eq!(id("NVIDIA GB200").as_deref(), Some("gb200-nvl72"));
        assert_eq!(id("NVIDIA B200").as_deref(), Some("b200"));
        assert_eq!(id("AMD Instinct MI325X").as_deref(), Some("mi325x"));
        assert_eq!(id("NVIDIA A100-SXM4-40GB").as_deref(), Some("a100-40gb"));
        assert_eq!(id("NVIDIA A100-SXM4-80GB").as_deref(), Some("a100-80gb"));
        assert_eq!(id("Example GPU"), None);
        // The new presets by the names their drivers print (each preset's readout above it).
        assert_eq!(id("NVIDIA GeForce RTX 4090").as_deref(), Some("rtx-4090"));
        assert_eq!(id("NVIDIA GeForce RTX 5090").as_deref(), Some("rtx-5090"));
        assert_eq!(id("NVIDIA L40S").as_deref(), Some("l40s"));
        assert_eq!(id("NVIDIA L4").as_deref(), Some("l4"));
        assert_eq!(id("NVIDIA A10").as_deref(), Some("a10"));
        assert_eq!(id("NVIDIA A800-SXM4-80GB").as_deref(), Some("a800"));
        assert_eq!(id("NVIDIA H20").as_deref(), Some("h20"));
        // Issue 43 §1: Blackwell Ultra and CDNA 4 by their drivers' names.
        assert_eq!(id("NVIDIA B300 SXM6 AC").as_deref(), Some("b300"));
        assert_eq!(id("NVIDIA GB300").as_deref(), Some("gb300-nvl72"));
        assert_eq!(id("AMD Instinct MI355X").as_deref(), Some("mi355x"));
        assert_eq!(id("AMD Instinct MI350X").as_deref(), Some("mi350x"));
        assert_eq!(
            id("NVIDIA RTX 6000 Ada Generation").as_deref(),
            Some("rtx-6000-ada")
        );
        assert_eq!(id("NVIDIA RTX A6000").as_deref(), Some("rtx-a6000"));
        for edition in [
            "Workstation Edition",
            "Server Edition",
            "Max-Q Workstation Edition",
        ] {
            let name = format!("NVIDIA RTX PRO 6000 Blackwell {edition}");
            assert_eq!(id(&name).as_deref(), Some("rtx-pro-6000"), "{name}");
        }
    }

    #[test]
    fn short_names_do_not_capture_longer_ones() {
        let id = |n: &str| gpu_preset_for_device(n).map(|g| g.id);
        // "a10" is not "a100", "l4" is not "l40s"/"l40", "h20" is not "h200", "b200" loses to
        // "gb200"; a GH200 keeps the H200 it named before (its "h200" ends the name).
        assert_eq!(id("NVIDIA A100 80GB PCIe").as_deref(), Some("a100-80gb"));
        assert_eq!(id("NVIDIA A10G"), None);
        assert_eq!(id("NVIDIA L40"), None);
        assert_eq!(id("NVIDIA L40S").as_deref(), Some("l40s"));
        assert_eq!(id("NVIDIA H200 NVL").as_deref(), Some("h200"));
        assert_eq!(id("NVIDIA GB200").as_deref(), Some("gb200-nvl72"));
        assert_eq!(id("gh200").as_deref(), Some("h200"));
        // The RTX 6000 Ada, the RTX A6000 and the RTX PRO 6000 share "6000"; the PRO 6000D is
        // another card.
        assert_eq!(id("NVIDIA RTX A6000").as_deref(), Some("rtx-a6000"));
        assert_eq!(id("NVIDIA RTX PRO 6000D"), None);
    }
}

#[cfg(test)]
mod tp_within_node_tests {
    use super::tp_within_node;

    #[test]
    fn only_divisors_of_the_node_stay_inside_it() {
        let inside: Vec<u32> = (1..=16).filter(|&t| tp_within_node(t, 8)).collect();
        assert_eq!(inside, [1, 2, 4, 8]);
        // GB200 NVL72: the rack is the node, so 6, 9 and 12 divide it.
        assert!(tp_within_node(6, 72) && tp_within_node(9, 72) && !tp_within_node(10, 72));
    }
}
