//! Model presets, from each model's published `config.json`, and default scenarios.

use crate::model::{FfnKind, ModelSpec, NormKind};

/// A model preset: stable id and its shapes.
pub struct ModelPreset {
    /// Stable id used in links and the CLI ("llama-3.1-70b").
    pub id: &'static str,
    /// The shapes.
    pub spec: ModelSpec,
}

/// A Llama-family dense model (SwiGLU, RMSNorm, RoPE, GQA, no biases, no dropout).
fn llama(
    name: &str,
    layers: u32,
    hidden: u32,
    heads: u32,
    kv_heads: u32,
    ffn: u32,
    vocab: u32,
) -> ModelSpec {
    ModelSpec {
        name: name.to_string(),
        layers,
        hidden,
        heads,
        kv_heads,
        head_dim: hidden / heads,
        ffn,
        ffn_kind: FfnKind::SwiGlu,
        vocab,
        tied_embeddings: false,
        norm: NormKind::RmsNorm,
        dropout: false,
        qkv_bias: false,
        linear_bias: false,
        learned_positions: 0,
        moe: None,
        mla: None,
        nominal_params: None,
    }
}

/// Every model preset.
pub fn model_presets() -> Vec<ModelPreset> {
    vec![
        // meta-llama/Llama-3.1-70B config.json
        ModelPreset {
            id: "llama-3.1-70b",
            spec: llama("Llama 3.1 70B", 80, 8192, 64, 8, 28672, 128_256),
        },
        // Brown et al. 2020, Table 2.1: 96 layers, d_model 12288, 96 heads, 2048 context.
        ModelPreset {
            id: "gpt3-175b",
            spec: ModelSpec {
                name: "GPT-3 175B".to_string(),
                layers: 96,
                hidden: 12288,
                heads: 96,
                kv_heads: 96,
                head_dim: 128,
                ffn: 4 * 12288,
                ffn_kind: FfnKind::GeluMlp,
                vocab: 50257,
                tied_embeddings: true,
                norm: NormKind::LayerNorm,
                dropout: true,
                qkv_bias: false,
                linear_bias: true,
                learned_positions: 2048,
                moe: None,
                mla: None,
                nominal_params: None,
            },
        },
    ]
}

/// The preset with this id.
pub fn model_preset(id: &str) -> Option<ModelSpec> {
    model_presets()
        .into_iter()
        .find(|p| p.id == id)
        .map(|p| p.spec)
}
