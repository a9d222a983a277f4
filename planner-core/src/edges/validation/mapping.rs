//! A training row as a scenario ([`map_run`], [`MappedRun`]): its layout, cluster, model,
//! precision, schedule and overheads, each field the row leaves unsaid taking a default that is
//! listed; and the dataset's GPU names as presets ([`dataset_gpu_preset`]).

use serde::{Deserialize, Serialize};

use crate::input::framework::Framework;
use crate::input::hardware::{gpu_preset, gpu_preset_for_device, Cluster, GpuSpec};
use crate::input::intra_node_link::IntraNodeLink;
use crate::input::kernels::Kernels;
use crate::input::layout::{Layout, Recompute, Schedule, ZeroStage};
use crate::input::model::ModelSpec;
use crate::input::overlap::OverlapChoice;
use crate::input::precision::{Precision, PrecisionRecipe};
use crate::input::scenario::{
    ActivationOptions, ModelChoice, Overheads, Scenario, Serving, Training, SCENARIO_VERSION,
};

use super::dataset::{PublishedRun, Quantity, RunPrecision, RunRecompute, RunSchedule};
use super::models::{known_model_key, resolve_model};
use super::recipes::{
    default_micro_batch, expert_tp_of, family, moe_routing_of, published_split, recipe_overlap,
    row_framework, Family,
};

/// A row as a scenario, with what was assumed to get there.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MappedRun {
    /// The scenario evaluated.
    pub scenario: Scenario,
    /// Where the model's shapes came from.
    pub model_source: String,
    /// Fields the source leaves unsaid and the value used for each.
    pub defaults: Vec<String>,
    /// Mapping choices that are not defaults of unsaid fields (approximations, overrides).
    pub notes: Vec<String>,
}

/// The GPU names of the published datasets (`public-runs.json`, `serving-runs.json`) and
/// the [`gpu_preset`] id of each.
pub const DATASET_GPUS: [(&str, &str); 5] = [
    ("A100-80GB", "a100-80gb"),
    ("H100-80GB", "h100-sxm"),
    ("H100-96GB", "h100-96gb"),
    ("H200", "h200"),
    ("MI300X", "mi300x"),
];

/// The [`gpu_preset`] id of a dataset's GPU name: a name of [`DATASET_GPUS`] exactly, a
/// preset's own id (any case, `_` or space for `-`: `B200`, `GB200-NVL72`, `MI325X`), or a
/// device name as the driver prints it (`NVIDIA H800`, `H100 SXM5 80GB`, `L40S-48GB`,
/// `A800-80GB`, [`gpu_preset_for_device`]), so a dataset from elsewhere is representable on
/// every GPU that has a preset. `None` for the PCIe and NVL versions of SXM parts (other
/// clocks, power and links than the SXM presets describe; GB200 NVL72 excepted; a card sold
/// only for PCIe, such as the L40S, is its preset) and for GPUs without a preset.
pub fn dataset_gpu_preset(gpu_type: &str) -> Option<String> {
    if let Some((_, id)) = DATASET_GPUS.iter().find(|(name, _)| *name == gpu_type) {
        return Some((*id).to_string());
    }
    let normalized: String = gpu_type
        .trim()
        .chars()
        .map(|c| match c {
            '_' | ' ' => '-',
            c => c.to_ascii_lowercase(),
        })
        .collect();
    if let Some(g) = gpu_preset(&normalized) {
        return Some(g.id);
    }
    let other_part = normalized.contains("pcie")
        || (normalized.contains("nvl") && !normalized.contains("gb200"));
    let g = gpu_preset_for_device(&normalized)?;
    let pcie_card = g.intra_node_link() == IntraNodeLink::Pcie;
    (!other_part || pcie_card).then_some(g.id)
}

