//! Megatron-LM: the pretrain_gpt.py flags (parallelism, stage split, MoE, MLA, precision).

use super::torchrun::torchrun_flags;
use super::*;

/// The overlap the plan was priced with ([`crate::input::overlap`]), as Megatron-LM's
/// switches (megatron/training/arguments.py `_add_distributed_args`: `--overlap-grad-reduce`,
/// `--overlap-param-gather`, which needs `--use-distributed-optimizer`; `--tp-comm-overlap`,
/// which needs `--sequence-parallel` and Transformer Engine; `--overlap-moe-expert-parallel-comm`,
/// the combined-1F1B EP all-to-all overlap, whose requirements
/// megatron/core/transformer/transformer_config.py checks and `ep_overlap_blocker` mirrors).
/// All default off there.
fn megatron_overlap_flags(c: &Ctx, par: &mut Vec<String>, notes: &mut Vec<String>) {
    let l = &c.s.layout;
    let applied = c.s.overheads.overlap.applied(c.s.overheads.framework);
    if applied.grad_reduce && u64::from(l.dp) * u64::from(l.cp) > 1 {
        par.push("--overlap-grad-reduce".to_string());
    }
    if applied.param_gather && l.zero == ZeroStage::Zero1 && u64::from(l.dp) * u64::from(l.cp) > 1 {
        par.push("--overlap-param-gather".to_string());
    }
    if applied.tp_comm && l.tp > 1 {
        if l.sequence_parallel {
            par.push("--tp-comm-overlap".to_string());
        } else {
            notes.push(
                "The plan overlaps TP communication, which Megatron-LM does only with \
                 --sequence-parallel (--tp-comm-overlap); add both, or re-plan without the overlap."
                    .to_string(),
            );
        }
    }
    if applied.ep_comm {
        match crate::input::overlap::ep_overlap_blocker(l) {
            None => {
                par.push("--overlap-moe-expert-parallel-comm".to_string());
                notes.push(
                    "EP all-to-all overlap (--overlap-moe-expert-parallel-comm) also needs the \
                     alltoall or flex token dispatcher, BF16/FP16 parameters, at most one MTP \
                     layer, no --moe-shared-expert-overlap and CUDA_DEVICE_MAX_CONNECTIONS > 1 \
                     (megatron/core/transformer/moe/README.md); the MoE README pairs it with \
                     --delay-wgrad-compute."
                        .to_string(),
                );
            }
            Some(why) => notes.push(format!(
                "The plan asks for EP all-to-all overlap, which Megatron-LM cannot run here: {why}; \
                 it was priced without it."
            )),
        }
    }
}

