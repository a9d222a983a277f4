//! Framework exports of a scenario: the launch line and configuration files that
//! run the planned layout in torchrun, Accelerate (FSDP2), DeepSpeed, Megatron-LM,
//! torchtitan, torchtune, TRL (with PEFT and Accelerate), vLLM and SGLang, one module per tool.
//!
//! Each generator writes only options its tool has; where the tool cannot express
//! part of the plan (ZeRO-1 in FSDP, TP in DeepSpeed alone, ...) the export says so
//! in [`Export::notes`] instead of emitting a flag that would mean something else.
//! Values the planner does not know (head-node address, dataset, learning rate) are
//! left as shell variables or `<placeholders>` named for what goes there.

use std::fmt::Write;

use serde::Serialize;

use crate::base::free_text::{one_line, shell_word, toml_string};
use crate::input::layout::{Recompute, Schedule, ZeroStage};
use crate::input::model::{FfnKind, ModelSpec, NormKind};
use crate::input::precision::{ComputeDtype, PrecisionRecipe};
use crate::input::scenario::{ModelChoice, Scenario, ServeDtype};
use crate::input::stage_split::{SplitShape, StageSplit};
use crate::resolve::presets::model_presets;
use crate::search::deployment::{Deployment, Pools};

mod accelerate;
mod deepspeed;
mod deployment;
mod megatron;
mod sglang;
mod torchrun;
mod torchtitan;
mod torchtune;
mod trl;
mod vllm;
pub use deployment::deployment_export;

/// One copyable export of the current scenario.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Export {
    /// Stable id, one of [`ExportFormat::id`] ("torchrun", "accelerate", ...).
    pub id: &'static str,
    /// Display label ("Accelerate FSDP2 config").
    pub label: &'static str,
    /// File name to save the text as ("fsdp2.yaml").
    pub file_name: &'static str,
    /// Syntax of `text`: "sh", "yaml", "json" or "toml".
    pub language: &'static str,
    /// The file or command line itself.
    pub text: String,
    /// What the tool cannot express of this plan, and what must be filled in by hand.
    pub notes: Vec<String>,
}

/// The tools an export can be written for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ExportFormat {
    /// `torchrun` launch line and environment.
    Torchrun,
    /// Hugging Face Accelerate config with FSDP2.
    Accelerate,
    /// DeepSpeed JSON config.
    Deepspeed,
    /// Megatron-LM `pretrain_gpt.py` arguments.
    Megatron,
    /// torchtitan TOML (parallelism, training, activation checkpoint).
    Torchtitan,
    /// torchtune recipe config (full, LoRA or QLoRA; one device or distributed).
    Torchtune,
    /// TRL `SFTTrainer` with PEFT and bitsandbytes under `accelerate launch`.
    Trl,
    /// `vllm serve` command (serving view).
    Vllm,
    /// `sglang.launch_server` command (serving view).
    Sglang,
}

impl ExportFormat {
    /// Every format, in display order (training first, then serving).
    pub const ALL: [ExportFormat; 9] = [
        ExportFormat::Torchrun,
        ExportFormat::Accelerate,
        ExportFormat::Deepspeed,
        ExportFormat::Megatron,
        ExportFormat::Torchtitan,
        ExportFormat::Torchtune,
        ExportFormat::Trl,
        ExportFormat::Vllm,
        ExportFormat::Sglang,
    ];

