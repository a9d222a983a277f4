//! Model presets, from each model's published `config.json`, and the default
//! scenarios the app, the CLI and the tests start from.

use std::fmt;

use crate::input::hardware::{gpu_presets, Cluster, GpuSpec};
use crate::input::layout::{Layout, Recompute, ZeroStage};
use crate::input::model::{AttentionWindow, FfnKind, MlaSpec, ModelSpec, MoeSpec, NormKind};
use crate::input::precision::{Precision, PrecisionRecipe};
use crate::input::scenario::{
    ActivationOptions, ModelChoice, Overheads, Scenario, Serving, Training, SCENARIO_VERSION,
};

/// A model preset: stable id and its shapes.
pub struct ModelPreset {
    /// Stable id used in links and the CLI ("llama-3.1-70b").
    pub id: &'static str,
    /// The shapes.
    pub spec: ModelSpec,
}

/// A dense decoder with every size 0 and the Llama family's kinds (SwiGLU, RMSNorm, RoPE, no
/// biases, no dropout, untied, full attention, no experts): the template the builders fill.
pub(crate) fn dense_template(name: &str) -> ModelSpec {
    ModelSpec {
        name: name.to_string(),
        layers: 0,
        hidden: 0,
        heads: 0,
        kv_heads: 0,
        head_dim: 0,
        ffn: 0,
        ffn_kind: FfnKind::SwiGlu,
        vocab: 0,
        tied_embeddings: false,
        norm: NormKind::RmsNorm,
        dropout: false,
        qkv_bias: false,
        linear_bias: false,
        learned_positions: 0,
        moe: None,
        mla: None,
        attention_window: None,
        mtp_layers: 0,
        nominal_params: None,
    }
}

/// A Llama-family dense model (SwiGLU, RMSNorm, RoPE, GQA, head dim hidden / heads, no
/// biases, no dropout, untied embeddings).
pub(crate) fn llama(
    name: &str,
    layers: u32,
    hidden: u32,
    heads: u32,
    kv_heads: u32,
    ffn: u32,
    vocab: u32,
) -> ModelSpec {
    ModelSpec {
        layers,
        hidden,
        heads,
        kv_heads,
        head_dim: hidden / heads,
        ffn,
        vocab,
        ..dense_template(name)
    }
}

/// A GPT-style spec: GELU MLP, LayerNorm, biases, dropout, tied embeddings,
/// `positions` learned position rows (GPT-3, Megatron's GPT models); `(layers, hidden, heads)`.
pub(crate) fn gpt_like(
    name: &str,
    (layers, hidden, heads): (u32, u32, u32),
    ffn: u32,
    vocab: u32,
    positions: u32,
) -> ModelSpec {
    ModelSpec {
        layers,
        hidden,
        heads,
        kv_heads: heads,
        head_dim: hidden / heads.max(1),
        ffn,
        ffn_kind: FfnKind::GeluMlp,
        vocab,
        tied_embeddings: true,
        norm: NormKind::LayerNorm,
        dropout: true,
        linear_bias: true,
        learned_positions: positions,
        ..dense_template(name)
    }
}

/// A Mixtral model: Llama/Mistral shapes with every FFN replaced by `experts`
/// SwiGLU experts of width `ffn`, top-2 routing, no shared expert.
fn mixtral(
    name: &str,
    layers: u32,
    hidden: u32,
    heads: u32,
    ffn: u32,
    vocab: u32,
    experts: u32,
) -> ModelSpec {
    let mut spec = llama(name, layers, hidden, heads, 8, ffn, vocab);
    spec.moe = Some(MoeSpec {
        routed_experts: experts,
        experts_per_token: 2,
        shared_experts: 0,
        expert_ffn: ffn,
        dense_layers: 0,
    });
    spec
}

