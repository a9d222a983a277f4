//! Import a Hugging Face `config.json` into a [`ModelSpec`].
//!
//! Supported: `LlamaForCausalLM`, `MistralForCausalLM`, `MixtralForCausalLM`,
//! `Qwen2ForCausalLM`, `Qwen3ForCausalLM`, `Qwen3MoeForCausalLM`,
//! `DeepseekV3ForCausalLM`, `Gemma2ForCausalLM`. Field names and defaults follow the `transformers`
//! configuration classes of those models (`LlamaConfig`, `MixtralConfig`,
//! `Qwen2Config`, `Qwen3Config`, `Qwen3MoeConfig`, `DeepseekV3Config`).
//! Known approximations: Qwen3's per-head q/k RMSNorm (2 × head_dim per layer)
//! and DeepSeek-V3's router bias (`e_score_correction_bias`, one per expert) are
//! not counted; both are under 0.001% of the model.

use std::fmt;

use serde_json::{Map, Value};

use crate::input::model::{AttentionWindow, FfnKind, MlaSpec, ModelSpec, MoeSpec, NormKind};
use crate::resolve::validate::validate_model;

/// Why a `config.json` could not be imported. Every variant names the field.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ImportError {
    /// The text is not JSON (serde_json's message, with line and column).
    NotJson(String),
    /// The JSON is not an object.
    NotAnObject,
    /// A required field is absent.
    MissingField(String),
    /// A field has the wrong type or an impossible value.
    InvalidField {
        /// The `config.json` key.
        field: String,
        /// What was expected.
        expected: String,
        /// What was found (the JSON text, shortened).
        found: String,
    },
    /// `architectures[0]` is not one this importer knows.
    UnsupportedArchitecture(String),
    /// A setting of a supported architecture that the planner cannot model.
    UnsupportedSetting {
        /// The `config.json` key.
        field: String,
        /// Why it cannot be modelled.
        message: String,
    },
}

/// Architectures [`import_hf_config`] accepts.
pub const SUPPORTED_ARCHITECTURES: [&str; 8] = [
    "LlamaForCausalLM",
    "MistralForCausalLM",
    "MixtralForCausalLM",
    "Qwen2ForCausalLM",
    "Qwen3ForCausalLM",
    "Qwen3MoeForCausalLM",
    "DeepseekV3ForCausalLM",
    "Gemma2ForCausalLM",
];

impl fmt::Display for ImportError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ImportError::NotJson(e) => write!(f, "config.json is not valid JSON: {e}"),
            ImportError::NotAnObject => write!(f, "config.json must be a JSON object"),
            ImportError::MissingField(field) => {
                write!(f, "config.json: required field `{field}` is missing")
            }
            ImportError::InvalidField {
                field,
                expected,
                found,
            } => write!(
                f,
                "config.json: field `{field}` should be {expected}, found {found}"
            ),
            ImportError::UnsupportedArchitecture(arch) => write!(
                f,
                "config.json: architecture `{arch}` is not supported (supported: {})",
                SUPPORTED_ARCHITECTURES.join(", ")
            ),
            ImportError::UnsupportedSetting { field, message } => {
                write!(f, "config.json: field `{field}`: {message}")
            }
        }
    }
}

impl std::error::Error for ImportError {}

struct Config<'a>(&'a Map<String, Value>);

fn shorten(v: &Value) -> String {
    let s = v.to_string();
    if s.chars().count() > 40 {
        let cut: String = s.chars().take(40).collect();
        format!("{cut}…")
    } else {
        s
    }
}

impl Config<'_> {
    /// Present and not `null`.
    fn get(&self, field: &str) -> Option<&Value> {
        self.0.get(field).filter(|v| !v.is_null())
    }

    fn invalid(field: &str, expected: &str, v: &Value) -> ImportError {
        ImportError::InvalidField {
            field: field.to_string(),
            expected: expected.to_string(),
            found: shorten(v),
        }
    }

    fn opt_u32(&self, field: &str) -> Result<Option<u32>, ImportError> {
        match self.get(field) {
            None => Ok(None),
            Some(v) => v
                .as_u64()
                .and_then(|n| u32::try_from(n).ok())
                .map(Some)
                .ok_or_else(|| Self::invalid(field, "a non-negative integer below 2^32", v)),
        }
    }

    fn u32(&self, field: &str) -> Result<u32, ImportError> {
        self.opt_u32(field)?
            .ok_or_else(|| ImportError::MissingField(field.to_string()))
    }

    fn positive(&self, field: &str) -> Result<u32, ImportError> {
        let n = self.u32(field)?;
        if n == 0 {
            return Err(ImportError::InvalidField {
                field: field.to_string(),
                expected: "a positive integer".to_string(),
                found: "0".to_string(),
            });
        }
        Ok(n)
    }

    fn bool_or(&self, field: &str, default: bool) -> Result<bool, ImportError> {
        match self.get(field) {
            None => Ok(default),
            Some(v) => v
                .as_bool()
                .ok_or_else(|| Self::invalid(field, "true or false", v)),
        }
    }

    fn str_or<'v>(&'v self, field: &str, default: &'v str) -> Result<&'v str, ImportError> {
        match self.get(field) {
            None => Ok(default),
            Some(v) => v
                .as_str()
                .ok_or_else(|| Self::invalid(field, "a string", v)),
        }
    }

    fn architecture(&self) -> Result<&str, ImportError> {
        let v = self
            .get("architectures")
            .ok_or_else(|| ImportError::MissingField("architectures".to_string()))?;
        v.as_array()
            .and_then(|a| a.first())
            .and_then(Value::as_str)
            .ok_or_else(|| Self::invalid("architectures", "a list of architecture names", v))
    }
}