    /// Stable identifier, used by `meshplan export --format`.
    pub fn id(self) -> &'static str {
        match self {
            ExportFormat::Torchrun => "torchrun",
            ExportFormat::Accelerate => "accelerate",
            ExportFormat::Deepspeed => "deepspeed",
            ExportFormat::Megatron => "megatron",
            ExportFormat::Torchtitan => "torchtitan",
            ExportFormat::Torchtune => "torchtune",
            ExportFormat::Trl => "trl",
            ExportFormat::Vllm => "vllm",
            ExportFormat::Sglang => "sglang",
        }
    }

    /// Parses [`ExportFormat::id`].
    pub fn from_id(id: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|f| f.id() == id)
    }

    fn label(self) -> &'static str {
        match self {
            ExportFormat::Torchrun => "torchrun launch",
            ExportFormat::Accelerate => "Accelerate FSDP2 config",
            ExportFormat::Deepspeed => "DeepSpeed config",
            ExportFormat::Megatron => "Megatron-LM arguments",
            ExportFormat::Torchtitan => "torchtitan config",
            ExportFormat::Torchtune => "torchtune recipe config",
            ExportFormat::Trl => "TRL + PEFT (accelerate launch)",
            ExportFormat::Vllm => "vLLM serve",
            ExportFormat::Sglang => "SGLang server",
        }
    }

    fn file_name(self) -> &'static str {
        match self {
            ExportFormat::Torchrun => "launch.sh",
            ExportFormat::Accelerate => "fsdp2.yaml",
            ExportFormat::Deepspeed => "ds_config.json",
            ExportFormat::Megatron => "megatron_args.sh",
            ExportFormat::Torchtitan => "torchtitan.toml",
            ExportFormat::Torchtune => "torchtune.yaml",
            ExportFormat::Trl => "trl_sft.sh",
            ExportFormat::Vllm => "vllm_serve.sh",
            ExportFormat::Sglang => "sglang_serve.sh",
        }
    }

    fn language(self) -> &'static str {
        match self {
            ExportFormat::Torchrun
            | ExportFormat::Megatron
            | ExportFormat::Vllm
            | ExportFormat::Sglang
            | ExportFormat::Trl => "sh",
            ExportFormat::Accelerate | ExportFormat::Torchtune => "yaml",
            ExportFormat::Deepspeed => "json",
            ExportFormat::Torchtitan => "toml",
        }
    }
}

/// Every export of `scenario` with `model` (its resolved shapes), in [`ExportFormat::ALL`] order.
pub fn exports(scenario: &Scenario, model: &ModelSpec) -> Vec<Export> {
    ExportFormat::ALL
        .into_iter()
        .map(|f| export(f, scenario, model))
        .collect()
}

/// One export of `scenario` with `model` (its resolved shapes).
pub fn export(format: ExportFormat, scenario: &Scenario, model: &ModelSpec) -> Export {
    let ctx = Ctx::new(scenario, model);
    let (text, mut notes) = match format {
        ExportFormat::Torchrun => torchrun::torchrun(&ctx),
        ExportFormat::Accelerate => accelerate::accelerate(&ctx),
        ExportFormat::Deepspeed => deepspeed::deepspeed(&ctx),
        ExportFormat::Megatron => megatron::megatron(&ctx),
        ExportFormat::Torchtitan => torchtitan::torchtitan(&ctx),
        ExportFormat::Torchtune => torchtune::torchtune(&ctx),
        ExportFormat::Trl => trl::trl(&ctx),
        ExportFormat::Vllm => vllm::vllm(&ctx),
        ExportFormat::Sglang => sglang::sglang(&ctx),
    };
    let split = &ctx.s.layout.stage_split;
    if ctx.s.layout.pp > 1
        && !split.is_even()
        && matches!(
            format,
            ExportFormat::Torchrun | ExportFormat::Accelerate | ExportFormat::Deepspeed
        )
    {
        let sh = SplitShape::new(ctx.m.layers, ctx.s.layout.pp, ctx.s.layout.virtual_stages);
        notes.push(format!(
            "{} cannot express the plan's uneven stage split ({}); it splits the layers its own way, so stage times and memory will differ from the plan.",
            format.label(),
            split.describe(sh)
        ));
    }
    if matches!(format, ExportFormat::Megatron | ExportFormat::Torchtitan) {
        let tool = if format == ExportFormat::Megatron {
            "Megatron-LM"
        } else {
            "torchtitan"
        };
        layout_errors(&ctx, tool, &mut notes);
    }
    notes.extend(crate::edges::finetune_export::export_notes(
        format,
        &scenario.training.finetune,
    ));
    if let Some(n) = &ctx.identity.note {
        notes.insert(0, n.clone());
    }
    Export {
        id: format.id(),
        label: format.label(),
        file_name: format.file_name(),
        language: format.language(),
        text,
        notes,
    }
}

/// Every export's notes as one Markdown file (`NOTES.md`): a section per file, a
/// list item per note, each note escaped so it stays one item of plain text.
pub fn notes_markdown(list: &[Export]) -> String {
    let mut out = String::from("# Notes on the exports\n");
    for e in list {
        let _ = writeln!(out, "\n## {} ({})\n", e.file_name, e.label);
        for n in &e.notes {
            let _ = writeln!(out, "- {}", crate::base::free_text::markdown_text(n));
        }
    }
    out
}

