//! How DeepSpeed's ZeRO-3 moves parameters, where it differs from FSDP's one gather of a
//! layer before its forward and one before its backward ([`crate::time::comms`]):
//! - hooks on every `nn.Module` gather its own parameters before its forward and its
//!   backward and release them after, unless the module is used again within
//!   `stage3_max_reuse_distance` parameters; under full recompute the recomputed forward
//!   gathers a layer again, and its backward gathers again what the rule released
//!   ([`backward_regather_share`]);
//! - its releases of 2021 before v0.5.5 gathered and reduce-scattered each parameter through
//!   PyTorch 1.8's list-form collectives, at a rate per GPU that DeepSpeed's own measurement
//!   puts far below the link's ([`gather_path_2021_bytes_per_s`]).
//!
//! Written here: no crate models a framework's collective path.

/// DeepSpeed's default `stage3_max_reuse_distance`, parameters: "Do not release a parameter
/// if it will be reused within this threshold of parameters" (deepspeed.ai docs/config-json,
/// 1e9 from v0.3.13 to today; `deepspeed/runtime/zero/stage3.py` v0.3.13 `_keep_for_later`).
pub const MAX_REUSE_DISTANCE_PARAMS: f64 = 1e9;

/// Share of a layer's parameters that backward gathers again after the layer's recomputed
/// forward, `weights` being the layer's modules' parameter counts on one rank in forward order.
///
/// DeepSpeed v0.3.13 `stage3.py`: `release_sub_module` keeps a module's parameters when
/// `get_reuse_distance_in_numel` (the parameters of the modules the trace runs between this
/// use and the next) is under `max_reuse`. After module `j`'s recomputed forward, the trace
/// runs every later module's recomputed forward, then their backward, then `j`'s backward:
/// a distance of `2 · Σ_{i>j} w_i`. The last module is always kept.
pub fn backward_regather_share(weights: &[f64], max_reuse: f64) -> f64 {
    let total: f64 = weights.iter().sum();
    if total <= 0.0 {
        return 0.0;
    }
    let mut later = 0.0;
    let mut regathered = 0.0;
    for &w in weights.iter().rev() {
        if 2.0 * later >= max_reuse {
            regathered += w;
        }
        later += w;
    }
    regathered / total
}

/// DeepSpeed's measurement of its ZeRO-3 forward (deepspeedai/DeepSpeed#1174, 2021-06-19:
/// DeepSpeed 0.3.16, PyTorch 1.8.0, one p4d.24xlarge of 8 × A100 over NVLink, 600 GB/s per
/// GPU): a BERT of 5.1e9 parameters ran its forward in about 480 ms under ZeRO-3 against
/// about 60 ms under ZeRO-2, which gathers nothing. The shapes are #1188's (the fix that
/// followed it, in v0.5.5): 64 layers, hidden 2560, intermediate 10240, vocabulary 32003,
/// 512 positions.
struct Issue1174;

impl Issue1174 {
    const FORWARD_ZERO3_S: f64 = 0.480;
    const FORWARD_ZERO2_S: f64 = 0.060;
    const GPUS: f64 = 8.0;
    const LAYERS: f64 = 64.0;
    const HIDDEN: f64 = 2560.0;
    const INTERMEDIATE: f64 = 10240.0;
    const VOCAB: f64 = 32003.0;
    const POSITIONS: f64 = 512.0;

    /// Parameters the forward gathers: every weight matrix and the word and position
    /// embeddings; biases and norms (2,560–10,240 elements) are under the persistence
    /// threshold (`stage3_param_persistence_threshold`, 1e5) and never move.
    fn gathered_params() -> f64 {
        let h = Self::HIDDEN;
        let per_layer = 4.0 * h * h + 2.0 * h * Self::INTERMEDIATE;
        Self::LAYERS * per_layer + (Self::VOCAB + Self::POSITIONS) * h
    }
}

/// Bytes per second each GPU receives through the ZeRO-3 gather path of DeepSpeed before
/// v0.5.5, from DeepSpeed#1174 (above): the fp16 parameters' `(n − 1)/n` share over the forward's
/// gather time. That time is solved from the same one-unit-ahead overlap the step prices
/// ([`crate::time::cost::unit_exposed_s`], one layer per unit): a forward of `G + t/U` with
/// the gather `G` longer than the compute `t`. On NVLink the link is not what bounds it
/// (8.95 GB at NVLink's rate is under 40 ms): PR #1188 names the path, a
/// `torch.cuda.synchronize()` before every parameter's `all_gather`, a zero-filled buffer
/// per call and a copy after it, and PyTorch 1.8's list-form collectives flatten their
/// lists through another buffer. The same path reduce-scatters each gradient
/// (`partition_parameters.py` `_reduce_scatter_gradient`, list-form `reduce_scatter`).
pub fn gather_path_2021_bytes_per_s() -> f64 {
    let n = Issue1174::GPUS;
    let received_bytes = Issue1174::gathered_params() * 2.0 * (n - 1.0) / n;
    let gather_s = Issue1174::FORWARD_ZERO3_S - Issue1174::FORWARD_ZERO2_S / Issue1174::LAYERS;
    received_bytes / gather_s
}
