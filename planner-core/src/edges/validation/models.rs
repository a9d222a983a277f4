//! The model of a row: public models the planner has no preset for (shapes from their
//! published configs), dataset model names matched to a preset or config ([`known_model_key`],
//! [`model_core_name`]), and a row's model resolved, from a known model or the row's own
//! `model_shape`.

use crate::input::model::{ModelSpec, MoeSpec};
use crate::input::scenario::ModelChoice;
use crate::resolve::presets::{model_preset, model_presets};

use super::dataset::PublishedRun;

/// A GPT-style spec: the presets' own builder (GELU MLP, LayerNorm, biases, dropout, tied).
use crate::resolve::presets::gpt_like;
/// A Llama-style dense spec: the presets' own builder (SwiGLU, RMSNorm, RoPE, no biases, untied).
use crate::resolve::presets::llama as llama_like;

/// A Nemotron spec: squared-ReLU MLP (two matrices, priced as [`FfnKind::GeluMlp`]),
/// LayerNorm (`layernorm1p`), RoPE, no biases, no dropout, untied.
fn nemotron_like(
    name: &str,
    layers: u32,
    hidden: u32,
    heads: u32,
    kv_heads: u32,
    ffn: u32,
) -> ModelSpec {
    ModelSpec {
        tied_embeddings: false,
        dropout: false,
        linear_bias: false,
        learned_positions: 0,
        kv_heads,
        ..gpt_like(name, (layers, hidden, heads), ffn, 256_000, 0)
    }
}

/// Public models the planner has no preset for, by key, each from its published config.
fn config_table(key: &str) -> Option<(ModelSpec, &'static str)> {
    let entry = match key {
        // huggyllama/llama-7b config.json (LLaMA, Touvron et al. 2023 Table 2): 32 layers, hidden
        // 4096, 32 heads, intermediate 11008, vocab 32000, untied.
        "llama-7b" => (
            llama_like("LLaMA 7B", 32, 4096, 32, 32, 11008, 32000),
            "huggyllama/llama-7b config.json",
        ),
        // meta-llama/Llama-2-7b-hf config.json: 32 layers, hidden 4096, 32 heads, 32 KV, intermediate 11008, vocab 32000.
        "llama-2-7b" => (
            llama_like("Llama 2 7B", 32, 4096, 32, 32, 11008, 32000),
            "meta-llama/Llama-2-7b-hf config.json",
        ),
        // meta-llama/Llama-2-13b-hf config.json: 40 layers, hidden 5120, 40 heads, 40 KV, intermediate 13824, vocab 32000.
        "llama-2-13b" => (
            llama_like("Llama 2 13B", 40, 5120, 40, 40, 13824, 32000),
            "meta-llama/Llama-2-13b-hf config.json",
        ),
        // meta-llama/Llama-2-70b-hf config.json: 80 layers, hidden 8192, 64 heads, 8 KV, intermediate 28672, vocab 32000.
        "llama-2-70b" => (
            llama_like("Llama 2 70B", 80, 8192, 64, 8, 28672, 32000),
            "meta-llama/Llama-2-70b-hf config.json",
        ),
        // NeMo-Framework-Launcher conf/training/gpt3/5b.yaml: 24 layers, hidden 4096, ffn 4h, 32 heads, 2048 positions, GPT-2 BPE (50257, as the gpt3-175b preset counts it).
        "nemo-gpt3-5b" => (
            gpt_like("GPT3 5B (NeMo)", (24, 4096, 32), 4 * 4096, 50257, 2048),
            "NeMo-Framework-Launcher conf/training/gpt3/5b.yaml",
        ),
        // NeMo-Framework-Launcher conf/training/gpt3/20b.yaml: 44 layers, hidden 6144, ffn 4h, 48 heads, 2048 positions, GPT-2 BPE (50257).
        "nemo-gpt3-20b" => (
            gpt_like("GPT3 20B (NeMo)", (44, 6144, 48), 4 * 6144, 50257, 2048),
            "NeMo-Framework-Launcher conf/training/gpt3/20b.yaml",
        ),
        // NeMo-Framework-Launcher conf/training/nemotron/nemotron_8b.yaml: 32 layers, hidden 4096, ffn 16384, 32 heads (MHA), squared-ReLU, layernorm1p, RoPE, no bias, untied; vocab 256000 (nemotron_2_256k, the tokenizer nemotron_340b.yaml names; this file leaves it null).
        "nemotron-8b" => (
            nemotron_like("Nemotron 8B", 32, 4096, 32, 32, 16384),
            "NeMo-Framework-Launcher conf/training/nemotron/nemotron_8b.yaml",
        ),
        // NeMo-Framework-Launcher conf/training/nemotron/nemotron_22b.yaml: 40 layers, hidden 6144, ffn 24576, 48 heads (MHA), squared-ReLU, layernorm1p, RoPE, no bias, untied; vocab 256000 as for 8B.
        "nemotron-22b" => (
            nemotron_like("Nemotron 22B", 40, 6144, 48, 48, 24576),
            "NeMo-Framework-Launcher conf/training/nemotron/nemotron_22b.yaml",
        ),
        // NeMo-Framework-Launcher conf/training/nemotron/nemotron_340b.yaml: 96 layers, hidden 18432, ffn 4h = 73728, 96 heads, 8 query groups, squared-ReLU, layernorm1p, RoPE, no bias, untied, nemotron_2_256k tokenizer (256000).
        "nemotron-340b" => (
            nemotron_like("Nemotron 340B", 96, 18432, 96, 8, 73728),
            "NeMo-Framework-Launcher conf/training/nemotron/nemotron_340b.yaml",
        ),
        _ => return None,
    };
    Some(entry)
}