/// A gpt-oss model (openai/gpt-oss-120b and -20b config.json): hidden 2880, 64 query heads
/// of 64, 8 KV heads, top-4 of `experts` SwiGLU experts of width 2880 on every layer, biases
/// on every linear layer, vocab 201088, untied, a 128-token window on even layers.
fn gpt_oss(name: &str, layers: u32, experts: u32) -> ModelSpec {
    ModelSpec {
        head_dim: 64,
        linear_bias: true,
        moe: Some(MoeSpec {
            routed_experts: experts,
            experts_per_token: 4,
            shared_experts: 0,
            expert_ffn: 2880,
            dense_layers: 0,
        }),
        attention_window: Some(AttentionWindow {
            window_tokens: 128,
            full_every: 2,
        }),
        ..llama(name, layers, 2880, 64, 8, 2880, 201_088)
    }
}

/// DeepSeek-V3's shapes (deepseek-ai/DeepSeek-V3 config.json): 61 layers (first_k_dense_replace 3,
/// intermediate 18432), hidden 7168, 128 heads, MLA q_lora 1536 / kv_lora 512 / rope 64 / nope 128 /
/// v 128, 256 routed + 1 shared experts of width 2048, top-8, vocab 129280, untied.
fn deepseek_v3(name: &str) -> ModelSpec {
    ModelSpec {
        layers: 61,
        hidden: 7168,
        heads: 128,
        kv_heads: 128,
        // Query/key head dim (nope 128 + rope 64): what attention scores are computed over.
        head_dim: 192,
        ffn: 18432,
        vocab: 129_280,
        moe: Some(MoeSpec {
            routed_experts: 256,
            experts_per_token: 8,
            shared_experts: 1,
            expert_ffn: 2048,
            dense_layers: 3,
        }),
        mla: Some(MlaSpec {
            q_lora_rank: 1536,
            kv_lora_rank: 512,
            qk_rope_head_dim: 64,
            qk_nope_head_dim: 128,
            v_head_dim: 128,
        }),
        ..dense_template(name)
    }
}

/// A Qwen3 dense model (Qwen/Qwen3-* config.json): Llama-style attention with head_dim 128 whatever
/// the width, no biases (attention_bias false), SwiGLU, vocab 151936. Qwen3Attention's q_norm and
/// k_norm (two RMSNorms of head_dim, 256 parameters a layer) are not counted (< 0.0002% of Ψ).
fn qwen3(name: &str, layers: u32, hidden: u32, heads: u32, ffn: u32, tied: bool) -> ModelSpec {
    ModelSpec {
        head_dim: 128,
        tied_embeddings: tied,
        ..llama(name, layers, hidden, heads, 8, ffn, 151_936)
    }
}

/// A Qwen3-MoE model (Qwen3MoeForCausalLM): Qwen3 attention with 4 KV heads, every layer MoE
/// (decoder_sparse_step 1, mlp_only_layers []), 128 experts of `expert_ffn`, top-8, no shared
/// expert, untied; q_norm / k_norm not counted as in [`qwen3`].
fn qwen3_moe(
    name: &str,
    layers: u32,
    hidden: u32,
    heads: u32,
    ffn: u32,
    expert_ffn: u32,
) -> ModelSpec {
    ModelSpec {
        head_dim: 128,
        moe: Some(MoeSpec {
            routed_experts: 128,
            experts_per_token: 8,
            shared_experts: 0,
            expert_ffn,
            dense_layers: 0,
        }),
        ..llama(name, layers, hidden, heads, 4, ffn, 151_936)
    }
}

