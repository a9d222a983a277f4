//! Framework exports of a scenario: the launch line and configuration files that
//! run the planned layout in torchrun, Accelerate (FSDP2), DeepSpeed, Megatron-LM,
//! torchtitan, vLLM and SGLang.
//!
//! Each generator writes only options its tool has; where the tool cannot express
//! part of the plan (ZeRO-1 in FSDP, TP in DeepSpeed alone, ...) the export says so
//! in [`Export::notes`] instead of emitting a flag that would mean something else.
//! Values the planner does not know (head-node address, dataset, learning rate) are
//! left as shell variables or `<placeholders>` named for what goes there.

use std::fmt::Write;

use serde::Serialize;

use crate::free_text::{one_line, shell_word, toml_string};
use crate::layout::{Recompute, Schedule, ZeroStage};
use crate::model::{FfnKind, ModelSpec, NormKind};
use crate::precision::{ComputeDtype, PrecisionRecipe};
use crate::presets::model_presets;
use crate::scenario::{ModelChoice, Scenario, ServeDtype};
use crate::serving_search::{Deployment, Pools};
use crate::stage_split::{SplitShape, StageSplit};

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
    /// `vllm serve` command (serving view).
    Vllm,
    /// `sglang.launch_server` command (serving view).
    Sglang,
}

impl ExportFormat {
    /// Every format, in display order (training first, then serving).
    pub const ALL: [ExportFormat; 7] = [
        ExportFormat::Torchrun,
        ExportFormat::Accelerate,
        ExportFormat::Deepspeed,
        ExportFormat::Megatron,
        ExportFormat::Torchtitan,
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
            ExportFormat::Vllm => "vllm_serve.sh",
            ExportFormat::Sglang => "sglang_serve.sh",
        }
    }

    fn language(self) -> &'static str {
        match self {
            ExportFormat::Torchrun
            | ExportFormat::Megatron
            | ExportFormat::Vllm
            | ExportFormat::Sglang => "sh",
            ExportFormat::Accelerate => "yaml",
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
        ExportFormat::Torchrun => torchrun(&ctx),
        ExportFormat::Accelerate => accelerate(&ctx),
        ExportFormat::Deepspeed => deepspeed(&ctx),
        ExportFormat::Megatron => megatron(&ctx),
        ExportFormat::Torchtitan => torchtitan(&ctx),
        ExportFormat::Vllm => vllm(&ctx),
        ExportFormat::Sglang => sglang(&ctx),
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
    notes.extend(crate::finetune::export_notes(
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
            let _ = writeln!(out, "- {}", crate::free_text::markdown_text(n));
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
            PrecisionRecipe::Adam8Bit => notes.push(format!(
                "8-bit Adam is not a {tool} option: create the optimizer from bitsandbytes \
                 (e.g. bnb.optim.AdamW8bit) in the training script."
            )),
        }
    }
}

fn shell_line(out: &mut String, parts: &[String]) {
    let _ = writeln!(out, "{}", parts.join(" \\\n  "));
}

