//! What a run of equal prefill chunks attends to and reads on sliding-window layers: a
//! windowed layer's query at position `i` sees only the last `min(i + 1, window)` keys
//! (Jiang et al. 2023 "Mistral 7B" §2), during chunked prefill as during decode, and the
//! layer holds only the last `window` tokens (memory/window_kv.rs), so a chunk starting
//! after `s` cached tokens reads `min(s, window)` of them there; full layers attend to and
//! read the whole prefix.
//!
//! The serving time model prices a run of `count` chunks of `len` tokens, the first
//! starting after `start` cached tokens, by its sums; this module gives those sums per
//! stage, layer-averaged across the stage, exact over the integer chunk starts. A model
//! without a window gets the full-attention sums back (the same floating-point operations).

use crate::input::attention_window::{window_pairs, windowed_layers_in};
use crate::input::model::ModelSpec;

/// Σ over `j = 0..count` of `min(start + j·len, window)`: the cached tokens a windowed layer
/// reads over a run of chunks.
///
/// The first `k = clamp(⌈(window − start)/len⌉, 0, count)` chunks start inside the window
/// and read their whole prefix, `k·start + len·k(k − 1)/2`; the other `count − k` read `window`.
pub fn sum_min_window_over_run(window: f64, start: f64, len: f64, count: f64) -> f64 {
    let count = count.max(0.0);
    let k = if len > 0.0 {
        ((window - start) / len).ceil().clamp(0.0, count)
    } else {
        count
    };
    k * start + len * k * (k - 1.0) / 2.0 + (count - k) * window
}

/// One run's sums on one stage, layer-averaged over the stage's layers.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct WindowedPrefillRun {
    /// (query, key) pairs per layer over the whole run.
    pub attn_pairs: f64,
    /// Cached tokens read per layer over the whole run (Σ over chunks of the prefix each reads).
    pub kv_tokens: f64,
    /// Windowed layers of the stage.
    pub windowed_layers: u32,
}

/// Sums of a run of `count` chunks of `len` tokens from `start` cached tokens on a stage of
/// `layers` layers from `first_layer`.
pub fn stage_prefill_run(
    model: &ModelSpec,
    first_layer: u32,
    layers: u32,
    start: f64,
    len: f64,
    count: f64,
) -> WindowedPrefillRun {
    // Causal full attention (Korthikanti et al. 2022 §4): Σ over the run's chunks j of
    // (e_j² − s_j²)/2 with s_j = start + j·len, e_j = s_j + len.
    let full_pairs =
        count * len * len / 2.0 + len * (count * start + len * count * (count - 1.0) / 2.0);
    // Each chunk reads the prefix before it: Σ_j s_j = count·(start + len·(count − 1)/2).
    let full_kv = count * (start + len * (count - 1.0) / 2.0);
    let windowed = windowed_layers_in(model, first_layer, layers);
    let Some(w) = model.attention_window.as_ref().filter(|_| windowed > 0) else {
        return WindowedPrefillRun {
            attn_pairs: full_pairs,
            kv_tokens: full_kv,
            windowed_layers: 0,
        };
    };
    let w = f64::from(w.window_tokens);
    // Pairs are additive over adjacent chunks, so the run covers those of its whole span.
    let win_pairs = window_pairs(w, start + count * len, start);
    let win_kv = sum_min_window_over_run(w, start, len, count);
    let (l, wl) = (f64::from(layers.max(1)), f64::from(windowed));
    WindowedPrefillRun {
        attn_pairs: ((l - wl) * full_pairs + wl * win_pairs) / l,
        kv_tokens: ((l - wl) * full_kv + wl * win_kv) / l,
        windowed_layers: windowed,
    }
}
