//! What a row's source ran: its framework family ([`run_framework`]), and the settings its
//! published recipe takes where the row is silent: communication overlap, the pipeline stage
//! split, MoE routing, expert TP and the micro-batch.

use crate::input::framework::Framework;
use crate::input::moe_routing::MoeRouting;
use crate::input::overlap::{OverlapChoice, Switch};
use crate::input::stage_split::StageSplit;

use super::dataset::PublishedRun;
use super::models::normalize_name;

/// Which framework family a source is, for its defaults.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Family {
    /// Narayanan et al. 2021 / Korthikanti et al. 2022: Megatron-LM of 2021–22.
    MegatronPaper,
    /// Megatron-Core, NeMo, Megatron-Bridge: distributed optimizer by default.
    MegatronCore,
    /// torchtitan (FSDP2).
    Torchtitan,
    /// BLOOM-176B's Megatron-DeepSpeed (bigscience-workshop/Megatron-DeepSpeed, 2022): DeepSpeed's
    /// pipeline engine and BF16_Optimizer, Megatron's fused softmax (ALiBi), no sequence parallel.
    Bloom,
    /// Anything else.
    Other,
}

pub(super) fn family(source: &str) -> Family {
    if source.starts_with("Narayanan21") || source.starts_with("Korthikanti22") {
        Family::MegatronPaper
    } else if source.starts_with("Megatron")
        || source.starts_with("NeMo")
        || source.starts_with("MBridge")
    {
        Family::MegatronCore
    } else if source.starts_with("torchtitan") {
        Family::Torchtitan
    } else if source.starts_with("BLOOM") {
        Family::Bloom
    } else {
        Family::Other
    }
}

/// The framework a row ran: torchtitan rows follow torchtitan's loss; Megatron-LM, NeMo and
/// Megatron-Bridge rows Megatron-Core's (and the search proposes only its schedules); the
/// ZeRO-3 rows of Narayanan et al. 2021 DeepSpeed of 2021 ("We integrated ZeRO into our
/// codebase using the DeepSpeed Python library", §5.2 of the paper of April 2021, when
/// DeepSpeed's releases were v0.3.x); the rest keep the article's accounting.
pub(super) fn row_framework(run: &PublishedRun, fam: Family) -> Framework {
    match fam {
        Family::Torchtitan => Framework::Torchtitan,
        Family::MegatronCore => Framework::MegatronCore,
        Family::MegatronPaper if !run.fsdp => Framework::MegatronCore,
        Family::MegatronPaper => Framework::DeepSpeed2021,
        // DeepSpeed's pipeline engine reduces gradients after the last micro-batch
        // (deepspeed/runtime/pipe/schedule.py TrainSchedule: ReduceGrads at the batch's last
        // step), so under DeepSpeed the gradient reduction is not overlapped (input/overlap.rs).
        Family::Bloom => Framework::DeepSpeed,
        Family::Other => Framework::Article,
    }
}

/// The framework whose semantics a row's run follows (the framework of its source).
pub fn run_framework(run: &PublishedRun) -> Framework {
    row_framework(run, family(&run.source))
}

/// How a row's MoE layers route, with the default it states: a Megatron-Bridge 25.09
/// "tokendrop" row runs `apply_moe_token_drop` with its defaults, capacity factor 1.0 and every
/// expert padded to it (scripts/performance/run_script.py at 568b3a3ef, `--use_tokendrop`;
/// src/megatron/bridge/training/utils/moe_token_drop.py); every other MoE row is dropless
/// (Megatron-Core's default, `moe_expert_capacity_factor = None`), priced at random routing's
/// busiest rank. Dense rows route nothing.
pub(super) fn moe_routing_of(
    run: &PublishedRun,
    moe: bool,
    defaults: &mut Vec<String>,
) -> MoeRouting {
    if !moe {
        return MoeRouting::default();
    }
    if run.source.starts_with("MBridge")
        && run.model_name.to_ascii_lowercase().contains("tokendrop")
    {
        defaults.push("MoE routing not stated per row: capacity factor 1.0, padded to capacity (Megatron-Bridge 25.09 run_script.py --use_tokendrop: apply_moe_token_drop defaults)".to_string());
        return MoeRouting {
            capacity_factor: Some(1.0),
            pad_to_capacity: true,
            measured_busiest_load: None,
        };
    }
    defaults.push("MoE routing not stated: dropless (Megatron-Core's default), the busiest EP rank at random routing's expected maximum".to_string());
    MoeRouting::default()
}

