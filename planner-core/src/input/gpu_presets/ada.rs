//! Ada Lovelace (AD102/AD104, sm89): L40S, RTX 6000 Ada, L4 and GeForce RTX 4090, PCIe Gen4
//! cards in the PCIe server ([`super::pcie_server`]). NVIDIA/TransformerEngine
//! transformer_engine/common/transformer_engine.cpp `nvte_is_non_tn_fp8_gemm_supported`: any FP8
//! layout only on sm 100–119 and 130+, so sm89 FP8 GEMMs are TN-only (one more FP8 write per cast
//! element, as Hopper's).

use crate::input::gpu_traits::{ComputeShares, DatasheetExtras};
use crate::input::hardware::{DeviceName, GpuPreset};

use super::pcie_server::{pcie_card, pcie_card_traits, PcieGen};

/// No measured share of their own; TN-only FP8.
const ADA_COMPUTE: ComputeShares = ComputeShares::unmeasured(1.0);

/// L40S, RTX 6000 Ada, L4, GeForce RTX 4090.
pub(super) fn presets() -> Vec<GpuPreset> {
    vec![
        GpuPreset {
            device_names: &[DeviceName(&["l40s"])],
            // NVIDIA L40S datasheet (cited below): max power consumption 350 W.
            board_power_w: 350.0,
            // L40S datasheet: 18,176 CUDA cores, 128 per Ada SM.
            multiprocessors: Some(142),
            // NVIDIA L40S datasheet: BF16 Tensor Core "362.05 | 733" TFLOPS and FP8 "733 |
            // 1,466" (dense | with sparsity), 48 GB GDDR6 with ECC at 864 GB/s, max power 350 W,
            // PCIe Gen4 x16 64 GB/s bidirectional, NVLink: no. akash-network/provider-configs PR
            // #99 (nvidia-smi --query-gpu, "NVIDIA L40S"): 46068 MiB (ECC on, the default: 15/16 of
            // 48 GiB, less 12 MiB).
            spec: pcie_card(
                "l40s",
                "L40S 48 GB",
                (48.0, 46_068.0),
                0.864,
                362.05,
                733.0,
                PcieGen::Gen4,
            ),
            traits: pcie_card_traits(ADA_COMPUTE, DatasheetExtras::NO_FP4_UNITS),
        },
        GpuPreset {
            device_names: &[DeviceName(&["6000", "rtx", "ada"])],
            // NVIDIA RTX 6000 Ada datasheet (cited below): max power consumption 300 W.
            board_power_w: 300.0,
            // RTX 6000 Ada datasheet: 18,176 CUDA cores, 128 per Ada SM.
            multiprocessors: Some(142),
            // NVIDIA Ada GPU architecture whitepaper (v2.01), RTX 6000 Ada: "Peak FP16/BF16
            // Tensor TFLOPS with FP32 Accumulate 364.2/728.5" and "Peak FP8 Tensor TFLOPS with
            // FP32 Accumulate 728.5/1457" (dense/sparse; the professional card runs FP32
            // accumulation at the full rate); NVIDIA RTX 6000 Ada datasheet: 48 GB GDDR6 with
            // ECC at 960 GB/s, max power 300 W, PCIe Gen 4 x16, no NVLink. Public nvidia-smi
            // readouts of "NVIDIA RTX 6000 Ada Generation" (300 W, ECC off) show 49140MiB.
            spec: pcie_card(
                "rtx-6000-ada",
                "RTX 6000 Ada 48 GB",
                (48.0, 49_140.0),
                0.96,
                364.2,
                728.5,
                PcieGen::Gen4,
            ),
            traits: pcie_card_traits(ADA_COMPUTE, DatasheetExtras::NO_FP4_UNITS),
        },
        GpuPreset {
            device_names: &[DeviceName(&["l4"])],
            // NVIDIA L4 datasheet (cited below): max power 72 W.
            board_power_w: 72.0,
            // L4 datasheet: 7,424 CUDA cores, 128 per Ada SM.
            multiprocessors: Some(58),
            // NVIDIA L4 datasheet: BF16 Tensor Core 242 and FP8 485 teraFLOPS "with sparsity"
            // (dense: half), 24 GB GDDR6 at 300 GB/s, max power 72 W, PCIe Gen4 x16 64 GB/s.
            // speaches-ai/speaches PR #438 (nvidia-smi, "NVIDIA L4", 72 W): 23034MiB (ECC on).
            spec: pcie_card(
                "l4",
                "L4 24 GB",
                (24.0, 23_034.0),
                0.3,
                121.0,
                242.5,
                PcieGen::Gen4,
            ),
            traits: pcie_card_traits(ADA_COMPUTE, DatasheetExtras::NO_FP4_UNITS),
        },
        GpuPreset {
            device_names: &[DeviceName(&["4090"])],
            // NVIDIA GeForce RTX 4090 specifications (cited below): total graphics power 450 W.
            board_power_w: 450.0,
            // GeForce RTX 4090 specifications: 16,384 CUDA cores, 128 per Ada SM.
            multiprocessors: Some(128),
            // NVIDIA Ada GPU architecture whitepaper (v2.01), GeForce RTX 4090: "Peak BF16 Tensor
            // TFLOPS with FP32 Accumulate 165.2/330.4" and "Peak FP8 Tensor TFLOPS with FP32
            // Accumulate 330.3/660.6" (dense/sparse: GeForce runs FP32 accumulation at half its
            // FP16-accumulate rates, 330.3 and 660.6 dense, and training accumulates in FP32),
            // 24 GB GDDR6X at 1,008 GB/s, 450 W, PCIe Gen 4 x16, no NVLink and, in the GeForce
            // driver, no P2P (NCCL goes through host memory, input/intra_node_link.rs).
            // RLinf/RLinf issue #255 (nvidia-smi, "NVIDIA GeForce RTX 4090", 450 W): 24564MiB.
            spec: pcie_card(
                "rtx-4090",
                "GeForce RTX 4090 24 GB",
                (24.0, 24_564.0),
                1.008,
                165.2,
                330.3,
                PcieGen::Gen4,
            ),
            traits: pcie_card_traits(ADA_COMPUTE, DatasheetExtras::NO_FP4_UNITS),
        },
    ]
}