/// The planner's layout errors (heads over TP, layers over PP, sequence over 2·CP, ...),
/// which these frameworks check at start-up too. The batch rule is reported by each
/// generator with the numbers it needs.
fn layout_errors(c: &Ctx, tool: &str, notes: &mut Vec<String>) {
    for v in crate::validate::layout_rule_violations(c.m, c.s) {
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
fn torchrun_flags(c: &Ctx) -> Result<Vec<String>, String> {
    let (nnodes, nproc) = c.nodes.clone()?;
    let mut flags = vec![
        format!("--nnodes={nnodes}"),
        format!("--nproc-per-node={nproc}"),
    ];
    if nnodes > 1 {
        flags.push("--rdzv-backend=c10d".to_string());
        flags.push("--rdzv-endpoint=$HEAD_NODE_ADDR:29500".to_string());
        flags.push("--rdzv-id=$JOB_ID".to_string());
    } else {
        flags.push("--standalone".to_string());
    }
    Ok(flags)
}

// torchrun: torch/distributed/run.py (`--nnodes`, `--nproc-per-node`, `--rdzv-backend`,
// `--rdzv-endpoint`, `--rdzv-id`); c10d rendezvous per the torchrun docs.
fn torchrun(c: &Ctx) -> (String, Vec<String>) {
    let mut notes = Vec::new();
    let mut out = String::new();
    let l = &c.s.layout;
    let _ = writeln!(
        out,
        "# {} on {} GPUs: DP {} × TP {} × PP {} × CP {}{}. Run on every node.",
        c.name,
        c.world,
        l.dp,
        l.tp,
        l.pp,
        l.cp,
        if l.ep > 1 && l.expert_tp == l.tp {
            format!(" (EP {} inside DP × CP)", l.ep)
        } else if l.ep > 1 {
            // MoE parallel folding (crate::fold): ETP × EP regroup the TP × CP × DP ranks.
            format!(
                " (EP {} × expert-TP {} folded over TP × CP × DP)",
                l.ep, l.expert_tp
            )
        } else {
            String::new()
        }
    );
    let flags = match torchrun_flags(c) {
        Ok(f) => f,
        Err(why) => {
            notes.push(why.clone());
            let _ = writeln!(out, "# Not launchable as planned: {why}");
            return (out, notes);
        }
    };
    if flags.iter().any(|f| f.contains("$HEAD_NODE_ADDR")) {
        let _ = writeln!(out, "export HEAD_NODE_ADDR=\"<head-node-address>\"");
        let _ = writeln!(out, "export JOB_ID=\"<unique-job-id>\"");
    }
    let _ = writeln!(out, "TRAIN_SCRIPT=\"<path/to/train.py>\"");
    if l.tp > 1 {
        let _ = writeln!(
            out,
            "# Megatron/TE order TP communication behind compute only with one hardware queue."
        );
        let _ = writeln!(out, "export CUDA_DEVICE_MAX_CONNECTIONS=1");
    }
    let _ = writeln!(
        out,
        "# Fewer allocator splits: the plan reserves {:.0}% for fragmentation.",
        c.s.overheads.allocator_fraction * 100.0
    );
    let _ = writeln!(
        out,
        "export PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True"
    );
    let mut parts = vec!["torchrun".to_string()];
    parts.extend(flags);
    parts.push("\"$TRAIN_SCRIPT\" \"$@\"".to_string());
    shell_line(&mut out, &parts);
    if c.world < c.s.cluster.world_size() {
        notes.push(format!(
            "The layout uses {} of the cluster's {} GPUs.",
            c.world,
            c.s.cluster.world_size()
        ));
    }
    notes.push(
        "torchrun only starts the processes; the parallel degrees come from the training \
         script's own configuration (see the other exports)."
            .to_string(),
    );
    (out, notes)
}

// Accelerate: docs usage_guides/fsdp and `accelerate config` output
// (src/accelerate/utils/dataclasses.py FullyShardedDataParallelPlugin: fsdp_version,
// fsdp_reshard_after_forward, fsdp_auto_wrap_policy, fsdp_transformer_layer_cls_to_wrap).
fn accelerate(c: &Ctx) -> (String, Vec<String>) {
    let mut notes = Vec::new();
    let l = &c.s.layout;
    let mp = c.model_parallel();
    if !mp.is_empty() {
        notes.push(format!(
            "The plan uses {}; an Accelerate FSDP2 config has only data parallelism (no PP; TP \
             and CP need Accelerate's ParallelismConfig in code). This file runs the DP part \
             over all {} GPUs, which is a different layout: use Megatron-LM or torchtitan for \
             this plan.",
            mp.join(", "),
            c.world
        ));
    }
    let (num_machines, _) = match &c.nodes {
        Ok(n) => *n,
        Err(why) => {
            notes.push(why.clone());
            (
                c.world
                    .div_ceil(u64::from(c.s.cluster.gpus_per_node.max(1))),
                0,
            )
        }
    };
    let mut out = String::new();
    let _ = writeln!(
        out,
        "# accelerate launch --config_file fsdp2.yaml --machine_rank $NODE_RANK <train-script.py>"
    );
    let _ = writeln!(out, "compute_environment: LOCAL_MACHINE");
    let _ = writeln!(out, "debug: false");
    match l.zero {
        ZeroStage::Ddp => {
            let _ = writeln!(out, "# DDP: replicated data parallelism, no FSDP.");
            let _ = writeln!(out, "distributed_type: MULTI_GPU");
        }
        zero => {
            let reshard = match zero {
                ZeroStage::Zero3 => "true",
                _ => "false",
            };
            if zero == ZeroStage::Zero1 {
                notes.push(
                    "FSDP has no ZeRO-1 (optimizer-only sharding): this file uses the closest, \
                     fsdp_reshard_after_forward: false (ZeRO-2: gradients sharded too, so less \
                     memory than planned and the same traffic)."
                        .to_string(),
                );
            }
            let _ = writeln!(out, "distributed_type: FSDP");
            let _ = writeln!(out, "downcast_bf16: 'no'");
            let _ = writeln!(out, "fsdp_config:");
            let full = l.recompute == Recompute::Full;
            let _ = writeln!(out, "  fsdp_activation_checkpointing: {full}");
            let _ = writeln!(out, "  fsdp_auto_wrap_policy: TRANSFORMER_BASED_WRAP");
            let _ = writeln!(out, "  fsdp_cpu_ram_efficient_loading: true");
            let _ = writeln!(out, "  fsdp_offload_params: false");
            let _ = writeln!(
                out,
                "  # true frees gathered weights after forward (ZeRO-3); false keeps them for backward (ZeRO-2)."
            );
            let _ = writeln!(out, "  fsdp_reshard_after_forward: {reshard}");
            let _ = writeln!(out, "  fsdp_state_dict_type: SHARDED_STATE_DICT");
            let _ = writeln!(
                out,
                "  fsdp_transformer_layer_cls_to_wrap: {}",
                c.layer_class()
            );
            let _ = writeln!(out, "  fsdp_version: 2");
        }
    }
    if l.recompute == Recompute::Selective {
        notes.push(
            "Selective recompute has no Accelerate switch (fsdp_activation_checkpointing \
             recomputes whole layers); with flash attention the attention scores are not saved \
             anyway."
                .to_string(),
        );
    }
    if l.recompute == Recompute::Full && l.zero == ZeroStage::Ddp {
        notes.push(
            "Full recompute under DDP: call model.gradient_checkpointing_enable() in the script."
                .to_string(),
        );
    }
    let _ = writeln!(out, "machine_rank: 0");
    if num_machines > 1 {
        let _ = writeln!(out, "main_process_ip: <head-node-address>");
        let _ = writeln!(out, "main_process_port: 29500");
    }
    let _ = writeln!(out, "main_training_function: main");
    let _ = writeln!(out, "mixed_precision: bf16");
    let _ = writeln!(out, "num_machines: {num_machines}");
    let _ = writeln!(out, "num_processes: {}", c.world);
    let _ = writeln!(
        out,
        "rdzv_backend: {}",
        if num_machines > 1 { "c10d" } else { "static" }
    );
    let _ = writeln!(out, "same_network: true");
    let _ = writeln!(out, "tpu_env: []");
    let _ = writeln!(out, "tpu_use_cluster: false");
    let _ = writeln!(out, "tpu_use_sudo: false");
    let _ = writeln!(out, "use_cpu: false");
    match &c.accumulation {
        Ok(a) => notes.push(format!(
            "Batch is set in the script: per-device batch {}, gradient accumulation {a} \
             (global batch {} = {} × {a} × DP {}).",
            l.micro_batch, c.s.training.global_batch, l.micro_batch, l.dp
        )),
        Err(why) => notes.push(why.clone()),
    }
    c.precision_notes(&mut notes, "Accelerate");
    (out, notes)
}

// DeepSpeed: docs/_pages/config-json.md (train_batch_size, train_micro_batch_size_per_gpu,
// gradient_accumulation_steps, bf16.enabled, data_types.grad_accum_dtype, zero_optimization).
fn deepspeed(c: &Ctx) -> (String, Vec<String>) {
    let mut notes = Vec::new();
    let l = &c.s.layout;
    let mp = c.model_parallel();
    if !mp.is_empty() {
        notes.push(format!(
            "The plan uses {}; DeepSpeed's config sets only the ZeRO data-parallel side. TP/PP \
             come from Megatron-DeepSpeed (its --tensor-model-parallel-size / \
             --pipeline-model-parallel-size) with this file as --deepspeed_config.",
            mp.join(", ")
        ));
    }
    let mut root = serde_json::Map::new();
    match &c.accumulation {
        Ok(a) => {
            root.insert("train_batch_size".into(), c.s.training.global_batch.into());
            root.insert(
                "train_micro_batch_size_per_gpu".into(),
                l.micro_batch.into(),
            );
            root.insert("gradient_accumulation_steps".into(), (*a).into());
        }
        Err(why) => {
            notes.push(format!(
                "{why} train_batch_size and gradient_accumulation_steps are left out."
            ));
            root.insert(
                "train_micro_batch_size_per_gpu".into(),
                l.micro_batch.into(),
            );
        }
    }
    root.insert("bf16".into(), serde_json::json!({ "enabled": true }));
    if c.s.precision.grad_bytes >= 4.0 {
        root.insert(
            "data_types".into(),
            serde_json::json!({ "grad_accum_dtype": "fp32" }),
        );
    }
    let bucket_elements = (c.s.overheads.gradient_bucket_bytes / c.s.precision.grad_bytes.max(1.0))
        .round()
        .max(1.0) as u64;
    let mut zero = serde_json::Map::new();
    zero.insert("stage".into(), c.s.layout.zero.number().into());
    if l.zero != ZeroStage::Ddp {
        zero.insert("overlap_comm".into(), true.into());
        zero.insert("contiguous_gradients".into(), true.into());
        zero.insert("reduce_bucket_size".into(), bucket_elements.into());
    }
    root.insert("zero_optimization".into(), zero.into());
    root.insert("gradient_clipping".into(), 1.0.into());
    root.insert("steps_per_print".into(), 10.into());
    let mut out = serde_json::to_string_pretty(&serde_json::Value::Object(root))
        .unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}"));
    out.push('\n');
    if l.recompute != Recompute::None {
        notes.push(format!(
            "{} recompute is done by the model code (e.g. model.gradient_checkpointing_enable() \
             in Hugging Face models), not by this file.",
            if l.recompute == Recompute::Full {
                "Full"
            } else {
                "Selective"
            }
        ));
    }
    notes.push(
        "The optimizer (AdamW, learning rate) is created in the script or added as an \
         \"optimizer\" block."
            .to_string(),
    );
    c.precision_notes(&mut notes, "DeepSpeed");
    (out, notes)
}

// Megatron-LM: megatron/training/arguments.py (_add_network_size_args,
// _add_distributed_args, _add_training_args, _add_moe_args, _add_mla_args).
/// Megatron's flags for an uneven split (megatron/training/arguments.py):
/// `--decoder-first/last-pipeline-num-layers` and `--account-for-embedding/loss-in-pipeline-split`,
/// with `--num-virtual-stages-per-pipeline-rank` when interleaved (the per-chunk layer count
/// flag needs equal chunks); any other split as `--pipeline-model-parallel-layout`, one `|`
/// per chunk in chunk order, `E` before the first chunk's layers and `L` after the last's
/// (megatron/core/transformer/pipeline_parallel_layer_layout.py `parse_str_to_list`).
fn megatron_split_flags(c: &Ctx, par: &mut Vec<String>) {
    let l = &c.s.layout;
    let v = if l.schedule == Schedule::Interleaved {
        l.virtual_stages.max(1)
    } else {
        1
    };
    let interleaved = || (v > 1).then(|| format!("--num-virtual-stages-per-pipeline-rank {v}"));
    match &l.stage_split {
        StageSplit::FirstLast { first, last } => {
            if let Some(f) = first {
                par.push(format!("--decoder-first-pipeline-num-layers {f}"));
            }
            if let Some(n) = last {
                par.push(format!("--decoder-last-pipeline-num-layers {n}"));
            }
            par.extend(interleaved());
        }
        StageSplit::AccountEmbeddingLoss { embedding, loss } => {
            if *embedding {
                par.push("--account-for-embedding-in-pipeline-split".to_string());
            }
            if *loss {
                par.push("--account-for-loss-in-pipeline-split".to_string());
            }
            par.extend(interleaved());
        }
        split => {
            let sh = SplitShape::new(c.m.layers, l.pp, v);
            let chunks = split.chunk_counts(sh, crate::stage_split::MAX_SPLIT_CHUNKS);
            let last = chunks.len().saturating_sub(1);
            let stages: Vec<String> = chunks
                .iter()
                .enumerate()
                .map(|(k, &n)| {
                    let t = match n {
                        0 => String::new(),
                        1 => "t".to_string(),
                        n => format!("t*{n}"),
                    };
                    let e = if k == 0 { "E" } else { "" };
                    let lo = if k == last { "L" } else { "" };
                    format!("{e}{t}{lo}")
                })
                .collect();
            par.push(format!(
                "--pipeline-model-parallel-layout {}",
                shell_word(&stages.join("|"))
            ));
        }
    }
}

fn megatron(c: &Ctx) -> (String, Vec<String>) {
    let mut notes = Vec::new();
    let l = &c.s.layout;
    let m = c.m;
    let t = &c.s.training;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "# Megatron-LM pretrain_gpt.py arguments for {}; DP = world / (TP × PP × CP) = {}.",
        c.name, l.dp
    );
    let _ = writeln!(out, "MEGATRON_ARGS=(");
    let mut group = |title: &str, args: Vec<String>| {
        if args.is_empty() {
            return;
        }
        let _ = writeln!(out, "  # {title}");
        for a in args {
            let _ = writeln!(out, "  {a}");
        }
    };

    let mut par = vec![
        format!("--tensor-model-parallel-size {}", l.tp),
        format!("--pipeline-model-parallel-size {}", l.pp),
        format!("--context-parallel-size {}", l.cp),
    ];
    if c.is_moe() {
        par.push(format!("--expert-model-parallel-size {}", l.ep));
        // Always written: Megatron would otherwise take the TP size (arguments.py).
        par.push(format!("--expert-tensor-parallel-size {}", l.expert_tp));
    } else if l.ep > 1 {
        notes.push(format!(
            "EP {} is ignored: {} has no experts.",
            l.ep, c.name
        ));
    }
    if l.pp > 1 && !l.stage_split.is_even() {
        megatron_split_flags(c, &mut par);
    } else if l.pp > 1 && l.schedule == Schedule::Interleaved && l.virtual_stages > 1 {
        let chunks = l.pp.saturating_mul(l.virtual_stages);
        if m.layers.is_multiple_of(chunks) {
            par.push(format!(
                "--num-layers-per-virtual-pipeline-stage {}",
                m.layers / chunks
            ));
        } else {
            notes.push(format!(
                "{} layers do not split into PP × virtual stages = {chunks} equal chunks; \
                 --num-layers-per-virtual-pipeline-stage is left out.",
                m.layers
            ));
        }
    }
    match l.schedule {
        Schedule::OneFOneB | Schedule::Interleaved => {}
        Schedule::Gpipe if l.pp > 1 => notes.push(
            "Megatron-LM runs 1F1B (or interleaved 1F1B); GPipe is not an option, and 1F1B \
             holds fewer micro-batches of activations than planned."
                .to_string(),
        ),
        Schedule::ZeroBubble if l.pp > 1 => notes.push(
            "Zero-bubble (ZB-H1) is not a Megatron-LM pipeline schedule; it runs 1F1B with a \
             larger bubble than planned."
                .to_string(),
        ),
        _ => {}
    }
    if l.sequence_parallel && l.tp > 1 {
        par.push("--sequence-parallel".to_string());
    } else if l.tp > 1 && c.is_moe() {
        notes.push(
            "Megatron-LM requires --sequence-parallel for MoE with TP > 1; it is not in this \
             plan, so add it (activations shrink below the plan's)."
                .to_string(),
        );
    }
    match l.zero {
        ZeroStage::Ddp => {}
        ZeroStage::Zero1 => par.push("--use-distributed-optimizer".to_string()),
        ZeroStage::Zero2 | ZeroStage::Zero3 => notes.push(format!(
            "{} is not a Megatron-LM option; its closest is --use-distributed-optimizer \
             (ZeRO-1), which holds more memory per GPU than this plan. Re-plan with ZeRO-1, or \
             run the plan with DeepSpeed or FSDP.",
            l.zero.label()
        )),
    }
    group("Parallelism", par);

    let mut rec = Vec::new();
    match l.recompute {
        Recompute::None => {}
        Recompute::Selective => rec.push("--recompute-granularity selective".to_string()),
        Recompute::Full => {
            rec.push("--recompute-granularity full".to_string());
            rec.push("--recompute-method uniform".to_string());
            rec.push("--recompute-num-layers 1".to_string());
        }
    }
    group("Activation recomputation", rec);

    let mut batch = vec![
        format!("--micro-batch-size {}", l.micro_batch),
        format!("--global-batch-size {}", t.global_batch),
        format!("--seq-length {}", t.seq_len),
    ];
    let max_pos = if m.learned_positions > 0 {
        if t.seq_len > m.learned_positions {
            notes.push(format!(
                "Sequence length {} exceeds the model's {} learned positions.",
                t.seq_len, m.learned_positions
            ));
        }
        m.learned_positions
    } else {
        t.seq_len
    };
    batch.push(format!("--max-position-embeddings {max_pos}"));
    if let Err(why) = &c.accumulation {
        notes.push(format!("{why} Megatron-LM asserts on it."));
    }
    group("Batch", batch);

    let mut shape = vec![
        format!("--num-layers {}", m.layers),
        format!("--hidden-size {}", m.hidden),
        format!("--ffn-hidden-size {}", m.ffn),
        format!("--num-attention-heads {}", m.heads),
    ];
    if let Some(mla) = &m.mla {
        shape.push("--multi-latent-attention".to_string());
        if mla.q_lora_rank > 0 {
            shape.push(format!("--q-lora-rank {}", mla.q_lora_rank));
        }
        shape.push(format!("--kv-lora-rank {}", mla.kv_lora_rank));
        shape.push(format!("--qk-head-dim {}", mla.qk_nope_head_dim));
        shape.push(format!("--qk-pos-emb-head-dim {}", mla.qk_rope_head_dim));
        shape.push(format!("--v-head-dim {}", mla.v_head_dim));
    } else {
        if m.heads > 0 && m.head_dim != m.hidden / m.heads {
            shape.push(format!("--kv-channels {}", m.head_dim));
        }
        if m.kv_heads < m.heads {
            shape.push("--group-query-attention".to_string());
            shape.push(format!("--num-query-groups {}", m.kv_heads));
        }
    }
    if m.ffn_kind == FfnKind::SwiGlu {
        shape.push("--swiglu".to_string());
    }
    if m.norm == NormKind::RmsNorm {
        shape.push("--normalization RMSNorm".to_string());
    }
    if m.learned_positions == 0 {
        shape.push("--position-embedding-type rope".to_string());
        let llama31 = c
            .identity
            .hf_repo
            .is_some_and(|r| r.starts_with("meta-llama/Llama-3.1"));
        notes.push(format!(
            "RoPE {} not in meshplan's model: add --rotary-base {}from the model's \
             config.json (rope_theta).",
            if llama31 {
                "base and scaling are"
            } else {
                "base is"
            },
            if llama31 {
                "500000 --use-rope-scaling "
            } else {
                ""
            }
        ));
    } else {
        shape.push("--position-embedding-type learned_absolute".to_string());
    }
    if !m.tied_embeddings {
        shape.push("--untie-embeddings-and-output-weights".to_string());
    }
    if !m.linear_bias {
        shape.push("--disable-bias-linear".to_string());
        if m.qkv_bias {
            shape.push("--add-qkv-bias".to_string());
        }
    }
    if !m.dropout {
        shape.push("--attention-dropout 0.0".to_string());
        shape.push("--hidden-dropout 0.0".to_string());
    }
    group("Model shape", shape);

    if let Some(moe) = &m.moe {
        let mut args = vec![
            format!("--num-experts {}", moe.routed_experts),
            format!("--moe-router-topk {}", moe.experts_per_token),
            format!("--moe-ffn-hidden-size {}", moe.expert_ffn),
        ];
        if moe.shared_experts > 0 {
            args.push(format!(
                "--moe-shared-expert-intermediate-size {}",
                u64::from(moe.shared_experts) * u64::from(moe.expert_ffn)
            ));
        }
        if moe.dense_layers > 0 {
            let dense = moe.dense_layers.min(m.layers);
            args.push(format!(
                "--moe-layer-freq '([0]*{dense}+[1]*{})'",
                m.layers - dense
            ));
        }
        args.push("--moe-token-dispatcher-type alltoall".to_string());
        args.push("--moe-grouped-gemm".to_string());
        notes.push(
            "Router details (score function, expert bias, group-limited routing, aux-loss \
             coefficient) are not in meshplan's model: add the --moe-router-* flags from the \
             model card."
                .to_string(),
        );
        group("Mixture of experts", args);
    }

    let mut prec = vec!["--bf16".to_string()];
    if c.s.precision.compute == ComputeDtype::Fp8 {
        prec.push("--fp8-format hybrid".to_string());
    }
    match c.s.precision.recipe {
        PrecisionRecipe::MixedAdamFp32Grads
        | PrecisionRecipe::Fp8Bf16Master
        | PrecisionRecipe::MixedAdam => {}
        PrecisionRecipe::Bf16NoMaster | PrecisionRecipe::Adam8Bit => {
            c.precision_notes(&mut notes, "Megatron-LM")
        }
    }
    if c.s.precision.recipe == PrecisionRecipe::MixedAdam {
        notes.push(
            "Megatron-LM keeps gradients in fp32 main-grad buffers (the 18 B/param recipe); \
             this plan counts 2-byte gradients. Choose 'mixed-adam-fp32-grads' to plan for \
             Megatron's memory."
                .to_string(),
        );
    }
    if c.s.precision.recipe == PrecisionRecipe::Fp8Bf16Master {
        notes.push(
            "FP8 (--fp8-format hybrid) needs Transformer Engine; Megatron keeps an fp32 master \
             unless told otherwise, more than this recipe's BF16 master."
                .to_string(),
        );
    }
    group("Precision", prec);

    let tokenizer = match c.identity.hf_repo {
        Some(repo) => vec![
            "--tokenizer-type HuggingFaceTokenizer".to_string(),
            format!("--tokenizer-model {repo}"),
        ],
        None => vec![
            "--tokenizer-type HuggingFaceTokenizer".to_string(),
            "--tokenizer-model \"<hf-model-id>\"".to_string(),
        ],
    };
    group("Tokenizer", tokenizer);
    let _ = writeln!(out, ")");
    let _ = writeln!(
        out,
        "# Data, tokenizer files, learning rate and iterations are not planned by meshplan."
    );
    let _ = writeln!(
        out,
        "DATA_AND_OPTIMIZER_ARGS=(--data-path \"<data-prefix>\" --lr \"<lr>\" --train-iters \"<iters>\")"
    );
    if l.tp > 1 {
        let _ = writeln!(out, "export CUDA_DEVICE_MAX_CONNECTIONS=1");
    }
    match torchrun_flags(c) {
        Ok(flags) => {
            if flags.iter().any(|f| f.contains("$HEAD_NODE_ADDR")) {
                let _ = writeln!(
                    out,
                    "# HEAD_NODE_ADDR and JOB_ID as in launch.sh; run on every node."
                );
            }
            let _ = writeln!(out, "TORCHRUN_ARGS=({})", flags.join(" "));
        }
        Err(why) => {
            let _ = writeln!(out, "# Not launchable as planned: {why}");
            let _ = writeln!(out, "TORCHRUN_ARGS=()");
        }
    }
    let _ = writeln!(
        out,
        "torchrun \"${{TORCHRUN_ARGS[@]}}\" pretrain_gpt.py \"${{MEGATRON_ARGS[@]}}\" \"${{DATA_AND_OPTIMIZER_ARGS[@]}}\""
    );
    notes.push(format!(
        "Megatron pads the vocabulary ({}) to a multiple of 128 × TP for the embedding split.",
        m.vocab
    ));
    (out, notes)
}