/// The model of a preset or config-table key: its choice for a scenario, its shapes and
/// where they come from (`preset llama-3.1-8b`, `llama-2-7b from meta-llama/... config.json`).
pub fn model_for_key(key: &str) -> Option<(ModelChoice, ModelSpec, String)> {
    match model_preset(key) {
        Some(spec) => Some((
            ModelChoice::Preset(key.to_string()),
            spec,
            format!("preset {key}"),
        )),
        None => config_table(key).map(|(spec, cite)| {
            (
                ModelChoice::Custom(spec.clone()),
                spec,
                format!("{key} from {cite}"),
            )
        }),
    }
}

/// Dataset model names that are known public models, and the preset or config-table key of each.
/// Matched after lower-casing, dropping a parenthesised suffix and every non-alphanumeric character.
pub const KNOWN_MODEL_NAMES: [(&str, &str); 24] = [
    ("GPT-3", "gpt3-175b"),
    ("GPT-3 h12288 L96 a96", "gpt3-175b"),
    ("GPT-3 ZeRO-3", "gpt3-175b"),
    ("GPT-3 ZeRO-3 no MP", "gpt3-175b"),
    ("GPT3-175B", "gpt3-175b"),
    ("GPT3-5B", "nemo-gpt3-5b"),
    ("GPT3-20B", "nemo-gpt3-20b"),
    ("Llama 3.2 3B", "llama-3.2-3b"),
    ("LLaMA-7B", "llama-7b"),
    ("LLAMA2-7B", "llama-2-7b"),
    ("LLAMA2-13B", "llama-2-13b"),
    ("LLAMA2-70B", "llama-2-70b"),
    ("LLAMA2-70B SFT", "llama-2-70b"),
    ("Nemotron-8B", "nemotron-8b"),
    ("Nemotron-22B", "nemotron-22b"),
    ("Nemotron-340B", "nemotron-340b"),
    // Llama 3 and 3.1 share every shape (their config.json files differ in rope_scaling only).
    ("LLAMA3-8B", "llama-3.1-8b"),
    ("Llama 3.1 8B", "llama-3.1-8b"),
    ("LLAMA3-70B", "llama-3.1-70b"),
    ("LLAMA3.1_405B", "llama-3.1-405b"),
    ("LLAMA3-405B", "llama-3.1-405b"),
    ("DeepSeekV3", "deepseek-v3"),
    ("Qwen3-30B-A3B", "qwen3-30b-a3b"),
    ("Qwen3-235B-A22B", "qwen3-235b-a22b"),
];

pub(super) fn normalize_name(name: &str) -> String {
    let cut = name.split('(').next().unwrap_or(name);
    cut.chars()
        .filter(|c| c.is_ascii_alphanumeric())
        .map(|c| c.to_ascii_lowercase())
        .collect()
}

/// The preset or config-table key of a known public model name, if it is one: a name of
/// [`KNOWN_MODEL_NAMES`], else any model preset named by its id or display name
/// ([`model_core_name`]: `Llama-3.1-70B`, `meta-llama/Meta-Llama-3.1-70B-Instruct`,
/// `Mixtral 8x7B`, `Mistral-7B-v0.1`), so another dataset's rows on a preset's model need no
/// `model_shape`.
pub fn known_model_key(model_name: &str) -> Option<&'static str> {
    let n = normalize_name(model_name);
    if let Some((_, key)) = KNOWN_MODEL_NAMES
        .iter()
        .find(|(alias, _)| normalize_name(alias) == n)
    {
        return Some(key);
    }
    let core = model_core_name(model_name);
    if let Some((_, key)) = KNOWN_MODEL_NAMES
        .iter()
        .find(|(alias, _)| model_core_name(alias) == core)
    {
        return Some(key);
    }
    model_presets()
        .into_iter()
        .find(|p| model_core_name(p.id) == core || model_core_name(&p.spec.name) == core)
        .map(|p| p.id)
}

