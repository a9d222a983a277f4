//! GPUs and clusters: memory, compute rates and the two communication domains.
//!
//! Figures are vendor datasheet dense rates (see `shared/reference/domain-notes.md`);
//! every field is editable, and a benchmark report replaces them with measurements.

use serde::{Deserialize, Serialize};

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
}

/// One GPU model.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GpuSpec {
    /// Stable identifier ("h100-sxm").
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
    /// preset ([`crate::input::host::host_preset`]), which files and links then leave out.
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
            // 3.4 µs, network 14.0 µs; its per-call base latency is not counted here).
            intra_node: LinkSpec {
                bytes_per_s: gpu.intra_node_bytes_per_s,
                latency_s: 3.4e-6,
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
        self.host
            .clone()
            .or_else(|| crate::input::host::host_preset(&self.gpu.id))
    }

    /// Total GPUs.
    pub fn world_size(&self) -> u64 {
        u64::from(self.nodes) * u64::from(self.gpus_per_node)
    }
}

fn gpu(
    id: &str,
    name: &str,
    (memory_gb, reported_mib): (f64, f64),
    hbm_tb_per_s: f64,
    bf16_tflops: f64,
    fp8_tflops: f64,
    nvlink_gb_per_s_both_directions: f64,
) -> GpuSpec {
    GpuSpec {
        id: id.to_string(),
        name: name.to_string(),
        memory_bytes: reported_mib * MIB,
        datasheet_memory_bytes: memory_gb * GB,
        hbm_bytes_per_s: hbm_tb_per_s * 1e12,
        bf16_flops_per_s: bf16_tflops * 1e12,
        fp8_flops_per_s: fp8_tflops * 1e12,
        intra_node_bytes_per_s: nvlink_gb_per_s_both_directions / 2.0 * GB,
        // NVIDIA DGX H100/H200 and B200 user guides (hardware overview): eight GPUs on the
        // baseboard, eight single-port ConnectX-7 400 Gb/s adapters for the compute fabric, one
        // per GPU (400 Gb/s = 50 GB/s).
        inter_node_bytes_per_s: 50.0 * GB,
        gpus_per_node: 8,
    }
}

/// GPU presets (vendor datasheets, dense rates). Capacity is what the device reports
/// (`nvidia-smi`'s "Memory-Usage" total in MiB, `rocm-smi`'s "VRAM Total Memory"), each
/// from a public readout cited above it; the datasheet's decimal GB stays the label.
/// A GPU sold as "80 GB" carries 80 GiB of HBM; the driver keeps a few hundred MiB of
/// it, so `nvidia-smi` shows 81,559 MiB (79.6 GiB, 85.5e9 bytes) on an H100 SXM.
pub fn gpu_presets() -> Vec<GpuSpec> {
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
        a100_40,
        a100_80,
        // NVIDIA/nccl issue #1264 (nvidia-smi, "NVIDIA H100 80GB HBM3", 700 W): 81559MiB;
        // the same total in modal-labs/modal-client PR #2797.
        gpu(
            "h100-sxm",
            "H100 SXM 80 GB",
            (80.0, 81_559.0),
            3.35,
            989.0,
            1979.0,
            900.0,
        ),
        // torchtitan docs/performance.md (Grand Teton): "96GB HBM2e with 2.4 TB/sec peak
        // memory bandwidth", 400 Gb/s RDMA per GPU, the default 500 W power limit. Same
        // GH100 die and datasheet tensor peaks as the SXM5 (MFU's denominator); the power cap
        // lowers sustained clocks, which the step time prices as the vendor's tensor rating
        // for 500 W (input/power_limit.rs, between the NVL's 400 W and the SXM's 700 W).
        // Capacity derived, no public readout found: 6 HBM2e stacks of 16 GiB = 98,304 MiB,
        // less the 361 MiB the H100 80GB's driver withholds from its 5 × 16 GiB (81,920 − 81,559).
        gpu(
            "h100-96gb",
            "H100 96 GB HBM2e (500 W)",
            (96.0, 97_943.0),
            2.4,
            989.0,
            1979.0,
            900.0,
        ),
        // NVIDIA H800 SXM5 datasheet: H100's tensor peaks and HBM3, NVLink cut to 400 GB/s.
        // Public nvidia-smi readouts of "NVIDIA H800" (700 W) show 81559MiB, as the H100's.
        gpu(
            "h800",
            "H800 SXM 80 GB",
            (80.0, 81_559.0),
            3.35,
            989.0,
            1979.0,
            400.0,
        ),
        // Public nvidia-smi readouts of "NVIDIA H200" (700 W) show 143771MiB.
        gpu(
            "h200",
            "H200 SXM 141 GB",
            (141.0, 143_771.0),
            4.8,
            989.0,
            1979.0,
            900.0,
        ),
        // NVIDIA/TensorRT-LLM issue #10278 (nvidia-smi, "NVIDIA B200", 1000 W): 183359MiB.
        gpu(
            "b200",
            "B200 180 GB",
            (180.0, 183_359.0),
            8.0,
            2250.0,
            4500.0,
            1800.0,
        ),
        gb200,
        mi300x,
        mi325x,
    ]
}

/// The preset with this id.
pub fn gpu_preset(id: &str) -> Option<GpuSpec> {
    gpu_presets().into_iter().find(|g| g.id == id)
}

/// The preset whose id the driver's device name names ("NVIDIA H100 80GB HBM3" →
/// `h100-sxm`, "NVIDIA A100-SXM4-40GB" → `a100-40gb`); `None` for other devices.
pub fn gpu_preset_for_device(name: &str) -> Option<GpuSpec> {
    let n = name.to_ascii_lowercase();
    if n.contains("h100") && n.contains("96") {
        return gpu_preset("h100-96gb");
    }
    if n.contains("gb200") {
        return gpu_preset("gb200-nvl72");
    }
    let key = ["b200", "h200", "h800", "h100", "mi325x", "mi300x", "a100"]
        .into_iter()
        .find(|k| n.contains(k))?;
    if key == "a100" {
        let id = if n.contains("40") {
            "a100-40gb"
        } else {
            "a100-80gb"
        };
        return gpu_preset(id);
    }
    gpu_presets().into_iter().find(|g| g.id.starts_with(key))
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