// torchtitan: torchtitan/config/job_config.py (Parallelism, Training, ActivationCheckpoint);
// schedule names from torch/distributed/pipelining/schedules.py get_schedule_class.
fn torchtitan(c: &Ctx) -> (String, Vec<String>) {
    let mut notes = Vec::new();
    let l = &c.s.layout;
    let m = c.m;
    let mut out = String::new();
    let _ = writeln!(out, "# torchtitan: {} on {} GPUs", c.name, c.world);
    // torchtitan/config/job_config.py Job.description: the run's label in its logs.
    let _ = writeln!(out, "[job]");
    let _ = writeln!(out, "description = {}", toml_string(&m.name));
    let _ = writeln!(out);
    let _ = writeln!(out, "[model]");
    match c.identity.torchtitan {
        Some((name, flavor)) => {
            let _ = writeln!(out, "name = {}", toml_string(name));
            let _ = writeln!(out, "flavor = {}", toml_string(flavor));
        }
        None => {
            let _ = writeln!(out, "name = \"<torchtitan-model-name>\"");
            let _ = writeln!(out, "flavor = \"<flavor>\"");
            notes.push(format!(
                "torchtitan ships no model definition for {}: register one (a TrainSpec) and \
                 name it here.",
                c.name
            ));
        }
    }
    let _ = writeln!(out);

    let (replicate, shard, reshard) = match l.zero {
        ZeroStage::Ddp => (l.dp, 1, None),
        ZeroStage::Zero1 => {
            notes.push(
                "FSDP has no ZeRO-1: the data-parallel group is sharded with \
                 fsdp_reshard_after_forward = \"never\" (ZeRO-2, less memory than planned, same \
                 traffic)."
                    .to_string(),
            );
            (1, l.dp, Some("never"))
        }
        ZeroStage::Zero2 => (1, l.dp, Some("never")),
        ZeroStage::Zero3 => (1, l.dp, Some("always")),
    };
    let _ = writeln!(out, "[parallelism]");
    let _ = writeln!(out, "data_parallel_replicate_degree = {replicate}");
    let _ = writeln!(out, "data_parallel_shard_degree = {shard}");
    if let Some(r) = reshard {
        let _ = writeln!(out, "fsdp_reshard_after_forward = {}", toml_string(r));
    }
    let _ = writeln!(out, "tensor_parallel_degree = {}", l.tp);
    if l.tp > 1 && !l.sequence_parallel {
        notes.push(
            "torchtitan's tensor parallelism always shards norms and dropout over the sequence \
             (sequence parallelism on); activations will be smaller than planned."
                .to_string(),
        );
    }
    let _ = writeln!(out, "pipeline_parallel_degree = {}", l.pp);
    if l.pp > 1 {
        let (name, chunks) = match l.schedule {
            Schedule::Gpipe => ("GPipe", 1),
            Schedule::OneFOneB => ("1F1B", 1),
            Schedule::Interleaved => ("Interleaved1F1B", l.virtual_stages.max(1)),
            Schedule::ZeroBubble => {
                notes.push(
                    "ZB-H1 on one stage per rank is not a torch.distributed.pipelining schedule; \
                     the closest, InterleavedZeroBubble, needs two or more stages per rank."
                        .to_string(),
                );
                ("InterleavedZeroBubble", l.virtual_stages.max(2))
            }
        };
        let _ = writeln!(out, "pipeline_parallel_schedule = {}", toml_string(name));
        if !l.stage_split.is_even() {
            torchtitan_split(c, chunks, &mut out);
        } else if chunks > 1 {
            let stages = l.pp.saturating_mul(chunks);
            if m.layers.is_multiple_of(stages) {
                let _ = writeln!(
                    out,
                    "pipeline_parallel_layers_per_stage = {}",
                    m.layers / stages
                );
            } else {
                notes.push(format!(
                    "{} layers do not split into {stages} equal stages; set \
                     pipeline_parallel_layers_per_stage by hand.",
                    m.layers
                ));
            }
        }
        let _ = writeln!(out, "pipeline_parallel_microbatch_size = {}", l.micro_batch);
    }
    let _ = writeln!(out, "context_parallel_degree = {}", l.cp);
    if c.is_moe() {
        let _ = writeln!(out, "expert_parallel_degree = {}", l.ep);
        let _ = writeln!(out, "expert_tensor_parallel_degree = {}", l.expert_tp);
        if l.ep > 1 {
            torchtitan_ep_notes(c, shard, &mut notes);
        }
    } else if l.ep > 1 {
        notes.push(format!(
            "EP {} is ignored: {} has no experts.",
            l.ep, c.name
        ));
    }
    if l.zero == ZeroStage::Ddp && l.cp > 1 {
        notes.push(format!(
            "torchtitan shards parameters over the CP ranks whenever CP > 1 (FSDP over \
             data_parallel_shard × CP), so DDP with CP {} holds less than planned.",
            l.cp
        ));
    }
    let _ = writeln!(out);

    let _ = writeln!(out, "[training]");
    // With PP the whole per-rank batch is one step split into micro-batches; without it,
    // one micro-batch per step and gradient accumulation makes up the global batch.
    let local = if l.pp > 1 {
        match &c.accumulation {
            Ok(a) => u64::from(l.micro_batch) * a,
            Err(_) => u64::from(l.micro_batch),
        }
    } else {
        u64::from(l.micro_batch)
    };
    let _ = writeln!(out, "local_batch_size = {local}");
    let _ = writeln!(out, "global_batch_size = {}", c.s.training.global_batch);
    let _ = writeln!(out, "seq_len = {}", c.s.training.seq_len);
    if let Err(why) = &c.accumulation {
        notes.push(why.clone());
    }
    let _ = writeln!(out, "mixed_precision_param = \"bfloat16\"");
    let _ = writeln!(out, "mixed_precision_reduce = \"float32\"");
    let _ = writeln!(out);

    let _ = writeln!(out, "[activation_checkpoint]");
    match l.recompute {
        Recompute::None => {
            let _ = writeln!(out, "mode = \"none\"");
        }
        Recompute::Selective => {
            let _ = writeln!(out, "mode = \"selective\"");
            let _ = writeln!(out, "selective_ac_option = \"op\"");
            notes.push(
                "torchtitan's selective checkpointing (\"op\") saves matmul outputs and \
                 recomputes the rest; it is close to, not the same as, Korthikanti et al.'s \
                 attention-core recompute that the plan counts."
                    .to_string(),
            );
        }
        Recompute::Full => {
            let _ = writeln!(out, "mode = \"full\"");
        }
    }
    c.precision_notes(&mut notes, "torchtitan");
    (out, notes)
}

