//! Hopper (sm90): H100 SXM, the 96 GB HBM2e H100, H800, H200 and H20, each on an HGX
//! H100-class baseboard.

use crate::input::gpu_traits::{
    ComputeShares, DatasheetExtras, GpuTraits, LinkShares, ServingKernels,
};
use crate::input::hardware::{gpu, DeviceName, GpuPreset, NO_SERVING_KERNELS};
use crate::input::host::{dgx_host, HostSpec};
use crate::input::intra_node_link::IntraNodeLink;
use crate::input::link_efficiency::{NDR_400G_NIC_SHARE, NVLINK4_NVSWITCH};
use crate::input::nccl_node::{NcclArch, NcclCpu, NcclNode};
use crate::input::power_limit::{
    gh100_tensor_rating_fraction, H100_96GB_POWER_LIMIT_WATTS, H100_SXM_RATED_POWER_WATTS,
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

/// H100 SXM, H100 96 GB, H800, H200 and H20: the GH100 die on HGX H100-class baseboards.
pub(super) fn presets() -> Vec<GpuPreset> {
    vec![h100_sxm(), h100_96gb(), h800(), h200(), h20()]
}

/// The GH100 die's measured shares, one place for the parts that carry it (H100 SXM, its 96 GB
/// variant, H800): ml-engineering's MAMF table, BF16 794.5 of 989 TFLOP/s (80.3%, the table's
/// reference row) and FP8 1402.6 of 1979 (70.9%); Hopper's FP8 GEMMs are TN-only.
const GH100_COMPUTE: ComputeShares = ComputeShares {
    hbm_stream_fraction: None,
    tensor_fraction_at_power_limit: 1.0,
    bf16_gemm_relative_to_h100: 1.0,
    fp8_gemm_relative_to_bf16: 0.709 / 0.803,
    fp8_transpose_bytes_per_element: 1.0,
};

fn h100_sxm() -> GpuPreset {
    GpuPreset {
        device_names: &[DeviceName(&["h100"])],
        // NVIDIA H100 product page: H100 SXM "Max Thermal Design Power (TDP) Up to 700W" (input/power_limit.rs).
        board_power_w: H100_SXM_RATED_POWER_WATTS,
        // NVIDIA H100 Tensor Core GPU Architecture whitepaper: 132 SMs on H100 SXM5.
        multiprocessors: Some(132),
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
            // No FP6/FP4 tensor cores on this architecture.
            sheet: DatasheetExtras::NO_FP4_UNITS,
            intra_node_link: IntraNodeLink::NvLink,
            compute: GH100_COMPUTE,
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
        device_names: &[DeviceName(&["h100", "96"])],
        // torchtitan docs/performance.md: "the default 500W power limit" (input/power_limit.rs).
        board_power_w: H100_96GB_POWER_LIMIT_WATTS,
        // the H100 SXM's GH100 configuration (H100 whitepaper: 132 SMs).
        multiprocessors: Some(132),
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
            // No FP6/FP4 tensor cores on this architecture.
            sheet: DatasheetExtras::NO_FP4_UNITS,
            intra_node_link: IntraNodeLink::NvLink,
            // The same GH100 die as the H100 SXM; no MAMF row of its own.
            compute: ComputeShares {
                // torchtitan's default 500 W limit (input/power_limit.rs).
                tensor_fraction_at_power_limit: gh100_tensor_rating_fraction(
                    H100_96GB_POWER_LIMIT_WATTS,
                ),
                ..GH100_COMPUTE
            },
            serving: NO_SERVING_KERNELS,
        },
    }
}

fn h800() -> GpuPreset {
    GpuPreset {
        device_names: &[DeviceName(&["h800"])],
        // NVIDIA H800 SXM5 datasheet: max TDP 700 W (nvidia-smi readouts show a 700 W cap).
        board_power_w: 700.0,
        // the H100 SXM's GH100 configuration (132 SMs).
        multiprocessors: Some(132),
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
            // No FP6/FP4 tensor cores on this architecture.
            sheet: DatasheetExtras::NO_FP4_UNITS,
            intra_node_link: IntraNodeLink::NvLink,
            // The same GH100 die as the H100 SXM; no MAMF row of its own.
            compute: GH100_COMPUTE,
            serving: NO_SERVING_KERNELS,
        },
    }
}

fn h200() -> GpuPreset {
    GpuPreset {
        device_names: &[DeviceName(&["h200"])],
        // NVIDIA H200 datasheet, H200 SXM: "Max Thermal Design Power (TDP) Up to 700W".
        board_power_w: 700.0,
        // the H100 SXM's GH100 configuration (132 SMs).
        multiprocessors: Some(132),
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
            // No FP6/FP4 tensor cores on this architecture.
            sheet: DatasheetExtras::NO_FP4_UNITS,
            intra_node_link: IntraNodeLink::NvLink,
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

fn h20() -> GpuPreset {
    GpuPreset {
        device_names: &[DeviceName(&["h20"])],
        // NVIDIA HGX H20 specifications as its partners publish them (cited below): 400 W.
        board_power_w: 400.0,
        // no NVIDIA datasheet states H20's SM count.
        multiprocessors: None,
        // NVIDIA HGX H20 specifications as NVIDIA's partners publish them (NVIDIA posts no H20
        // datasheet: sunkx109/GPUs-Specs issue #2): 96 GB HBM3 at 4.0 TB/s, BF16 148 TFLOPS and
        // FP8 296 TFLOPS dense (a BF16 GEMM reaches 142.25 TFLOPS at 10240³,
        // zzc0721/torch-performance-test-data issue #77: 148 is not a sparsity figure), NVLink
        // 900 GB/s, PCIe Gen5 x16 128 GB/s, 400 W. Public nvidia-smi readouts of "NVIDIA H20"
        // (500 W cap) show 97871MiB.
        spec: gpu(
            "h20",
            "H20 96 GB",
            (96.0, 97_871.0),
            4.0,
            148.0,
            296.0,
            900.0,
        ),
        traits: GpuTraits {
            // No DGX H20: its partner servers' hosts are not cited (set `host_ram` to offload).
            host: None,
            // The HGX H100 baseboard's NVLink 4 and NVSwitch (NVLS); the host CPU is not cited:
            // NCCL's figures for any CPU but AMD, which on Hopper are the Intel ones.
            nccl: Some(NcclNode {
                arch: NcclArch::Hopper,
                cpu: NcclCpu::Other,
                nvls: true,
            }),
            // The same links and switch as HGX H100 (no H20 measurement); its servers' NICs are
            // not cited, so `gpu`'s one 400 Gb/s NIC per GPU stays.
            links: HGX_H100_LINKS,
            // No FP6/FP4 tensor cores on this architecture.
            sheet: DatasheetExtras::NO_FP4_UNITS,
            intra_node_link: IntraNodeLink::NvLink,
            // No MAMF row; Hopper (sm90) FP8 GEMMs are TN-only.
            compute: ComputeShares::unmeasured(1.0),
            serving: NO_SERVING_KERNELS,
        },
    }
}