/// A Gemma 3 model's text decoder (google/gemma-3-*: Gemma3TextConfig): gated tanh-GeLU FFN (gate,
/// up, down: SwiGLU's three matrices), tied embeddings, attention_bias false, five local layers of
/// `window` tokens per global one (sliding_window_pattern 6: `is_sliding = (i + 1) % 6 != 0`).
/// Not counted: q_norm / k_norm and the post-attention / post-FFN RMSNorms (2·head_dim + 2h a
/// layer, < 0.003% of Ψ), and on 4B-27B the SigLIP vision tower (Gemma 3 report Table 1: 417M).
fn gemma3(
    name: &str,
    shape: (u32, u32, u32, u32, u32),
    ffn: u32,
    vocab: u32,
    window: u32,
) -> ModelSpec {
    let (layers, hidden, heads, kv_heads, head_dim) = shape;
    ModelSpec {
        head_dim,
        tied_embeddings: true,
        attention_window: Some(AttentionWindow {
            window_tokens: window,
            full_every: 6,
        }),
        ..llama(name, layers, hidden, heads, kv_heads, ffn, vocab)
    }
}

/// Every model preset, in the order listings show them.
pub fn model_presets() -> Vec<ModelPreset> {
    let mut presets = presets_listed_first();
    presets.extend(presets_listed_after());
    presets
}

/// The first half of the preset list: Llama 3.1, Mixtral, DeepSeek-V3, Mistral, Gemma 2,
/// gpt-oss, Qwen2.5 and GPT-3.
fn presets_listed_first() -> Vec<ModelPreset> {
    vec![
        // meta-llama/Llama-3.1-8B config.json: 32 layers, hidden 4096, 32 heads, 8 KV, ffn 14336, vocab 128256.
        ModelPreset {
            id: "llama-3.1-8b",
            spec: llama("Llama 3.1 8B", 32, 4096, 32, 8, 14336, 128_256),
        },
        // meta-llama/Llama-3.1-70B config.json: 80 layers, hidden 8192, 64 heads, 8 KV, ffn 28672, vocab 128256.
        ModelPreset {
            id: "llama-3.1-70b",
            spec: llama("Llama 3.1 70B", 80, 8192, 64, 8, 28672, 128_256),
        },
        // meta-llama/Llama-3.1-405B config.json: 126 layers, hidden 16384, 128 heads, 8 KV, ffn 53248, vocab 128256.
        ModelPreset {
            id: "llama-3.1-405b",
            spec: llama("Llama 3.1 405B", 126, 16384, 128, 8, 53248, 128_256),
        },
        // mistralai/Mixtral-8x7B-v0.1 config.json: 32 layers, hidden 4096, 32 heads, 8 KV, ffn 14336, vocab 32000, 8 experts top-2.
        ModelPreset {
            id: "mixtral-8x7b",
            spec: mixtral("Mixtral 8x7B", 32, 4096, 32, 14336, 32000, 8),
        },
        // mistralai/Mixtral-8x22B-v0.1 config.json: 56 layers, hidden 6144, 48 heads, 8 KV, ffn 16384, vocab 32000, 8 experts top-2.
        ModelPreset {
            id: "mixtral-8x22b",
            spec: mixtral("Mixtral 8x22B", 56, 6144, 48, 16384, 32000, 8),
        },
        // deepseek-ai/DeepSeek-V3 config.json (shapes in `deepseek_v3`).
        // The one MTP module (num_nextn_predict_layers = 1, ~14B with its copies of the embedding and
        // head) is not part of the 671B main model, nor loaded by serving engines: the preset leaves it
        // out (mtp_layers 0); a training scenario adds it with `mtp_layers` (link `mtp`).
        ModelPreset {
            id: "deepseek-v3",
            spec: deepseek_v3("DeepSeek-V3"),
        },
        // mistralai/Mistral-7B-v0.1 config.json: 32 layers, hidden 4096, 32 heads, 8 KV, ffn 14336,
        // vocab 32000, untied, "sliding_window": 4096 on every layer (Jiang et al. 2023 §2: rolling buffer cache).
        ModelPreset {
            id: "mistral-7b-v0.1",
            spec: ModelSpec {
                attention_window: Some(AttentionWindow {
                    window_tokens: 4096,
                    full_every: 0,
                }),
                ..llama("Mistral 7B v0.1", 32, 4096, 32, 8, 14336, 32000)
            },
        },
        // google/gemma-2-9b config.json: 42 layers, hidden 3584, 16 heads, 8 KV, head_dim 256,
        // intermediate 14336 (gated GeLU: gate, up, down, counted as SwiGLU's three matrices),
        // vocab 256000, tied embeddings, "sliding_window": 4096; transformers Gemma2DecoderLayer:
        // `is_sliding = not bool(layer_idx % 2)`, so even layers are local and odd ones global.
        // Gemma 2 also has post-attention and post-FFN RMSNorms (2h more per layer, 0.003% of Ψ), not counted.
        ModelPreset {
            id: "gemma-2-9b",
            spec: ModelSpec {
                head_dim: 256,
                tied_embeddings: true,
                attention_window: Some(AttentionWindow {
                    window_tokens: 4096,
                    full_every: 2,
                }),
                ..llama("Gemma 2 9B", 42, 3584, 16, 8, 14336, 256_000)
            },
        },
        // openai/gpt-oss-120b config.json: 36 layers, hidden 2880, 64 heads, 8 KV, head_dim 64,
        // 128 local experts of width 2880 (intermediate_size), top-4 (num_experts_per_tok), SwiGLU
        // experts with biases, attention_bias true, vocab 201088, untied; "sliding_window": 128 with
        // layer_types sliding on even layers, full on odd ones (full when (i + 1) % 2 == 0).
        // Attention sinks (one learned logit per head, 64 per layer) and the router's bias are
        // not counted (0.00002% of Ψ). OpenAI's model card (gpt-oss-120b & gpt-oss-20b, Aug 2025,
        // Table 1): 116.83B parameters, 5.13B active. The checkpoint's MXFP4 expert weights
        // (4.25 bits a parameter) are a serving dtype: `serve_w = int4` gives 4 bits to every weight.
        ModelPreset {
            id: "gpt-oss-120b",
            spec: gpt_oss("gpt-oss-120b", 36, 128),
        },
        // openai/gpt-oss-20b config.json: as gpt-oss-120b with 24 layers and 32 local experts;
        // the model card: 20.91B parameters, 3.61B active.
        ModelPreset {
            id: "gpt-oss-20b",
            spec: gpt_oss("gpt-oss-20b", 24, 32),
        },
        // Qwen/Qwen2.5-72B config.json: 80 layers, hidden 8192, 64 heads, 8 KV, ffn 29568, vocab 152064,
        // untied, biases on Q/K/V (Qwen2 architecture).
        ModelPreset {
            id: "qwen2.5-72b",
            spec: ModelSpec {
                qkv_bias: true,
                ..llama("Qwen2.5 72B", 80, 8192, 64, 8, 29568, 152_064)
            },
        },
        // Brown et al. 2020, Table 2.1: 96 layers, d_model 12288, 96 heads, 2048 context.
        ModelPreset {
            id: "gpt3-175b",
            spec: gpt_like("GPT-3 175B", (96, 12288, 96), 4 * 12288, 50257, 2048),
        },
    ]
}

