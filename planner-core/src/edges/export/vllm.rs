//! vLLM: the `vllm serve` line for the serving plan.

use super::*;

// vLLM: vllm/engine/arg_utils.py EngineArgs (--tensor-parallel-size, --pipeline-parallel-size,
// --max-model-len, --gpu-memory-utilization, --kv-cache-dtype, --quantization, --max-num-seqs).
pub(super) fn vllm(c: &Ctx) -> (String, Vec<String>) {
    let (parts, notes) = vllm_parts(c);
    let mut out = String::new();
    shell_line(&mut out, &parts);
    (out, notes)
}

pub(super) fn vllm_parts(c: &Ctx) -> (Vec<String>, Vec<String>) {
    let mut notes = Vec::new();
    let sv = &c.s.serving;
    let mut parts = vec![
        format!("vllm serve {}", c.hf_repo()),
        format!("--tensor-parallel-size {}", sv.tp),
        format!("--pipeline-parallel-size {}", sv.pp),
        format!("--max-model-len {}", sv.context_len),
        format!("--gpu-memory-utilization {}", sv.memory_utilization),
        format!(
            "--max-num-seqs {}",
            sv.max_running_seqs.unwrap_or(sv.target_concurrency)
        ),
        "--dtype bfloat16".to_string(),
    ];
    match sv.kv_dtype {
        ServeDtype::Bf16 => {}
        ServeDtype::Fp8 => parts.push("--kv-cache-dtype fp8".to_string()),
        other => notes.push(format!(
            "An {} KV cache is not a vLLM --kv-cache-dtype choice (auto, fp8); the cache stays \
             in the model dtype, larger than planned.",
            other.id().to_ascii_uppercase()
        )),
    }
    if let Some(method) = quantization_flag(&mut notes, sv.weight_dtype, &c.s.cluster.gpu, "vLLM") {
        parts.push(format!("--quantization {method}"));
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
    if let Some(sp) = &sv.speculation {
        parts.push(vllm_speculative_config(sp));
        notes.push(format!(
            "Speculation priced at acceptance {} per drafted token: measure your draft's rate on your traffic (vLLM logs the spec-decode acceptance) and set it in the plan.",
            sp.acceptance
        ));
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

/// `--speculative-config`: vllm/config/speculative.py SpeculativeConfig (`method`,
/// `num_speculative_tokens`, `model`); EAGLE heads and draft models name their checkpoint
/// (`$DRAFT_MODEL`, a shell variable to set), MTP reuses the target's own modules.
fn vllm_speculative_config(sp: &crate::input::speculation::Speculation) -> String {
    use crate::input::speculation::SpecMethod;
    let k = sp.draft_tokens;
    let json = match sp.method {
        SpecMethod::Mtp => {
            format!(r#"{{"method": "deepseek_mtp", "num_speculative_tokens": {k}}}"#)
        }
        SpecMethod::DraftModel => {
            format!(r#"{{"model": "'"$DRAFT_MODEL"'", "num_speculative_tokens": {k}}}"#)
        }
        m => format!(
            r#"{{"method": "{}", "model": "'"$DRAFT_MODEL"'", "num_speculative_tokens": {k}}}"#,
            m.id()
        ),
    };
    format!("--speculative-config '{json}'")
}
