//! torchtitan: the TOML job config (parallelism, pipeline split, activation checkpointing).

use super::*;

// torchtitan: torchtitan/config/job_config.py (Parallelism, Training, ActivationCheckpoint);
// schedule names from torch/distributed/pipelining/schedules.py get_schedule_class.
pub(super) fn torchtitan(c: &Ctx) -> (String, Vec<String>) {
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
    // The TP overlap the plan priced (input/overlap.rs): torchtitan's async TP
    // (job_config.py `Parallelism.enable_async_tensor_parallel`, "currently only effective
    // when compile is enabled", so `[compile] enable` below).
    let async_tp = l.tp > 1
        && c.s
            .overheads
            .overlap
            .applied(c.s.overheads.framework)
            .tp_comm;
    if async_tp {
        let _ = writeln!(out, "enable_async_tensor_parallel = true");
    }
    if l.tp > 1 && !l.sequence_parallel {
        notes.push(
            "torchtitan's tensor parallelism always shards norms and dropout over the sequence \
             (sequence parallelism on); activations will be smaller than planned."
                .to_string(),
        );
    }
    let _ = writeln!(out, "pipeline_parallel_degree = {}", l.pp);
    if l.pp > 1 {
        torchtitan_pipeline(c, &mut out, &mut notes);
    }
    let _ = writeln!(out, "context_parallel_degree = {}", l.cp);
    if c.is_moe() {
        let _ = writeln!(out, "expert_parallel_degree = {}", l.ep);
        let _ = writeln!(out, "expert_tensor_parallel_degree = {}", l.expert_tp);
        if l.ep > 1 {
            torchtitan_ep_notes(c, shard, &mut notes);
        }
        // torchtitan's token-choice MoE routes dropless; its only capacity factor
        // (distributed/deepep/hybridep.py non_blocking_capacity_factor) sizes DeepEP's buffers.
        if let Some(cf) = c.s.overheads.moe_routing.capacity_factor {
            notes.push(format!(
                "Capacity factor {cf} is not expressed: torchtitan's MoE routes without dropping \
                 tokens, so the busiest expert-parallel rank computes more than planned."
            ));
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

    if async_tp {
        // job_config.py `Compile`: components default to the model and the loss.
        let _ = writeln!(out, "[compile]");
        let _ = writeln!(out, "enable = true");
        let _ = writeln!(out);
        notes.push(
            "TP overlap is on in the plan: torchtitan's async TP, which works only under \
             torch.compile (enabled here)."
                .to_string(),
        );
    }

    let _ = writeln!(out, "[activation_checkpoint]");
    torchtitan_activation_checkpoint(l.recompute, &mut out, &mut notes);
    c.precision_notes(&mut notes, "torchtitan");
    (out, notes)
}

/// `[parallelism]`'s pipeline keys: the schedule, the split and the micro-batch size.
fn torchtitan_pipeline(c: &Ctx, out: &mut String, notes: &mut Vec<String>) {
    let l = &c.s.layout;
    let m = c.m;
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
        torchtitan_split(c, chunks, out);
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

/// `[activation_checkpoint]`'s mode.
fn torchtitan_activation_checkpoint(
    recompute: Recompute,
    out: &mut String,
    notes: &mut Vec<String>,
) {
    match recompute {
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
}

/// torchtitan's EP constraints (job_config.py `expert_parallel_degree`); with expert-TP 1:
/// the EP group is cut from data_parallel_shard × CP × TP, so EP must be a multiple of
/// CP × TP and divide that product; DDP (replicate only) has no EP.
/// torchtitan's options for an uneven split: `pipeline_parallel_first/last_stage_less_layers`
/// when the plan uses torchtitan's own rule, and in every case the modules of each stage,
/// `module_fqns_per_model_part` (torchtitan/config/job_config.py; stage `k` of the looped
/// schedules is chunk `k`, `pp_rank + s · pp_degree`), which states the split exactly.
pub(super) fn torchtitan_split(c: &Ctx, chunks: u32, out: &mut String) {
    let l = &c.s.layout;
    if let StageSplit::LessLayers { first, last } = &l.stage_split {
        let _ = writeln!(out, "pipeline_parallel_first_stage_less_layers = {first}");
        let _ = writeln!(out, "pipeline_parallel_last_stage_less_layers = {last}");
    }
    let sh = SplitShape::new(c.m.layers, l.pp, chunks);
    let counts = l
        .stage_split
        .chunk_counts(sh, crate::input::stage_split::MAX_SPLIT_CHUNKS);
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

pub(super) fn torchtitan_ep_notes(c: &Ctx, shard: u32, notes: &mut Vec<String>) {
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
