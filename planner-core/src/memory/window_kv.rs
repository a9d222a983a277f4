//! KV cache of sliding-window layers: a windowed layer keeps min(window, context)
//! tokens (Mistral 7B paper §2, rolling buffer). Which layers are windowed is
//! [`crate::input::attention_window`].

use crate::base::explain::{Term, Unit};
use crate::input::attention_window::*;
use crate::input::model::ModelSpec;
use crate::input::scenario::ServeDtype;
use crate::memory::kv_cache::{self, fmt_bytes};

/// KV bytes of one sequence of `context_len` tokens on one GPU holding `layers` layers
/// from `first_layer` at TP `tp`: full layers cache every token, windowed ones
/// [`cached_tokens`]. Without a window this is the per-token bytes × `context_len`.
pub fn kv_bytes_per_sequence_per_gpu_value(
    model: &ModelSpec,
    dtype: ServeDtype,
    tp: u32,
    first_layer: u32,
    layers: u32,
    context_len: u32,
) -> f64 {
    let windowed = windowed_layers_in(model, first_layer, layers);
    let full = layers - windowed;
    let full_bytes =
        kv_cache::kv_bytes_per_token_per_gpu_value(model, dtype, tp, full) * f64::from(context_len);
    if windowed == 0 {
        return full_bytes;
    }
    full_bytes
        + kv_cache::kv_bytes_per_token_per_gpu_value(model, dtype, tp, windowed)
            * f64::from(cached_tokens(model, context_len))
}

/// The per-sequence KV term of `per_token` (a whole-model or per-GPU token term over
/// `layers` layers from `first_layer`), with windowed layers holding only the window.
/// Without a window it is [`kv_cache::kv_bytes_per_sequence`] unchanged.
pub fn kv_bytes_per_sequence(
    model: &ModelSpec,
    per_token: &Term,
    first_layer: u32,
    layers: u32,
    context_len: u32,
) -> Term {
    let plain = kv_cache::kv_bytes_per_sequence(per_token, context_len);
    let windowed = windowed_layers_in(model, first_layer, layers);
    let Some(w) = &model.attention_window else {
        return plain;
    };
    if windowed == 0 || layers == 0 {
        return plain;
    }
    let full = layers - windowed;
    let per_layer = per_token.value / f64::from(layers);
    let kept = cached_tokens(model, context_len);
    let bytes = per_layer
        * (f64::from(full) * f64::from(context_len) + f64::from(windowed) * f64::from(kept));
    Term {
        value: bytes,

        unit: Unit::Bytes,
        formula: "bytes_per_token / layers × (full_layers × context_len + windowed_layers × min(window, context_len))"
            .to_string(),
        worked: format!(
            "{} / {layers} × ({full} × {context_len} + {windowed} × {kept}) = {}",
            fmt_bytes(per_token.value),
            fmt_bytes(bytes)
        ),
        assumption: format!(
            "{windowed} of {layers} layers attend to a {}-token window and keep only it (rolling buffer, Mistral 7B §2); the others cache every token",
            w.window_tokens
        ),
        ..plain
    }
}
