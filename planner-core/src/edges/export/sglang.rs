//! SGLang: the `sglang.launch_server` line for the serving plan.

use super::*;

// SGLang: python/sglang/srt/server_args.py ServerArgs (--tp-size, --pp-size, --context-length,
// --mem-fraction-static, --kv-cache-dtype, --quantization, --max-running-requests,
// --nnodes/--node-rank/--dist-init-addr).
pub(super) fn sglang(c: &Ctx) -> (String, Vec<String>) {
    let (parts, notes) = sglang_parts(c);
    let mut out = String::new();
    shell_line(&mut out, &parts);
    (out, notes)
}

/// `--mem-fraction-static`: the plan's SGLang fraction (set, or SGLang's default for the
/// TP degree) when the plan sizes the pool as SGLang does; else the vLLM utilization.
fn sglang_fraction(sv: &crate::input::scenario::Serving) -> f64 {
    match sv.engine {
        crate::memory::engine_kv_pool::ServingEngine::Sglang => {
            crate::memory::engine_kv_pool::memory_fraction(sv, sv.tp)
        }
        crate::memory::engine_kv_pool::ServingEngine::Vllm => sv.memory_utilization,
    }
}

pub(super) fn sglang_parts(c: &Ctx) -> (Vec<String>, Vec<String>) {
    let mut notes = Vec::new();
    let sv = &c.s.serving;
    let mut parts = vec![
        "python -m sglang.launch_server".to_string(),
        format!("--model-path {}", c.hf_repo()),
        format!("--tp-size {}", sv.tp),
        format!("--pp-size {}", sv.pp),
        format!("--context-length {}", sv.context_len),
        format!("--mem-fraction-static {}", sglang_fraction(sv)),
        format!(
            "--max-running-requests {}",
            sv.max_running_seqs.unwrap_or(sv.target_concurrency)
        ),
        "--dtype bfloat16".to_string(),
    ];
    match sv.kv_dtype {
        ServeDtype::Bf16 => {}
        ServeDtype::Fp8 => parts.push("--kv-cache-dtype fp8_e4m3".to_string()),
        other => notes.push(format!(
            "An {} KV cache is not an SGLang --kv-cache-dtype choice (auto, fp8_e4m3, \
             fp8_e5m2); the cache stays in the model dtype, larger than planned.",
            other.id().to_ascii_uppercase()
        )),
    }
    if let Some(method) = quantization_flag(&mut notes, sv.weight_dtype, &c.s.cluster.gpu, "SGLang")
    {
        parts.push(format!("--quantization {method}"));
    }
    if let Some(sp) = &sv.speculation {
        parts.extend(sglang_speculative_flags(sp));
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

/// SGLang's speculative flags (python/sglang/srt/server_args.py: `--speculative-algorithm`
/// EAGLE, EAGLE3, NEXTN or STANDALONE, `--speculative-num-steps`, `--speculative-eagle-topk`,
/// `--speculative-num-draft-tokens`, `--speculative-draft-model-path`): a chain of k drafts
/// (top-k 1, k + 1 verified tokens), as the plan prices it.
fn sglang_speculative_flags(sp: &crate::input::speculation::Speculation) -> Vec<String> {
    use crate::input::speculation::SpecMethod;
    let algorithm = match sp.method {
        SpecMethod::Eagle => "EAGLE",
        SpecMethod::Eagle3 => "EAGLE3",
        SpecMethod::Mtp => "NEXTN",
        SpecMethod::DraftModel => "STANDALONE",
    };
    let mut flags = vec![
        format!("--speculative-algorithm {algorithm}"),
        format!("--speculative-num-steps {}", sp.draft_tokens),
        "--speculative-eagle-topk 1".to_string(),
        format!("--speculative-num-draft-tokens {}", sp.draft_tokens + 1),
    ];
    if sp.method != SpecMethod::Mtp {
        flags.push(r#"--speculative-draft-model-path "$DRAFT_MODEL""#.to_string());
    }
    flags
}
