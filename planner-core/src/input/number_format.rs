//! Number formats in memory: the element and its scales, bytes per element exactly as each
//! format's specification lays them out, and which tensor-core rate a GEMM on such operands
//! reaches on a given GPU.
//!
//! A block-scaled format stores `element_bits` per element plus one scale of `scale_bits` per
//! block of `block_elements`, and (NVFP4, per-tensor FP8) one FP32 scale per tensor; the bytes
//! per element are `(element_bits + scale_bits / block_elements) / 8` plus the per-tensor scale
//! spread over the tensor.

use crate::input::hardware::GpuSpec;

/// A number format for weights, activations or the KV cache.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NumberFormat {
    /// BF16: 16 bits, no scale.
    Bf16,
    /// FP8 E4M3 with one FP32 scale per tensor (Transformer Engine `DelayedScaling` /
    /// `Float8CurrentScaling`, vLLM `fp8`).
    Fp8PerTensor,
    /// FP8 E4M3 with FP32 scales per 128 × 128 weight block (DeepSeek-V3 report §3.3.2
    /// "Fine-Grained Quantization": "128x128 block basis (i.e., per 128 input channels per 128
    /// output channels)"; TE `Float8BlockScaling` 2D weight blocks).
    Fp8BlockWeight,
    /// FP8 E4M3 with FP32 scales per 1 × 128 activation tile (DeepSeek-V3 §3.3.2: "1x128 tile
    /// basis (i.e., per token per 128 channels)"; TE `Float8BlockScaling` 1D).
    Fp8BlockActivation,
    /// MXFP8 (OCP Microscaling Formats v1.0 §5.3): E4M3 elements, one E8M0 (8-bit) scale per 32.
    Mxfp8,
    /// MXFP6 (OCP MX v1.0): E2M3 / E3M2 elements, one E8M0 scale per 32.
    Mxfp6,
    /// MXFP4 (OCP MX v1.0): E2M1 elements, one E8M0 scale per 32.
    Mxfp4,
    /// NVFP4: E2M1 elements, one E4M3 (8-bit) scale per 16, one FP32 scale per tensor (NVIDIA
    /// technical blog "Introducing NVFP4 for Efficient and Accurate Low-Precision Inference",
    /// 2025; cuBLAS docs "1D Block Scaling Factors Layout": 16-element blocks for FP4 E2M1 with
    /// `CUDA_R_8F_UE4M3` scales).
    Nvfp4,
    /// INT8 weight-only with one FP16 scale per output channel (W8A16, per-channel).
    Int8PerChannel,
    /// INT4 weight-only with an FP16 scale and a 4-bit zero point per `group` input channels
    /// (AWQ / GPTQ: `qweight` packs eight 4-bit values in an int32, `qzeros` packs the 4-bit zeros,
    /// `scales` is FP16, one row per group: llm-awq awq/quantize/qmodule.py `WQLinear`,
    /// AutoGPTQ `QuantLinear`).
    Int4Group {
        /// Input channels per group (128 in AWQ's and GPTQ's defaults).
        group: u32,
    },
}

/// How a format lays out its scales.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Layout {
    /// Bits of one element.
    pub element_bits: f64,
    /// Bits of one block scale (0: none).
    pub scale_bits: f64,
    /// Elements one block scale covers (1 where there is no block scale).
    pub block_elements: f64,
    /// Bytes of per-tensor scales (one FP32: 4).
    pub per_tensor_bytes: f64,
}

impl NumberFormat {
    /// The format's layout.
    pub fn layout(self) -> Layout {
        let l = |element_bits, scale_bits, block_elements: f64, per_tensor_bytes| Layout {
            element_bits,
            scale_bits,
            block_elements,
            per_tensor_bytes,
        };
        match self {
            NumberFormat::Bf16 => l(16.0, 0.0, 1.0, 0.0),
            NumberFormat::Fp8PerTensor => l(8.0, 0.0, 1.0, 4.0),
            NumberFormat::Fp8BlockWeight => l(8.0, 32.0, 128.0 * 128.0, 0.0),
            NumberFormat::Fp8BlockActivation => l(8.0, 32.0, 128.0, 0.0),
            NumberFormat::Mxfp8 => l(8.0, 8.0, 32.0, 0.0),
            NumberFormat::Mxfp6 => l(6.0, 8.0, 32.0, 0.0),
            NumberFormat::Mxfp4 => l(4.0, 8.0, 32.0, 0.0),
            NumberFormat::Nvfp4 => l(4.0, 8.0, 16.0, 4.0),
            // The FP16 scale per output channel spreads over its `in_features` inputs: the
            // per-element share is charged per tensor through `bytes_for` (rows × 2 B).
            NumberFormat::Int8PerChannel => l(8.0, 0.0, 1.0, 0.0),
            // FP16 scale + 4-bit zero per group.
            NumberFormat::Int4Group { group } => l(4.0, 16.0 + 4.0, f64::from(group.max(1)), 0.0),
        }
    }