/// The data-parallel degree of a row's layout: `dp` as given when dp × tp × pp × cp is the
/// row's GPU count; for an MoE row whose source counts its expert-parallel ranks apart
/// (dp × tp × pp × cp × ep = GPUs, as DeepSeek-V3's report lists "EP64" beside its DP), dp × ep,
/// since Megatron-Core draws the expert-parallel group from the data-parallel ranks
/// (`--expert-model-parallel-size` divides the data-parallel size; MoE parallel folding), and
/// the note says so. Any other product names the fields.
fn layout_dp(run: &PublishedRun, notes: &mut Vec<String>) -> Result<u32, String> {
    // Each degree is at most MAX_GPUS (10^6), so a product of four or five can exceed u64:
    // checked, a product that overflows is simply not the row's GPU count.
    let product = |degrees: &[u32]| {
        degrees
            .iter()
            .try_fold(1u64, |acc, &d| acc.checked_mul(u64::from(d)))
    };
    let gpus = u64::from(run.gpus);
    if product(&[run.dp, run.tp, run.pp, run.cp]) == Some(gpus) {
        return Ok(run.dp);
    }
    if run.ep > 1 && product(&[run.dp, run.tp, run.pp, run.cp, run.ep]) == Some(gpus) {
        let dp = run.dp.saturating_mul(run.ep);
        notes.push(format!(
            "dp × tp × pp × cp × ep = {gpus} GPUs: the row counts EP apart from DP; the attention data-parallel degree is dp × ep = {dp}, EP drawn from it (Megatron-Core MoE parallel folding)"
        ));
        return Ok(dp);
    }
    let world = product(&[run.dp, run.tp, run.pp, run.cp])
        .map_or_else(|| "more than 2^64".to_string(), |w| w.to_string());
    Err(format!(
        "dp × tp × pp × cp = {} × {} × {} × {} = {world} differs from the row's {} GPUs",
        run.dp, run.tp, run.pp, run.cp, run.gpus
    ))
}

/// The GPUs a job places in each NVLink domain when the domain is rack-scale (more than the
/// 8 GPUs of a server: GB200 NVL72's trays of 4) and `gpus` does not fill whole domains: the
/// largest divisor of `gpus` that fits in one domain and is a whole number of 4-GPU trays
/// (NVIDIA GB200 NVL72 datasheet: 18 compute trays of 4 GPUs). `None` for server-sized
/// nodes, where a job that is not whole nodes is not laid out.
fn rack_share(gpus: u32, domain: u32) -> Option<u32> {
    const TRAY_GPUS: u32 = 4;
    if domain <= 8 {
        return None;
    }
    (TRAY_GPUS..=domain)
        .rev()
        .find(|d| d.is_multiple_of(TRAY_GPUS) && gpus.is_multiple_of(*d))
}

fn on_off(on: bool) -> &'static str {
    if on {
        "on"
    } else {
        "off"
    }
}