/// torchtitan's EP constraints (job_config.py `expert_parallel_degree`); with expert-TP 1:
/// the EP group is cut from data_parallel_shard × CP × TP, so EP must be a multiple of
/// CP × TP and divide that product; DDP (replicate only) has no EP.
/// torchtitan's options for an uneven split: `pipeline_parallel_first/last_stage_less_layers`
/// when the plan uses torchtitan's own rule, and in every case the modules of each stage,
/// `module_fqns_per_model_part` (torchtitan/config/job_config.py; stage `k` of the looped
/// schedules is chunk `k`, `pp_rank + s · pp_degree`), which states the split exactly.
fn torchtitan_split(c: &Ctx, chunks: u32, out: &mut String) {
    let l = &c.s.layout;
    if let StageSplit::LessLayers { first, last } = &l.stage_split {
        let _ = writeln!(out, "pipeline_parallel_first_stage_less_layers = {first}");
        let _ = writeln!(out, "pipeline_parallel_last_stage_less_layers = {last}");
    }
    let sh = SplitShape::new(c.m.layers, l.pp, chunks);
    let counts = l
        .stage_split
        .chunk_counts(sh, crate::stage_split::MAX_SPLIT_CHUNKS);
    let last = counts.len().saturating_sub(1);
    let mut next = 0u64;
    let _ = writeln!(out, "module_fqns_per_model_part = [");
    for (k, &n) in counts.iter().enumerate() {
        let mut names: Vec<String> = Vec::new();
        if k == 0 {
            names.push(toml_string("tok_embeddings"));
        }
        for i in next..next + u64::from(n) {
            names.push(toml_string(&format!("layers.{i}")));
        }
        next += u64::from(n);
        if k == last {
            names.push(toml_string("norm"));
            names.push(toml_string("output"));
        }
        let _ = writeln!(out, "  [{}],", names.join(", "));
    }
    let _ = writeln!(out, "]");
}