/// An export's notes as comment lines of its own syntax (`//` for JSON listings,
/// `#` for the rest), each one line so no note can end its comment early.
pub fn notes_as_comments(e: &Export) -> String {
    let mark = if e.language == "json" { "//" } else { "#" };
    let mut out = String::new();
    if !e.notes.is_empty() {
        let _ = writeln!(out, "\n{mark} Notes:");
        for n in &e.notes {
            let _ = writeln!(out, "{mark} - {}", one_line(n));
        }
    }
    out
}

/// What the tools call the model: Hugging Face repo, decoder-layer class, torchtitan model.
struct Identity {
    hf_repo: Option<&'static str>,
    layer_class: Option<&'static str>,
    /// torchtitan `model.name` and `model.flavor`.
    torchtitan: Option<(&'static str, &'static str)>,
    /// Why the identity is inferred or missing.
    note: Option<String>,
}

/// Per-preset names, from each model's Hugging Face `config.json` (`architectures`)
/// and torchtitan's `torchtitan/models/*/__init__.py` flavors.
fn preset_identity(id: &str) -> Option<Identity> {
    let (hf_repo, layer_class, torchtitan) = match id {
        "llama-3.1-8b" => (
            "meta-llama/Llama-3.1-8B",
            "LlamaDecoderLayer",
            Some(("llama3", "8B")),
        ),
        "llama-3.1-70b" => (
            "meta-llama/Llama-3.1-70B",
            "LlamaDecoderLayer",
            Some(("llama3", "70B")),
        ),
        "llama-3.1-405b" => (
            "meta-llama/Llama-3.1-405B",
            "LlamaDecoderLayer",
            Some(("llama3", "405B")),
        ),
        "mixtral-8x7b" => ("mistralai/Mixtral-8x7B-v0.1", "MixtralDecoderLayer", None),
        "mixtral-8x22b" => ("mistralai/Mixtral-8x22B-v0.1", "MixtralDecoderLayer", None),
        "deepseek-v3" => (
            "deepseek-ai/DeepSeek-V3",
            "DeepseekV3DecoderLayer",
            Some(("deepseek_v3", "671B")),
        ),
        "qwen2.5-72b" => ("Qwen/Qwen2.5-72B", "Qwen2DecoderLayer", None),
        "mistral-7b-v0.1" => ("mistralai/Mistral-7B-v0.1", "MistralDecoderLayer", None),
        "gemma-2-9b" => ("google/gemma-2-9b", "Gemma2DecoderLayer", None),
        "gpt-oss-120b" => ("openai/gpt-oss-120b", "GptOssDecoderLayer", None),
        "gpt-oss-20b" => ("openai/gpt-oss-20b", "GptOssDecoderLayer", None),
        "llama-3.2-1b" => ("meta-llama/Llama-3.2-1B", "LlamaDecoderLayer", None),
        "llama-3.2-3b" => ("meta-llama/Llama-3.2-3B", "LlamaDecoderLayer", None),
        "llama-4-scout" => (
            "meta-llama/Llama-4-Scout-17B-16E",
            "Llama4TextDecoderLayer",
            None,
        ),
        "qwen3-0.6b" => ("Qwen/Qwen3-0.6B", "Qwen3DecoderLayer", None),
        "qwen3-1.7b" => ("Qwen/Qwen3-1.7B", "Qwen3DecoderLayer", None),
        "qwen3-4b" => ("Qwen/Qwen3-4B", "Qwen3DecoderLayer", None),
        "qwen3-8b" => ("Qwen/Qwen3-8B", "Qwen3DecoderLayer", None),
        "qwen3-14b" => ("Qwen/Qwen3-14B", "Qwen3DecoderLayer", None),
        "qwen3-32b" => ("Qwen/Qwen3-32B", "Qwen3DecoderLayer", None),
        "qwen3-30b-a3b" => ("Qwen/Qwen3-30B-A3B", "Qwen3MoeDecoderLayer", None),
        "qwen3-235b-a22b" => ("Qwen/Qwen3-235B-A22B", "Qwen3MoeDecoderLayer", None),
        "deepseek-r1" => (
            "deepseek-ai/DeepSeek-R1",
            "DeepseekV3DecoderLayer",
            Some(("deepseek_v3", "671B")),
        ),
        "gemma-3-1b" => ("google/gemma-3-1b-pt", "Gemma3DecoderLayer", None),
        "gemma-3-4b" => ("google/gemma-3-4b-pt", "Gemma3DecoderLayer", None),
        "gemma-3-12b" => ("google/gemma-3-12b-pt", "Gemma3DecoderLayer", None),
        "gemma-3-27b" => ("google/gemma-3-27b-pt", "Gemma3DecoderLayer", None),
        "kimi-k2" => ("moonshotai/Kimi-K2-Base", "DeepseekV3DecoderLayer", None),
        _ => return None,
    };
    Some(Identity {
        hf_repo: Some(hf_repo),
        layer_class: Some(layer_class),
        torchtitan,
        note: None,
    })
}