/// Llama-family attention and dense FFN fields common to every supported architecture.
fn base_spec(c: &Config<'_>, arch: &str) -> Result<ModelSpec, ImportError> {
    let hidden = c.positive("hidden_size")?;
    let heads = c.positive("num_attention_heads")?;
    // LlamaConfig: num_key_value_heads defaults to num_attention_heads (MHA).
    let kv_heads = c.opt_u32("num_key_value_heads")?.unwrap_or(heads);
    let groups = crate::resolve::validate::query_group_problem(
        ("num_attention_heads", heads),
        ("num_key_value_heads", kv_heads),
    );
    // MLA (DeepSeek-V3) keeps num_key_value_heads = heads; a bad pair is refused for every
    // architecture here, where both config keys can be named.
    if let Some(message) = groups.filter(|_| kv_heads <= heads) {
        return Err(ImportError::UnsupportedSetting {
            field: "num_key_value_heads".to_string(),
            message,
        });
    }
    // LlamaConfig/MistralConfig: head_dim defaults to hidden_size / num_attention_heads.
    let head_dim = c.opt_u32("head_dim")?.unwrap_or(hidden / heads);
    let act = c.str_or("hidden_act", "silu")?;
    // Gemma2MLP: gate_proj, up_proj, down_proj with a tanh-GeLU gate (GeGLU), the same
    // three matrices and saved tensors as SwiGLU.
    let gated_gelu = arch == "Gemma2ForCausalLM" && act.starts_with("gelu");
    if act != "silu" && !gated_gelu {
        return Err(ImportError::UnsupportedSetting {
            field: "hidden_act".to_string(),
            message: format!(
                "'{}': only the SiLU-gated (SwiGLU) FFN of {arch} is modelled",
                crate::base::free_text::one_line(act)
            ),
        });
    }
    let name = c
        .str_or("_name_or_path", "")?
        .rsplit('/')
        .next()
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .unwrap_or_else(|| format!("Imported {arch}"));
    Ok(ModelSpec {
        name,
        layers: c.positive("num_hidden_layers")?,
        hidden,
        heads,
        kv_heads,
        head_dim,
        ffn: c.positive("intermediate_size")?,
        ffn_kind: FfnKind::SwiGlu,
        vocab: c.positive("vocab_size")?,
        tied_embeddings: c.bool_or("tie_word_embeddings", false)?,
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
    })
}

