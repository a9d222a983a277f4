//! GPUs and clusters: memory, compute rates and the two communication domains.
//!
//! Figures are vendor datasheet dense rates (see `shared/reference/domain-notes.md`);
//! every field is editable, and a benchmark report replaces them with measurements.

use std::sync::OnceLock;

use serde::{Deserialize, Serialize};

use crate::input::gpu_traits::{
    ComputeShares, GpuTraits, IntraNodeShares, LinkShares, ServingKernels, CUSTOM_GPU_TRAITS,
};
use crate::input::host::{dgx_host, HostSpec};
use crate::input::link_efficiency::{
    HDR_200G_NIC_SHARE, NDR_400G_NIC_SHARE, NVLINK3_SHARE, NVLINK4_NVSWITCH, NVLINK5_RING_SHARE,
    XGMI_GFX94_SHARE,
};
use crate::input::nccl_node::{NcclArch, NcclCpu, NcclNode};
use crate::input::power_limit::{gh100_tensor_rating_fraction, H100_96GB_POWER_LIMIT_WATTS};

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
        self.host.clone().or_else(|| self.gpu.traits().host.clone())
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

/// One GPU preset: its datasheet figures and every trait, stated together.
#[derive(Clone)]
struct GpuPreset {
    spec: GpuSpec,
    traits: GpuTraits,
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

/// Every preset, built once, in the order the page lists them.
fn preset_table() -> &'static [GpuPreset] {
    static TABLE: OnceLock<Vec<GpuPreset>> = OnceLock::new();
    TABLE.get_or_init(|| {
        [
            ampere_presets(),
            hopper_presets(),
            blackwell_presets(),
            amd_presets(),
        ]
        .concat()
    })
}

/// No serving-kernel measurement applies.
const NO_SERVING_KERNELS: ServingKernels = ServingKernels {
    custom_all_reduce: false,
    xqa_fp8_kv: false,
    graph_kernel_launch: false,
    fp8_weight_stream: false,
};