/// The second half of the preset list: Llama 3.2 and 4, Qwen3, DeepSeek-R1, Gemma 3 and Kimi K2.
fn presets_listed_after() -> Vec<ModelPreset> {
    vec![
        // meta-llama/Llama-3.2-1B config.json: 16 layers, hidden 2048, 32 heads, 8 KV, head_dim 64,
        // intermediate 8192, vocab 128256, tie_word_embeddings true.
        ModelPreset {
            id: "llama-3.2-1b",
            spec: ModelSpec {
                tied_embeddings: true,
                ..llama("Llama 3.2 1B", 16, 2048, 32, 8, 8192, 128_256)
            },
        },
        // meta-llama/Llama-3.2-3B config.json: 28 layers, hidden 3072, 24 heads, 8 KV, head_dim 128,
        // intermediate 8192, vocab 128256, tie_word_embeddings true.
        ModelPreset {
            id: "llama-3.2-3b",
            spec: ModelSpec {
                tied_embeddings: true,
                ..llama("Llama 3.2 3B", 28, 3072, 24, 8, 8192, 128_256)
            },
        },
        // meta-llama/Llama-4-Scout-17B-16E config.json, text_config: 48 layers, hidden 5120, 40 heads,
        // 8 KV, head_dim 128, every layer MoE (interleave_moe_layer_step 1): 16 routed experts top-1
        // (num_local_experts, num_experts_per_tok) plus one shared expert, all of width 8192
        // (intermediate_size; intermediate_size_mlp 16384 is the dense FFN no layer uses), vocab
        // 202048, untied; Llama4TextL2Norm on q/k has no weights. The text decoder only: the vision
        // encoder is not modelled. Chunked local attention (attention_chunk_size 8192 on three layers
        // of four) is not modelled either: every layer is priced as full attention, an upper bound on
        // KV cache and attention time beyond 8,192 tokens.
        ModelPreset {
            id: "llama-4-scout",
            spec: ModelSpec {
                moe: Some(MoeSpec {
                    routed_experts: 16,
                    experts_per_token: 1,
                    shared_experts: 1,
                    expert_ffn: 8192,
                    dense_layers: 0,
                }),
                ..llama("Llama 4 Scout", 48, 5120, 40, 8, 16384, 202_048)
            },
        },
        // Qwen/Qwen3-0.6B config.json: 28 layers, hidden 1024, 16 heads, 8 KV, intermediate 3072, tied.
        ModelPreset {
            id: "qwen3-0.6b",
            spec: qwen3("Qwen3 0.6B", 28, 1024, 16, 3072, true),
        },
        // Qwen/Qwen3-1.7B config.json: 28 layers, hidden 2048, 16 heads, 8 KV, intermediate 6144, tied.
        ModelPreset {
            id: "qwen3-1.7b",
            spec: qwen3("Qwen3 1.7B", 28, 2048, 16, 6144, true),
        },
        // Qwen/Qwen3-4B config.json: 36 layers, hidden 2560, 32 heads, 8 KV, intermediate 9728, tied.
        ModelPreset {
            id: "qwen3-4b",
            spec: qwen3("Qwen3 4B", 36, 2560, 32, 9728, true),
        },
        // Qwen/Qwen3-8B config.json: 36 layers, hidden 4096, 32 heads, 8 KV, intermediate 12288, untied.
        ModelPreset {
            id: "qwen3-8b",
            spec: qwen3("Qwen3 8B", 36, 4096, 32, 12288, false),
        },
        // Qwen/Qwen3-14B config.json: 40 layers, hidden 5120, 40 heads, 8 KV, intermediate 17408, untied.
        ModelPreset {
            id: "qwen3-14b",
            spec: qwen3("Qwen3 14B", 40, 5120, 40, 17408, false),
        },
        // Qwen/Qwen3-32B config.json: 64 layers, hidden 5120, 64 heads, 8 KV, intermediate 25600, untied.
        ModelPreset {
            id: "qwen3-32b",
            spec: qwen3("Qwen3 32B", 64, 5120, 64, 25600, false),
        },
        // Qwen/Qwen3-30B-A3B config.json: 48 layers, hidden 2048, 32 heads, 4 KV, intermediate 6144,
        // 128 experts top-8 of moe_intermediate_size 768, vocab 151936, untied.
        ModelPreset {
            id: "qwen3-30b-a3b",
            spec: qwen3_moe("Qwen3 30B-A3B", 48, 2048, 32, 6144, 768),
        },
        // Qwen/Qwen3-235B-A22B config.json: 94 layers, hidden 4096, 64 heads, 4 KV, intermediate
        // 12288, 128 experts top-8 of moe_intermediate_size 1536, vocab 151936, untied.
        ModelPreset {
            id: "qwen3-235b-a22b",
            spec: qwen3_moe("Qwen3 235B-A22B", 94, 4096, 64, 12288, 1536),
        },
        // deepseek-ai/DeepSeek-R1 config.json: DeepseekV3ForCausalLM with DeepSeek-V3's every shape
        // (R1 is V3-Base post-trained); its MTP module is left out as V3's is.
        ModelPreset {
            id: "deepseek-r1",
            spec: deepseek_v3("DeepSeek-R1"),
        },
        // google/gemma-3-1b-pt config.json: 26 layers, hidden 1152, 4 heads, 1 KV, head_dim 256,
        // intermediate 6912, vocab 262144, sliding_window 512.
        ModelPreset {
            id: "gemma-3-1b",
            spec: gemma3("Gemma 3 1B", (26, 1152, 4, 1, 256), 6912, 262_144, 512),
        },
        // google/gemma-3-4b-pt config.json, text_config: 34 layers, hidden 2560, 8 heads, 4 KV,
        // head_dim 256, intermediate 10240, vocab 262208, sliding_window 1024.
        ModelPreset {
            id: "gemma-3-4b",
            spec: gemma3("Gemma 3 4B", (34, 2560, 8, 4, 256), 10240, 262_208, 1024),
        },
        // google/gemma-3-12b-pt config.json, text_config: 48 layers, hidden 3840, 16 heads, 8 KV,
        // head_dim 256, intermediate 15360, vocab 262208, sliding_window 1024.
        ModelPreset {
            id: "gemma-3-12b",
            spec: gemma3("Gemma 3 12B", (48, 3840, 16, 8, 256), 15360, 262_208, 1024),
        },
        // google/gemma-3-27b-pt config.json, text_config: 62 layers, hidden 5376, 32 heads, 16 KV,
        // head_dim 128, intermediate 21504, vocab 262208, sliding_window 1024.
        ModelPreset {
            id: "gemma-3-27b",
            spec: gemma3("Gemma 3 27B", (62, 5376, 32, 16, 128), 21504, 262_208, 1024),
        },
        // moonshotai/Kimi-K2-Instruct config.json (DeepseekV3ForCausalLM): DeepSeek-V3's MLA and
        // expert shapes with 64 heads (num_attention_heads, num_key_value_heads), 384 routed experts
        // (n_routed_experts) + 1 shared, top-8, first_k_dense_replace 1, vocab 163840, untied, no MTP
        // module (num_nextn_predict_layers 0).
        ModelPreset {
            id: "kimi-k2",
            spec: {
                let mut k2 = deepseek_v3("Kimi K2");
                k2.heads = 64;
                k2.kv_heads = 64;
                k2.vocab = 163_840;
                k2.moe = Some(MoeSpec {
                    routed_experts: 384,
                    experts_per_token: 8,
                    shared_experts: 1,
                    expert_ffn: 2048,
                    dense_layers: 1,
                });
                k2
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

/// Why a scenario could not be resolved.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ScenarioError {
    /// `ModelChoice::Preset` names no preset.
    UnknownModelPreset(String),
}

impl fmt::Display for ScenarioError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ScenarioError::UnknownModelPreset(id) => {
                let known: Vec<&str> = model_presets().iter().map(|p| p.id).collect();
                write!(
                    f,
                    "model: unknown preset '{id}' (known: {})",
                    known.join(", ")
                )
            }
        }
    }
}

