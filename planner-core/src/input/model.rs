//! Model shapes and parameter counts computed from them.
//!
//! A [`ModelSpec`] holds every shape the memory, time and communication
//! formulas need. Parameter counts are derived from the shapes, never typed in,
//! so a custom model or an imported `config.json` is counted the same way as a
//! preset.

use serde::{Deserialize, Serialize};

/// Longest display name or id (a model's name, a preset's id).
pub const MAX_NAME_CHARS: usize = crate::base::free_text::MAX_TEXT_CHARS;

/// The feed-forward block of a decoder layer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FfnKind {
    /// GPT-style MLP: `h → f`, GeLU, `f → h` (two matrices).
    GeluMlp,
    /// Gated SwiGLU (Llama): gate and up `h → f`, SiLU·gate, down `f → h` (three matrices).
    SwiGlu,
}

impl FfnKind {
    /// Weight matrices of size `h × f` in one FFN.
    pub fn matrices(self) -> u64 {
        match self {
            FfnKind::GeluMlp => 2,
            FfnKind::SwiGlu => 3,
        }
    }
}

/// Normalisation layer type.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NormKind {
    /// LayerNorm: scale and bias (`2h` parameters).
    LayerNorm,
    /// RMSNorm: scale only (`h` parameters).
    RmsNorm,
}

impl NormKind {
    /// Parameters of one norm over `hidden` features.
    pub fn params(self, hidden: u64) -> u64 {
        match self {
            NormKind::LayerNorm => 2 * hidden,
            NormKind::RmsNorm => hidden,
        }
    }
}

/// Mixture-of-experts shape (Mixtral, DeepSeek, Qwen3-MoE).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MoeSpec {
    /// Routed experts per MoE layer.
    pub routed_experts: u32,
    /// Routed experts each token is sent to (top-k).
    pub experts_per_token: u32,
    /// Shared experts every token passes through (DeepSeek); 0 if none.
    pub shared_experts: u32,
    /// FFN width of one expert (routed and shared).
    pub expert_ffn: u32,
    /// The first `dense_layers` layers use a dense FFN of width `ModelSpec::ffn`.
    pub dense_layers: u32,
}

/// Multi-head latent attention shape (DeepSeek-V2/V3).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MlaSpec {
    /// Rank of the query down-projection; 0 means queries are projected directly.
    pub q_lora_rank: u32,
    /// Rank of the compressed key/value latent (what the KV cache stores).
    pub kv_lora_rank: u32,
    /// Per-head RoPE key dimension (shared across heads, cached beside the latent).
    pub qk_rope_head_dim: u32,
    /// Per-head non-RoPE query/key dimension.
    pub qk_nope_head_dim: u32,
    /// Per-head value dimension.
    pub v_head_dim: u32,
}

/// Sliding-window attention: which layers attend to (and cache) only the last
/// `window_tokens` tokens. Read by [`crate::input::attention_window`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AttentionWindow {
    /// Tokens a windowed layer attends to and keeps in its KV cache (HF `sliding_window`).
    pub window_tokens: u32,
    /// Every `full_every`-th layer (layer `i` with `(i + 1) % full_every == 0`) attends
    /// to the whole context; 0 means every layer is windowed (Mistral 7B v0.1).
    /// Gemma 2 and GPT-OSS alternate (2), Gemma 3 has 5 local layers per global one (6).
    pub full_every: u32,
}

/// Everything the formulas need to know about a decoder-only transformer.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelSpec {
    /// Display name, e.g. "Llama 3.1 70B".
    pub name: String,
    /// Decoder layers.
    pub layers: u32,
    /// Hidden size `h`.
    pub hidden: u32,
    /// Query heads `a`.
    pub heads: u32,
    /// Key/value heads (GQA/MQA); equals `heads` for MHA. Ignored with MLA.
    pub kv_heads: u32,
    /// Per-head dimension (`h / a` for most models, 128 for Llama/Qwen).
    pub head_dim: u32,
    /// Dense FFN width `f`.
    pub ffn: u32,
    /// Dense FFN structure.
    pub ffn_kind: FfnKind,
    /// Vocabulary size `V`.
    pub vocab: u32,
    /// Input embedding and output projection share one matrix.
    pub tied_embeddings: bool,
    /// Normalisation layer type.
    pub norm: NormKind,
    /// Dropout active during training (GPT yes, Llama no).
    pub dropout: bool,
    /// Biases on the Q/K/V projections only (Qwen2).
    pub qkv_bias: bool,
    /// Biases on every linear layer (GPT-2/3 style).
    pub linear_bias: bool,
    /// Learned absolute position embeddings (rows); 0 for RoPE models.
    pub learned_positions: u32,
    /// Mixture-of-experts shape, if any.
    pub moe: Option<MoeSpec>,
    /// Multi-head latent attention shape, if any.
    pub mla: Option<MlaSpec>,
    /// Sliding-window attention layers, if any (files without it read as none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attention_window: Option<AttentionWindow>,
    /// Multi-token-prediction modules trained beside the main model, on the last pipeline
    /// stage (DeepSeek-V3 report §2.2, `num_nextn_predict_layers`; Megatron-Core
    /// `--mtp-num-layers`); 0 for none (files without it read as none).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub mtp_layers: u32,
    /// Nominal parameter count Ψ to use instead of the one computed from shapes
    /// (the article rounds Llama 3.1 70B to 70e9). All per-component counts are
    /// scaled by `Ψ_nominal / Ψ_computed` so shares stay consistent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nominal_params: Option<f64>,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