    /// Bytes per element over a large tensor: element and block scales, the per-tensor scale
    /// left out (it is a few bytes per tensor).
    pub fn bytes_per_element(self) -> f64 {
        let l = self.layout();
        (l.element_bits + l.scale_bits / l.block_elements) / 8.0
    }

    /// Bytes of a `rows × cols` weight (cols the reduction dim) in this format, every scale
    /// counted: block scales per started block, per-channel scales per row, per-tensor scales.
    pub fn bytes_for(self, rows: u64, cols: u64) -> f64 {
        let l = self.layout();
        let n = (rows * cols) as f64;
        let blocks = match self {
            // 128 × 128 tiles: ⌈rows/128⌉ · ⌈cols/128⌉ scales.
            NumberFormat::Fp8BlockWeight => (rows.div_ceil(128) * cols.div_ceil(128)) as f64,
            // Blocks run along the reduction dim of each row.
            _ if l.scale_bits > 0.0 => {
                let b = l.block_elements as u64;
                (rows * cols.div_ceil(b)) as f64
            }
            _ => 0.0,
        };
        let per_row = if self == NumberFormat::Int8PerChannel {
            rows as f64 * 2.0
        } else {
            0.0
        };
        n * l.element_bits / 8.0 + blocks * l.scale_bits / 8.0 + per_row + l.per_tensor_bytes
    }

    /// Whether the format is a 4-bit float whose GEMM can run on FP4 tensor cores.
    pub fn is_fp4(self) -> bool {
        matches!(self, NumberFormat::Mxfp4 | NumberFormat::Nvfp4)
    }