/// Shapes only: a custom spec equal to a preset's shapes is that architecture.
fn same_shapes(a: &ModelSpec, b: &ModelSpec) -> bool {
    let strip = |m: &ModelSpec| ModelSpec {
        name: String::new(),
        mtp_layers: 0,
        nominal_params: None,
        ..m.clone()
    };
    strip(a) == strip(b)
}

fn identity(scenario: &Scenario, model: &ModelSpec) -> Identity {
    let unknown = |why: String| Identity {
        hf_repo: None,
        layer_class: None,
        torchtitan: None,
        note: Some(why),
    };
    match &scenario.model {
        ModelChoice::Preset(id) => preset_identity(id).unwrap_or_else(|| {
            unknown(format!(
                "Preset '{id}' has no public Hugging Face checkpoint or decoder-layer class known \
                 to meshplan: fill in <hf-model-id> and <DecoderLayerClass>."
            ))
        }),
        ModelChoice::Custom(spec) => {
            let matched = model_presets()
                .into_iter()
                .find(|p| same_shapes(&p.spec, spec))
                .and_then(|p| preset_identity(p.id).map(|i| (p.id, i)));
            match matched {
                Some((id, mut i)) => {
                    i.note = Some(format!(
                        "Custom model '{}' has the shapes of preset '{id}'; its Hugging Face repo \
                         and layer class are used. Change them if your checkpoint differs.",
                        one_line(&model.name)
                    ));
                    i
                }
                None => unknown(format!(
                    "Custom model '{}': fill in <hf-model-id> (checkpoint) and \
                     <DecoderLayerClass> (the transformer block class to wrap).",
                    one_line(&model.name)
                )),
            }
        }
    }
}

/// Everything the generators share.
struct Ctx<'a> {
    s: &'a Scenario,
    m: &'a ModelSpec,
    /// The model's name as one inert line: it lands in comments and notes of every format.
    name: String,
    identity: Identity,
    /// GPUs the training layout occupies.
    world: u64,
    /// Nodes and processes per node for `world`, or why they do not split evenly.
    nodes: Result<(u64, u64), String>,
    /// Gradient-accumulation steps `global / (micro × dp)`, or why it is not whole.
    accumulation: Result<u64, String>,
}

impl<'a> Ctx<'a> {
    fn new(s: &'a Scenario, m: &'a ModelSpec) -> Self {
        let l = &s.layout;
        let world = l.world_size().max(1);
        let gpn = u64::from(s.cluster.gpus_per_node.max(1));
        let nodes = if world <= gpn {
            Ok((1, world))
        } else if world.is_multiple_of(gpn) {
            Ok((world / gpn, gpn))
        } else {
            Err(format!(
                "The layout's {world} GPUs are not a whole number of {gpn}-GPU nodes; \
                 launchers start the same number of processes on every node."
            ))
        };
        let per_step = u64::from(l.micro_batch.max(1)) * u64::from(l.dp.max(1));
        let global = u64::from(s.training.global_batch);
        let accumulation = if global % per_step == 0 && global > 0 {
            Ok(global / per_step)
        } else {
            Err(format!(
                "Global batch {global} is not a multiple of micro-batch × DP = {} × {} = {per_step}; \
                 frameworks require it to be (the plan rounds the micro-batch count up to {}).",
                l.micro_batch,
                l.dp,
                global.div_ceil(per_step).max(1)
            ))
        };
        Ctx {
            s,
            m,
            name: one_line(&m.name),
            identity: identity(s, m),
            world,
            nodes,
            accumulation,
        }
    }