/// A model name without what does not change its shapes, lower-case alphanumerics only: the
/// organisation (`meta-llama/`, a leading `Meta-`), a trailing release tag (`Instruct`,
/// `Chat`, `Base`, `hf`) and a dotted version (`v0.1`). An undotted version is kept: it names
/// another model (`DeepSeek-V3` is not `DeepSeek-V2`).
pub fn model_core_name(name: &str) -> String {
    let name = name.rsplit('/').next().unwrap_or(name).to_ascii_lowercase();
    let mut tokens: Vec<&str> = name
        .split(|c: char| c == '-' || c == '_' || c.is_whitespace())
        .filter(|t| !t.is_empty())
        .collect();
    if tokens.first() == Some(&"meta") {
        tokens.remove(0);
    }
    while let Some(last) = tokens.last() {
        let dotted_version = last.starts_with('v') && last.contains('.');
        // A checkpoint's dtype suffix (`Qwen3-235B-A22B-FP8`, `-AWQ`) names a quantized copy of
        // the same architecture: its shapes are the base model's.
        let dtype_suffix = matches!(
            *last,
            "fp8" | "fp4" | "nvfp4" | "mxfp4" | "awq" | "gptq" | "int4" | "int8" | "w8a8" | "w4a16"
        );
        if dotted_version || dtype_suffix || matches!(*last, "instruct" | "chat" | "base" | "hf") {
            tokens.pop();
        } else {
            break;
        }
    }
    tokens
        .concat()
        .chars()
        .filter(|c| c.is_ascii_alphanumeric())
        .collect()
}

/// Resolves the model: a known public model (preset or config table, with any
/// `model_shape` value that differs replacing the config's), else GPT-style shapes.
pub(super) fn resolve_model(
    run: &PublishedRun,
    defaults: &mut Vec<String>,
    notes: &mut Vec<String>,
) -> Result<(ModelChoice, ModelSpec, String), String> {
    let shape = &run.model_shape;
    if let Some(key) = known_model_key(&run.model_name) {
        let (mut spec, source, preset) = match model_preset(key) {
            Some(spec) => (spec, format!("preset {key}"), true),
            None => match config_table(key) {
                Some((spec, cite)) => (spec, format!("{key} from {cite}"), false),
                None => return Err(format!("known model '{key}' has no shapes")),
            },
        };
        let mut changed = Vec::new();
        let mut set = |name: &str, given: Option<u32>, slot: &mut u32| {
            if let Some(v) = given {
                if v != *slot {
                    changed.push(format!("{name} {v} (config: {})", *slot));
                    *slot = v;
                }
            }
        };
        let derived_head_dim = spec.head_dim == spec.hidden / spec.heads.max(1);
        set("layers", shape.layers, &mut spec.layers);
        set("hidden", shape.hidden, &mut spec.hidden);
        set("heads", shape.heads, &mut spec.heads);
        if spec.mla.is_none() {
            set("kv_heads", shape.kv_heads, &mut spec.kv_heads);
        }
        set("vocab", shape.vocab, &mut spec.vocab);
        match spec.moe.as_mut() {
            Some(moe) => {
                set("ffn (per expert)", shape.ffn, &mut moe.expert_ffn);
                set("experts", shape.experts, &mut moe.routed_experts);
                set("top_k", shape.top_k, &mut moe.experts_per_token);
            }
            None => {
                if shape.experts.is_some() || shape.top_k.is_some() {
                    return Err(format!(
                        "model_shape gives experts for '{}', whose published config is dense",
                        run.model_name
                    ));
                }
                set("ffn", shape.ffn, &mut spec.ffn);
            }
        }
        if derived_head_dim && spec.mla.is_none() {
            spec.head_dim = spec.hidden / spec.heads.max(1);
        }
        if key.starts_with("nemotron") {
            notes.push(
                "squared-ReLU MLP priced as a two-matrix MLP (FfnKind::GeluMlp): same GEMM shapes"
                    .to_string(),
            );
        }
        if key.starts_with("qwen3") {
            notes.push(
                "per-head q/k RMSNorm of Qwen3 (2 × 128 parameters per layer) not modelled"
                    .to_string(),
            );
        }
        if changed.is_empty() {
            let choice = if preset {
                ModelChoice::Preset(key.to_string())
            } else {
                ModelChoice::Custom(spec.clone())
            };
            return Ok((choice, spec, source));
        }
        notes.push(format!(
            "model_shape replaces the published config: {}",
            changed.join(", ")
        ));
        spec.name = format!("{} (shapes from the row)", spec.name);
        return Ok((ModelChoice::Custom(spec.clone()), spec, source));
    }

    // GPT-style shapes from the row (Megatron's GPT models).
    let (Some(layers), Some(hidden), Some(heads)) = (shape.layers, shape.hidden, shape.heads)
    else {
        return Err(format!(
            "'{}' is not a known public model and model_shape lacks layers, hidden or heads",
            run.model_name
        ));
    };
    if shape.experts.is_some() || shape.top_k.is_some() {
        return moe_from_shape(run, layers, hidden, heads, defaults);
    }
    if !hidden.is_multiple_of(heads) {
        return Err(format!(
            "hidden {hidden} is not a multiple of heads {heads}: the head dim is unknown"
        ));
    }
    let ffn = shape.ffn.unwrap_or_else(|| {
        defaults.push(format!(
            "model_shape.ffn not stated: 4 × hidden = {}",
            4 * u64::from(hidden)
        ));
        hidden.saturating_mul(4)
    });
    let vocab = shape.vocab.unwrap_or_else(|| {
        defaults
            .push("model_shape.vocab not stated: 51200 (Megatron's padded GPT-2 BPE)".to_string());
        51200
    });
    let mut spec = gpt_like(
        &run.model_name,
        (layers, hidden, heads),
        ffn,
        vocab,
        run.seq(),
    );
    if let Some(kv) = shape.kv_heads {
        spec.kv_heads = kv;
    }
    notes.push(format!(
        "GPT-style shapes (Megatron GPT): GELU MLP, LayerNorm, biases, dropout, tied embeddings, {} learned positions (= seq_len)",
        run.seq()
    ));
    Ok((
        ModelChoice::Custom(spec.clone()),
        spec,
        "GPT-style from model_shape".to_string(),
    ))
}