    /// The dense tensor rate a GEMM whose weights and activations are both in this format
    /// reaches on `gpu`, and whether it runs natively. FP4 runs on FP4 tensor cores only where
    /// the part takes that format (Blackwell: NVFP4 and MXFP4; CDNA 4: MXFP4); anywhere else the
    /// weights are dequantized to BF16 in the GEMM's prologue (vLLM's Marlin and Triton
    /// `matmul_ogs` W4A16 kernels for MXFP4 on Hopper), which runs at the BF16 rate. FP8 formats
    /// run at the FP8 rate where the part has one, else dequantized to BF16; MXFP6 on the FP6
    /// rate where stated.
    pub fn gemm_rate(self, gpu: &GpuSpec) -> (f64, bool) {
        let sheet = gpu.traits().sheet;
        let bf16 = (gpu.bf16_flops_per_s, false);
        match self {
            NumberFormat::Nvfp4 | NumberFormat::Mxfp4 => sheet
                .native_fp4_flops_per_s(self == NumberFormat::Nvfp4)
                .map_or(bf16, |r| (r, true)),
            NumberFormat::Mxfp6 => sheet.fp6_flops_per_s.value().map_or(bf16, |r| (r, true)),
            NumberFormat::Fp8PerTensor
            | NumberFormat::Fp8BlockWeight
            | NumberFormat::Fp8BlockActivation
            | NumberFormat::Mxfp8
                if gpu.fp8_flops_per_s > 0.0 =>
            {
                (gpu.fp8_flops_per_s, true)
            }
            NumberFormat::Bf16 => (gpu.bf16_flops_per_s, true),
            _ => bf16,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::input::hardware::gpu_preset;

    #[test]
    fn nvfp4_is_four_and_a_half_bits_plus_one_fp32_per_tensor() {
        // 4 bits + 8 bits / 16 = 4.5 bits = 0.5625 B per element.
        assert_eq!(NumberFormat::Nvfp4.bytes_per_element(), 0.5625);
        // A 4096 × 4096 weight: 16,777,216 × 0.5 B + 1,048,576 E4M3 scales + 4 B = 9,437,188 B.
        assert_eq!(NumberFormat::Nvfp4.bytes_for(4096, 4096), 9_437_188.0);
    }

    #[test]
    fn mxfp4_is_four_and_a_quarter_bits() {
        // 4 bits + 8 bits / 32 = 4.25 bits = 0.53125 B (gpt-oss's experts: "4.25 bits").
        assert_eq!(NumberFormat::Mxfp4.bytes_per_element(), 0.53125);
        // gpt-oss-120b's expert down projection, 2880 × 2880: 8,294,400 × 0.5 + 2880 × 90 = 4,406,400 B.
        assert_eq!(NumberFormat::Mxfp4.bytes_for(2880, 2880), 4_406_400.0);
    }

    #[test]
    fn mxfp8_and_mxfp6_add_a_quarter_bit() {
        // 8 + 8/32 = 8.25 bits = 1.03125 B; 6 + 8/32 = 6.25 bits = 0.78125 B.
        assert_eq!(NumberFormat::Mxfp8.bytes_per_element(), 1.03125);
        assert_eq!(NumberFormat::Mxfp6.bytes_per_element(), 0.78125);
    }

    #[test]
    fn deepseek_block_fp8_counts_its_fp32_scales() {
        // Weights: 8 bits + 32 bits / (128 · 128) = 8.001953125 bits.
        assert_eq!(
            NumberFormat::Fp8BlockWeight.bytes_per_element(),
            1.0 + 4.0 / 16_384.0
        );
        // DeepSeek-V3's 7168 × 2048 expert projection: 14,680,064 B + 56 · 16 scales · 4 B.
        assert_eq!(
            NumberFormat::Fp8BlockWeight.bytes_for(7168, 2048),
            14_680_064.0 + 3584.0
        );
        // A 7000-column weight ends in a part block: ⌈7000/128⌉ = 55 scale columns.
        assert_eq!(
            NumberFormat::Fp8BlockWeight.bytes_for(128, 7000),
            896_000.0 + 55.0 * 4.0
        );
        // Activations: 8 + 32/128 = 8.25 bits.
        assert_eq!(
            NumberFormat::Fp8BlockActivation.bytes_per_element(),
            1.03125
        );
    }

    #[test]
    fn per_tensor_fp8_is_one_byte_and_four() {
        assert_eq!(NumberFormat::Fp8PerTensor.bytes_per_element(), 1.0);
        assert_eq!(
            NumberFormat::Fp8PerTensor.bytes_for(1024, 1024),
            1_048_580.0
        );
    }

    #[test]
    fn weight_only_int_formats_count_scales_and_zeros() {
        // INT4 g128: 4 bits + (16-bit scale + 4-bit zero) / 128 = 4.15625 bits.
        let awq = NumberFormat::Int4Group { group: 128 };
        assert_eq!(awq.bytes_per_element(), 4.15625 / 8.0);
        // 4096 × 4096: 8,388,608 B + 4096 · 32 groups · 20 bits / 8 = 327,680 B.
        assert_eq!(awq.bytes_for(4096, 4096), 8_388_608.0 + 327_680.0);
        // INT8 per channel: 1 B an element + one FP16 scale per output row.
        assert_eq!(
            NumberFormat::Int8PerChannel.bytes_for(4096, 4096),
            16_777_216.0 + 8192.0
        );
    }

    #[test]
    fn fp4_runs_at_the_fp4_rate_only_where_the_tensor_cores_take_it() {
        let rate = |id: &str, f: NumberFormat| f.gemm_rate(&gpu_preset(id).expect("preset"));
        assert_eq!(rate("b200", NumberFormat::Nvfp4), (9.0e15, true));
        assert_eq!(rate("gb300-nvl72", NumberFormat::Mxfp4), (15.0e15, true));
        assert_eq!(rate("mi355x", NumberFormat::Mxfp4), (10_066.3e12, true));
        // CDNA 4 has no NVFP4: dequantized to BF16.
        assert_eq!(rate("mi355x", NumberFormat::Nvfp4), (2516.6e12, false));
        // Hopper: MXFP4 weights dequantized to BF16 (W4A16).
        assert_eq!(rate("h100-sxm", NumberFormat::Mxfp4), (989e12, false));
        // The A100 has no FP8 tensor cores: FP8 weights run dequantized at BF16.
        assert_eq!(
            rate("a100-80gb", NumberFormat::Fp8BlockWeight),
            (312e12, false)
        );
        assert_eq!(rate("h100-sxm", NumberFormat::Mxfp8), (1979e12, true));
    }
}