fn torchtitan_ep_notes(c: &Ctx, shard: u32, notes: &mut Vec<String>) {
    let l = &c.s.layout;
    if shard <= 1 && l.dp > 1 {
        notes.push(
            "torchtitan cuts expert parallelism out of the sharded data-parallel group; with \
             DDP (replicate only) EP is not available: use ZeRO-2/3."
                .to_string(),
        );
        return;
    }
    if l.expert_tp != 1 {
        // torchtitan/distributed/parallel_dims.py: `etp == tp or etp == 1`; with etp == tp
        // EP borrows all of CP and part of data_parallel_shard.
        let (cp, ep) = (u64::from(l.cp.max(1)), u64::from(l.ep));
        let pool = u64::from(shard.max(1)).saturating_mul(cp);
        if l.expert_tp == l.tp && (!ep.is_multiple_of(cp) || !pool.is_multiple_of(ep)) {
            notes.push(format!(
                "With expert_tensor_parallel_degree = TP torchtitan needs EP to be a multiple of \
                 CP = {cp} and to divide data_parallel_shard × CP = {pool}; EP {ep} is not, so \
                 torchtitan will refuse this layout."
            ));
        } else if l.expert_tp != l.tp {
            notes.push(format!(
                "torchtitan accepts expert_tensor_parallel_degree 1 or TP ({}); expert-TP {} is \
                 neither, so torchtitan will refuse this layout.",
                l.tp, l.expert_tp
            ));
        }
        return;
    }
    let cp_tp = u64::from(l.cp.max(1)) * u64::from(l.tp.max(1));
    let pool = u64::from(shard.max(1)).saturating_mul(cp_tp);
    let ep = u64::from(l.ep);
    if !ep.is_multiple_of(cp_tp) || !pool.is_multiple_of(ep) {
        notes.push(format!(
            "With expert_tensor_parallel_degree = 1 torchtitan needs EP to be a multiple of \
             CP × TP = {cp_tp} and to divide data_parallel_shard × CP × TP = {pool}; EP {ep} is \
             not, so torchtitan will refuse this layout."
        ));
    } else if l.tp > 1 {
        notes.push(
            "torchtitan's EP group takes in the TP ranks (expert-TP 1), as Megatron's does with \
             expert-TP 1: each GPU holds the same share of the experts as planned."
                .to_string(),
        );
    }
}