/// Maps one row to a scenario, or says why the model cannot express it.
pub fn map_run(run: &PublishedRun) -> Result<MappedRun, String> {
    let gpu = row_gpu(run)?;
    let mut notes = Vec::new();
    let dp = layout_dp(run, &mut notes)?;
    let mut defaults = Vec::new();
    let global_batch = global_batch_of(run, dp, &mut defaults);
    if run.layout_mismatch {
        return Err(
            "layout_mismatch: the source's layout differs from the one the row lists".to_string(),
        );
    }

    let fam = family(&run.source);
    if run.seq_len_assumed == Some(true) {
        defaults.push(format!(
            "seq_len not stated by the source: {} (the dataset's inferred value)",
            run.seq()
        ));
    }
    let (model_choice, spec, model_source) = row_model(run, &mut defaults, &mut notes)?;
    if run.ep > 1 && spec.moe.is_none() {
        return Err(format!("ep = {} for a dense model", run.ep));
    }
    let cluster = row_cluster(run, gpu, &mut notes)?;
    let stack = super::stack::row_stack(run, &mut defaults, &mut notes)?;
    let zero = zero_stage_of(run, fam, &mut defaults);
    let distributed_optimizer = !run.fsdp
        && run.zero_stage.is_none()
        && matches!(fam, Family::MegatronCore | Family::Bloom);
    let recipe = match stack.recipe {
        Some(r) => r,
        // A BF16 model trained without autocast: torch.optim.AdamW keeps BF16 moments.
        None if run.amp == Some(false) && run.precision == Some(RunPrecision::Bf16) => {
            PrecisionRecipe::Bf16Pure
        }
        None => precision_recipe_of(run, fam, distributed_optimizer, &mut defaults, &mut notes),
    };
    let framework = stack.framework.unwrap_or_else(|| row_framework(run, fam));
    let (schedule, virtual_stages) = schedule_of(run, &mut defaults, &mut notes);
    let micro_batch = match run.micro_batch {
        Some(b) => b,
        None => default_micro_batch(run, fam, global_batch, dp, &mut defaults),
    };
    let recompute = recompute_of(run, fam, &mut defaults);
    let sequence_parallel = sequence_parallel_of(run, fam, &mut defaults);
    let expert_tp = expert_tp_of(run, &mut defaults);
    let flash_attention = flash_attention_of(fam, &mut notes);
    let kernels = kernels_of(run, fam, &mut defaults);
    let layout = Layout {
        dp,
        tp: run.tp,
        pp: run.pp,
        cp: run.cp,
        ep: run.ep,
        expert_tp,
        virtual_stages,
        micro_batch,
        schedule,
        zero,
        recompute,
        sequence_parallel,
        stage_split: published_split(run, spec.layers, virtual_stages, &mut notes),
    };
    // The serving view is not compared; its replica must fit the cluster to validate.
    let serve_tp = [8u32, 4, 2, 1]
        .into_iter()
        .find(|t| u64::from(*t) <= cluster.world_size())
        .unwrap_or(1);
    let runtime = Overheads::for_gpu(&cluster.gpu.id);
    let overlap = overlap_of(run, fam, &mut defaults);
    let moe_routing = moe_routing_of(run, spec.moe.is_some(), &mut defaults);
    let scenario = Scenario {
        version: SCENARIO_VERSION,
        model: model_choice,
        precision: Precision::from_recipe(recipe),
        cluster,
        training: Training {
            seq_len: run.seq(),
            global_batch,
            finetune: stack.finetune,
            offload: stack.offload,
            packing: false,
        },
        layout,
        activations: ActivationOptions {
            flash_attention,
            ..ActivationOptions::default()
        },
        overheads: Overheads {
            framework,
            kernels,
            overlap,
            moe_routing,
            // The published run fit its device: fits are checked against the capacity the device
            // reports (issue 12, "Capacity as the device has it"), with every runtime term that
            // PyTorch holds beyond the tensors counted in the peak (CUDA context, NCCL buffers,
            // cuBLAS workspaces, the allocator's reserved-over-allocated gap: runtime_memory.rs),
            // not against the planner's uncited 90% planning margin.
            usable_fraction: 1.0,
            // CUDA context, NCCL buffers and cuBLAS workspaces as measured (runtime_memory).
            ..runtime
        },
        serving: Serving {
            tp: serve_tp,
            ..Serving::default()
        },
        calibration: None,
        bill: Default::default(),
    };
    Ok(MappedRun {
        scenario,
        model_source,
        defaults,
        notes,
    })
}

/// The GPU of a training row, after the checks that come before any mapping: no unknown
/// keys, a stated sequence length, a GPU with a preset.
fn row_gpu(run: &PublishedRun) -> Result<GpuSpec, String> {
    if !run.other_keys.is_empty() {
        let keys: Vec<&str> = run.other_keys.keys().map(String::as_str).collect();
        return Err(format!(
            "keys this reader does not know: {} (the row may mean something the model would ignore)",
            keys.join(", ")
        ));
    }
    if run.seq_len.is_none() {
        return Err("seq_len is null: a training row needs its sequence length".to_string());
    }
    let Some(gpu_id) = dataset_gpu_preset(&run.gpu_type) else {
        return Err(format!("no GPU preset for gpu_type '{}'", run.gpu_type));
    };
    let Some(gpu) = gpu_preset(&gpu_id) else {
        return Err(format!("GPU preset '{gpu_id}' is missing"));
    };
    Ok(gpu)
}

/// The sequences per step of a row, its frameworks' default when it does not state them.
fn global_batch_of(run: &PublishedRun, dp: u32, defaults: &mut Vec<String>) -> u32 {
    let per_layer = run.quantity == Quantity::PerLayerFwdBwdMs;
    match run.global_batch_seqs {
        Some(b) => b,
        // One micro-batch per data-parallel rank. A per-layer row times one layer on one
        // micro-batch (time/layer_time.rs), so its step needs no more; any other row takes the
        // frameworks' own default, no gradient accumulation: Megatron-LM sets
        // `--global-batch-size` to micro-batch × data-parallel size when it is not given
        // (megatron/training/arguments.py `validate_args`); torchtitan's
        // `training.global_batch_size` defaults to the local batch × the data-parallel degree.
        None => {
            let b = run
                .micro_batch
                .unwrap_or(1)
                .max(1)
                .saturating_mul(dp.max(1));
            let why = if per_layer {
                "one micro-batch per data-parallel rank; the row times one layer on one micro-batch"
            } else {
                "no gradient accumulation, Megatron-LM's and torchtitan's default"
            };
            defaults.push(format!(
                "global_batch_seqs not stated: dp × micro-batch = {b} ({why})"
            ));
            b
        }
    }
}