impl std::error::Error for ScenarioError {}

impl Scenario {
    /// The model's shapes: the preset looked up by id, or the custom shapes.
    pub fn model_spec(&self) -> Result<ModelSpec, ScenarioError> {
        match &self.model {
            ModelChoice::Preset(id) => {
                model_preset(id).ok_or_else(|| ScenarioError::UnknownModelPreset(id.clone()))
            }
            ModelChoice::Custom(spec) => Ok(spec.clone()),
        }
    }
}

/// The GPU the default scenarios use.
pub const DEFAULT_GPU_ID: &str = "h100-sxm";

/// The H100 SXM preset; every preset id used here is in `gpu_presets()`,
/// which a test checks, so the fallback is never taken.
fn h100() -> GpuSpec {
    let presets = gpu_presets();
    presets
        .iter()
        .find(|g| g.id == DEFAULT_GPU_ID)
        .or(presets.first())
        .cloned()
        .unwrap_or_else(|| GpuSpec {
            id: DEFAULT_GPU_ID.to_string(),
            name: "H100 SXM 80 GB".to_string(),
            memory_bytes: 81_559.0 * crate::input::hardware::MIB,
            datasheet_memory_bytes: 80e9,
            hbm_bytes_per_s: 3.35e12,
            bf16_flops_per_s: 989e12,
            fp8_flops_per_s: 1979e12,
            intra_node_bytes_per_s: 450e9,
            inter_node_bytes_per_s: 50e9,
            gpus_per_node: 8,
        })
}