/// The planner's shapes for a Hugging Face `config.json`.
pub fn import_hf_config(json: &str) -> Result<ModelSpec, ImportError> {
    let value: Value =
        serde_json::from_str(json).map_err(|e| ImportError::NotJson(e.to_string()))?;
    let map = value.as_object().ok_or(ImportError::NotAnObject)?;
    let c = Config(map);
    let arch = c.architecture()?;
    let mut spec = match arch {
        "LlamaForCausalLM" | "MistralForCausalLM" => {
            let mut s = base_spec(&c, arch)?;
            // LlamaConfig.attention_bias puts biases on q/k/v/o; the o bias (h per
            // layer) is not modelled separately, so it counts as a Q/K/V bias.
            s.qkv_bias = c.bool_or("attention_bias", false)?;
            if c.bool_or("mlp_bias", false)? {
                return Err(ImportError::UnsupportedSetting {
                    field: "mlp_bias".to_string(),
                    message: "FFN biases without attention-output biases are not modelled"
                        .to_string(),
                });
            }
            s
        }
        "Gemma2ForCausalLM" => {
            let mut s = base_spec(&c, arch)?;
            // Gemma2Config: tie_word_embeddings defaults to true; attention_bias to false.
            s.tied_embeddings = c.bool_or("tie_word_embeddings", true)?;
            s.qkv_bias = c.bool_or("attention_bias", false)?;
            s
        }
        "Qwen2ForCausalLM" => {
            // Qwen2Attention: q_proj, k_proj, v_proj have bias=True, o_proj none.
            ModelSpec {
                qkv_bias: true,
                ..base_spec(&c, arch)?
            }
        }
        "Qwen3ForCausalLM" => {
            let mut s = base_spec(&c, arch)?;
            s.qkv_bias = c.bool_or("attention_bias", false)?;
            s
        }
        "MixtralForCausalLM" => {
            let mut s = base_spec(&c, arch)?;
            // MixtralConfig: every layer is sparse; experts have width intermediate_size.
            s.moe = Some(MoeSpec {
                routed_experts: c.positive("num_local_experts")?,
                experts_per_token: c.positive("num_experts_per_tok")?,
                shared_experts: 0,
                expert_ffn: s.ffn,
                dense_layers: 0,
            });
            s
        }
        "Qwen3MoeForCausalLM" => {
            let mut s = base_spec(&c, arch)?;
            s.qkv_bias = c.bool_or("attention_bias", false)?;
            let step = c.opt_u32("decoder_sparse_step")?.unwrap_or(1);
            if step != 1 {
                return Err(ImportError::UnsupportedSetting {
                    field: "decoder_sparse_step".to_string(),
                    message: format!("{step}: only every-layer MoE (1) is modelled"),
                });
            }
            if let Some(v) = c.get("mlp_only_layers") {
                if v.as_array().is_none_or(|a| !a.is_empty()) {
                    return Err(ImportError::UnsupportedSetting {
                        field: "mlp_only_layers".to_string(),
                        message: format!(
                            "{}: dense layers between MoE layers are not modelled",
                            shorten(v)
                        ),
                    });
                }
            }
            s.moe = Some(MoeSpec {
                routed_experts: c.positive("num_experts")?,
                experts_per_token: c.positive("num_experts_per_tok")?,
                shared_experts: 0,
                expert_ffn: c.positive("moe_intermediate_size")?,
                dense_layers: 0,
            });
            s
        }
        "DeepseekV3ForCausalLM" => {
            let mut s = base_spec(&c, arch)?;
            let freq = c.opt_u32("moe_layer_freq")?.unwrap_or(1);
            if freq != 1 {
                return Err(ImportError::UnsupportedSetting {
                    field: "moe_layer_freq".to_string(),
                    message: format!(
                        "{freq}: only every-layer MoE after the dense ones (1) is modelled"
                    ),
                });
            }
            let mla = MlaSpec {
                // DeepseekV3Config: q_lora_rank null means queries are projected directly.
                q_lora_rank: c.opt_u32("q_lora_rank")?.unwrap_or(0),
                kv_lora_rank: c.positive("kv_lora_rank")?,
                qk_rope_head_dim: c.u32("qk_rope_head_dim")?,
                qk_nope_head_dim: c.u32("qk_nope_head_dim")?,
                v_head_dim: c.positive("v_head_dim")?,
            };
            // Attention scores run over the nope + rope query/key dims (checked: both are
            // the file's numbers, and a wrapped sum would be a wrong model, not an error).
            s.head_dim = mla
                .qk_nope_head_dim
                .checked_add(mla.qk_rope_head_dim)
                .filter(|d| *d <= crate::resolve::validate::MAX_WIDTH)
                .ok_or_else(|| ImportError::UnsupportedSetting {
                    field: "qk_rope_head_dim".to_string(),
                    message: format!(
                        "qk_nope_head_dim + qk_rope_head_dim = {} + {} is over {}",
                        mla.qk_nope_head_dim,
                        mla.qk_rope_head_dim,
                        crate::resolve::validate::MAX_WIDTH
                    ),
                })?;
            s.mla = Some(mla);
            s.moe = Some(MoeSpec {
                routed_experts: c.positive("n_routed_experts")?,
                experts_per_token: c.positive("num_experts_per_tok")?,
                shared_experts: c.opt_u32("n_shared_experts")?.unwrap_or(0),
                expert_ffn: c.positive("moe_intermediate_size")?,
                dense_layers: c.opt_u32("first_k_dense_replace")?.unwrap_or(0),
            });
            s
        }
        other => {
            return Err(ImportError::UnsupportedArchitecture(
                crate::base::free_text::one_line(other),
            ))
        }
    };
    spec.attention_window = attention_window(&c, arch, spec.layers)?;
    let keep = spec
        .name
        .char_indices()
        .nth(crate::resolve::validate::MAX_NAME_CHARS)
        .map_or(spec.name.len(), |(i, _)| i);
    spec.name.truncate(keep);
    if let Err(errors) = validate_model(&spec) {
        let e = &errors[0];
        return Err(ImportError::UnsupportedSetting {
            field: config_field(arch, &e.field).to_string(),
            message: e.message.clone(),
        });
    }
    Ok(spec)
}