/// A100 SXM 40 GB and 80 GB, in DGX A100 servers.
fn ampere_presets() -> Vec<GpuPreset> {
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
    vec![
        GpuPreset {
            spec: a100_40,
            traits: GpuTraits {
                // NVIDIA DGX A100 user guide (hardware overview), 320 GB system: 1 TB RAM, 15 TB
                // (4 × 3.84 TB) U.2 NVMe, 2 × AMD EPYC 7742 (64 cores each); A100 datasheet:
                // PCIe Gen4 64 GB/s (both directions), 32 GB/s each way.
                host: Some(dgx_host(1.0, 4, 3.84, 32.0, 128)),
                nccl: Some(DGX_A100_NCCL),
                links: DGX_A100_LINKS,
                compute: ComputeShares {
                    hbm_stream_fraction: None,
                    tensor_fraction_at_power_limit: 1.0,
                    bf16_gemm_relative_to_h100: 1.0,
                    fp8_gemm_relative_to_bf16: 1.0,
                    fp8_transpose_bytes_per_element: 0.0,
                },
                serving: NO_SERVING_KERNELS,
            },
        },
        GpuPreset {
            spec: a100_80,
            traits: GpuTraits {
                // The same guide, 640 GB system: 2 TB RAM, 30 TB (8 × 3.84 TB) U.2 NVMe.
                host: Some(dgx_host(2.0, 8, 3.84, 32.0, 128)),
                nccl: Some(DGX_A100_NCCL),
                links: DGX_A100_LINKS,
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
        },
    ]
}

/// NVIDIA DGX A100 datasheet: 2× AMD EPYC 7742; its NVSwitch has no SHARP.
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

/// NVIDIA DGX H100/H200 user guide (hardware overview): 2 TB RAM, 8 × 3.84 TB U.2 NVMe data
/// drives, 2 × Xeon Platinum 8480C (56 cores each); H100/H200 datasheets: PCIe Gen5 128 GB/s
/// (both directions), 64 GB/s each way. DGX H800 is the same chassis.
fn dgx_h100_host() -> HostSpec {
    dgx_host(2.0, 8, 3.84, 64.0, 112)
}

/// The HGX H100 baseboard's NCCL node: Hopper GPUs, Intel Xeon hosts, an NVSwitch with NVLink
/// SHARP (each preset cites its server).
const HGX_H100_NCCL: NcclNode = NcclNode {
    arch: NcclArch::Hopper,
    cpu: NcclCpu::Intel,
    nvls: true,
};

/// NVLink 4 with NVSwitch (HGX H100/H200 boards): all-reduce through NVLS, the rest at NCCL's
/// per-link ring share; one 400 Gb/s NDR NIC (ConnectX-7) per GPU under NCCL (`gpu`: 50 GB/s).
const HGX_H100_LINKS: LinkShares = LinkShares {
    intra_node: Some(NVLINK4_NVSWITCH),
    inter_node: Some(NDR_400G_NIC_SHARE),
};

/// H100 SXM, H100 96 GB, H800 and H200: the GH100 die on HGX H100-class baseboards.
fn hopper_presets() -> Vec<GpuPreset> {
    vec![h100_sxm(), h100_96gb(), h800(), h200()]
}

fn h100_sxm() -> GpuPreset {
    GpuPreset {
        // NVIDIA/nccl issue #1264 (nvidia-smi, "NVIDIA H100 80GB HBM3", 700 W): 81559MiB;
        // the same total in modal-labs/modal-client PR #2797.
        spec: gpu(
            "h100-sxm",
            "H100 SXM 80 GB",
            (80.0, 81_559.0),
            3.35,
            989.0,
            1979.0,
            900.0,
        ),
        traits: GpuTraits {
            host: Some(dgx_h100_host()),
            // NVIDIA DGX H100 datasheet: 2× Intel Xeon Platinum 8480C, 4 third-generation
            // NVSwitches with NVLink SHARP.
            nccl: Some(HGX_H100_NCCL),
            links: HGX_H100_LINKS,
            compute: ComputeShares {
                hbm_stream_fraction: None,
                tensor_fraction_at_power_limit: 1.0,
                // The MAMF table's reference row: BF16 794.5 of 989 (80.3%).
                bf16_gemm_relative_to_h100: 1.0,
                // H100 SXM: FP8 1402.6 of 1979 (70.9%), BF16 794.5 of 989 (80.3%).
                fp8_gemm_relative_to_bf16: 0.709 / 0.803,
                // Hopper (GH100): TN-only FP8 GEMMs.
                fp8_transpose_bytes_per_element: 1.0,
            },
            // Every serving-kernel measurement was taken on an H100: vLLM's custom all-reduce
            // (sgl-project/sglang PR #2904), the launch gap (Hazy Research), the FP8 decode
            // GEMM (vllm-project/vllm PR #49363); XQA's share is the H200's, whose Hopper
            // kernel (mha_sm90) the H100 runs on the same die.
            serving: ServingKernels {
                custom_all_reduce: true,
                xqa_fp8_kv: true,
                graph_kernel_launch: true,
                fp8_weight_stream: true,
            },
        },
    }
}

fn h100_96gb() -> GpuPreset {
    GpuPreset {
        // torchtitan docs/performance.md (Grand Teton): "96GB HBM2e with 2.4 TB/sec peak
        // memory bandwidth", 400 Gb/s RDMA per GPU, the default 500 W power limit. Same
        // GH100 die and datasheet tensor peaks as the SXM5 (MFU's denominator); the power cap
        // lowers sustained clocks, which the step time prices as the vendor's tensor rating
        // for 500 W (input/power_limit.rs, between the NVL's 400 W and the SXM's 700 W).
        // Capacity derived, no public readout found: 6 HBM2e stacks of 16 GiB = 98,304 MiB,
        // less the 361 MiB the H100 80GB's driver withholds from its 5 × 16 GiB (81,920 − 81,559).
        spec: gpu(
            "h100-96gb",
            "H100 96 GB HBM2e (500 W)",
            (96.0, 97_943.0),
            2.4,
            989.0,
            1979.0,
            900.0,
        ),
        traits: GpuTraits {
            // No datasheet of the Grand Teton host was found.
            host: None,
            // torchtitan's 96 GB H100s run in Grand Teton servers (OCP Grand Teton spec: Intel
            // Sapphire Rapids, HGX H100 baseboard).
            nccl: Some(HGX_H100_NCCL),
            links: HGX_H100_LINKS,
            compute: ComputeShares {
                hbm_stream_fraction: None,
                // torchtitan's default 500 W limit (input/power_limit.rs).
                tensor_fraction_at_power_limit: gh100_tensor_rating_fraction(
                    H100_96GB_POWER_LIMIT_WATTS,
                ),
                bf16_gemm_relative_to_h100: 1.0,
                // The same GH100 die as the H100 SXM; no MAMF row of its own.
                fp8_gemm_relative_to_bf16: 0.709 / 0.803,
                fp8_transpose_bytes_per_element: 1.0,
            },
            serving: NO_SERVING_KERNELS,
        },
    }
}

fn h800() -> GpuPreset {
    GpuPreset {
        // NVIDIA H800 SXM5 datasheet: H100's tensor peaks and HBM3, NVLink cut to 400 GB/s.
        // Public nvidia-smi readouts of "NVIDIA H800" (700 W) show 81559MiB, as the H100's.
        spec: gpu(
            "h800",
            "H800 SXM 80 GB",
            (80.0, 81_559.0),
            3.35,
            989.0,
            1979.0,
            400.0,
        ),
        traits: GpuTraits {
            // DGX H800 is the DGX H100 chassis.
            host: Some(dgx_h100_host()),
            // HGX H800 boards carry the H100's NVSwitch (NVLS all-reduce measured on one,
            // NVIDIA/nccl#1374).
            nccl: Some(HGX_H100_NCCL),
            // H800's 8 links, 200 GB/s per direction, are counted per link by NCCL as the
            // H100's 18: 8 × 20.6 of 8 × 25; one user's H800 NVLS all-reduce, NVIDIA/nccl issue
            // #1374, read 215 GB/s busBW, the 480/450 share's 213.
            links: HGX_H100_LINKS,
            compute: ComputeShares {
                hbm_stream_fraction: None,
                tensor_fraction_at_power_limit: 1.0,
                bf16_gemm_relative_to_h100: 1.0,
                // The same GH100 die as the H100 SXM; no MAMF row of its own.
                fp8_gemm_relative_to_bf16: 0.709 / 0.803,
                fp8_transpose_bytes_per_element: 1.0,
            },
            serving: NO_SERVING_KERNELS,
        },
    }
}

fn h200() -> GpuPreset {
    GpuPreset {
        // Public nvidia-smi readouts of "NVIDIA H200" (700 W) show 143771MiB.
        spec: gpu(
            "h200",
            "H200 SXM 141 GB",
            (141.0, 143_771.0),
            4.8,
            989.0,
            1979.0,
            900.0,
        ),
        traits: GpuTraits {
            host: Some(dgx_h100_host()),
            // NVIDIA DGX H200 datasheet: the DGX H100's CPUs and NVSwitches.
            nccl: Some(HGX_H100_NCCL),
            links: HGX_H100_LINKS,
            compute: ComputeShares {
                // H200 keeps its own measurement, the one CostOptions::hbm_achievable_fraction
                // stands on (domain notes, "Achieved figures": one H200 copied device memory at
                // ~4.3 TB/s); Azure's BabelStream Copy on ND H200 v5
                // (Azure_Results/ND_H200_v5_results.md) reads 4.01 TB/s, a second measurement
                // 7% lower that is not preferred over the first.
                hbm_stream_fraction: Some(4.3 / 4.8),
                tensor_fraction_at_power_limit: 1.0,
                // The MAMF table: BF16 as the H100 SXM row ("H200 is the same").
                bf16_gemm_relative_to_h100: 1.0,
                // H200 SXM: FP8 1453.4 of 1979 (73.4%).
                fp8_gemm_relative_to_bf16: 0.734 / 0.803,
                fp8_transpose_bytes_per_element: 1.0,
            },
            // The H100 SXM's GH100 die with HBM3e on the same NVLink 4 / NVSwitch fabric: the
            // same SMs, launch front end and custom all-reduce; XQA's FP8-KV share was measured
            // on an H200. The FP8 decode-GEMM share was measured on the H100 only.
            serving: ServingKernels {
                custom_all_reduce: true,
                xqa_fp8_kv: true,
                graph_kernel_launch: true,
                fp8_weight_stream: false,
            },
        },
    }
}

/// B200 (DGX B200) and GB200 NVL72.
fn blackwell_presets() -> Vec<GpuPreset> {
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
            },
        },
        GpuPreset {
            spec: gb200,
            traits: GpuTraits {
                // NVIDIA GB200 NVL72 datasheet: up to 17 TB LPDDR5X per rack (36 Grace × 480
                // GB), 2,592 Arm Neoverse V2 cores (36 × 72), NVLink-C2C 900 GB/s (both
                // directions) per superchip of one Grace and two GPUs: 225 GB/s each way per
                // GPU. The rack is the "node" (72 GPUs). Local NVMe per tray is not on the
                // datasheet: 0 until set.
                host: Some(HostSpec {
                    ram_bytes: 36.0 * 480e9,
                    nvme_bytes: 0.0,
                    nvme_read_bytes_per_s: 0.0,
                    nvme_write_bytes_per_s: 0.0,
                    host_link_bytes_per_s: 900.0 / 2.0 / 2.0 * GB,
                    cpu_cores: 36 * 72,
                }),
                // GB200 NVL72: Grace (Arm) hosts, NVLink Switch trays with SHARP.
                nccl: Some(NcclNode {
                    arch: NcclArch::Blackwell,
                    cpu: NcclCpu::Other,
                    nvls: true,
                }),
                links: NVLINK5_NDR_LINKS,
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
            },
        },
    ]
}