/// What the app opens with: Llama 3.1 70B, BF16 mixed-precision Adam (16 B/param),
/// 8 nodes × 8 H100 SXM, 4096-token sequences, 512 sequences per step (2M tokens),
/// TP 8 inside each node with sequence parallelism, DP 8 across nodes, ZeRO-1,
/// selective recompute. Per GPU: weights + grads 4 × 70.6e9 / 8 ≈ 35 GB, optimizer
/// 12 × 70.6e9 / 64 ≈ 13 GB, activations ≈ 34·s·h/8 × 80 layers ≈ 11 GB: fits 80 GB.
pub fn default_scenario() -> Scenario {
    Scenario {
        version: SCENARIO_VERSION,
        model: ModelChoice::Preset("llama-3.1-70b".to_string()),
        precision: Precision::from_recipe(PrecisionRecipe::MixedAdam),
        cluster: Cluster::of(h100(), 8),
        training: Training {
            seq_len: 4096,
            global_batch: 512,
            finetune: Default::default(),
            offload: Default::default(),
            packing: false,
        },
        layout: Layout {
            dp: 8,
            tp: 8,
            pp: 1,
            cp: 1,
            ..megatron_zero1_layout()
        },
        activations: ActivationOptions::default(),
        // The article's scenario: its runtime allowance (Overheads::article), so its figures hold.
        overheads: Overheads::article(),
        serving: Serving::default(),
        calibration: None,
        bill: Default::default(),
    }
}