/// Tensor × pipeline GPUs of one serving replica.
fn replica_gpus(c: &Ctx) -> u64 {
    u64::from(c.s.serving.tp.max(1)) * u64::from(c.s.serving.pp.max(1))
}

fn weight_quant_note(notes: &mut Vec<String>, dtype: ServeDtype, tool: &str) {
    if matches!(dtype, ServeDtype::Int8 | ServeDtype::Int4) {
        notes.push(format!(
            "{} weights need a pre-quantized checkpoint (GPTQ, AWQ or compressed-tensors); \
             {tool} reads the method from its config, so no --quantization flag is written. \
             Replace the model id with that checkpoint.",
            dtype.id().to_uppercase()
        ));
    }
}

// vLLM: vllm/engine/arg_utils.py EngineArgs (--tensor-parallel-size, --pipeline-parallel-size,
// --max-model-len, --gpu-memory-utilization, --kv-cache-dtype, --quantization, --max-num-seqs).
fn vllm(c: &Ctx) -> (String, Vec<String>) {
    let (parts, notes) = vllm_parts(c);
    let mut out = String::new();
    shell_line(&mut out, &parts);
    (out, notes)
}

fn vllm_parts(c: &Ctx) -> (Vec<String>, Vec<String>) {
    let mut notes = Vec::new();
    let sv = &c.s.serving;
    let mut parts = vec![
        format!("vllm serve {}", c.hf_repo()),
        format!("--tensor-parallel-size {}", sv.tp),
        format!("--pipeline-parallel-size {}", sv.pp),
        format!("--max-model-len {}", sv.context_len),
        format!("--gpu-memory-utilization {}", sv.memory_utilization),
        format!("--max-num-seqs {}", sv.target_concurrency),
        "--dtype bfloat16".to_string(),
    ];
    match sv.kv_dtype {
        ServeDtype::Bf16 => {}
        ServeDtype::Fp8 => parts.push("--kv-cache-dtype fp8".to_string()),
        other => notes.push(format!(
            "An {} KV cache is not a vLLM --kv-cache-dtype choice (auto, fp8); the cache stays \
             in the model dtype, larger than planned.",
            other.id().to_uppercase()
        )),
    }
    if sv.weight_dtype == ServeDtype::Fp8 {
        parts.push("--quantization fp8".to_string());
    }
    if let Some(p) = &sv.engine_profile {
        // The pool was sized for a profiling run of this many tokens (engine_kv_pool).
        parts.push(format!(
            "--max-num-batched-tokens {}",
            p.max_num_batched_tokens
        ));
        if p.max_num_seqs != sv.target_concurrency {
            notes.push(format!(
                "The plan's KV pool assumed vLLM profiles its sampler at {} sequences;                  --max-num-seqs here is the target concurrency {}, so vLLM's pool differs by                  the sampler's logits if that is the larger transient.",
                p.max_num_seqs, sv.target_concurrency
            ));
        }
    }
    weight_quant_note(&mut notes, sv.weight_dtype, "vLLM");
    let gpn = u64::from(c.s.cluster.gpus_per_node.max(1));
    if replica_gpus(c) > gpn {
        parts.push("--distributed-executor-backend ray".to_string());
        notes.push(format!(
            "One replica spans {} GPUs, more than a {gpn}-GPU node: start a Ray cluster over \
             the nodes first and run this on the head node.",
            replica_gpus(c)
        ));
    }
    if c.is_moe() {
        notes.push(
            "vLLM slices experts over TP by default; --enable-expert-parallel places whole \
             experts instead (EP size = TP × DP)."
                .to_string(),
        );
    }
    notes.push(
        "vLLM's --gpu-memory-utilization bounds weights, KV cache and activations together, \
         like the plan's memory_utilization."
            .to_string(),
    );
    (parts, notes)
}