    fn hf_repo(&self) -> String {
        // Quoted: the placeholder lands in shell commands, where `<` would redirect.
        self.identity
            .hf_repo
            .map_or_else(|| "\"<hf-model-id>\"".to_string(), shell_word)
    }

    fn layer_class(&self) -> &'static str {
        self.identity.layer_class.unwrap_or("<DecoderLayerClass>")
    }

    fn is_moe(&self) -> bool {
        self.m.moe.is_some()
    }

    /// Model-parallel degrees above 1, as "TP 8, PP 4".
    fn model_parallel(&self) -> Vec<String> {
        let l = &self.s.layout;
        [("TP", l.tp), ("PP", l.pp), ("CP", l.cp), ("EP", l.ep)]
            .into_iter()
            .filter(|(_, d)| *d > 1)
            .map(|(n, d)| format!("{n} {d}"))
            .collect()
    }

    /// Notes on a precision recipe that plain `bf16` settings do not express.
    fn precision_notes(&self, notes: &mut Vec<String>, tool: &str) {
        match self.s.precision.recipe {
            PrecisionRecipe::MixedAdam | PrecisionRecipe::MixedAdamFp32Grads => {}
            PrecisionRecipe::Bf16NoMaster => notes.push(format!(
                "Pure BF16 without fp32 master weights is not a {tool} setting: the optimizer \
                 must be built on bf16 parameters in the training script."
            )),
            PrecisionRecipe::Fp8Bf16Master => notes.push(format!(
                "FP8 compute is not set here for {tool}: it needs Transformer Engine or \
                 torchao float8 in the training script."
            )),
            PrecisionRecipe::Fp8BlockBf16Master
            | PrecisionRecipe::Mxfp8Bf16Master
            | PrecisionRecipe::Nvfp4Bf16Master => notes.push(format!(
                "{} is a Transformer Engine recipe ({}) that {tool} does not set: run it under \
                 Megatron-LM or TE's `fp8_autocast(fp8_recipe=...)` in the training script.",
                self.s.precision.recipe.id(),
                te_recipe_class(self.s.precision.recipe)
            )),
            PrecisionRecipe::Bf16Pure => notes.push(format!(
                "Pure BF16 with BF16 Adam moments is not a {tool} setting: load the model in \
                 bfloat16 and build torch.optim.AdamW on it without autocast in the training script."
            )),
            PrecisionRecipe::Adam8Bit => notes.push(format!(
                "8-bit Adam is not a {tool} option: create the optimizer from bitsandbytes \
                 (e.g. bnb.optim.AdamW8bit) in the training script."
            )),
        }
    }
}

/// Transformer Engine's recipe class for a block-scaled recipe
/// (transformer_engine/common/recipe/__init__.py).
fn te_recipe_class(recipe: PrecisionRecipe) -> &'static str {
    match recipe {
        PrecisionRecipe::Fp8BlockBf16Master => "Float8BlockScaling",
        PrecisionRecipe::Mxfp8Bf16Master => "MXFP8BlockScaling",
        PrecisionRecipe::Nvfp4Bf16Master => "NVFP4BlockScaling",
        _ => "DelayedScaling",
    }
}

/// Why `recipe` cannot run on `gpu`'s tensor cores, if it cannot: MXFP8 needs MX-format tensor
/// cores (Blackwell; TE `MXFP8BlockScaling` checks compute capability 10.0+), NVFP4 needs NVFP4
/// ones (Blackwell).
fn recipe_hardware_note(
    recipe: PrecisionRecipe,
    gpu: &crate::input::hardware::GpuSpec,
) -> Option<String> {
    use crate::input::gpu_traits::Fp4Formats;
    let formats = gpu.traits().sheet.fp4_formats;
    let runs = match recipe {
        PrecisionRecipe::Mxfp8Bf16Master => formats != Fp4Formats::None,
        PrecisionRecipe::Nvfp4Bf16Master => formats == Fp4Formats::NvFp4AndMxFp4,
        _ => true,
    };
    (!runs).then(|| {
        format!(
            "{} needs {} tensor cores, which {} does not have: Transformer Engine refuses the \
             recipe there; the plan prices its GEMMs at the {} rate.",
            recipe.id(),
            if recipe == PrecisionRecipe::Mxfp8Bf16Master {
                "MX-format"
            } else {
                "NVFP4"
            },
            gpu.name,
            if recipe == PrecisionRecipe::Mxfp8Bf16Master {
                "FP8"
            } else {
                "BF16"
            }
        )
    })
}