/// One GPU's layout as the article's scenarios run it: 1F1B, ZeRO-1, sequence parallelism and
/// selective recompute, micro-batch 1, an even stage split.
fn megatron_zero1_layout() -> Layout {
    Layout {
        zero: ZeroStage::Zero1,
        recompute: Recompute::Selective,
        sequence_parallel: true,
        ..Layout::default()
    }
}

/// The GPU the fine-tuning preset opens on: a 24 GB workstation card.
pub const FINETUNE_GPU_ID: &str = "rtx-4090";

/// What the page's "Fine-tune" button opens: Llama 3.1 8B, QLoRA (NF4 base) with r = 16,
/// α = 32 adapters on every linear layer (Dettmers et al. 2023 §4: all linear layers are
/// needed to match full fine-tuning), on one GPU ([`FINETUNE_GPU_ID`]), 2,048-token
/// sequences, micro-batch 1 and 16 sequences per step (gradient accumulation 16), full
/// activation recompute (PEFT `prepare_model_for_kbit_training` turns gradient
/// checkpointing on by default: peft/src/peft/utils/other.py `use_gradient_checkpointing=True`),
/// examples packed.
pub fn finetune_scenario() -> Scenario {
    use crate::input::finetune::{FineTune, FineTuneMode, LoraSettings, LoraTargets};
    let gpu = crate::input::hardware::gpu_preset(FINETUNE_GPU_ID).unwrap_or_else(h100);
    let mut cluster = Cluster::of(gpu, 1);
    cluster.gpus_per_node = 1;
    Scenario {
        version: SCENARIO_VERSION,
        model: ModelChoice::Preset("llama-3.1-8b".to_string()),
        precision: Precision::from_recipe(PrecisionRecipe::MixedAdam),
        // QLoRA as people run it: Transformers + PEFT + bitsandbytes under TRL.
        overheads: Overheads {
            framework: crate::input::framework::Framework::HfTransformers,
            ..Overheads::for_gpu(&cluster.gpu.id)
        },
        cluster,
        training: Training {
            seq_len: 2048,
            global_batch: 16,
            finetune: FineTune {
                mode: FineTuneMode::Qlora,
                lora: LoraSettings {
                    rank: 16,
                    alpha: 32,
                    targets: LoraTargets::from_flags([true; 7]),
                },
                virtual_tokens: crate::input::finetune::DEFAULT_VIRTUAL_TOKENS,
            },
            offload: Default::default(),
            packing: true,
        },
        layout: Layout {
            recompute: Recompute::Full,
            ..Layout::default()
        },
        activations: ActivationOptions::default(),
        // One GPU: the serving replica is one GPU too.
        serving: Serving {
            tp: 1,
            ..Serving::default()
        },
        calibration: None,
        bill: Default::default(),
    }
}