/// The overlap a row's source recipe sets, with where it says so; `None` when no published
/// recipe or script for the row was found (the row then keeps its framework's defaults).
pub(super) fn recipe_overlap(run: &PublishedRun) -> Option<(OverlapChoice, &'static str)> {
    let set = |tp: bool, grad: bool, param: bool| OverlapChoice {
        tp_comm: Switch::set(tp),
        grad_reduce: Switch::set(grad),
        param_gather: Switch::set(param),
        ep_comm: Switch::Off,
    };
    let name = normalize_name(&run.model_name);
    let src = run.source.as_str();
    if src == "Megatron README 2024" {
        // Megatron-LM README (f2e5db402c, 2024-07 "New scaling figures on H100"), "Training Speed and Scalability": `--overlap-grad-reduce --overlap-param-gather`, `--tp-comm-overlap`, PP overlap by default.
        return Some((set(true, true, true), "Megatron-LM README 2024 performance section: --overlap-grad-reduce --overlap-param-gather --tp-comm-overlap"));
    }
    if src == "NeMo 24.07" {
        // NeMo-Framework-Launcher tag 24.07 launcher_scripts/conf/training/<family>/<model>.yaml: `optim` distributed_fused_adam with `overlap_grad_sync: True`, `overlap_param_sync: true` in every file; `ub_tp_comm_overlap` True only in gpt3/20b, llama/llama2_70b, llama/llama3_70b, nemotron/nemotron_8b, nemotron/nemotron_22b.
        let tp = matches!(
            name.as_str(),
            "gpt320b" | "llama270b" | "llama370b" | "nemotron8b" | "nemotron22b"
        );
        return Some((
            set(tp, true, true),
            if tp {
                "NeMo-Framework-Launcher 24.07 conf/training yaml: overlap_grad_sync, overlap_param_sync, ub_tp_comm_overlap: True"
            } else {
                "NeMo-Framework-Launcher 24.07 conf/training yaml: overlap_grad_sync, overlap_param_sync; ub_tp_comm_overlap: False"
            },
        ));
    }
    if src == "MBridge 25.09" {
        // Megatron-Bridge v0.1.0rc4 (the 25.09 line): recipes/**.py `DistributedDataParallelConfig(overlap_grad_reduce=True, overlap_param_gather=True)`; scripts/performance/run_script.py passes `CommOverlapConfig(tp_comm_overlap=True)` for qwen3, the llama3_70b / llama31_405b recipes set `tp_comm_overlap=True`, llama3_8b and deepseek_v3 `False`; for deepseek v3 on H100 it sets `comm_overlap.overlap_grad_reduce = False`.
        // The same run_script.py sets `comm_overlap.overlap_moe_expert_parallel_comm = True` and
        // `delay_wgrad_compute = True` for DeepSeek-V3 on H100 (A2A_1F1B); no other row's script does.
        return Some(if name.starts_with("deepseekv3") {
            (
                OverlapChoice {
                    ep_comm: Switch::On,
                    ..set(false, false, true)
                },
                "Megatron-Bridge 25.09 recipes/deepseek/deepseek_v3.py tp_comm_overlap=False; scripts/performance/run_script.py H100: overlap_grad_reduce=False, overlap_moe_expert_parallel_comm=True",
            )
        } else if name.starts_with("llama38b") {
            (
                set(false, true, true),
                "Megatron-Bridge 25.09 recipes/llama/llama3_8b.py: overlap_grad_reduce, overlap_param_gather; tp_comm_overlap=False",
            )
        } else {
            (
                set(true, true, true),
                "Megatron-Bridge 25.09 recipes (DDP overlap_grad_reduce, overlap_param_gather) and CommOverlapConfig tp_comm_overlap=True",
            )
        });
    }
    if src == "Megatron examples/llama" {
        // Megatron-LM examples/llama/train_llama3_8b_h100_fp8.sh: `--overlap-grad-reduce --overlap-param-gather`, no `--tp-comm-overlap`; its README says the 70B/405B rows follow NeMo scripts/performance, whose recipes (NeMo ab020f6a72 llama3_70b.py, llama31_405b.py performance mode) set `MegatronCommOverlapCallback(tp_comm_overlap=True)`, the callback turning DP overlap on for DP > 1.
        return Some(if name.starts_with("llama38b") {
            (
                set(false, true, true),
                "Megatron-LM examples/llama/train_llama3_8b_h100_fp8.sh: --overlap-grad-reduce --overlap-param-gather",
            )
        } else {
            (
                set(true, true, true),
                "NeMo scripts/performance recipes (examples/llama README): MegatronCommOverlapCallback tp_comm_overlap=True, DP overlap for DP > 1",
            )
        });
    }
    None
}