/// NVLink 5 at NCCL's per-link ring share for every operation (no Blackwell NVLS figure); one
/// 400 Gb/s NDR NIC per GPU under NCCL (`gpu`: 50 GB/s).
const NVLINK5_NDR_LINKS: LinkShares = LinkShares {
    intra_node: Some(IntraNodeShares::uniform(NVLINK5_RING_SHARE)),
    inter_node: Some(NDR_400G_NIC_SHARE),
};

/// gfx942 Infinity Fabric at RCCL's per-link share; MI300X/MI325X run RCCL over their servers'
/// 400 Gb/s NICs: no RCCL figure for them was found, so the line rate stays.
const XGMI_GFX94_LINKS: LinkShares = LinkShares {
    intra_node: Some(IntraNodeShares::uniform(XGMI_GFX94_SHARE)),
    inter_node: None,
};

/// MI300X and MI325X: no server datasheet cited, RCCL (not NCCL) collectives.
fn amd_presets() -> Vec<GpuPreset> {
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
            spec: mi300x,
            traits: GpuTraits {
                host: None,
                nccl: None,
                links: XGMI_GFX94_LINKS,
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
            spec: mi325x,
            traits: GpuTraits {
                host: None,
                nccl: None,
                // The same gfx942 die and links as the MI300X.
                links: XGMI_GFX94_LINKS,
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
