//! The KV-pool rows of serving engines (`kv_tokens`, `kv_memory_gib`) set against the pool
//! the serving model sizes.

use crate::input::hardware::{gpu_preset, Cluster, GIB};
use crate::input::scenario::Serving;

use super::compare::{Breakdown, Comparison};
use super::dataset::{PublishedRun, Quantity, RunPrecision};
use super::mapping::dataset_gpu_preset;
use super::models::model_for_key;

/// A serving engine's KV pool (`kv_tokens` per replica, `kv_memory_gib` per GPU) set against
/// the pool [`crate::memory::serving::serving_plan`] sizes as the engine does
/// (memory/engine_kv_pool.rs: vLLM's profiled non-KV memory, SGLang's static fraction).
pub(super) fn compare_kv_pool(
    run: &PublishedRun,
) -> Result<(Comparison, Vec<String>, String), String> {
    use crate::input::scenario::ServeDtype;
    use crate::input::serving_engine::{EngineProfile, ServingEngine};
    if !run.other_keys.is_empty() {
        let keys: Vec<&str> = run.other_keys.keys().map(String::as_str).collect();
        return Err(format!(
            "keys this reader does not know: {}",
            keys.join(", ")
        ));
    }
    let gpu_id = dataset_gpu_preset(&run.gpu_type)
        .ok_or_else(|| format!("no GPU preset for gpu_type '{}'", run.gpu_type))?;
    let gpu = gpu_preset(&gpu_id).ok_or_else(|| format!("GPU preset '{gpu_id}' is missing"))?;
    let key = crate::edges::serving_validation::serving_model_key(&run.model_name)
        .ok_or_else(|| format!("model '{}' is not a known public model", run.model_name))?;
    let (_, spec, model_source) =
        model_for_key(key).ok_or_else(|| format!("known model '{key}' has no shapes"))?;
    let weight_dtype = match run.precision {
        Some(RunPrecision::Fp8) => ServeDtype::Fp8,
        _ => ServeDtype::Bf16,
    };
    let kv_dtype = match run.kv_dtype.as_deref() {
        None => weight_dtype,
        Some(d) => ServeDtype::from_id(d)
            .ok_or_else(|| format!("kv_dtype '{d}' is not bf16, fp8, int8 or int4"))?,
    };
    let engine = match run.engine.as_deref() {
        None | Some("vllm") => ServingEngine::Vllm,
        Some("sglang") => ServingEngine::Sglang,
        Some(e) => return Err(format!("engine '{e}' is not vllm or sglang")),
    };
    let mut notes = vec![format!("model shapes: {model_source}")];
    let mut serving = Serving {
        weight_dtype,
        kv_dtype,
        tp: run.tp,
        pp: run.pp,
        engine,
        ..Serving::default()
    };
    match engine {
        ServingEngine::Vllm => {
            serving.memory_utilization = run.memory_fraction.unwrap_or(0.9);
            // vLLM sizes its pool after a profiling forward (memory/engine_kv_pool.rs).
            serving.engine_profile = Some(EngineProfile::default());
            notes.push(
                "vLLM's default profile: 8192 batched tokens, 1024 sequences, 1.79 GiB non-torch"
                    .to_string(),
            );
        }
        ServingEngine::Sglang => serving.mem_fraction_static = run.memory_fraction,
    }
    let gpus = u64::from(run.tp) * u64::from(run.pp);
    let nodes = u32::try_from(gpus.div_ceil(u64::from(gpu.gpus_per_node.max(1)))).unwrap_or(1);
    let cluster = Cluster::of(gpu, nodes.max(1));
    let plan = crate::memory::serving::serving_plan(&spec, &serving, &cluster).map_err(|e| {
        format!(
            "the serving model refuses the replica: {}: {}",
            e.field, e.reason
        )
    })?;
    let pool = plan.kv_budget_per_gpu.value;
    let per_token = plan.kv_bytes_per_token_per_gpu.value;
    let predicted = match run.quantity {
        Quantity::KvMemoryGib => pool / GIB,
        _ if per_token > 0.0 => pool / per_token,
        _ => 0.0,
    };
    notes.push(format!(
        "KV pool {:.2} GiB per GPU at {per_token:.0} B per token per GPU",
        pool / GIB
    ));
    if !predicted.is_finite() || predicted <= 0.0 {
        return Err(format!(
            "the predicted pool is {predicted}, not a positive number"
        ));
    }
    let comparison = Comparison {
        predicted,
        relative_error: predicted / run.value - 1.0,
        flop_convention: None,
        breakdown: Breakdown::default(),
        rule_violations: Vec::new(),
    };
    Ok((comparison, notes, model_source.to_string()))
}
