//! Accelerate: the FSDP2 config file and its launch line.

use super::*;

// Accelerate: docs usage_guides/fsdp and `accelerate config` output
// (src/accelerate/utils/dataclasses.py FullyShardedDataParallelPlugin: fsdp_version,
// fsdp_reshard_after_forward, fsdp_auto_wrap_policy, fsdp_transformer_layer_cls_to_wrap).
pub(super) fn accelerate(c: &Ctx) -> (String, Vec<String>) {
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
            let offload_params = crate::edges::offload_export::accelerate_offload_params(
                c.s.training.offload,
                zero,
                &mut notes,
            );
            let _ = writeln!(out, "  fsdp_offload_params: {offload_params}");
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
