//! What a decode step reads and attends to on sliding-window layers: a windowed layer
//! holds only the last `window` tokens of a sequence (memory/window_kv.rs), so each decode
//! step reads min(window, context) cached tokens there and its query attends to
//! min(window, context + 1) keys; full layers read the whole context.
//!
//! The serving time model averages both over a request's output (step j of O reads the
//! P + j − 1 tokens before it); this module gives those means per stage, exact over the
//! integer steps. A model without a window gets the plain means back.

use crate::input::attention_window::windowed_layers_in;
use crate::input::model::ModelSpec;

/// Mean of `min(window, y)` over the `n` integers `y = lo, lo + 1, …, lo + n − 1`.
///
/// Σ_{y=lo}^{w−1} y + (lo + n − w)·w when lo < w ≤ lo + n − 1, and the plain sums when
/// the window lies wholly above (mean `lo + (n − 1)/2`) or below (`w`) the range.
pub fn mean_min_window(window: f64, lo: f64, n: f64) -> f64 {
    let n = n.max(1.0);
    let hi = lo + n - 1.0;
    if window >= hi {
        return lo + (n - 1.0) / 2.0;
    }
    if window <= lo {
        return window;
    }
    // y = lo..w−1 contribute their own values ((w − lo) terms, mean (lo + w − 1)/2);
    // y = w..hi contribute w each ((hi − w + 1) terms).
    let below = (window - lo) * (lo + window - 1.0) / 2.0;
    let above = (hi - window + 1.0) * window;
    (below + above) / n
}

/// Per-stage decode means over a request's output, layer-averaged across the stage.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct WindowedDecode {
    /// Mean cached tokens a decode step reads per layer of the stage.
    pub kv_tokens: f64,
    /// Mean keys a decode query attends to per layer of the stage.
    pub attended_keys: f64,
    /// Windowed layers of the stage.
    pub windowed_layers: u32,
}

/// Decode means of a stage of `layers` layers from `first_layer`, for prompts of
/// `prompt` tokens and `output` output tokens (step j reads P + j − 1 cached tokens and
/// attends to P + j keys, itself included).
pub fn stage_decode_means(
    model: &ModelSpec,
    first_layer: u32,
    layers: u32,
    prompt: f64,
    output: f64,
) -> WindowedDecode {
    let o = output.max(1.0);
    // Full attention: the arithmetic means of the two ranges.
    let full_kv = prompt + (o - 1.0) / 2.0;
    let full_keys = full_kv + 1.0;
    let windowed = windowed_layers_in(model, first_layer, layers);
    let Some(w) = model.attention_window.as_ref().filter(|_| windowed > 0) else {
        return WindowedDecode {
            kv_tokens: full_kv,
            attended_keys: full_keys,
            windowed_layers: 0,
        };
    };
    let w = f64::from(w.window_tokens);
    // Mistral 7B §2 (Jiang et al. 2023), rolling buffer: a windowed layer keeps and reads
    // the last w tokens, and its query attends to at most w keys.
    let win_kv = mean_min_window(w, prompt, o);
    let win_keys = mean_min_window(w, prompt + 1.0, o);
    let (l, wl) = (f64::from(layers.max(1)), f64::from(windowed));
    WindowedDecode {
        kv_tokens: ((l - wl) * full_kv + wl * win_kv) / l,
        attended_keys: ((l - wl) * full_keys + wl * win_keys) / l,
        windowed_layers: windowed,
    }
}