/// Parameter counts by component, from the shapes (not scaled by `nominal_params`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ParamBreakdown {
    /// Token embedding (and learned positions), held by the first pipeline stage.
    pub embedding: u64,
    /// Output projection (0 when tied), held by the last pipeline stage.
    pub output: u64,
    /// Final norm before the output projection.
    pub final_norm: u64,
    /// Attention parameters of one layer (projections and biases).
    pub attention_per_layer: u64,
    /// Norm parameters of one layer.
    pub norms_per_layer: u64,
    /// FFN parameters of one dense layer.
    pub dense_ffn_per_layer: u64,
    /// Number of dense-FFN layers.
    pub dense_layers: u64,
    /// Number of MoE layers.
    pub moe_layers: u64,
    /// Routed-expert parameters of one MoE layer (all experts).
    pub routed_experts_per_layer: u64,
    /// Shared-expert parameters of one MoE layer.
    pub shared_experts_per_layer: u64,
    /// Router (gate) parameters of one MoE layer.
    pub router_per_layer: u64,
    /// Routed-expert parameters of one MoE layer that one token uses (top-k experts).
    pub active_routed_per_layer: u64,
    /// Multi-token-prediction modules ([`ModelSpec::mtp_layers`]); each is one decoder layer
    /// (an MoE layer when the model has MoE layers, as Megatron's `last_layer_is_moe`) plus
    /// its projection and norms, sharing the embedding and the LM head.
    #[serde(default)]
    pub mtp_modules: u64,
    /// Of one MTP module, the `2h → h` projection `M_k` (Megatron `eh_proj`, split over TP).
    #[serde(default)]
    pub mtp_projection_per_module: u64,
    /// Of one MTP module, its three norms: `enorm`, `hnorm` and the norm before the shared
    /// head (Megatron multi_token_prediction.py `final_layernorm`, HF DeepSeek-V3
    /// `shared_head.norm`); replicated in the TP group.
    #[serde(default)]
    pub mtp_norms_per_module: u64,
}

impl ParamBreakdown {
    /// Parameters in all decoder layers.
    pub fn layers_total(&self) -> u64 {
        let common = self.attention_per_layer + self.norms_per_layer;
        let layers = self.dense_layers + self.moe_layers;
        common * layers
            + self.dense_ffn_per_layer * self.dense_layers
            + (self.routed_experts_per_layer
                + self.shared_experts_per_layer
                + self.router_per_layer)
                * self.moe_layers
    }

    /// Every stored parameter, the MTP modules included.
    pub fn total(&self) -> u64 {
        self.embedding + self.output + self.final_norm + self.layers_total() + self.mtp_total()
    }

    /// Parameters a token touches: the top-k routed experts instead of all of them.
    /// Embedding rows are counted in full, as the published figures do.
    pub fn active(&self) -> u64 {
        self.total()
            - (self.moe_layers + self.mtp_moe_layers())
                * (self.routed_experts_per_layer - self.active_routed_per_layer)
    }

    /// Routed-expert parameters in the whole model, the MTP modules' included (sharded
    /// over EP, not TP).
    pub fn routed_experts_total(&self) -> u64 {
        self.routed_experts_per_layer * (self.moe_layers + self.mtp_moe_layers())
    }

    /// MTP modules whose decoder layer is an MoE layer (all of them in an MoE model).
    pub fn mtp_moe_layers(&self) -> u64 {
        if self.moe_layers > 0 {
            self.mtp_modules
        } else {
            0
        }
    }

    /// Parameters of one MTP module's decoder layer (attention, norms, FFN or experts).
    pub fn mtp_layer_per_module(&self) -> u64 {
        let common = self.attention_per_layer + self.norms_per_layer;
        if self.moe_layers > 0 {
            common
                + self.routed_experts_per_layer
                + self.shared_experts_per_layer
                + self.router_per_layer
        } else {
            common + self.dense_ffn_per_layer
        }
    }

    /// Parameters of every MTP module (the shared embedding and head not counted again).
    pub fn mtp_total(&self) -> u64 {
        self.mtp_modules
            * (self.mtp_layer_per_module()
                + self.mtp_projection_per_module
                + self.mtp_norms_per_module)
    }

    /// Parameters one token touches in every MTP module (top-k routed experts).
    pub fn mtp_active(&self) -> u64 {
        self.mtp_total()
            - self.mtp_moe_layers() * (self.routed_experts_per_layer - self.active_routed_per_layer)
    }
}

