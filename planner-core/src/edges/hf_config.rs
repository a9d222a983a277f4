//! Import a Hugging Face `config.json` into a [`ModelSpec`].
//!
//! Supported: [`SUPPORTED_ARCHITECTURES`]. Field names and defaults follow the `transformers`
//! configuration classes of those models (`LlamaConfig`, `MixtralConfig`,
//! `Qwen2Config`, `Qwen3Config`, `Qwen3MoeConfig`, `DeepseekV3Config` (also Kimi K2),
//! `Gemma3TextConfig`, `Llama4TextConfig`, `GptOssConfig`); a multimodal wrapper
//! (`…ForConditionalGeneration`) is read from its `text_config`.
//! Known approximations, each returned as a note by [`import_hf_config_noted`]: Qwen3's and
//! Gemma 3's per-head q/k RMSNorm, Gemma 3's two extra norms per layer, DeepSeek-V3's router
//! bias and gpt-oss's expert and router biases and attention sinks are not counted (the
//! safetensors headers count them: `edges::hub`); Llama 4's chunked attention is priced as a
//! sliding window of the chunk.

use std::fmt;

use serde_json::{Map, Value};

use crate::input::model::{AttentionWindow, MlaSpec, ModelSpec, MoeSpec};
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
    UnsupportedArchitecture {
        /// The architecture's name, made printable.
        architecture: String,
        /// The config's keys no supported mapping reads (bookkeeping keys left out).
        unmapped: Vec<String>,
    },
    /// A setting of a supported architecture that the planner cannot model.
    UnsupportedSetting {
        /// The `config.json` key.
        field: String,
        /// Why it cannot be modelled.
        message: String,
    },
}

/// Architectures [`import_hf_config`] accepts.
pub const SUPPORTED_ARCHITECTURES: [&str; 13] = [
    "LlamaForCausalLM",
    "MistralForCausalLM",
    "MixtralForCausalLM",
    "Qwen2ForCausalLM",
    "Qwen3ForCausalLM",
    "Qwen3MoeForCausalLM",
    "DeepseekV3ForCausalLM",
    "Gemma2ForCausalLM",
    "Gemma3ForCausalLM",
    "Gemma3ForConditionalGeneration",
    "Llama4ForCausalLM",
    "Llama4ForConditionalGeneration",
    "GptOssForCausalLM",
];