// Megatron-LM: megatron/training/arguments.py (_add_network_size_args,
// _add_distributed_args, _add_training_args, _add_moe_args, _add_mla_args).
/// Megatron's flags for an uneven split (megatron/training/arguments.py):
/// `--decoder-first/last-pipeline-num-layers` and `--account-for-embedding/loss-in-pipeline-split`,
/// with `--num-virtual-stages-per-pipeline-rank` when interleaved (the per-chunk layer count
/// flag needs equal chunks); any other split as `--pipeline-model-parallel-layout`, one `|`
/// per chunk in chunk order, `E` before the first chunk's layers and `L` after the last's
/// (megatron/core/transformer/pipeline_parallel_layer_layout.py `parse_str_to_list`).
pub(super) fn megatron_split_flags(c: &Ctx, par: &mut Vec<String>) {
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
            let chunks = split.chunk_counts(sh, crate::input::stage_split::MAX_SPLIT_CHUNKS);
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
                    // MTP modules ride the last chunk before the loss (layout letter `m`).
                    let lo = if k == last {
                        format!("{}L", "m".repeat(c.m.mtp_layers as usize))
                    } else {
                        String::new()
                    };
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

/// The parallelism flags: group sizes, the pipeline split, sequence parallelism, the
/// distributed optimizer and the overlaps.
fn megatron_parallel_args(c: &Ctx, notes: &mut Vec<String>) -> Vec<String> {
    let l = &c.s.layout;
    let m = c.m;
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
    megatron_overlap_flags(c, &mut par, notes);
    par
}

/// The model-shape flags: sizes, attention kind, FFN, norm, positions, biases, dropout.
fn megatron_shape_args(c: &Ctx, notes: &mut Vec<String>) -> Vec<String> {
    let m = c.m;
    let mut shape = vec![
        format!("--num-layers {}", m.layers),
        format!("--hidden-size {}", m.hidden),
        format!("--ffn-hidden-size {}", m.ffn),
        format!("--num-attention-heads {}", m.heads),
    ];
    // megatron/training/arguments.py `--mtp-num-layers` (DeepSeek-V3 multi-token prediction).
    if m.mtp_layers > 0 {
        shape.push(format!("--mtp-num-layers {}", m.mtp_layers));
    }
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
    shape
}

/// The precision flags and the notes on what Megatron-LM keeps differently.
fn megatron_precision_args(c: &Ctx, notes: &mut Vec<String>) -> Vec<String> {
    let mut prec = vec!["--bf16".to_string()];
    // Megatron-LM megatron/training/arguments.py: --fp8-recipe {delayed, tensorwise, mxfp8,
    // blockwise} (E4M3 throughout for the block-scaled ones), --fp4-format e2m1 with
    // --fp4-recipe nvfp4.
    match c.s.precision.recipe {
        PrecisionRecipe::Fp8BlockBf16Master => {
            prec.push("--fp8-format e4m3 --fp8-recipe blockwise".to_string())
        }
        PrecisionRecipe::Mxfp8Bf16Master => {
            prec.push("--fp8-format e4m3 --fp8-recipe mxfp8".to_string())
        }
        PrecisionRecipe::Nvfp4Bf16Master => {
            prec.push("--fp4-format e2m1 --fp4-recipe nvfp4".to_string())
        }
        _ if c.s.precision.compute == ComputeDtype::Fp8 => {
            prec.push("--fp8-format hybrid".to_string())
        }
        _ => {}
    }
    if let Some(note) = recipe_hardware_note(c.s.precision.recipe, &c.s.cluster.gpu) {
        notes.push(note);
    }
    match c.s.precision.recipe {
        PrecisionRecipe::MixedAdamFp32Grads
        | PrecisionRecipe::Fp8Bf16Master
        | PrecisionRecipe::Fp8BlockBf16Master
        | PrecisionRecipe::Mxfp8Bf16Master
        | PrecisionRecipe::Nvfp4Bf16Master
        | PrecisionRecipe::MixedAdam => {}
        PrecisionRecipe::Bf16NoMaster | PrecisionRecipe::Adam8Bit | PrecisionRecipe::Bf16Pure => {
            c.precision_notes(notes, "Megatron-LM")
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
    prec
}

pub(super) fn megatron(c: &Ctx) -> (String, Vec<String>) {
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

    let par = megatron_parallel_args(c, &mut notes);
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

    let shape = megatron_shape_args(c, &mut notes);
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
        // megatron/training/arguments.py _add_moe_args: --moe-expert-capacity-factor (None:
        // dropless) and --moe-pad-expert-input-to-capacity (alltoall dispatcher only).
        let routing = &c.s.overheads.moe_routing;
        if let Some(cf) = routing.capacity_factor {
            args.push(format!("--moe-expert-capacity-factor {cf}"));
            if routing.pad_to_capacity {
                args.push("--moe-pad-expert-input-to-capacity".to_string());
            }
        }
        if let Some(load) = routing.measured_busiest_load {
            notes.push(format!(
                "The plan prices the busiest EP rank at the measured {load}× the mean routed \
                 tokens; that is an observation of the router, not a flag."
            ));
        }
        notes.push(
            "Router details (score function, expert bias, group-limited routing, aux-loss \
             coefficient) are not in meshplan's model: add the --moe-router-* flags from the \
             model card."
                .to_string(),
        );
        group("Mixture of experts", args);
    }

    let prec = megatron_precision_args(c, &mut notes);
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