/// The stage split a row's source used when its layers do not divide `pp × vp`, from the
/// source's own recipe; the even split otherwise (or when no source says, which the
/// `stage_split_fits_layers` / `layers_divisible_by_pp` rules then report).
pub(super) fn published_split(
    run: &PublishedRun,
    layers: u32,
    virtual_stages: u32,
    notes: &mut Vec<String>,
) -> StageSplit {
    let chunks = u64::from(run.pp.max(1)) * u64::from(virtual_stages.max(1));
    if run.pp < 2 || u64::from(layers).is_multiple_of(chunks) {
        return StageSplit::Even;
    }
    // The Llama 3 paper (arXiv 2407.21783 §3.3.2): "we reduce one Transformer layer each
    // from the first and the last stages", the embedding and the loss taking their place.
    let megatron = run.source.starts_with("MBridge")
        || run.source.starts_with("Megatron examples")
        || run.source.starts_with("Llama3");
    // BLOOM tr11-176B-ml README: `--pp-partition-method 'type:transformer|embedding'` counts
    // both tied embedding layers as blocks, 70 + 2 = 72 = 12 stages × 6.
    if run.source.starts_with("BLOOM") {
        notes.push("stage split: the two tied embedding layers counted as blocks (BLOOM tr11 --pp-partition-method 'type:transformer|embedding')".to_string());
        return StageSplit::AccountEmbeddingLoss {
            embedding: true,
            loss: true,
        };
    }
    match (megatron, layers, run.pp, virtual_stages) {
        // DeepSeek-V3 at PP 8 × VPP 4: Megatron-Bridge scripts/performance (deepseek_v3
        // H100 1024-GPU config) `--pipeline-model-parallel-layout "Et|(tt|)*30mL"`: the
        // embedding + 1 layer, 30 chunks of 2, and the MTP layer + loss on the last chunk.
        (true, 61, 8, 4) => {
            let mut list = vec![1];
            list.extend([2; 30]);
            list.push(0);
            notes.push("stage split: Megatron-Bridge's layout \"Et|(tt|)*30mL\" (the MTP module and the loss on the last chunk)".to_string());
            StageSplit::Chunks(list)
        }
        // Llama 3.1 405B (126 layers) at PP 8 × VPP 8: Megatron-Bridge recipes/llama/llama3.py
        // `llama31_405b_pretrain_config` sets account_for_embedding_in_pipeline_split and
        // account_for_loss_in_pipeline_split (126 + 2 = 128 = 64 chunks × 2); it is also the only
        // Megatron split short of an explicit layout that puts 126 layers on 8 × 8 chunks.
        (true, 126, _, _) => {
            notes.push("stage split: embedding and loss counted as layers (Megatron-Bridge llama31_405b recipe)".to_string());
            StageSplit::AccountEmbeddingLoss {
                embedding: true,
                loss: true,
            }
        }
        // Qwen3-235B-A22B (94 layers) at PP 8 × VPP 4: Megatron-Bridge
        // recipes/qwen/qwen3_235b_a22b.py `model_config`, which scripts/performance/run_script.py
        // builds through `pretrain_config`, sets account_for_embedding_in_pipeline_split and
        // account_for_loss_in_pipeline_split (94 + 2 = 96 = 32 chunks × 3).
        (true, 94, _, _) => {
            notes.push("stage split: embedding and loss counted as layers (Megatron-Bridge qwen3_235b_a22b recipe)".to_string());
            StageSplit::AccountEmbeddingLoss {
                embedding: true,
                loss: true,
            }
        }
        _ => StageSplit::Even,
    }
}

/// The micro-batch of a row that does not state it: torchtitan's pipeline default splits each
/// data-parallel rank's batch into `pp` micro-batches (torchtitan 9dec370, 2024-12,
/// `pipelining_utils.py` `build_pipeline_schedule`: `n_microbatches = pipeline_parallel_degree`
/// when `pipeline_parallel_microbatches` is None); every other row takes 1.
pub(super) fn default_micro_batch(
    run: &PublishedRun,
    fam: Family,
    global_batch: u32,
    dp: u32,
    defaults: &mut Vec<String>,
) -> u32 {
    let local = global_batch / dp.max(1);
    if fam == Family::Torchtitan && run.pp > 1 && local.is_multiple_of(run.pp) && local > 0 {
        let b = local / run.pp;
        defaults.push(format!(
            "micro_batch not stated: {b} (torchtitan splits the local batch of {local} into pp = {} micro-batches)",
            run.pp
        ));
        return b;
    }
    defaults.push("micro_batch not stated: 1".to_string());
    1
}

/// The expert-TP degree of a row: no row states it, so it takes its recipe's value.
pub(super) fn expert_tp_of(run: &PublishedRun, defaults: &mut Vec<String>) -> u32 {
    if run.ep <= 1 {
        return 1;
    }
    if run.source.starts_with("MBridge") {
        // Megatron-Bridge's MoE performance recipes start from BASE_QWEN3_*_CONFIG /
        // BASE_DEEPSEEK_V3_CONFIG = WorkloadBaseConfig(expert_tensor_parallel_size=1)
        // (NVIDIA-NeMo/Megatron-Bridge scripts/performance/configs/{qwen3,deepseek}/
        // workload_base_configs.py).
        if run.tp > 1 {
            defaults.push(
                "expert_tp not stated: 1 (Megatron-Bridge recipe: expert_tensor_parallel_size=1, scripts/performance/configs/*/workload_base_configs.py)"
                    .to_string(),
            );
        }
        1
    } else {
        // Megatron-LM sets --expert-tensor-parallel-size to the TP size when it is unset
        // (megatron/training/arguments.py).
        if run.tp > 1 {
            defaults.push(format!(
                "expert_tp not stated: {} (Megatron-LM's default, the TP size)",
                run.tp
            ));
        }
        run.tp
    }
}