// SGLang: python/sglang/srt/server_args.py ServerArgs (--tp-size, --pp-size, --context-length,
// --mem-fraction-static, --kv-cache-dtype, --quantization, --max-running-requests,
// --nnodes/--node-rank/--dist-init-addr).
fn sglang(c: &Ctx) -> (String, Vec<String>) {
    let (parts, notes) = sglang_parts(c);
    let mut out = String::new();
    shell_line(&mut out, &parts);
    (out, notes)
}

/// `--mem-fraction-static`: the plan's SGLang fraction (set, or SGLang's default for the
/// TP degree) when the plan sizes the pool as SGLang does; else the vLLM utilization.
fn sglang_fraction(sv: &crate::scenario::Serving) -> f64 {
    match sv.engine {
        crate::engine_kv_pool::ServingEngine::Sglang => {
            crate::engine_kv_pool::memory_fraction(sv, sv.tp)
        }
        crate::engine_kv_pool::ServingEngine::Vllm => sv.memory_utilization,
    }
}

fn sglang_parts(c: &Ctx) -> (Vec<String>, Vec<String>) {
    let mut notes = Vec::new();
    let sv = &c.s.serving;
    let mut parts = vec![
        "python -m sglang.launch_server".to_string(),
        format!("--model-path {}", c.hf_repo()),
        format!("--tp-size {}", sv.tp),
        format!("--pp-size {}", sv.pp),
        format!("--context-length {}", sv.context_len),
        format!("--mem-fraction-static {}", sglang_fraction(sv)),
        format!("--max-running-requests {}", sv.target_concurrency),
        "--dtype bfloat16".to_string(),
    ];
    match sv.kv_dtype {
        ServeDtype::Bf16 => {}
        ServeDtype::Fp8 => parts.push("--kv-cache-dtype fp8_e4m3".to_string()),
        other => notes.push(format!(
            "An {} KV cache is not an SGLang --kv-cache-dtype choice (auto, fp8_e4m3, \
             fp8_e5m2); the cache stays in the model dtype, larger than planned.",
            other.id().to_uppercase()
        )),
    }
    if sv.weight_dtype == ServeDtype::Fp8 {
        parts.push("--quantization fp8".to_string());
    }
    weight_quant_note(&mut notes, sv.weight_dtype, "SGLang");
    let gpn = u64::from(c.s.cluster.gpus_per_node.max(1));
    let gpus = replica_gpus(c);
    if gpus > gpn {
        let nodes = gpus.div_ceil(gpn);
        parts.push(format!("--nnodes {nodes}"));
        parts.push("--node-rank $NODE_RANK".to_string());
        parts.push("--dist-init-addr $HEAD_NODE_ADDR:50000".to_string());
        notes.push(format!(
            "One replica spans {nodes} nodes: run this on each with NODE_RANK 0..{} and \
             HEAD_NODE_ADDR set to node 0.",
            nodes - 1
        ));
    }
    if c.is_moe() {
        notes.push(
            "SGLang slices experts over TP by default; --ep-size places whole experts instead."
                .to_string(),
        );
    }
    notes.push(
        "SGLang's --mem-fraction-static covers weights and KV cache only; activations and \
         CUDA graphs use the rest, so the same number leaves less headroom than in vLLM."
            .to_string(),
    );
    (parts, notes)
}