fn shell_line(out: &mut String, parts: &[String]) {
    let _ = writeln!(out, "{}", parts.join(" \\\n  "));
}

/// The planner's layout errors (heads over TP, layers over PP, sequence over 2·CP, ...),
/// which these frameworks check at start-up too. The batch rule is reported by each
/// generator with the numbers it needs.
fn layout_errors(c: &Ctx, tool: &str, notes: &mut Vec<String>) {
    for v in crate::resolve::validate::layout_rule_violations(c.m, c.s) {
        if v.is_error() && v.rule != "batch_divisible_by_dp_mbs" {
            let hint = if v.rule == "layers_divisible_by_pp" && tool == "Megatron-LM" {
                " (choose an uneven stage split: first/last stage layers, embedding and loss \
                 counted as layers, or layers per chunk)"
            } else {
                ""
            };
            notes.push(format!(
                "{tool} will not start this layout: {}{hint}.",
                v.message
            ));
        }
    }
}

/// `torchrun` flags for the layout's nodes, or why they do not split evenly.
/// Tensor × pipeline GPUs of one serving replica.
fn replica_gpus(c: &Ctx) -> u64 {
    u64::from(c.s.serving.tp.max(1)) * u64::from(c.s.serving.pp.max(1))
}

/// The `--quantization` flag vLLM and SGLang take for served weights in `dtype`, with the notes
/// a format needs (the checkpoint it needs, a GPU without the format's tensor cores). Both read
/// the method from a pre-quantized checkpoint's `quantization_config`; the flag names it
/// (vLLM model_executor/layers/quantization `QUANTIZATION_METHODS`: "fp8", "modelopt_fp4",
/// "mxfp4"; SGLang srt/layers/quantization likewise).
fn quantization_flag(
    notes: &mut Vec<String>,
    dtype: ServeDtype,
    gpu: &crate::input::hardware::GpuSpec,
    tool: &str,
) -> Option<&'static str> {
    let flag = match dtype {
        ServeDtype::Fp8 => Some("fp8"),
        ServeDtype::Fp8Block => {
            notes.push(format!(
                "Block-scaled FP8 weights (128 × 128) come from a checkpoint that carries them \
                 (`weight_block_size` in its quantization_config, as DeepSeek-V3/R1's); {tool} \
                 reads the blocks from it, it does not make them."
            ));
            Some("fp8")
        }
        ServeDtype::Nvfp4 => Some("modelopt_fp4"),
        ServeDtype::Mxfp4 | ServeDtype::Mxfp4Moe => Some("mxfp4"),
        ServeDtype::Mxfp8 => {
            notes.push(format!(
                "MXFP8 weights: no {tool} --quantization name selects them; serve a checkpoint \
                 whose quantization_config names MXFP8 (compressed-tensors, Quark) and {tool} \
                 reads it from there."
            ));
            None
        }
        _ => None,
    };
    if let Some(format) = dtype.format().filter(|f| f.is_fp4()) {
        if !format.gemm_rate(gpu).1 {
            notes.push(format!(
                "{} has no tensor cores for {}: {tool} dequantizes the weights in the GEMM \
                 (W4A16), priced at the BF16 rate; some {tool} versions refuse the format on it.",
                gpu.name,
                dtype.id().to_ascii_uppercase()
            ));
        }
    }
    flag
}

fn weight_quant_note(notes: &mut Vec<String>, dtype: ServeDtype, tool: &str) {
    if matches!(
        dtype,
        ServeDtype::Int8 | ServeDtype::Int4 | ServeDtype::Int4G128
    ) {
        notes.push(format!(
            "{} weights need a pre-quantized checkpoint (GPTQ, AWQ or compressed-tensors); \
             {tool} reads the method from its config, so no --quantization flag is written. \
             Replace the model id with that checkpoint.",
            dtype.id().to_ascii_uppercase()
        ));
    }
}