/// The article's model-state chart: a 70B model (Llama 3.1 70B shapes, Ψ rounded
/// to 70e9 as the article does) on 64 H100 80 GB (8 nodes × 8), pure data
/// parallelism over all 64 (TP = PP = CP = 1), mixed-precision Adam at 16 B/param,
/// so DDP holds 16 × 70e9 = 1,120 GB per GPU; switching `zero` gives the other bars
/// (ZeRO-1 ≈ 293 GB, ZeRO-2 ≈ 155 GB, ZeRO-3 ≈ 17.5 GB).
pub fn article_70b_scenario() -> Scenario {
    let mut spec = model_preset("llama-3.1-70b")
        .unwrap_or_else(|| llama("Llama 3.1 70B", 80, 8192, 64, 8, 28672, 128_256));
    spec.name = "70B model (article)".to_string();
    spec.nominal_params = Some(70e9);
    let base = default_scenario();
    Scenario {
        model: ModelChoice::Custom(spec),
        layout: Layout {
            dp: 64,
            ..Layout::default()
        },
        ..base
    }
}

/// The article's example mesh: dense Llama 3.1 70B at 32K context on 64 nodes × 8
/// H100 SXM: TP 8 inside each node, PP 4 and CP 4 across nodes, DP 4 for the rest
/// (8 × 4 × 4 × 4 = 512 GPUs), ZeRO-1, sequence parallelism, selective recompute.
/// Global batch 64 sequences (2M tokens) with micro-batch 1 gives 64 / 4 = 16
/// micro-batches per pipeline, the article's m = 16 case (bubble 3/19 ≈ 16% with 1F1B).
pub fn article_mesh_scenario() -> Scenario {
    let base = default_scenario();
    Scenario {
        cluster: Cluster::of(h100(), 64),
        training: Training {
            seq_len: 32_768,
            global_batch: 64,
            finetune: Default::default(),
            offload: Default::default(),
            packing: false,
        },
        layout: Layout {
            dp: 4,
            tp: 8,
            pp: 4,
            cp: 4,
            ..megatron_zero1_layout()
        },
        ..base
    }
}

/// The article's mesh scenario with another model preset, node count (8 H100 each),
/// sequence length and global batch: the scenarios the mesh-search benchmark and its
/// snapshot tests search.
pub fn mesh_scenario(model: &str, nodes: u32, seq_len: u32, global_batch: u32) -> Scenario {
    let mut sc = article_mesh_scenario();
    sc.model = ModelChoice::Preset(model.to_string());
    sc.cluster = Cluster {
        nodes,
        ..sc.cluster
    };
    sc.training.seq_len = seq_len;
    sc.training.global_batch = global_batch;
    sc
}