/// Sliding-window layers: `sliding_window` (tokens), and which layers use it from
/// `layer_types` (transformers ≥ 4.53: `"sliding_attention"` / `"full_attention"` per
/// layer) or `sliding_window_pattern` (Gemma 3: one full layer every that many); without
/// either, MistralConfig windows every layer. Qwen2/Qwen3 window only with
/// `use_sliding_window` (Qwen2Config), and then layers from `max_window_layers` on,
/// which is not a periodic pattern and is refused.
fn attention_window(
    c: &Config<'_>,
    arch: &str,
    layers: u32,
) -> Result<Option<AttentionWindow>, ImportError> {
    let qwen = arch.starts_with("Qwen");
    if qwen && !c.bool_or("use_sliding_window", false)? {
        return Ok(None);
    }
    let Some(window_tokens) = c.opt_u32("sliding_window")? else {
        return Ok(None);
    };
    if window_tokens == 0 {
        return Err(ImportError::InvalidField {
            field: "sliding_window".to_string(),
            expected: "a positive number of tokens or null".to_string(),
            found: "0".to_string(),
        });
    }
    let full_every = if let Some(v) = c.get("layer_types") {
        match layer_types_period(v, layers) {
            Some(Some(k)) => k,
            // Every layer full: the window is never used.
            Some(None) => return Ok(None),
            None => {
                return Err(ImportError::UnsupportedSetting {
                    field: "layer_types".to_string(),
                    message: format!(
                        "{}: only all-windowed layers or one full layer every k (full at (i + 1) % k == 0) are modelled, over {layers} layers",
                        shorten(v)
                    ),
                })
            }
        }
    } else if let Some(k) = c.opt_u32("sliding_window_pattern")? {
        k
    } else if arch == "Gemma2ForCausalLM" {
        // transformers Gemma2DecoderLayer: `is_sliding = not bool(layer_idx % 2)`.
        2
    } else if qwen {
        return Err(ImportError::UnsupportedSetting {
            field: "max_window_layers".to_string(),
            message: "use_sliding_window windows the layers from max_window_layers on; only periodic patterns are modelled".to_string(),
        });
    } else {
        0
    };
    Ok(Some(AttentionWindow {
        window_tokens,
        full_every,
    }))
}

/// The period `k` of a `layer_types` list (`Some(Some(0))` all windowed, `Some(Some(k))`
/// full exactly where `(i + 1) % k == 0`, `Some(None)` all full), or `None` when the list
/// is malformed, of the wrong length or irregular.
fn layer_types_period(v: &Value, layers: u32) -> Option<Option<u32>> {
    let list = v.as_array()?;
    if list.len() != usize::try_from(layers).ok()? {
        return None;
    }
    let mut sliding = Vec::with_capacity(list.len());
    for t in list {
        match t.as_str()? {
            "sliding_attention" => sliding.push(true),
            "full_attention" => sliding.push(false),
            _ => return None,
        }
    }
    let Some(first_full) = sliding.iter().position(|s| !s) else {
        return Some(Some(0));
    };
    if sliding.iter().all(|s| !s) {
        return Some(None);
    }
    let k = first_full + 1;
    let regular = sliding
        .iter()
        .enumerate()
        .all(|(i, s)| *s != (i + 1).is_multiple_of(k));
    regular.then(|| u32::try_from(k).ok()).flatten().map(Some)
}

/// The `config.json` key behind a planner field (link parameter) of `arch`.
fn config_field<'a>(arch: &str, planner_field: &'a str) -> &'a str {
    match planner_field {
        "layers" => "num_hidden_layers",
        "hidden" => "hidden_size",
        "heads" => "num_attention_heads",
        "kv_heads" => "num_key_value_heads",
        "ffn" => "intermediate_size",
        "vocab" => "vocab_size",
        "experts" => match arch {
            "MixtralForCausalLM" => "num_local_experts",
            "Qwen3MoeForCausalLM" => "num_experts",
            _ => "n_routed_experts",
        },
        "topk" => "num_experts_per_tok",
        "shared" => "n_shared_experts",
        "expert_ffn" if arch == "MixtralForCausalLM" => "intermediate_size",
        "expert_ffn" => "moe_intermediate_size",
        "dense_layers" => "first_k_dense_replace",
        "q_lora" => "q_lora_rank",
        "kv_lora" => "kv_lora_rank",
        "rope_dim" => "qk_rope_head_dim",
        "nope_dim" => "qk_nope_head_dim",
        "v_dim" => "v_head_dim",
        "window" => "sliding_window",
        "full_every" => "layer_types",
        "name" => "_name_or_path",
        other => other,
    }
}