/// An MoE that is not a known public model, from its row's shapes: Mixtral's form (Jiang et al.
/// 2024, "Mixtral of Experts" §2: every layer's FFN replaced by SwiGLU experts, Llama/Mistral
/// attention with RMSNorm and RoPE, no shared expert), the one the shapes leave most likely,
/// each assumption listed with the row's defaults. `experts`, `top_k` and `ffn` (one expert's
/// width) must be given.
fn moe_from_shape(
    run: &PublishedRun,
    layers: u32,
    hidden: u32,
    heads: u32,
    defaults: &mut Vec<String>,
) -> Result<(ModelChoice, ModelSpec, String), String> {
    let shape = &run.model_shape;
    let (Some(experts), Some(top_k), Some(ffn)) = (shape.experts, shape.top_k, shape.ffn) else {
        return Err(format!(
            "'{}' is not a known public model: an MoE from model_shape needs experts, top_k and ffn (one expert's width)",
            run.model_name
        ));
    };
    if !hidden.is_multiple_of(heads) || top_k == 0 || top_k > experts {
        return Err(format!(
            "model_shape of '{}': hidden {hidden} must be a multiple of heads {heads} and top_k {top_k} within 1..=experts {experts}",
            run.model_name
        ));
    }
    let kv_heads = shape.kv_heads.unwrap_or_else(|| {
        defaults.push(format!("model_shape.kv_heads not stated: {heads} (no GQA)"));
        heads
    });
    let vocab = shape.vocab.unwrap_or_else(|| {
        defaults.push("model_shape.vocab not stated: 32000 (Mixtral's)".to_string());
        32000
    });
    defaults.push(
        "MoE from model_shape: Mixtral's form (SwiGLU experts on every layer, no shared expert, RMSNorm, RoPE, no biases)"
            .to_string(),
    );
    let mut spec = llama_like(&run.model_name, layers, hidden, heads, kv_heads, ffn, vocab);
    spec.moe = Some(MoeSpec {
        routed_experts: experts,
        experts_per_token: top_k,
        shared_experts: 0,
        expert_ffn: ffn,
        dense_layers: 0,
    });
    Ok((
        ModelChoice::Custom(spec.clone()),
        spec,
        "Mixtral-style MoE from model_shape".to_string(),
    ))
}
