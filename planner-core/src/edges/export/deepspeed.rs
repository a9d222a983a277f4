//! DeepSpeed: the config JSON (batch sizes, precision, ZeRO stage) and its launch line.

use super::*;

// DeepSpeed: docs/_pages/config-json.md (train_batch_size, train_micro_batch_size_per_gpu,
// gradient_accumulation_steps, bf16.enabled, data_types.grad_accum_dtype, zero_optimization).
pub(super) fn deepspeed(c: &Ctx) -> (String, Vec<String>) {
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
    let deepspeed_semantics = c.s.overheads.framework.is_deepspeed();
    if l.zero != ZeroStage::Ddp && deepspeed_semantics {
        // The memory view used DeepSpeed's own defaults (memory::deepspeed_zero): write them.
        use crate::memory::deepspeed_zero as ds;
        let mut sizes = vec![
            ("reduce_bucket_size", ds::REDUCE_BUCKET_SIZE_ELEMENTS),
            ("allgather_bucket_size", ds::ALLGATHER_BUCKET_SIZE_ELEMENTS),
        ];
        if l.zero == ZeroStage::Zero3 {
            sizes.extend([
                (
                    "stage3_prefetch_bucket_size",
                    ds::STAGE3_PREFETCH_BUCKET_SIZE_ELEMENTS,
                ),
                ("stage3_max_live_parameters", ds::STAGE3_MAX_LIVE_PARAMETERS),
                (
                    "stage3_param_persistence_threshold",
                    ds::STAGE3_PARAM_PERSISTENCE_THRESHOLD,
                ),
            ]);
        }
        let mut pairs: Vec<(&str, serde_json::Value)> = vec![
            ("overlap_comm", ds::overlap_comm_default(l.zero).into()),
            ("contiguous_gradients", true.into()),
        ];
        pairs.extend(sizes.into_iter().map(|(k, v)| (k, (v as u64).into())));
        for (k, v) in pairs {
            zero.insert(k.into(), v);
        }
    } else if l.zero != ZeroStage::Ddp {
        zero.insert("overlap_comm".into(), true.into());
        zero.insert("contiguous_gradients".into(), true.into());
        zero.insert("reduce_bucket_size".into(), bucket_elements.into());
    }
    crate::edges::offload_export::deepspeed_offload(
        c.s.training.offload,
        l.zero,
        &mut zero,
        &mut notes,
    );
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
