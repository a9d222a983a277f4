//! The draft's side of speculative decoding ([`crate::input::speculation`]): what one draft
//! forward reads and computes per GPU, priced as a roofline like the target's decode step.
//! The verify forward of `k + 1` tokens per sequence is the target's own step
//! ([`super::latency`]), and the output rate divides by the accepted tokens per step.

use crate::input::model::ModelSpec;
use crate::input::speculation::{SpecMethod, Speculation};

/// Kernels one draft forward launches: one decoder layer's ten (kernel_gaps.rs, vLLM
/// `LlamaDecoderLayer.forward`), the projection, the final norm and the LM head.
const DRAFT_HEAD_KERNELS: f64 = 13.0;

/// One draft forward on one GPU of the replica.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DraftStep {
    /// Parameters the draft reads per forward (the whole replica).
    pub params: f64,
    /// Weight bytes read per GPU.
    pub weight_bytes: f64,
    /// KV bytes read per GPU (the draft's one layer; 0 for a separate draft model, whose
    /// shapes are not given).
    pub kv_bytes: f64,
    /// FLOPs per GPU.
    pub flops: f64,
    /// Seconds: `max(bytes / HBM, FLOPs / rate) + kernel launches`.
    pub seconds: f64,
}

/// The machine numbers a draft step is priced with.
#[derive(Clone, Copy, Debug)]
pub struct DraftMachine {
    /// Tensor-parallel degree the draft is split over (vLLM runs EAGLE and MTP heads at the
    /// target's TP).
    pub tp: u32,
    /// Bytes per weight.
    pub weight_bytes_per_param: f64,
    /// KV bytes of one token in one layer on one GPU.
    pub kv_bytes_per_token_layer_gpu: f64,
    /// Streaming bandwidth, B/s.
    pub hbm_bytes_per_s: f64,
    /// GEMM rate at small M, FLOP/s.
    pub flops_per_s: f64,
    /// Launch cost of one kernel inside a CUDA graph, s (0 where unmeasured).
    pub launch_s: f64,
}

/// Parameters one draft forward reads, the whole replica.
pub fn draft_params(model: &ModelSpec, sp: &Speculation) -> f64 {
    let b = model.param_breakdown();
    let h = f64::from(model.hidden);
    // The LM head the EAGLE and MTP drafts decode through: the output matrix, or the tied
    // embedding (EAGLE reuses the target's lm_head; DeepSeek-V3 §2.2 shares the output head).
    let head = f64::from(model.vocab) * h;
    let dense_layer = (b.attention_per_layer + b.norms_per_layer + b.dense_ffn_per_layer) as f64;
    match sp.method {
        SpecMethod::DraftModel => sp.draft_params.unwrap_or(0.0),
        // EAGLE (Li et al. 2024 §4.1): one decoder layer after an fc of 2h → h.
        SpecMethod::Eagle => dense_layer + 2.0 * h * h + head,
        // EAGLE-3 (Li et al. 2025 §3): the fc fuses three feature layers, 3h → h.
        SpecMethod::Eagle3 => dense_layer + 3.0 * h * h + head,
        // DeepSeek-V3 §2.2: one MTP module per drafted token, its layer's active parameters,
        // M_k (2h → h) and the shared head.
        SpecMethod::Mtp => {
            let layer = b.mtp_layer_per_module() as f64;
            let inactive = if b.moe_layers > 0 {
                (b.routed_experts_per_layer - b.active_routed_per_layer) as f64
            } else {
                0.0
            };
            layer - inactive + 2.0 * h * h + head
        }
    }
}

/// One draft forward over `seqs` sequences whose context averages `mean_ctx` tokens.
pub fn draft_step(
    model: &ModelSpec,
    sp: &Speculation,
    seqs: f64,
    mean_ctx: f64,
    m: &DraftMachine,
) -> DraftStep {
    let params = draft_params(model, sp);
    let tp = f64::from(m.tp.max(1));
    let weight_bytes = params * m.weight_bytes_per_param / tp;
    let kv_bytes = match sp.method {
        SpecMethod::DraftModel => 0.0,
        _ => seqs * mean_ctx * m.kv_bytes_per_token_layer_gpu,
    };
    // Kaplan et al. 2020 Table 1: 2 FLOPs per parameter per token.
    let flops = 2.0 * params * seqs / tp;
    // Roofline (Williams et al. 2009), as the target's decode step.
    let roof = ((weight_bytes + kv_bytes) / m.hbm_bytes_per_s.max(1.0))
        .max(flops / m.flops_per_s.max(1.0));
    let layers = match sp.method {
        SpecMethod::DraftModel => 0.0,
        _ => 1.0,
    };
    DraftStep {
        params,
        weight_bytes,
        kv_bytes,
        flops,
        seconds: roof + layers * DRAFT_HEAD_KERNELS * m.launch_s.max(0.0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::input::speculation::DEFAULT_ACCEPTANCE;

    #[test]
    fn an_eagle_head_reads_one_layer_its_fc_and_the_lm_head() {
        let model = crate::resolve::presets::model_preset("llama-3.1-8b").expect("preset");
        let sp = Speculation {
            method: SpecMethod::Eagle,
            draft_tokens: 3,
            acceptance: DEFAULT_ACCEPTANCE,
            draft_params: None,
        };
        // Llama 3.1 8B layer: attention 4096·(4096 + 2·1024 + 4096) = 41,943,040 +
        // 2 norms 8,192 + SwiGLU 3·4096·14336 = 176,160,768 → 218,112,000;
        // fc 2·4096² = 33,554,432; head 128,256·4096 = 525,336,576: 777,003,008.
        assert_eq!(draft_params(&model, &sp), 777_003_008.0);
        let m = DraftMachine {
            tp: 1,
            weight_bytes_per_param: 2.0,
            kv_bytes_per_token_layer_gpu: 4096.0,
            hbm_bytes_per_s: 3e12,
            flops_per_s: 6e14,
            launch_s: 0.0,
        };
        let d = draft_step(&model, &sp, 8.0, 1000.0, &m);
        // 1,554,006,016 B of weights + 8 × 1000 × 4096 B of KV over 3 TB/s.
        let want = (1_554_006_016.0 + 32_768_000.0) / 3e12;
        assert!((d.seconds - want).abs() < 1e-15, "{}", d.seconds);
    }
}