/// The row's model ([`resolve_model`]), with the MTP module a Megatron-Bridge DeepSeek-V3 row
/// trains.
fn row_model(
    run: &PublishedRun,
    defaults: &mut Vec<String>,
    notes: &mut Vec<String>,
) -> Result<(ModelChoice, ModelSpec, String), String> {
    let (mut model_choice, mut spec, model_source) = resolve_model(run, defaults, notes)?;
    // Megatron-Bridge 25.09 recipes/deepseek/deepseek_v3.py trains with `mtp_num_layers = 1`
    // (its default; scripts/performance/run_script.py keeps it and lays it out as "...mL").
    if run.source.starts_with("MBridge") && known_model_key(&run.model_name) == Some("deepseek-v3")
    {
        spec.mtp_layers = 1;
        spec.name = format!("{} + 1 MTP module", spec.name);
        model_choice = ModelChoice::Custom(spec.clone());
        defaults.push("MTP not stated by the row: 1 module (Megatron-Bridge deepseek_v3 recipe mtp_num_layers = 1), on the last pipeline stage; model FLOPs count it as Megatron's num_floating_point_operations does (one more MoE layer, the 2h·h projection, logits × 2)".to_string());
    }
    Ok((model_choice, spec, model_source))
}

/// The row's cluster: whole nodes of the preset's 8 GPUs; a smaller run is one node of its
/// GPUs; a rack-scale NVLink domain not filled whole is split into equal parts.
fn row_cluster(
    run: &PublishedRun,
    gpu: GpuSpec,
    notes: &mut Vec<String>,
) -> Result<Cluster, String> {
    let gpn = gpu.gpus_per_node.max(1);
    let (nodes, per_node) = if run.gpus < gpn {
        notes.push(format!(
            "{} GPUs: one node of {} GPUs (NVLink inside)",
            run.gpus, run.gpus
        ));
        (1, run.gpus)
    } else if run.gpus.is_multiple_of(gpn) {
        (run.gpus / gpn, gpn)
    } else if let Some(per_rack) = rack_share(run.gpus, gpn) {
        // A rack-scale NVLink domain (GB200 NVL72: 18 trays of 4 GPUs) is not filled whole:
        // a 128-GPU job runs as 2 × 64 in two racks, each part inside one NVLink domain.
        notes.push(format!(
            "{} GPUs on {gpn}-GPU NVLink domains: {} domains of {per_rack} GPUs each",
            run.gpus,
            run.gpus / per_rack
        ));
        (run.gpus / per_rack, per_rack)
    } else {
        return Err(format!(
            "{} GPUs is not a whole number of {gpn}-GPU nodes",
            run.gpus
        ));
    };
    let mut cluster = Cluster::of(gpu, nodes);
    cluster.gpus_per_node = per_node;
    let tensor_share = cluster.gpu.traits().compute.tensor_fraction_at_power_limit;
    if tensor_share < 1.0 {
        notes.push(format!(
            "tensor work at {tensor_share:.3} of the datasheet rates: the GPU's power limit (input/power_limit.rs, the vendor's ratings between the H100 NVL at 400 W and the SXM at 700 W)"
        ));
    }
    Ok(cluster)
}

/// The row's ZeRO stage: FSDP is ZeRO-3; an unstated stage is its family's default.
fn zero_stage_of(run: &PublishedRun, fam: Family, defaults: &mut Vec<String>) -> ZeroStage {
    if run.fsdp {
        ZeroStage::Zero3
    } else if let Some(z) = run.zero_stage {
        ZeroStage::from_number(z).unwrap_or(ZeroStage::Ddp)
    } else {
        match fam {
            Family::MegatronCore => {
                defaults.push("zero_stage not stated: ZeRO-1 (Megatron-Core/NeMo distributed optimizer, fp32 gradient buffers)".to_string());
                ZeroStage::Zero1
            }
            Family::MegatronPaper => {
                defaults.push("zero_stage not stated: none, DDP (Megatron-LM of Narayanan 2021 / Korthikanti 2022)".to_string());
                ZeroStage::Ddp
            }
            // DeepSpeed's BF16_Optimizer (deepspeed/runtime/bf16_optimizer.py) partitions the
            // fp32 master weights and Adam state over DP and reduces the full fp32 gradient
            // (`get_grads_for_reduction` returns `fp32_groups_gradients_flat`): ZeRO-1 with fp32
            // gradients.
            Family::Bloom => {
                defaults.push("zero_stage not stated: ZeRO-1 (DeepSpeed BF16_Optimizer: fp32 master and Adam state partitioned, fp32 gradients reduced)".to_string());
                ZeroStage::Zero1
            }
            Family::Torchtitan | Family::Other => {
                defaults.push("zero_stage not stated: none, DDP".to_string());
                ZeroStage::Ddp
            }
        }
    }
}

