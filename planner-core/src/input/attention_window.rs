//! Sliding-window attention: which decoder layers attend to (and cache) only the
//! last `window_tokens` tokens, what that does to KV bytes per sequence and to the
//! attention FLOPs of training and prefill.
//!
//! The shape lives in [`crate::input::model::AttentionWindow`]; a model without one is
//! full attention on every layer and every function here reduces to the plain
//! formulas (the same floating-point operations, so nothing else changes).

use crate::input::model::ModelSpec;

/// Whether decoder layer `layer` (0-based) is windowed.
///
/// transformers `Gemma2DecoderLayer`: `is_sliding = not bool(layer_idx % 2)`; Gemma 3
/// `is_sliding = bool((layer_idx + 1) % sliding_window_pattern)`; both are
/// "full when `(i + 1) % full_every == 0`". Mistral 7B v0.1 windows every layer.
pub fn is_windowed(model: &ModelSpec, layer: u32) -> bool {
    match &model.attention_window {
        None => false,
        Some(w) if w.full_every == 0 => true,
        Some(w) => !(layer + 1).is_multiple_of(w.full_every),
    }
}

/// Windowed layers among `count` layers starting at `first`, in O(1).
pub fn windowed_layers_in(model: &ModelSpec, first: u32, count: u32) -> u32 {
    match &model.attention_window {
        None => 0,
        Some(w) if w.full_every == 0 => count,
        Some(w) => {
            // Full layers i in [first, first + count) have (i + 1) a multiple of k:
            // ⌊(first + count) / k⌋ − ⌊first / k⌋ of them.
            let k = u64::from(w.full_every);
            let end = u64::from(first) + u64::from(count);
            let full = end / k - u64::from(first) / k;
            count - u32::try_from(full).unwrap_or(count).min(count)
        }
    }
}

/// Tokens one windowed layer keeps for a sequence of `context_len` tokens:
/// `min(window, context)` (Jiang et al. 2023 "Mistral 7B" §2, rolling buffer cache:
/// "the cache has a fixed size of W"); full layers keep all `context_len`.
pub fn cached_tokens(model: &ModelSpec, context_len: u32) -> u32 {
    match &model.attention_window {
        Some(w) => w.window_tokens.min(context_len),
        None => context_len,
    }
}

/// Σ over layers of the keys one query attends to, averaged over the `seq_len` query
/// positions: what the attention FLOPs per token are proportional to.
///
/// Causal full attention: query `i` sees `i + 1` keys, which the planner rounds to the
/// mean `s/2` (Korthikanti et al. 2022 count `s` without the causal halving; the
/// `causal` switch halves). A causal window of `w < s` tokens: query `i` sees
/// `min(i + 1, w)` keys, mean `w − w²/(2s)` in the same continuum (Beltagy et al. 2020
/// "Longformer" §3.1: sliding-window attention costs O(n·w), not O(n²)). Non-causal:
/// `s` keys, or `min(w, s)` with a window.
pub fn attended_keys_sum(model: &ModelSpec, seq_len: u32, causal: bool) -> f64 {
    let s = f64::from(seq_len);
    let layers = f64::from(model.layers);
    let full_span = if causal { 0.5 * s } else { s };
    let Some(w) = &model.attention_window else {
        return layers * full_span;
    };
    let windowed = f64::from(windowed_layers_in(model, 0, model.layers));
    let w = f64::from(w.window_tokens);
    let window_span = match (causal, w < s) {
        (true, true) => w - w * w / (2.0 * s),
        (false, true) => w,
        _ => full_span,
    };
    (layers - windowed) * full_span + windowed * window_span
}

/// (query, key) pairs of a causal prefill of the prompt positions `cached..prompt`
/// (the cached prefix is not recomputed), summed over layers and divided by the layer
/// count, so a model without a window gives `(p² − c²)/2` as the serving model counts it.
///
/// A windowed layer's query at position `i` sees `min(i + 1, w)` keys: the pairs from
/// `c` to `p` are `(min(p,w)² − min(c,w)²)/2 + w·(p − max(c, w))⁺` (the same continuum as
/// [`attended_keys_sum`]).
pub fn prefill_pairs_per_layer(model: &ModelSpec, prompt: f64, cached: f64) -> f64 {
    let full = (prompt * prompt - cached * cached) / 2.0;
    let Some(w) = &model.attention_window else {
        return full;
    };
    let layers = f64::from(model.layers.max(1));
    let windowed = f64::from(windowed_layers_in(model, 0, model.layers));
    let windowed_pairs = window_pairs(f64::from(w.window_tokens), prompt, cached);
    ((layers - windowed) * full + windowed * windowed_pairs) / layers
}

/// (query, key) pairs of one windowed layer of window `w` for the queries at positions
/// `cached..prompt`: `(min(p,w)² − min(c,w)²)/2 + w·(p − max(c, w))⁺` (query `i` sees
/// `min(i + 1, w)` keys, in the continuum of [`attended_keys_sum`]). Additive over
/// adjacent ranges, so a run of prefill chunks covers the pairs of its whole span.
pub fn window_pairs(w: f64, prompt: f64, cached: f64) -> f64 {
    let (p_in, c_in) = (prompt.min(w), cached.min(w));
    (p_in * p_in - c_in * c_in) / 2.0 + w * (prompt - cached.max(w)).max(0.0)
}
