//! KV cache: bytes each cached token costs, for the whole model and per GPU.
//!
//! Standard and grouped-query attention cache a key and a value vector per KV
//! head per layer. Multi-head latent attention (DeepSeek-V2/V3) caches one
//! compressed latent plus the shared RoPE key per layer instead.

use crate::base::explain::{Term, Unit};
use crate::input::model::ModelSpec;
use crate::input::scenario::ServeDtype;

/// Values cached per token per layer for the whole model (all heads).
pub fn values_per_token_per_layer(model: &ModelSpec) -> f64 {
    match &model.mla {
        // DeepSeek-V2 §2.1.3 (Table 1): MLA caches d_c + d_h^R values per token per layer.
        Some(mla) => f64::from(mla.kv_lora_rank) + f64::from(mla.qk_rope_head_dim),
        // Keys and values: 2 × n_kv_heads × head_dim per token per layer.
        None => 2.0 * f64::from(model.kv_heads) * f64::from(model.head_dim),
    }
}

/// KV heads one GPU holds under tensor parallelism of degree `tp`.
///
/// Heads are split over TP ranks; when `tp` exceeds the KV-head count each head
/// is replicated on `tp / kv_heads` ranks (vLLM `get_num_kv_heads`:
/// `max(1, n_kv / tp)`), so per-GPU KV stops shrinking at `tp = kv_heads`.
/// A count that does not divide is rounded up (the largest rank's share).
pub fn kv_heads_per_gpu(model: &ModelSpec, tp: u32) -> u32 {
    let tp = tp.max(1);
    model.kv_heads.div_ceil(tp).max(1)
}

/// Values one GPU caches per token per layer under TP.
///
/// MLA's latent is shared by all heads, so every TP rank keeps the whole latent
/// (vLLM's MLA backends and SGLang without DP-attention replicate it across TP).
pub fn values_per_token_per_layer_per_gpu(model: &ModelSpec, tp: u32) -> f64 {
    match &model.mla {
        Some(_) => values_per_token_per_layer(model),
        None => 2.0 * f64::from(kv_heads_per_gpu(model, tp)) * f64::from(model.head_dim),
    }
}

/// Bytes one token costs in the whole model's cache.
pub fn kv_bytes_per_token(model: &ModelSpec, dtype: ServeDtype) -> Term {
    let layers = f64::from(model.layers);
    let values = values_per_token_per_layer(model);
    let bytes = values * layers * dtype.bytes();
    let (formula, worked, assumption) = match &model.mla {
        Some(mla) => (
            "layers × (kv_lora_rank + qk_rope_head_dim) × bytes".to_string(),
            format!(
                "{} × ({} + {}) × {} = {}",
                model.layers,
                mla.kv_lora_rank,
                mla.qk_rope_head_dim,
                dtype.bytes(),
                fmt_bytes(bytes)
            ),
            "MLA caches the compressed KV latent plus the shared RoPE key (DeepSeek-V2 §2.1)"
                .to_string(),
        ),
        None => (
            "2 × layers × kv_heads × head_dim × bytes".to_string(),
            format!(
                "2 × {} × {} × {} × {} = {}",
                model.layers,
                model.kv_heads,
                model.head_dim,
                dtype.bytes(),
                fmt_bytes(bytes)
            ),
            format!(
                "a key and a value per KV head per layer, {} cache",
                dtype.id()
            ),
        ),
    };
    Term {
        key: "kv.per_token".to_string(),
        label: "KV cache per token (whole model)".to_string(),
        value: bytes,
        unit: Unit::Bytes,
        formula,
        worked,
        assumption,
    }
}

/// The bytes of [`kv_bytes_per_token_per_gpu`] without the explanation (no text, no heap).
pub fn kv_bytes_per_token_per_gpu_value(
    model: &ModelSpec,
    dtype: ServeDtype,
    tp: u32,
    layers_on_gpu: u32,
) -> f64 {
    let values = values_per_token_per_layer_per_gpu(model, tp.max(1));
    values * f64::from(layers_on_gpu) * dtype.bytes()
}

/// Bytes one token costs on one GPU holding `layers_on_gpu` layers at TP degree `tp`.
pub fn kv_bytes_per_token_per_gpu(
    model: &ModelSpec,
    dtype: ServeDtype,
    tp: u32,
    layers_on_gpu: u32,
) -> Term {
    let tp = tp.max(1);
    let bytes = kv_bytes_per_token_per_gpu_value(model, dtype, tp, layers_on_gpu);
    let (formula, worked, assumption) = match &model.mla {
        Some(mla) => (
            "stage_layers × (kv_lora_rank + qk_rope_head_dim) × bytes".to_string(),
            format!(
                "{} × ({} + {}) × {} = {}",
                layers_on_gpu,
                mla.kv_lora_rank,
                mla.qk_rope_head_dim,
                dtype.bytes(),
                fmt_bytes(bytes)
            ),
            format!(
                "the MLA latent is shared by all heads, so each of the {tp} TP ranks holds all of it (vLLM, SGLang)"
            ),
        ),
        None => {
            let heads = kv_heads_per_gpu(model, tp);
            let note = if tp > model.kv_heads {
                format!(
                    "TP {tp} > {} KV heads: heads replicated, one per GPU; KV per GPU stops shrinking",
                    model.kv_heads
                )
            } else {
                format!("{} KV heads split over TP {tp}", model.kv_heads)
            };
            (
                "2 × stage_layers × ⌈kv_heads / TP⌉ × head_dim × bytes".to_string(),
                format!(
                    "2 × {} × {} × {} × {} = {}",
                    layers_on_gpu,
                    heads,
                    model.head_dim,
                    dtype.bytes(),
                    fmt_bytes(bytes)
                ),
                note,
            )
        }
    };
    Term {
        key: "kv.per_token_per_gpu".to_string(),
        label: "KV cache per token per GPU".to_string(),
        value: bytes,
        unit: Unit::Bytes,
        formula,
        worked,
        assumption,
    }
}

/// Bytes one sequence of `context_len` tokens costs, from a per-token term
/// (key and label say `per_sequence` where the token term says `per_token`).
pub fn kv_bytes_per_sequence(per_token: &Term, context_len: u32) -> Term {
    let bytes = per_token.value * f64::from(context_len);
    Term {
        key: per_token.key.replace("per_token", "per_sequence"),
        label: per_token.label.replace("per token", "per sequence"),
        value: bytes,
        unit: Unit::Bytes,
        formula: "bytes_per_token × context_len".to_string(),
        worked: format!(
            "{} × {} = {}",
            fmt_bytes(per_token.value),
            context_len,
            fmt_bytes(bytes)
        ),
        assumption: "every cached token of the sequence is resident (no eviction or offload)"
            .to_string(),
    }
}

/// `327,680 B` below 1 MB, decimal MB/GB above (the article's units).
pub(crate) fn fmt_bytes(bytes: f64) -> String {
    if bytes.abs() < 1e6 {
        let whole = bytes.round() as i64;
        if (bytes - whole as f64).abs() > 1e-9 {
            return format!("{bytes} B");
        }
        let digits = whole.unsigned_abs().to_string();
        let mut out = String::new();
        for (i, c) in digits.chars().enumerate() {
            if i > 0 && (digits.len() - i).is_multiple_of(3) {
                out.push(',');
            }
            out.push(c);
        }
        let sign = if whole < 0 { "-" } else { "" };
        format!("{sign}{out} B")
    } else if bytes.abs() < 1e9 {
        format!("{:.2} MB", bytes / 1e6)
    } else {
        format!("{:.2} GB", bytes / 1e9)
    }
}