/// The row's precision recipe: its stated precision (or its family's default), with fp32
/// gradient buffers under the distributed optimizer.
fn precision_recipe_of(
    run: &PublishedRun,
    fam: Family,
    distributed_optimizer: bool,
    defaults: &mut Vec<String>,
    notes: &mut Vec<String>,
) -> PrecisionRecipe {
    let precision_used = match run.precision {
        Some(p) => p,
        None => {
            match fam {
                Family::MegatronPaper => {
                    defaults.push("precision not stated (16-bit mixed): BF16-rate recipe (A100 FP16 and BF16 peaks are equal)".to_string());
                    RunPrecision::Bf16
                }
                _ if run.source.starts_with("MBridge") => {
                    defaults.push("precision not stated per row: fp8 (the dataset's notes: FP8 likely, inferred)".to_string());
                    RunPrecision::Fp8
                }
                _ => {
                    defaults.push("precision not stated: bf16".to_string());
                    RunPrecision::Bf16
                }
            }
        }
    };
    let recipe = match precision_used {
        RunPrecision::Fp8 => PrecisionRecipe::Fp8Bf16Master,
        RunPrecision::Fp16 | RunPrecision::Bf16 if distributed_optimizer => {
            PrecisionRecipe::MixedAdamFp32Grads
        }
        RunPrecision::Fp16 | RunPrecision::Bf16 => PrecisionRecipe::MixedAdam,
    };
    if precision_used == RunPrecision::Fp8 && distributed_optimizer {
        notes.push("FP8 recipe (13 B/param, 2-byte gradients) used although the distributed optimizer keeps fp32 gradient buffers".to_string());
    }
    recipe
}

/// The row's pipeline schedule and virtual stages per rank.
fn schedule_of(
    run: &PublishedRun,
    defaults: &mut Vec<String>,
    notes: &mut Vec<String>,
) -> (Schedule, u32) {
    match run.vp {
        None if run.pp > 1 && run.schedule == Some(RunSchedule::Interleaved) => {
            // torchtitan 9dec370 (2024-12) torchtitan/parallelisms/pipelining_utils.py
            // `generate_split_points`: looped schedules (Interleaved1F1B) get 2 stages per rank;
            // the open FSDP + PP stack's default where a source names the schedule only.
            defaults.push("vp not stated for an interleaved schedule: 2 (torchtitan's stages per rank for looped schedules)".to_string());
            (Schedule::Interleaved, 2)
        }
        Some(v) if v >= 2 && run.pp >= 2 => (Schedule::Interleaved, v),
        Some(v) if v >= 2 => {
            notes.push(format!("vp = {v} with pp = 1: no pipeline, vp ignored"));
            (Schedule::OneFOneB, 1)
        }
        Some(_) => (Schedule::OneFOneB, 1),
        None => {
            if run.pp > 1 {
                defaults.push("vp not stated: 1 (non-interleaved 1F1B)".to_string());
            }
            (Schedule::OneFOneB, 1)
        }
    }
}

/// The row's activation recomputation, its family's default when unstated.
fn recompute_of(run: &PublishedRun, fam: Family, defaults: &mut Vec<String>) -> Recompute {
    match run.recompute {
        Some(RunRecompute::None) => Recompute::None,
        Some(RunRecompute::Selective) => Recompute::Selective,
        Some(RunRecompute::Full) => Recompute::Full,
        // DeepSpeedExamples 7c97fe72 (2021-03-08, "Megatron + ZeRO-3"),
        // Megatron-LM-v1.1.5-ZeRO3/examples/ds_pretrain_gpt2-zero3.sh: the Megatron + ZeRO-3
        // recipe of the time passes `--checkpoint-activations` (`--checkpoint-num-layers 1`).
        None if run.fsdp && fam == Family::MegatronPaper => {
            defaults.push("recompute not stated: full (DeepSpeedExamples Megatron-LM-v1.1.5-ZeRO3 ds_pretrain_gpt2-zero3.sh: --checkpoint-activations)".to_string());
            Recompute::Full
        }
        None => {
            defaults.push("recompute not stated: none".to_string());
            Recompute::None
        }
    }
}