/// Keys a supported mapping reads or knowingly ignores (numerics of training, token ids,
/// bookkeeping); any other key of an unsupported architecture is named as unmapped.
const KNOWN_KEYS: [&str; 60] = [
    "architectures",
    "model_type",
    "hidden_size",
    "num_hidden_layers",
    "num_attention_heads",
    "num_key_value_heads",
    "head_dim",
    "intermediate_size",
    "vocab_size",
    "tie_word_embeddings",
    "hidden_act",
    "hidden_activation",
    "attention_bias",
    "mlp_bias",
    "sliding_window",
    "layer_types",
    "sliding_window_pattern",
    "use_sliding_window",
    "max_window_layers",
    "num_local_experts",
    "num_experts",
    "num_experts_per_tok",
    "moe_intermediate_size",
    "decoder_sparse_step",
    "mlp_only_layers",
    "n_routed_experts",
    "n_shared_experts",
    "first_k_dense_replace",
    "moe_layer_freq",
    "q_lora_rank",
    "kv_lora_rank",
    "qk_rope_head_dim",
    "qk_nope_head_dim",
    "v_head_dim",
    "num_nextn_predict_layers",
    "text_config",
    "_name_or_path",
    "torch_dtype",
    "dtype",
    "transformers_version",
    "bos_token_id",
    "eos_token_id",
    "pad_token_id",
    "rms_norm_eps",
    "layer_norm_eps",
    "rope_theta",
    "rope_scaling",
    "max_position_embeddings",
    "initializer_range",
    "use_cache",
    "attention_dropout",
    "auto_map",
    "quantization_config",
    "intermediate_size_mlp",
    "interleave_moe_layer_step",
    "moe_layers",
    "attention_chunk_size",
    "no_rope_layers",
    "experts_per_token",
    "generation_config",
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
            ImportError::UnsupportedArchitecture {
                architecture,
                unmapped,
            } => {
                write!(
                    f,
                    "config.json: architecture `{architecture}` is not supported (supported: {})",
                    SUPPORTED_ARCHITECTURES.join(", ")
                )?;
                if !unmapped.is_empty() {
                    write!(f, "; fields it could not map: {}", unmapped.join(", "))?;
                }
                Ok(())
            }
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
    let gemma = arch.starts_with("Gemma");
    // Gemma2Config/Gemma3TextConfig name the FFN's activation `hidden_activation`.
    let act_field = if gemma && c.get("hidden_activation").is_some() {
        "hidden_activation"
    } else {
        "hidden_act"
    };
    let act = c.str_or(act_field, "silu")?;
    // Gemma2MLP / Gemma3MLP: gate_proj, up_proj, down_proj with a tanh-GeLU gate (GeGLU), the
    // same three matrices and saved tensors as SwiGLU.
    let gated_gelu = gemma && act.starts_with("gelu");
    if act != "silu" && !gated_gelu {
        return Err(ImportError::UnsupportedSetting {
            field: act_field.to_string(),
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
        layers: c.positive("num_hidden_layers")?,
        hidden,
        heads,
        kv_heads,
        head_dim,
        ffn: c.positive("intermediate_size")?,
        vocab: c.positive("vocab_size")?,
        tied_embeddings: c.bool_or("tie_word_embeddings", false)?,
        ..crate::resolve::presets::dense_template(&name)
    })
}

/// The planner's shapes for a Hugging Face `config.json`.
pub fn import_hf_config(json: &str) -> Result<ModelSpec, ImportError> {
    import_hf_config_noted(json).map(|(spec, _)| spec)
}

/// Gemma3TextConfig's defaults (transformers `configuration_gemma3.py`) for the keys a
/// Gemma 3 `text_config` leaves out (gemma-3-4b-it omits the head counts and vocabulary).
const GEMMA3_TEXT_DEFAULTS: [(&str, u32); 4] = [
    ("num_attention_heads", 8),
    ("num_key_value_heads", 4),
    ("head_dim", 256),
    ("vocab_size", 262_208),
];

/// The planner's shapes for a `config.json`, with one sentence for each approximation the
/// mapping made (empty when the shapes say everything the planner models).
pub fn import_hf_config_noted(json: &str) -> Result<(ModelSpec, Vec<String>), ImportError> {
    let value: Value =
        serde_json::from_str(json).map_err(|e| ImportError::NotJson(e.to_string()))?;
    let top = value.as_object().ok_or(ImportError::NotAnObject)?;
    let top_config = Config(top);
    let arch = top_config.architecture()?;
    // A multimodal wrapper keeps the language model's fields under `text_config`.
    let mut text = match top.get("text_config") {
        Some(Value::Object(t)) if arch.ends_with("ForConditionalGeneration") => t.clone(),
        _ => top.clone(),
    };
    if arch.starts_with("Gemma3") {
        for (key, default) in GEMMA3_TEXT_DEFAULTS {
            text.entry(key).or_insert(Value::from(default));
        }
        // Gemma3TextConfig: tie_word_embeddings defaults to true.
        text.entry("tie_word_embeddings")
            .or_insert(Value::Bool(true));
    }
    if let Some(name) = top.get("_name_or_path") {
        text.entry("_name_or_path").or_insert(name.clone());
    }
    let c = Config(&text);
    let mut notes = Vec::new();
    let mut spec = match arch {
        "MixtralForCausalLM" | "Qwen3MoeForCausalLM" | "DeepseekV3ForCausalLM" => {
            moe_arch_spec(&c, arch)?
        }
        "Llama4ForCausalLM" | "Llama4ForConditionalGeneration" => {
            llama4_spec(&c, arch, &mut notes)?
        }
        _ => dense_arch_spec(&c, arch, &mut notes)?,
    };
    spec.attention_window = attention_window(&c, arch, spec.layers)?;
    if arch.starts_with("Llama4") {
        spec.attention_window = llama4_chunks(&c, spec.layers, &mut notes)?;
    }
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
    Ok((spec, notes))
}

/// The config's keys that no supported mapping reads, sorted, each made printable.
fn unmapped_keys(c: &Config<'_>) -> Vec<String> {
    let mut keys: Vec<String> =
        c.0.keys()
            .filter(|k| !KNOWN_KEYS.contains(&k.as_str()))
            .take(40)
            .map(|k| {
                crate::base::free_text::one_line(k)
                    .chars()
                    .take(60)
                    .collect()
            })
            .collect();
    keys.sort();
    keys
}

/// Dense architectures (Llama, Mistral, Qwen2/3, Gemma 2/3, and gpt-oss's MoE, whose experts
/// are the dense FFN's width).
fn dense_arch_spec(
    c: &Config<'_>,
    arch: &str,
    notes: &mut Vec<String>,
) -> Result<ModelSpec, ImportError> {
    let spec = match arch {
        "LlamaForCausalLM" | "MistralForCausalLM" => {
            let mut s = base_spec(c, arch)?;
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
        "Gemma2ForCausalLM" | "Gemma3ForCausalLM" | "Gemma3ForConditionalGeneration" => {
            let mut s = base_spec(c, arch)?;
            // Gemma2Config: tie_word_embeddings defaults to true; attention_bias to false.
            s.tied_embeddings = c.bool_or("tie_word_embeddings", true)?;
            s.qkv_bias = c.bool_or("attention_bias", false)?;
            if arch.starts_with("Gemma3") {
                // Gemma3DecoderLayer: pre/post attention and pre/post FFN norms, and
                // Gemma3Attention's q_norm / k_norm over head_dim.
                notes.push("Gemma 3's two extra norms per layer and its q/k norms are not in the shape model (the safetensors headers count them)".to_string());
            }
            s
        }
        "Qwen2ForCausalLM" => {
            // Qwen2Attention: q_proj, k_proj, v_proj have bias=True, o_proj none.
            ModelSpec {
                qkv_bias: true,
                ..base_spec(c, arch)?
            }
        }
        "Qwen3ForCausalLM" => {
            let mut s = base_spec(c, arch)?;
            s.qkv_bias = c.bool_or("attention_bias", false)?;
            notes.push("Qwen3's per-head q/k norms are not in the shape model (the safetensors headers count them)".to_string());
            s
        }
        "GptOssForCausalLM" => {
            let mut s = base_spec(c, arch)?;
            // GptOssAttention: q/k/v/o projections with bias=config.attention_bias (true);
            // the o bias counts as a Q/K/V bias, as for Llama.
            s.qkv_bias = c.bool_or("attention_bias", true)?;
            // GptOssConfig: num_local_experts experts of width intermediate_size, top
            // num_experts_per_tok (the published configs also carry experts_per_token).
            let topk = match c.opt_u32("num_experts_per_tok")? {
                Some(k) => k,
                None => c.positive("experts_per_token")?,
            };
            s.moe = Some(MoeSpec {
                routed_experts: c.positive("num_local_experts")?,
                experts_per_token: topk,
                shared_experts: 0,
                expert_ffn: s.ffn,
                dense_layers: 0,
            });
            notes.push("gpt-oss's expert and router biases and attention sinks are not in the shape model (the safetensors headers count them)".to_string());
            s
        }
        other => {
            return Err(ImportError::UnsupportedArchitecture {
                architecture: crate::base::free_text::one_line(other),
                unmapped: unmapped_keys(c),
            })
        }
    };
    Ok(spec)
}

/// Mixtral, Qwen3-MoE and DeepSeek-V3 (also Kimi K2, which ships as `DeepseekV3ForCausalLM`).
fn moe_arch_spec(c: &Config<'_>, arch: &str) -> Result<ModelSpec, ImportError> {
    let mut s = base_spec(c, arch)?;
    match arch {
        "MixtralForCausalLM" => {
            // MixtralConfig: every layer is sparse; experts have width intermediate_size.
            s.moe = Some(MoeSpec {
                routed_experts: c.positive("num_local_experts")?,
                experts_per_token: c.positive("num_experts_per_tok")?,
                shared_experts: 0,
                expert_ffn: s.ffn,
                dense_layers: 0,
            });
        }
        "Qwen3MoeForCausalLM" => {
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
        }
        _ => deepseek_v3(c, &mut s)?,
    }
    Ok(s)
}

/// DeepSeek-V3's MLA and MoE fields on top of the base shapes.
fn deepseek_v3(c: &Config<'_>, s: &mut ModelSpec) -> Result<(), ImportError> {
    let freq = c.opt_u32("moe_layer_freq")?.unwrap_or(1);
    if freq != 1 {
        return Err(ImportError::UnsupportedSetting {
            field: "moe_layer_freq".to_string(),
            message: format!("{freq}: only every-layer MoE after the dense ones (1) is modelled"),
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
    Ok(())
}

/// Llama 4 (Scout, Maverick): Llama4TextConfig's dense FFN is `intermediate_size_mlp`, each
/// expert and the one shared expert (Llama4TextMoe.shared_expert) `intermediate_size`; MoE
/// layers are `moe_layers`, by default every `interleave_moe_layer_step`-th
/// (`range(step - 1, layers, step)`).
fn llama4_spec(
    c: &Config<'_>,
    arch: &str,
    notes: &mut Vec<String>,
) -> Result<ModelSpec, ImportError> {
    let mut s = base_spec(c, arch)?;
    let expert_ffn = s.ffn;
    s.ffn = c.opt_u32("intermediate_size_mlp")?.unwrap_or(expert_ffn);
    s.qkv_bias = c.bool_or("attention_bias", false)?;
    let step = c.opt_u32("interleave_moe_layer_step")?.unwrap_or(1).max(1);
    let moe_layers = match c.get("moe_layers") {
        Some(v) => {
            let list = v.as_array().filter(|a| {
                a.iter()
                    .all(|i| i.as_u64().is_some_and(|i| i < u64::from(s.layers)))
            });
            let n = list.map(Vec::len).and_then(|n| u32::try_from(n).ok());
            n.ok_or_else(|| Config::invalid("moe_layers", "a list of layer indices", v))?
        }
        None => s.layers / step,
    };
    let dense_layers = s.layers.saturating_sub(moe_layers);
    if dense_layers > 0 && moe_layers > 0 {
        notes.push(format!("Llama 4's {dense_layers} dense layers interleaved with {moe_layers} MoE layers are placed first in the pipeline split (parameter totals exact, per-stage shares approximate)"));
    }
    s.moe = Some(MoeSpec {
        routed_experts: c.positive("num_local_experts")?,
        experts_per_token: c.positive("num_experts_per_tok")?,
        shared_experts: 1,
        expert_ffn,
        dense_layers,
    });
    Ok(s)
}

/// Llama 4's chunked attention (`attention_chunk_size`): the RoPE layers attend within
/// chunks, the NoPE layers (`no_rope_layers[i] == 0`, by default every fourth: Llama4TextConfig
/// `no_rope_layer_interval = 4`) to the whole context. Priced as a sliding window of the chunk:
/// the KV a chunked layer keeps is at most one chunk, as a window's is; its attention FLOPs are
/// overstated (a token sees on average half a chunk, not a whole window).
fn llama4_chunks(
    c: &Config<'_>,
    layers: u32,
    notes: &mut Vec<String>,
) -> Result<Option<AttentionWindow>, ImportError> {
    let Some(chunk) = c.opt_u32("attention_chunk_size")?.filter(|n| *n > 0) else {
        return Ok(None);
    };
    let full_every = match c.get("no_rope_layers") {
        None => 4,
        Some(v) => {
            let sliding: Option<Vec<bool>> = v
                .as_array()
                .map(|a| a.iter().map(|x| x.as_u64().map(|r| r == 1)).collect())
                .and_then(|o: Option<Vec<bool>>| o);
            match sliding.and_then(|s| period(&s, layers)) {
                Some(Some(k)) => k,
                Some(None) => return Ok(None),
                None => {
                    return Err(ImportError::UnsupportedSetting {
                        field: "no_rope_layers".to_string(),
                        message: format!(
                            "{}: only one global layer every k is modelled",
                            shorten(v)
                        ),
                    })
                }
            }
        }
    };
    notes.push(format!("Llama 4's chunked attention ({chunk}-token chunks, one global layer in {full_every}) is priced as a {chunk}-token sliding window: the KV cache is the same, attention FLOPs of the chunked layers are overstated up to 2×"));
    Ok(Some(AttentionWindow {
        window_tokens: chunk,
        full_every,
    }))
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
    } else if arch.starts_with("Gemma3") {
        // Gemma3TextConfig: sliding_window_pattern defaults to 6 (five local, one global).
        6
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
    let mut sliding = Vec::with_capacity(list.len());
    for t in list {
        match t.as_str()? {
            "sliding_attention" => sliding.push(true),
            "full_attention" => sliding.push(false),
            _ => return None,
        }
    }
    period(&sliding, layers)
}

/// The period of a per-layer windowed (`true`) / full (`false`) list, as
/// [`layer_types_period`] returns it; `None` for the wrong length or an irregular list.
fn period(sliding: &[bool], layers: u32) -> Option<Option<u32>> {
    if sliding.len() != usize::try_from(layers).ok()? {
        return None;
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