/// The launch commands of a serving deployment found by
/// [`serve_search`](crate::serving_search::serve_search): one engine command per pool, with
/// the deployment's TP, PP, batch (`concurrency`), prefill chunk, expert parallelism and,
/// for disaggregated pools, the engine's KV-transfer settings. `None` for training formats.
pub fn deployment_export(
    format: ExportFormat,
    scenario: &Scenario,
    model: &ModelSpec,
    deployment: &Deployment,
    prefill_chunk_tokens: u32,
) -> Option<Export> {
    let parts_of = match format {
        ExportFormat::Vllm => vllm_parts,
        ExportFormat::Sglang => sglang_parts,
        _ => return None,
    };
    let shaped = |tp: u32, pp: u32| {
        let mut s = scenario.clone();
        s.serving.tp = tp;
        s.serving.pp = pp;
        s.serving.target_concurrency = deployment.concurrency;
        s
    };
    let ep = deployment.expert_parallel && model.moe.is_some();
    let mut out = String::new();
    let mut notes = Vec::new();
    let pools: Vec<(Option<&str>, u32, u32, u32)> = match deployment.pools {
        Pools::Aggregated { tp, pp, replicas } => vec![(None, tp, pp, replicas)],
        Pools::Disaggregated(d) => vec![
            (
                Some("prefill"),
                d.prefill.tp,
                d.prefill.pp,
                d.prefill.replicas,
            ),
            (Some("decode"), d.decode.tp, d.decode.pp, d.decode.replicas),
        ],
    };
    for (role, tp, pp, replicas) in pools {
        let s = shaped(tp, pp);
        let ctx = Ctx::new(&s, model);
        let (mut parts, pool_notes) = parts_of(&ctx);
        parts.extend(deployment_flags(format, role, tp, ep, prefill_chunk_tokens));
        if notes.is_empty() {
            notes = pool_notes;
            if let Some(n) = &ctx.identity.note {
                notes.insert(0, n.clone());
            }
        }
        let what = role.map_or_else(|| "replica".to_string(), |r| format!("{r} instance"));
        let _ = writeln!(
            out,
            "# {what}: run {replicas} of these, TP {tp} × PP {pp} = {} GPUs each",
            u64::from(tp) * u64::from(pp)
        );
        shell_line(&mut out, &parts);
    }
    notes.push(match (format, deployment.pools) {
        (_, Pools::Aggregated { replicas, .. }) => format!(
            "{replicas} independent replicas: put a load balancer in front; each holds \
             {} requests at once (--max-num-seqs / --max-running-requests).",
            deployment.concurrency
        ),
        (ExportFormat::Vllm, _) => "vLLM disaggregated prefill (docs/features/disagg_prefill.md, \
             nixl_connector_usage.md): every instance runs NixlConnector with kv_role kv_both; \
             a proxy sends each request to a prefill instance with max_tokens 1, then to a decode \
             instance (examples/disaggregated/ toy_proxy_server.py). vLLM marks the feature \
             experimental."
            .to_string(),
        _ => "SGLang PD disaggregation (docs/advanced_features/pd_disaggregation.md): start the \
             router over the instances, python -m sglang_router.launch_router --pd-disaggregation \
             --prefill http://PREFILL_HOST:30000 --decode http://DECODE_HOST:30001; the \
             mooncake backend moves the KV over RDMA (--disaggregation-ib-device names the NICs)."
            .to_string(),
    });
    Some(Export {
        id: format.id(),
        label: format.label(),
        file_name: format.file_name(),
        language: format.language(),
        text: out,
        notes,
    })
}

// vLLM: vllm/engine/arg_utils.py EngineArgs (--max-num-batched-tokens, the chunked-prefill budget;
// --enable-expert-parallel; --kv-transfer-config with vllm/config/kv_transfer.py KVTransferConfig).
// SGLang: python/sglang/srt/server_args.py ServerArgs (--chunked-prefill-size, --ep-size,
// --disaggregation-mode prefill|decode, --disaggregation-transfer-backend, default mooncake,
// --disaggregation-bootstrap-port, default 8998).
fn deployment_flags(
    format: ExportFormat,
    role: Option<&str>,
    tp: u32,
    ep: bool,
    chunk_tokens: u32,
) -> Vec<String> {
    let mut v = Vec::new();
    if format == ExportFormat::Vllm {
        v.push(format!("--max-num-batched-tokens {chunk_tokens}"));
        if ep {
            v.push("--enable-expert-parallel".to_string());
        }
        if let Some(r) = role {
            v.push(format!(
                "--port {}",
                if r == "prefill" { 8100 } else { 8200 }
            ));
            v.push(format!(
                "--kv-transfer-config {}",
                shell_word(r#"{"kv_connector":"NixlConnector","kv_role":"kv_both"}"#)
            ));
        }
    } else {
        v.push(format!("--chunked-prefill-size {chunk_tokens}"));
        if ep {
            v.push(format!("--ep-size {tp}"));
        }
        if let Some(r) = role {
            let (mode, port) = if r == "prefill" {
                ("prefill", 30000)
            } else {
                ("decode", 30001)
            };
            v.push(format!("--port {port}"));
            v.push(format!("--disaggregation-mode {mode}"));
            v.push("--disaggregation-transfer-backend mooncake".to_string());
            if mode == "prefill" {
                v.push("--disaggregation-bootstrap-port 8998".to_string());
            }
        }
    }
    v
}