impl ModelSpec {
    /// Parameter counts by component, computed from the shapes.
    pub fn param_breakdown(&self) -> ParamBreakdown {
        let h = u64::from(self.hidden);
        let v = u64::from(self.vocab);
        let bias = |n: u64| if self.linear_bias { n } else { 0 };

        let embedding = v * h + u64::from(self.learned_positions) * h;
        let output = if self.tied_embeddings { 0 } else { v * h };
        let final_norm = self.norm.params(h);
        let attention_per_layer = self.attention_params();
        let norms_per_layer = 2 * self.norm.params(h);
        let ffn_params = |width: u64, kind: FfnKind| {
            kind.matrices() * h * width + bias(width * (kind.matrices() - 1) + h)
        };
        let dense_ffn_per_layer = ffn_params(u64::from(self.ffn), self.ffn_kind);

        let layers = u64::from(self.layers);
        let mtp_modules = u64::from(self.mtp_layers);
        // DeepSeek-V3 §2.2: M_k ∈ R^{d × 2d} projects [RMSNorm(h); RMSNorm(Emb)] to d; the
        // head's own norm is the third (Megatron MultiTokenPredictionLayer.final_layernorm).
        let (mtp_projection_per_module, mtp_norms_per_module) = if mtp_modules > 0 {
            (2 * h * h, 3 * self.norm.params(h))
        } else {
            (0, 0)
        };
        let dense = ParamBreakdown {
            embedding,
            output,
            final_norm,
            attention_per_layer,
            norms_per_layer,
            dense_ffn_per_layer,
            dense_layers: layers,
            moe_layers: 0,
            routed_experts_per_layer: 0,
            shared_experts_per_layer: 0,
            router_per_layer: 0,
            active_routed_per_layer: 0,
            mtp_modules,
            mtp_projection_per_module,
            mtp_norms_per_module,
        };
        let Some(moe) = &self.moe else {
            return dense;
        };
        let expert = ffn_params(u64::from(moe.expert_ffn), self.ffn_kind);
        let dense_layers = u64::from(moe.dense_layers.min(self.layers));
        ParamBreakdown {
            dense_layers,
            moe_layers: layers - dense_layers,
            routed_experts_per_layer: expert * u64::from(moe.routed_experts),
            shared_experts_per_layer: expert * u64::from(moe.shared_experts),
            router_per_layer: h * u64::from(moe.routed_experts),
            active_routed_per_layer: expert * u64::from(moe.experts_per_token),
            ..dense
        }
    }

    /// Attention parameters of one layer: Q, K, V and output projections (MHA/GQA),
    /// or the MLA down/up projections and their norms.
    fn attention_params(&self) -> u64 {
        let h = u64::from(self.hidden);
        let a = u64::from(self.heads);
        if let Some(mla) = &self.mla {
            let q_head = u64::from(mla.qk_nope_head_dim + mla.qk_rope_head_dim);
            let norm = |n: u64| self.norm.params(n);
            let q = if mla.q_lora_rank == 0 {
                h * a * q_head
            } else {
                let r = u64::from(mla.q_lora_rank);
                h * r + norm(r) + r * a * q_head
            };
            let kv_rank = u64::from(mla.kv_lora_rank);
            // DeepSeek-V2 §2.1.2: W^DKV and W^KR (h → d_c + d_rope), then W^UK, W^UV.
            let kv_down = h * (kv_rank + u64::from(mla.qk_rope_head_dim)) + norm(kv_rank);
            let kv_up = kv_rank * a * u64::from(mla.qk_nope_head_dim + mla.v_head_dim);
            let out = a * u64::from(mla.v_head_dim) * h;
            return q + kv_down + kv_up + out;
        }
        let d = u64::from(self.head_dim);
        let kv = u64::from(self.kv_heads);
        let q_dim = a * d;
        let kv_dim = kv * d;
        let weights = h * q_dim + 2 * h * kv_dim + q_dim * h;
        let biases = if self.linear_bias {
            q_dim + 2 * kv_dim + h
        } else if self.qkv_bias {
            q_dim + 2 * kv_dim
        } else {
            0
        };
        weights + biases
    }

    /// `Ψ_nominal / Ψ_computed`, or 1 when no nominal count is set.
    pub fn param_scale(&self) -> f64 {
        match self.nominal_params {
            Some(nominal) => {
                let computed = self.param_breakdown().total() as f64;
                if computed > 0.0 {
                    nominal / computed
                } else {
                    1.0
                }
            }
            None => 1.0,
        }
    }

    /// Total parameters Ψ used by the formulas (nominal if set).
    pub fn params(&self) -> f64 {
        self.nominal_params
            .unwrap_or_else(|| self.param_breakdown().total() as f64)
    }

    /// Parameters active per token (nominal scale applied).
    pub fn active_params(&self) -> f64 {
        self.param_breakdown().active() as f64 * self.param_scale()
    }

    /// KV heads stored per layer (MHA/GQA); MLA stores a latent instead.
    pub fn is_mla(&self) -> bool {
        self.mla.is_some()
    }
}
