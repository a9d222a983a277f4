//! GPUs and clusters: memory, compute rates and the two communication domains.
//!
//! Figures are vendor datasheet dense rates (see `shared/reference/domain-notes.md`);
//! every field is editable, and a benchmark report replaces them with measurements.

use serde::{Deserialize, Serialize};

/// Decimal gigabyte, as the article and vendors count memory.
pub const GB: f64 = 1e9;
/// Binary gibibyte, what `nvidia-smi` and PyTorch report.
pub const GIB: f64 = 1024.0 * 1024.0 * 1024.0;

/// One GPU model.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GpuSpec {
    /// Stable identifier ("h100-sxm").
    pub id: String,
    /// Display name.
    pub name: String,
    /// Device memory in bytes (decimal, as on the datasheet).
    pub memory_bytes: f64,
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
}

impl Cluster {
    /// `nodes` nodes of the GPU's usual server, links from its datasheet.
    pub fn of(gpu: GpuSpec, nodes: u32) -> Self {
        Cluster {
            gpus_per_node: gpu.gpus_per_node,
            intra_node: LinkSpec {
                bytes_per_s: gpu.intra_node_bytes_per_s,
                latency_s: 3e-6,
            },
            inter_node: LinkSpec {
                bytes_per_s: gpu.inter_node_bytes_per_s,
                latency_s: 10e-6,
            },
            gpu,
            nodes,
        }
    }

    /// Total GPUs.
    pub fn world_size(&self) -> u64 {
        u64::from(self.nodes) * u64::from(self.gpus_per_node)
    }
}

fn gpu(
    id: &str,
    name: &str,
    memory_gb: f64,
    hbm_tb_per_s: f64,
    bf16_tflops: f64,
    fp8_tflops: f64,
    nvlink_gb_per_s_both_directions: f64,
) -> GpuSpec {
    GpuSpec {
        id: id.to_string(),
        name: name.to_string(),
        memory_bytes: memory_gb * GB,
        hbm_bytes_per_s: hbm_tb_per_s * 1e12,
        bf16_flops_per_s: bf16_tflops * 1e12,
        fp8_flops_per_s: fp8_tflops * 1e12,
        intra_node_bytes_per_s: nvlink_gb_per_s_both_directions / 2.0 * GB,
        inter_node_bytes_per_s: 50.0 * GB,
        gpus_per_node: 8,
    }
}

/// GPU presets (vendor datasheets, dense rates).
pub fn gpu_presets() -> Vec<GpuSpec> {
    let mut a100_40 = gpu(
        "a100-40gb",
        "A100 SXM 40 GB",
        40.0,
        1.555,
        312.0,
        0.0,
        600.0,
    );
    // A100 nodes usually carry one 200 Gb/s HDR NIC per GPU.
    a100_40.inter_node_bytes_per_s = 25.0 * GB;
    let mut a100_80 = gpu(
        "a100-80gb",
        "A100 SXM 80 GB",
        80.0,
        2.039,
        312.0,
        0.0,
        600.0,
    );
    a100_80.inter_node_bytes_per_s = 25.0 * GB;
    let mut mi300x = gpu("mi300x", "MI300X", 192.0, 5.3, 1307.0, 2615.0, 896.0);
    mi300x.gpus_per_node = 8;
    vec![
        a100_40,
        a100_80,
        gpu(
            "h100-sxm",
            "H100 SXM 80 GB",
            80.0,
            3.35,
            989.0,
            1979.0,
            900.0,
        ),
        gpu("h200", "H200 SXM 141 GB", 141.0, 4.8, 989.0, 1979.0, 900.0),
        gpu("b200", "B200 180 GB", 180.0, 8.0, 2250.0, 4500.0, 1800.0),
        mi300x,
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
    let key = ["b200", "h200", "h100", "mi300x", "a100"]
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
        assert_eq!(id("NVIDIA A100-SXM4-40GB").as_deref(), Some("a100-40gb"));
        assert_eq!(id("NVIDIA A100-SXM4-80GB").as_deref(), Some("a100-80gb"));
        assert_eq!(id("Example GPU"), None);
    }
}
