//! Which part of the model a checkpoint tensor belongs to, from its name alone.
//!
//! Names follow the `transformers` modules of the supported architectures (`model.layers.N.
//! self_attn.q_proj.weight`, `mlp.experts.E.gate_proj`, Mixtral's `block_sparse_moe`, Llama 4's
//! `feed_forward`, DeepSeek-V3's MTP layer `model.layers.61.{enorm, hnorm, eh_proj,
//! shared_head}` and gpt-oss's `mlp.experts.gate_up_proj_blocks`), under any prefix a
//! multimodal wrapper adds (`language_model.`, `model.language_model.`).

/// A class of tensors, as the page and `meshplan eval --hf` list them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum TensorClass {
    /// Token embedding.
    Embedding,
    /// Output projection (LM head); absent when tied to the embedding.
    Output,
    /// Attention projections, their biases and sinks.
    Attention,
    /// Dense FFN.
    DenseMlp,
    /// Shared experts (and Qwen2-MoE's shared-expert gate).
    SharedExperts,
    /// Routed experts.
    RoutedExperts,
    /// Router weights and biases.
    Router,
    /// Norms.
    Norms,
    /// Multi-token-prediction modules (layers past `num_hidden_layers`).
    Mtp,
    /// An MTP module's own copy of the embedding or LM head (DeepSeek-V3 stores them; training
    /// shares the main model's: DeepSeek-V3 report §2.2), not counted in the model.
    MtpSharedCopy,
    /// A vision or audio encoder and its projector, not planned.
    Encoder,
    /// Anything else in the language model.
    Other,
}

impl TensorClass {
    /// A short label.
    pub fn label(self) -> &'static str {
        match self {
            TensorClass::Embedding => "embedding",
            TensorClass::Output => "LM head",
            TensorClass::Attention => "attention",
            TensorClass::DenseMlp => "dense FFN",
            TensorClass::SharedExperts => "shared experts",
            TensorClass::RoutedExperts => "routed experts",
            TensorClass::Router => "router",
            TensorClass::Norms => "norms",
            TensorClass::Mtp => "MTP modules",
            TensorClass::MtpSharedCopy => "MTP copies of embedding and head",
            TensorClass::Encoder => "vision/audio encoder",
            TensorClass::Other => "other",
        }
    }

    /// Counted in the language model the planner prices.
    pub fn in_model(self) -> bool {
        !matches!(self, TensorClass::MtpSharedCopy | TensorClass::Encoder)
    }
}

/// The decoder-layer index in a name (`…layers.N.…`).
pub fn layer_index(name: &str) -> Option<u64> {
    let mut segments = name.split('.');
    while let Some(s) = segments.next() {
        if s == "layers" || s == "h" || s == "blocks" {
            if let Some(n) = segments.next().and_then(|n| n.parse::<u64>().ok()) {
                return Some(n);
            }
        }
    }
    None
}

/// The class of tensor `name` in a model of `layers` decoder layers.
pub fn classify(name: &str, layers: u64) -> TensorClass {
    let has = |s: &str| name.contains(s);
    let segment = |s: &str| name.split('.').any(|seg| seg == s);
    if has("vision_tower")
        || has("vision_model")
        || has("multi_modal_projector")
        || has("audio_tower")
        || name.starts_with("visual.")
    {
        return TensorClass::Encoder;
    }
    if layer_index(name).is_some_and(|i| i >= layers) {
        return if has("embed_tokens") || has("shared_head.head") {
            TensorClass::MtpSharedCopy
        } else {
            TensorClass::Mtp
        };
    }
    if has("embed_tokens") || segment("wte") || has("tok_embeddings") {
        TensorClass::Embedding
    } else if has("lm_head") || segment("output") {
        TensorClass::Output
    } else if has("shared_expert") {
        TensorClass::SharedExperts
    } else if segment("gate") || segment("router") || has("e_score_correction_bias") {
        TensorClass::Router
    } else if has(".experts.") {
        TensorClass::RoutedExperts
    } else if name.split('.').any(|seg| seg.contains("norm")) {
        TensorClass::Norms
    } else if has("self_attn") || has("attention") || has(".attn.") {
        TensorClass::Attention
    } else if has(".mlp.") || has("feed_forward") || has(".ffn.") {
        TensorClass::DenseMlp
    } else {
        TensorClass::Other
    }
}

/// Quantization side tensors: scales, zero points, group indices and bitsandbytes' state
/// (DeepSeek-V3 `weight_scale_inv`; ModelOpt `weight_scale`, `weight_scale_2`, `input_scale`;
/// gpt-oss `*_scales`; AWQ/GPTQ `scales`, `qzeros`, `g_idx`; compressed-tensors
/// `weight_global_scale`, `weight_zero_point`; bitsandbytes `absmax`, `quant_map`,
/// `quant_state.*`; KV-cache `k_scale`, `v_scale`). Their bytes count; they are no parameters.
pub fn is_quant_side_tensor(name: &str) -> bool {
    let last = name.rsplit('.').next().unwrap_or(name);
    matches!(
        last,
        "weight_scale_inv"
            | "weight_scale"
            | "weight_scale_2"
            | "input_scale"
            | "scales"
            | "qzeros"
            | "g_idx"
            | "weight_g_idx"
            | "weight_zero_point"
            | "weight_global_scale"
            | "input_global_scale"
            | "k_scale"
            | "v_scale"
            | "q_scale"
            | "absmax"
            | "quant_map"
            | "nested_absmax"
            | "nested_quant_map"
    ) || last.ends_with("_scales")
        || name.contains("quant_state")
}