/// Whether the row runs sequence parallelism (only with TP), its source's default when unstated.
fn sequence_parallel_of(run: &PublishedRun, fam: Family, defaults: &mut Vec<String>) -> bool {
    match run.sequence_parallel {
        Some(sp) => sp && run.tp > 1,
        None if run.tp <= 1 => false,
        None if run.source.starts_with("Narayanan21") => {
            defaults
                .push("sequence_parallel not stated: off (Narayanan 2021 predates it)".to_string());
            false
        }
        // bigscience-workshop/Megatron-DeepSpeed megatron/arguments.py has no sequence-parallel
        // option: BLOOM's fork predates it.
        None if fam == Family::Bloom => {
            defaults.push(
                "sequence_parallel not stated: off (BLOOM's Megatron-DeepSpeed fork has no such option)"
                    .to_string(),
            );
            false
        }
        None => {
            defaults.push("sequence_parallel not stated: on (tp > 1)".to_string());
            true
        }
    }
}

/// Whether the row's attention is a fused (flash) kernel, for its memory; the note says which.
fn flash_attention_of(fam: Family, notes: &mut Vec<String>) -> bool {
    // BLOOM's ALiBi attention ran Megatron's fused masked softmax (bigscience-workshop/
    // Megatron-DeepSpeed megatron/model/fused_softmax.py), not a fused attention kernel.
    let flash_attention = !matches!(fam, Family::MegatronPaper | Family::Bloom);
    notes.push(format!(
        "flash attention {} (memory only){}",
        if flash_attention { "on" } else { "off" },
        if flash_attention {
            ""
        } else {
            ": the 2021–22 Megatron-LM kept the s × s scores"
        }
    ));
    flash_attention
}

/// The row's kernels: torchtitan rows name eager or torch.compile in their notes ("FSDP eager
/// BF16", "FSDP + torch.compile BF16"); a row that names neither takes the framework's default.
fn kernels_of(run: &PublishedRun, fam: Family, defaults: &mut Vec<String>) -> Kernels {
    if fam != Family::Torchtitan {
        Kernels::FrameworkDefault
    } else if run.notes.contains("torch.compile") {
        Kernels::Compiled
    } else if run.notes.contains("eager") {
        Kernels::Eager
    } else {
        defaults.push("kernels not stated: torchtitan's default, eager".into());
        Kernels::FrameworkDefault
    }
}

/// The row's overlap: its source recipe's ([`recipe_overlap`]), else its framework's
/// defaults spelled out; the default listed either way.
fn overlap_of(run: &PublishedRun, fam: Family, defaults: &mut Vec<String>) -> OverlapChoice {
    match recipe_overlap(run) {
        Some((choice, source)) => {
            let applied = choice.applied(Framework::Article);
            defaults.push(format!(
                "overlap not stated by the row: TP {}, gradient reduce {}, parameter gather {}, EP all-to-all {} ({source})",
                on_off(applied.tp_comm),
                on_off(applied.grad_reduce),
                on_off(applied.param_gather),
                on_off(applied.ep_comm)
            ));
            choice
        }
        None => {
            // torchtitan and BLOOM's DeepSpeed rows take their framework's own overlap; the
            // rest keep the article's.
            let framework = match fam {
                Family::Torchtitan | Family::Bloom => row_framework(run, fam),
                _ => Framework::Article,
            };
            let applied = OverlapChoice::default().applied(framework);
            defaults.push(format!(
                "overlap not found in a published recipe for this source: {} defaults, TP {}, gradient reduce {}, parameter gather {}, EP all-to-all {}",
                if framework == Framework::Torchtitan { "torchtitan's" } else { "the article's" },
                on_off(applied.tp_comm),
                on_off(applied.grad_reduce),
                on_off(applied.param_gather),
                on_off(applied.ep_comm)
            ));
            // Spelled out, so the row's framework (its memory semantics and schedules) does
            // not change what is assumed here.
            OverlapChoice::spelled_out(applied)
        }
    }
}
