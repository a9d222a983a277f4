//! Validation of the serving time model ([`crate::serving::latency`]) against published
//! serving measurements (`validation/serving-runs.json`, described in `validation/README.md`).
//!
//! Pure: the caller passes the dataset's text. Each row becomes a [`Scenario`] and a
//! [`ServingLoad`] (every field its source leaves unsaid takes a default the row's result
//! lists), is evaluated with [`serving_time_for`], and its measured TTFT, TPOT and output
//! throughput are set against the prediction. A row the model cannot express is kept, as
//! "not representable", with the reason. Nothing here is fitted to the rows.

use serde::{Deserialize, Serialize};

use crate::edges::validation::{
    check_row_text, dataset_gpu_preset, error_stats, known_model_key, model_core_name,
    model_for_key, parse_checked_rows, summarize_by_source, tally_reason, GroupSummary,
    ReasonTally, ALL_GROUP,
};
use crate::input::engine_scheduler::KvAdmission;
use crate::input::hardware::{gpu_preset, Cluster};
use crate::input::precision::{Precision, PrecisionRecipe};
use crate::input::scenario::{
    ActivationOptions, Overheads, Scenario, ServeDtype, Serving, Training, SCENARIO_VERSION,
};
use crate::resolve::validate::FieldError;
use crate::serving::latency::{
    serving_time_for, ServingLoad, ServingTime, MAX_CONCURRENCY, MAX_TOKENS,
};

/// The serving dataset in the repository.
pub const SERVING_RUNS_JSON: &str = include_str!("../../../validation/serving-runs.json");

/// Numeric format of weights or KV as the source names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunDtype {
    /// FP16 (2 bytes; A100 FP16 and BF16 tensor peaks are equal).
    Fp16,
    /// BF16.
    Bf16,
    /// FP8 (E4M3).
    Fp8,
    /// INT8.
    Int8,
    /// INT4.
    Int4,
}

impl RunDtype {
    fn serve(self) -> ServeDtype {
        match self {
            RunDtype::Fp16 | RunDtype::Bf16 => ServeDtype::Bf16,
            RunDtype::Fp8 => ServeDtype::Fp8,
            RunDtype::Int8 => ServeDtype::Int8,
            RunDtype::Int4 => ServeDtype::Int4,
        }
    }
}

/// How the engine batched the requests of the measurement.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Batching {
    /// One batch at a time: its prompts in one context step, then its decode steps
    /// (TensorRT-LLM `gptSessionBenchmark`); no arrivals while a batch runs.
    Static,
    /// In-flight (continuous) batching: requests join and leave the running batch.
    Continuous,
}

/// What the source's per-token latency measures.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TpotKind {
    /// Time per output token after the first, per request (vLLM `benchmark_serving` TPOT).
    Tpot,
    /// Inter-token latency as genai-perf/AIPerf reports it: per request (latency − TTFT)/(output − 1).
    Itl,
}

/// Which GPUs a throughput figure is divided over.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ThroughputBasis {
    /// Output tokens/s per GPU.
    PerGpu,
    /// Output tokens/s of the whole replica (tp × pp GPUs).
    PerReplica,
}

/// One published serving measurement (a row of `serving-runs.json`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServingRun {
    /// Stable id.
    pub id: String,
    /// Source group (a document and its method).
    pub source: String,
    /// Where the source is.
    pub url: String,
    /// Table, row and column the figures were read from.
    pub place: String,
    /// Serving engine.
    pub engine: String,
    /// Its version.
    pub engine_version: String,
    /// The model's name as the source prints it.
    pub model_name: String,
    /// A GPU name of [`crate::edges::validation::DATASET_GPUS`] (`A100-80GB`, `H100-80GB`, `H200`, `MI300X`…).
    pub gpu_type: String,
    /// Tensor parallel of the replica.
    pub tp: u32,
    /// Pipeline stages of the replica.
    pub pp: u32,
    /// Weight format.
    pub weight_dtype: RunDtype,
    /// KV-cache format; `None` = not stated.
    pub kv_dtype: Option<RunDtype>,
    /// Static or continuous batching.
    pub batching: Batching,
    /// Prompt tokens per request.
    pub prompt_tokens: u32,
    /// Output tokens per request.
    pub output_tokens: u32,
    /// Requests in flight (static: the batch); `None` = maximum load, not stated.
    pub concurrency: Option<u32>,
    /// Mean time to first token, ms.
    pub ttft_ms: Option<f64>,
    /// Mean time per output token, ms.
    pub tpot_ms: Option<f64>,
    /// What `tpot_ms` measures.
    pub tpot_kind: Option<TpotKind>,
    /// Output tokens per second.
    pub output_tokens_per_s: Option<f64>,
    /// Mean end-to-end latency of a request (first byte sent to last token), ms.
    pub e2e_latency_ms: Option<f64>,
    /// What `output_tokens_per_s` is divided over.
    pub throughput_basis: Option<ThroughputBasis>,
    /// What the source leaves unsaid.
    pub notes: String,
}

/// A compared quantity.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ServingQuantity {
    /// Mean TTFT, ms.
    TtftMs,
    /// Mean TPOT (or ITL), ms.
    TpotMs,
    /// Output tokens/s (per GPU or per replica as the row says).
    OutputTokensPerS,
    /// Mean end-to-end request latency, ms.
    E2eLatencyMs,
}

impl ServingQuantity {
    /// Every quantity, in report order.
    pub const ALL: [ServingQuantity; 4] = [
        ServingQuantity::TtftMs,
        ServingQuantity::TpotMs,
        ServingQuantity::OutputTokensPerS,
        ServingQuantity::E2eLatencyMs,
    ];

    /// The dataset's spelling.
    pub fn id(self) -> &'static str {
        match self {
            ServingQuantity::TtftMs => "ttft_ms",
            ServingQuantity::TpotMs => "tpot_ms",
            ServingQuantity::OutputTokensPerS => "output_tokens_per_s",
            ServingQuantity::E2eLatencyMs => "e2e_latency_ms",
        }
    }
}

/// Reads the dataset: a JSON array of [`ServingRun`]. A type error, an unknown field or an
/// implausible value is refused with a message naming its JSON path (`[3].tp`).
pub fn parse_serving_runs(json: &str) -> Result<Vec<ServingRun>, FieldError> {
    parse_checked_rows(json, check_run, |r: &ServingRun| r.id.as_str())
}

fn check_run(i: usize, r: &ServingRun) -> Result<(), FieldError> {
    let field = |name: &str| format!("[{i}].{name}");
    check_row_text(
        i,
        &[
            ("id", &r.id),
            ("source", &r.source),
            ("url", &r.url),
            ("place", &r.place),
            ("engine", &r.engine),
            ("engine_version", &r.engine_version),
            ("model_name", &r.model_name),
            ("gpu_type", &r.gpu_type),
        ],
        &r.notes,
    )?;
    let max_gpus = u32::try_from(crate::resolve::validate::MAX_GPUS).unwrap_or(u32::MAX);
    for (name, v, max) in [
        ("tp", r.tp, max_gpus),
        ("pp", r.pp, max_gpus),
        ("prompt_tokens", r.prompt_tokens, MAX_TOKENS),
        ("output_tokens", r.output_tokens, MAX_TOKENS),
        ("concurrency", r.concurrency.unwrap_or(1), MAX_CONCURRENCY),
    ] {
        if v == 0 || v > max {
            return Err(FieldError::new(
                &field(name),
                format!("{v} is outside 1..={max}"),
            ));
        }
    }
    let mut measured = 0;
    for (name, v) in [
        ("ttft_ms", r.ttft_ms),
        ("tpot_ms", r.tpot_ms),
        ("output_tokens_per_s", r.output_tokens_per_s),
        ("e2e_latency_ms", r.e2e_latency_ms),
    ] {
        if let Some(x) = v {
            crate::base::bounds::SERVING_MEASUREMENT
                .check(x)
                .map_err(|m| FieldError::new(&field(name), m))?;
            measured += 1;
        }
    }
    if measured == 0 {
        return Err(FieldError::new(
            &field("ttft_ms"),
            "the row measures nothing: give ttft_ms, tpot_ms, output_tokens_per_s or e2e_latency_ms",
        ));
    }
    if r.output_tokens_per_s.is_some() != r.throughput_basis.is_some() {
        return Err(FieldError::new(
            &field("throughput_basis"),
            "is given exactly when output_tokens_per_s is (per_gpu or per_replica)",
        ));
    }
    if r.tpot_ms.is_some() != r.tpot_kind.is_some() {
        return Err(FieldError::new(
            &field("tpot_kind"),
            "is given exactly when tpot_ms is (tpot or itl)",
        ));
    }
    Ok(())
}

/// Dataset model names and the preset or config-table key of each (matched exactly).
pub const SERVING_MODEL_NAMES: [(&str, &str); 10] = [
    // TensorRT-LLM 0.9 performance.md: "LLaMA 7B" / "LLaMA 70B" are its Llama2-7b / Llama2-70b configs.
    ("LLaMA 7B", "llama-2-7b"),
    ("LLaMA 70B", "llama-2-70b"),
    ("Mixtral 8x7B", "mixtral-8x7b"),
    ("Llama 3.1 8B", "llama-3.1-8b"),
    ("Llama 3.1 70B", "llama-3.1-70b"),
    // Llama 3 and 3.1 share every shape (their config.json files differ in rope_scaling only).
    ("Llama 3 70B", "llama-3.1-70b"),
    // meta-llama/Llama-3.3-70B-Instruct config.json has the shapes of Llama 3.1 70B (80 layers,
    // hidden 8192, 64 heads, 8 KV, ffn 28672, vocab 128256).
    ("Llama 3.3 70B", "llama-3.1-70b"),
    ("Llama 3.1 405B", "llama-3.1-405b"),
    ("DeepSeek-V3", "deepseek-v3"),
    ("Qwen2.5 72B", "qwen2.5-72b"),
];

/// The preset or config-table key of a serving row's model: a name of [`SERVING_MODEL_NAMES`]
/// as written or spelled otherwise (`Llama-3.3-70B-Instruct`, [`model_core_name`]), else any
/// name the training dataset knows ([`known_model_key`]: every model preset by its id or name).
pub fn serving_model_key(model_name: &str) -> Option<&'static str> {
    let core = model_core_name(model_name);
    SERVING_MODEL_NAMES
        .iter()
        .find(|(name, _)| *name == model_name || model_core_name(name) == core)
        .map(|(_, key)| *key)
        .or_else(|| known_model_key(model_name))
}

/// Prefill chunk of continuous-batching rows that do not state one, tokens.
// TensorRT-LLM's default max_num_tokens (tokens per engine step) is 8192; vLLM's chunked-prefill
// default max_num_batched_tokens differs by version, so rows of other engines state theirs.
pub const DEFAULT_CHUNK_TOKENS: u32 = 8192;

/// The CUDA-graph batch sizes the TensorRT-LLM 1.0 perf-overview runs capture, padding each
/// generation-only batch up to the next one.
// NVIDIA/TensorRT-LLM docs/source/performance/perf-overview.md (the rows' commit 00f37686),
// "Running the Benchmark", llm_options.yml: cuda_graph_config enable_padding: true, batch_sizes
// 1, 2, 4, 8, 16, 32, 64, 128, 256, 384, 512, 1024, 2048, 4096, 8192.
pub const TRTLLM_PERF_OVERVIEW_GRAPH_BATCHES: [u32; 15] = [
    1, 2, 4, 8, 16, 32, 64, 128, 256, 384, 512, 1024, 2048, 4096, 8192,
];

/// Whether a row was run with the perf-overview's `llm_options.yml` (CUDA-graph padding).
pub fn pads_cuda_graphs(run: &ServingRun) -> bool {
    run.source == "TRT-LLM 1.0 perf-overview"
}

/// The captured batch a running batch of `concurrency` is padded to (the smallest captured
/// size at least as large), or `None` above the largest.
pub fn perf_overview_padded_batch(concurrency: u32) -> Option<u32> {
    TRTLLM_PERF_OVERVIEW_GRAPH_BATCHES
        .iter()
        .copied()
        .find(|&b| b >= concurrency)
}

/// Arrival rate given to rows whose queue is not compared, requests/s: low enough that
/// the M/D/1 wait is zero to the printed precision.
pub const NO_QUEUE_RATE_PER_S: f64 = 1e-6;

/// The running-batch cap an engine applies by default, and where it is set.
pub fn engine_max_seqs(engine: &str) -> Option<(u32, &'static str)> {
    match engine {
        // vllm/engine/arg_utils.py EngineArgs: max_num_seqs: int = 256 (the 2024 releases).
        "vLLM" => Some((
            256,
            "vLLM max_num_seqs default 256, vllm/engine/arg_utils.py",
        )),
        _ => None,
    }
}

/// The engine's admission into the running batch, as the row's engine applies it by default.
fn admission_of(run: &ServingRun, scenario: &mut Scenario, defaults: &mut Vec<String>) {
    if runs_tensorrt_llm(run) {
        // TensorRT-LLM docs, performance-tuning-guide/useful-runtime-flags: GUARANTEED_NO_EVICT
        // is the default capacity scheduler policy ("a started request is never paused").
        scenario.serving.kv_admission = Some(KvAdmission::WholeRequest);
        // The rows do not state the engine's max_batch_size: no cap is applied to them.
        scenario.serving.max_running_seqs = Some(MAX_CONCURRENCY);
        defaults.push(
            "admission: TensorRT-LLM's GUARANTEED_NO_EVICT (a request enters when its prompt and whole output fit the pool); no batch cap stated".to_string(),
        );
    } else if let Some((cap, why)) = engine_max_seqs(&run.engine) {
        scenario.serving.max_running_seqs = Some(cap);
        defaults.push(format!(
            "admission: at most {cap} running ({why}); a request enters on its prompt's blocks, preempting when the pool runs dry"
        ));
    }
}

/// The decode-attention kernel a row's engine runs for generation, where its bandwidth was
/// measured, and why: TensorRT-LLM 1.0's PyTorch backend (`tensorrt_llm/llmapi/llm_args.py`
/// `attn_backend` default `'TRTLLM'`, `TrtllmAttention` over the C++ `AttentionOp`, whose
/// `mEnableXQA = true` sends generation-phase GQA to XQA). The measured kernel is the Hopper
/// XQA of TensorRT-LLM's 2025 tree; TensorRT-LLM 0.9's rows (its own XQA generation, built
/// without a paged cache, and MHA models that run masked MHA instead) and NIM's (TensorRT-LLM
/// version not stated) keep the copy share.
pub fn decode_attention_kernel(
    run: &ServingRun,
) -> Option<(
    crate::serving::decode_attention::DecodeAttentionKernel,
    &'static str,
)> {
    (run.engine == "TensorRT-LLM" && run.engine_version.starts_with("1.0")).then_some((
        crate::serving::decode_attention::DecodeAttentionKernel::TrtllmXqa,
        "TensorRT-LLM 1.0 PyTorch backend: attn_backend default TRTLLM, AttentionOp mEnableXQA default true",
    ))
}

/// Whether a row's engine is TensorRT-LLM: the engine itself, or a NIM FP8 profile, which
/// NIM serves with its TensorRT-LLM backend (docs.nvidia.com/nim/large-language-models
/// optimization: "The TensorRT-LLM accelerated NIM backend provides support for optimized
/// versions of common models"; the FP8 profiles are its prebuilt engines).
pub fn runs_tensorrt_llm(run: &ServingRun) -> bool {
    run.engine == "TensorRT-LLM"
        || (run.engine == "NVIDIA NIM" && run.weight_dtype == RunDtype::Fp8)
}

/// The KV-cache format a row that does not state one runs with, and why.
pub fn unstated_kv_dtype(run: &ServingRun) -> (ServeDtype, &'static str) {
    if run.engine == "NVIDIA NIM" && run.weight_dtype == RunDtype::Fp8 {
        // The NIM 1.8.0 Llama 3.3 70B fp8 TP2 sweep at concurrency 100 completes 917.26 / 500
        // requests/s, each 499 × 92.91 ms in decode: 85 decoding at once (Little's law), each
        // holding ≥ 5,250 tokens. In BF16 (327,680 B/token) that is 146 GB, beside 70.6 GB of
        // FP8 weights on two H100s of 85.5 GB: more than the GPUs hold. In FP8, 73 GB.
        (
            ServeDtype::Fp8,
            "fp8 (at concurrency 100 the page's throughput and ITL put 85 requests of at least 5,250 tokens in decode at once: 146 GB of BF16 KV beside 70.6 GB of weights, more than two H100s hold; a TensorRT-LLM FP8 profile)",
        )
    } else if run.engine == "TensorRT-LLM" && run.weight_dtype == RunDtype::Fp8 {
        // NVIDIA's FP8 checkpoints are ModelOpt exports: TensorRT-Model-Optimizer
        // examples/llm_ptq/hf_ptq.py `--kv_cache_qformat` defaults to "fp8" ("default to fp8 if
        // not provided"), written to hf_quant_config.json as kv_cache_quant_algo, which
        // TensorRT-LLM's kv_cache_config dtype "auto" (trtllm-bench's default,
        // tensorrt_llm/bench/benchmark/utils/general.py get_settings) reads.
        (
            ServeDtype::Fp8,
            "fp8 (ModelOpt hf_ptq.py --kv_cache_qformat default fp8 in the checkpoint's hf_quant_config.json, read by TensorRT-LLM kv_cache_config dtype auto)",
        )
    } else {
        // vLLM kv_cache_dtype "auto": the model's activation dtype.
        (ServeDtype::Bf16, "bf16")
    }
}

/// A row as a scenario and a load, with what was assumed to get there.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MappedServing {
    /// The scenario (its `serving` section is the replica).
    pub scenario: Scenario,
    /// The load evaluated.
    pub load: ServingLoad,
    /// Where the model's shapes came from.
    pub model_source: String,
    /// Fields the source leaves unsaid and the value used for each.
    pub defaults: Vec<String>,
}

/// Maps a row to a scenario and load; `Err` says why the row is not representable.
/// A row without a stated concurrency (maximum load) gets the KV pool's sequences, which
/// needs one evaluation of the replica first.
pub fn map_serving_run(run: &ServingRun) -> Result<MappedServing, String> {
    let Some(id) = dataset_gpu_preset(&run.gpu_type) else {
        return Err(format!("no GPU preset for gpu_type '{}'", run.gpu_type));
    };
    let Some(gpu) = gpu_preset(&id) else {
        return Err(format!("GPU preset '{id}' is missing"));
    };
    let Some(key) = serving_model_key(&run.model_name) else {
        return Err(format!(
            "model '{}' is not a known public model",
            run.model_name
        ));
    };
    let Some((model_choice, spec, model_source)) = model_for_key(key) else {
        return Err(format!("known model '{key}' has no shapes"));
    };
    let mut defaults = Vec::new();
    let gpus = u64::from(run.tp) * u64::from(run.pp);
    let gpn = u64::from(gpu.gpus_per_node.max(1));
    let nodes = u32::try_from(gpus.div_ceil(gpn)).unwrap_or(u32::MAX);
    let fp8_gemms = run.weight_dtype == RunDtype::Fp8 && gpu.fp8_flops_per_s > 0.0;
    // FP8 checkpoints run FP8 GEMMs (W8A8, TensorRT-LLM/ModelOpt FP8): the FP8 tensor peak applies.
    let recipe = if fp8_gemms {
        PrecisionRecipe::Fp8Bf16Master
    } else {
        PrecisionRecipe::MixedAdam
    };
    let cluster = Cluster::of(gpu, nodes.max(1));
    let serving = serving_of(run, &spec, &cluster, &mut defaults)?;
    // Not read by the serving model; a one-sequence step of the serving context.
    let training = Training {
        seq_len: serving.context_len.max(1),
        global_batch: 1,
        finetune: Default::default(),
        offload: Default::default(),
        packing: false,
    };
    let scenario = Scenario {
        version: SCENARIO_VERSION,
        model: model_choice,
        precision: Precision::from_recipe(recipe),
        cluster,
        training,
        layout: crate::input::layout::Layout::default(),
        activations: ActivationOptions::default(),
        overheads: Overheads::default(),
        serving,
        calibration: None,
        bill: Default::default(),
    };
    let mut load = ServingLoad {
        prompt_tokens: run.prompt_tokens,
        output_tokens: run.output_tokens,
        concurrency: run.concurrency.unwrap_or(1),
        prefix_hit_rate: 0.0,
        prefill_chunk_tokens: prefill_chunk_of(run, &mut defaults).max(1),
        expert_parallel: false,
        arrival_rate_per_s: arrival_of(run, &mut defaults),
        graph_padded_batch: None,
        decode_attention: None,
        // A static batch runs its prompts in one context step before any decode.
        prefill_first: run.batching == Batching::Static,
    };
    if let Some((kernel, why)) = decode_attention_kernel(run) {
        load.decode_attention = Some(kernel);
        defaults.push(decode_attention_default(&scenario, kernel, why));
    }
    if run.concurrency.is_none() {
        load.concurrency = maximum_load(run, &spec, &scenario, &load, &mut defaults)?;
    }
    if pads_cuda_graphs(run) {
        load.graph_padded_batch = perf_overview_padded_batch(load.concurrency);
        if let Some(b) = load.graph_padded_batch {
            let pure = (1.0 - f64::from(load.concurrency) / f64::from(run.output_tokens.max(1)))
                .clamp(0.0, 1.0);
            defaults.push(format!(
                "CUDA graphs padded (perf-overview llm_options.yml cuda_graph_config enable_padding): a generation-only step of {} runs its GEMMs over the captured batch {b}; {:.0}% of steps admit no prompt (1 − c / O)",
                load.concurrency,
                pure * 100.0
            ));
        }
    }
    let mut scenario = scenario;
    scenario.serving.target_concurrency = load.concurrency;
    admission_of(run, &mut scenario, &mut defaults);
    Ok(MappedServing {
        scenario,
        load,
        model_source,
        defaults,
    })
}

/// The serving model's refusal of a row's replica, as the row's reason.
fn refused(e: crate::memory::serving::ServingError) -> String {
    format!(
        "the serving model refuses the replica: {}: {}",
        e.field, e.reason
    )
}

/// The row's serving engine settings: its dtypes and replica shape, the KV pool's share of
/// memory as its engine sizes it; what the row does not state goes to `defaults`.
fn serving_of(
    run: &ServingRun,
    spec: &crate::input::model::ModelSpec,
    cluster: &Cluster,
    defaults: &mut Vec<String>,
) -> Result<Serving, String> {
    let kv = match run.kv_dtype {
        Some(d) => d.serve(),
        None => {
            let (d, why) = unstated_kv_dtype(run);
            defaults.push(format!("kv_dtype not stated: {why}"));
            d
        }
    };
    let mut serving = Serving {
        weight_dtype: run.weight_dtype.serve(),
        kv_dtype: kv,
        context_len: run.prompt_tokens.saturating_add(run.output_tokens),
        target_concurrency: run.concurrency.unwrap_or(1),
        tp: run.tp,
        pp: run.pp,
        ..Serving::default()
    };
    if runs_tensorrt_llm(run) {
        let fraction = serving.memory_utilization;
        // TensorRT-LLM gives the KV cache a fraction of the memory left after weights and the
        // profiled activations (tensorrt_llm/_torch/pyexecutor/_util.py cal_max_tokens:
        // (total_gpu_memory − peak_memory) × free_gpu_memory_fraction, default 0.9; the C++
        // runtime likewise, docs/source/reference/memory.md "freeGpuMemoryFraction ... of the
        // remaining free GPU memory"). In the planner's accounting (pool = u·T − W − S) that
        // fraction f is u = f + (1 − f)·(W + S)/T.
        let plan =
            crate::memory::serving::serving_plan(spec, &serving, cluster).map_err(refused)?;
        let total = cluster.gpu.memory_bytes;
        let held = plan.usable_per_gpu.value - plan.kv_budget_per_gpu.value;
        if total > 0.0 && held > 0.0 && held < total {
            serving.memory_utilization = fraction + (1.0 - fraction) * held / total;
        }
        defaults.push(format!(
            "kv_cache_free_gpu_mem_fraction not stated: {fraction} (TensorRT-LLM default) of the {:.1} GB left after weights and workspace, as memory_utilization {:.4}, workspace {:.0} GB",
            (total - held) / 1e9,
            serving.memory_utilization,
            serving.workspace_bytes / 1e9
        ));
    } else {
        defaults.push(format!(
            "memory_utilization not stated: {} (vLLM gpu_memory_utilization default 0.9), workspace {:.0} GB",
            serving.memory_utilization,
            serving.workspace_bytes / 1e9
        ));
    }
    Ok(serving)
}

/// The prefill chunk the row's engine runs, tokens.
fn prefill_chunk_of(run: &ServingRun, defaults: &mut Vec<String>) -> u32 {
    match run.batching {
        Batching::Static => run.prompt_tokens,
        Batching::Continuous if pads_cuda_graphs(run) => {
            defaults.push(format!(
                "prefill chunk not stated: the whole prompt ({} tokens), chunked prefill off (tensorrt_llm/llmapi/llm_args.py enable_chunked_prefill default False; the perf-overview llm_options.yml does not set it); trtllm-bench's max_num_tokens (tensorrt_llm/bench/build/tuning.py finetune_setting: at least 2048, about max_batch · (1 + I / O)) bounds a step's tokens at the mean step's by construction, so it does not bind in the mean model",
                run.prompt_tokens
            ));
            run.prompt_tokens
        }
        Batching::Continuous => {
            defaults.push(format!(
                "prefill chunk not stated: {DEFAULT_CHUNK_TOKENS} tokens (TensorRT-LLM max_num_tokens default)"
            ));
            DEFAULT_CHUNK_TOKENS
        }
    }
}

/// The arrival rate the row is compared at: no queue where it has none to compare.
fn arrival_of(run: &ServingRun, defaults: &mut Vec<String>) -> Option<f64> {
    if run.batching == Batching::Static {
        defaults.push(format!(
            "static batching: one batch at a time, no arrival queue (arrival rate {NO_QUEUE_RATE_PER_S:e}/s)"
        ));
        Some(NO_QUEUE_RATE_PER_S)
    } else if run.ttft_ms.is_none() {
        defaults.push(format!(
            "TTFT not measured: the queue is not compared (arrival rate {NO_QUEUE_RATE_PER_S:e}/s)"
        ));
        Some(NO_QUEUE_RATE_PER_S)
    } else {
        None
    }
}

/// What the row's decode-attention kernel reads the KV at, as a default.
fn decode_attention_default(
    scenario: &Scenario,
    kernel: crate::serving::decode_attention::DecodeAttentionKernel,
    why: &str,
) -> String {
    let measured = crate::serving::decode_attention::measured_kv_stream_fraction(
        &scenario.cluster.gpu,
        scenario.serving.kv_dtype,
        Some(kernel),
    );
    match measured {
        Some(f) => format!(
            "decode attention: {} ({why}): the KV read at {:.1}% of the datasheet bandwidth ({})",
            kernel.id(),
            f * 100.0,
            crate::serving::decode_attention::SOURCE
        ),
        None => format!(
            "decode attention: {} ({why}); no measured bandwidth for this GPU and KV dtype: the KV read at the copy share",
            kernel.id()
        ),
    }
}

/// A row without a stated concurrency (maximum load): the sequences the KV pool holds, or the
/// engine's cap below it.
fn maximum_load(
    run: &ServingRun,
    spec: &crate::input::model::ModelSpec,
    scenario: &Scenario,
    load: &ServingLoad,
    defaults: &mut Vec<String>,
) -> Result<u32, String> {
    let context_len = scenario.serving.context_len;
    let probe = serving_time_for(spec, scenario, load).map_err(refused)?;
    let capacity = probe.kv_capacity_tokens.value;
    let seqs = (capacity / f64::from(context_len.max(1))).floor();
    if seqs < 1.0 {
        return Err(format!(
            "the KV pool ({capacity:.0} tokens) holds no sequence of {context_len} tokens"
        ));
    }
    let kv_seqs = seqs.min(f64::from(MAX_CONCURRENCY)) as u32;
    Ok(match engine_max_seqs(&run.engine) {
        Some((cap, why)) if cap < kv_seqs => {
            defaults.push(format!(
                "concurrency not stated (maximum load): {cap}, the engine's cap ({why}); the KV pool would hold {kv_seqs}"
            ));
            cap
        }
        _ => {
            defaults.push(format!(
                "concurrency not stated (maximum load): {kv_seqs}, the sequences the KV pool holds, ⌊{capacity:.0} / ({} + {})⌋",
                run.prompt_tokens, run.output_tokens
            ));
            kv_seqs
        }
    })
}

/// One quantity of a row, predicted and measured.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ServingComparison {
    /// The quantity.
    pub quantity: ServingQuantity,
    /// The source's figure.
    pub measured: f64,
    /// The model's figure in the same unit.
    pub predicted: f64,
    /// `predicted / measured − 1`.
    pub relative_error: f64,
}

/// The serving-time terms behind a row's predictions (seconds unless named otherwise).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ServingBreakdown {
    /// Concurrency evaluated.
    pub concurrency: u32,
    /// Isolated prefill of one request.
    pub prefill_s: f64,
    /// Decode step at the concurrency (slowest stage).
    pub decode_step_s: f64,
    /// Its HBM time.
    pub decode_memory_s: f64,
    /// Its compute time.
    pub decode_compute_s: f64,
    /// Its TP/EP communication.
    pub decode_comm_s: f64,
    /// Prefill compute amortised per decode step.
    pub interference_s: f64,
    /// Mean queueing wait before prefill.
    pub queue_wait_s: f64,
    /// Which bound holds in the decode step.
    pub bound: String,
}

impl ServingBreakdown {
    fn of(t: &ServingTime) -> Self {
        ServingBreakdown {
            concurrency: t.load.concurrency,
            prefill_s: t.prefill.time.value,
            decode_step_s: t.decode.time.value,
            decode_memory_s: t.decode.memory_time.value,
            decode_compute_s: t.decode.compute_time.value,
            decode_comm_s: t.decode.comm_time.value,
            interference_s: t.interference.value,
            queue_wait_s: t.queue_wait.value,
            bound: t.decode.bound.id().to_string(),
        }
    }
}

/// The result of one row.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ServingRowResult {
    /// Row id.
    pub id: String,
    /// Source group.
    pub source: String,
    /// Quantities the row measures.
    pub measured: Vec<ServingQuantity>,
    /// Comparisons, one per measured quantity; empty when not representable.
    pub comparisons: Vec<ServingComparison>,
    /// The terms behind the predictions.
    pub breakdown: Option<ServingBreakdown>,
    /// Where the model came from.
    pub model_source: Option<String>,
    /// Defaults taken for what the source leaves unsaid.
    pub defaults: Vec<String>,
    /// Why the row cannot be compared.
    pub not_representable: Option<String>,
}

fn measured_of(run: &ServingRun) -> Vec<(ServingQuantity, f64)> {
    [
        (ServingQuantity::TtftMs, run.ttft_ms),
        (ServingQuantity::TpotMs, run.tpot_ms),
        (ServingQuantity::OutputTokensPerS, run.output_tokens_per_s),
        (ServingQuantity::E2eLatencyMs, run.e2e_latency_ms),
    ]
    .into_iter()
    .filter_map(|(q, v)| v.map(|v| (q, v)))
    .collect()
}

/// Maps, evaluates and compares one row.
pub fn validate_serving_run(run: &ServingRun) -> ServingRowResult {
    let measured = measured_of(run);
    let mut row = ServingRowResult {
        id: run.id.clone(),
        source: run.source.clone(),
        measured: measured.iter().map(|(q, _)| *q).collect(),
        comparisons: Vec::new(),
        breakdown: None,
        model_source: None,
        defaults: Vec::new(),
        not_representable: None,
    };
    let mapped = match map_serving_run(run) {
        Ok(m) => m,
        Err(reason) => {
            row.not_representable = Some(reason);
            return row;
        }
    };
    row.model_source = Some(mapped.model_source.clone());
    row.defaults = mapped.defaults.clone();
    let Ok(spec) = mapped.scenario.model_spec() else {
        row.not_representable = Some("the mapped scenario names no model".to_string());
        return row;
    };
    let t = match serving_time_for(&spec, &mapped.scenario, &mapped.load) {
        Ok(t) => t,
        Err(e) => {
            row.not_representable = Some(format!(
                "the serving model refuses the load: {}: {}",
                e.field, e.reason
            ));
            return row;
        }
    };
    for (q, value) in measured {
        let predicted = match q {
            ServingQuantity::TtftMs => t.ttft.value * 1e3,
            ServingQuantity::TpotMs => t.tpot.value * 1e3,
            ServingQuantity::OutputTokensPerS => match run.throughput_basis {
                Some(ThroughputBasis::PerGpu) => t.throughput_per_gpu.value,
                _ => t.throughput_per_replica.value,
            },
            // vLLM benchmark_serving's decomposition (TPOT = (latency − TTFT) / (output − 1)),
            // read backwards: latency = TTFT + (O − 1) · TPOT.
            ServingQuantity::E2eLatencyMs => {
                (t.ttft.value + f64::from(run.output_tokens.saturating_sub(1)) * t.tpot.value) * 1e3
            }
        };
        row.comparisons.push(ServingComparison {
            quantity: q,
            measured: value,
            predicted,
            relative_error: predicted / value - 1.0,
        });
    }
    row.breakdown = Some(ServingBreakdown::of(&t));
    row
}

/// The whole result.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ServingValidationReport {
    /// Rows in the dataset.
    pub dataset_rows: usize,
    /// Per row.
    pub rows: Vec<ServingRowResult>,
    /// Per quantity (TTFT, TPOT, throughput, then all).
    pub by_quantity: Vec<GroupSummary>,
    /// Per source, all of its measurements together.
    pub by_source: Vec<GroupSummary>,
    /// How the quantities are defined and compared.
    pub conventions: Vec<String>,
}

/// The group of every quantity together (named as the training report's).
pub const ALL_SERVING_GROUP: &str = ALL_GROUP;

/// How the comparison reads each quantity.
pub fn serving_conventions() -> Vec<String> {
    vec![
        "|error| = |predicted / measured − 1| per measurement; a row measuring TTFT, TPOT and throughput gives three".to_string(),
        "TTFT: the model's mean TTFT = queueing wait + the request's prefill; closed-loop rows (fixed concurrency) wait as approximate MVA of c clients gives it (Schweitzer 1979: prefill the queueing station, the rest of the cycle a delay); static-batch rows have no queue".to_string(),
        "TPOT: the model's time per output token = decode step at the concurrency + prefill compute amortised per step; compared with vLLM's TPOT and with genai-perf's ITL alike (both are per request (latency − TTFT)/(output − 1))".to_string(),
        "end-to-end latency: TTFT + (O − 1) · TPOT (vLLM benchmark_latency times a whole batch: its prefill, then O decode steps)".to_string(),
        "throughput: output tokens/s only (never total tokens), c / TPOT; per GPU or per replica (tp × pp GPUs) as the row's throughput_basis says".to_string(),
        "static batching (TensorRT-LLM 0.9 gptSessionBenchmark): prompts in one context step (chunk = prompt), throughput = batch · O / (prefill of the batch + O decode steps), which c / TPOT with the amortised prefill equals".to_string(),
        "maximum-load rows (no concurrency stated): the concurrency is the number of sequences of prompt + output tokens the KV pool holds, or the engine's default cap when lower (vLLM max_num_seqs 256; none is applied to TensorRT-LLM rows)".to_string(),
        "a load whose KV exceeds the pool is served as its engine serves it: the running batch is what the pool holds under the engine's admission policy (TensorRT-LLM reserves prompt + output; vLLM admits on the prompt and preempts), the other requests wait for a slot (Little's law)".to_string(),
    ]
}

fn summarize(
    group: &str,
    rows: &[&ServingRowResult],
    quantity: Option<ServingQuantity>,
) -> GroupSummary {
    let mut errors = Vec::new();
    let mut not_representable = 0;
    let mut tallies: Vec<ReasonTally> = Vec::new();
    for r in rows {
        let wanted: Vec<ServingQuantity> = r
            .measured
            .iter()
            .copied()
            .filter(|q| quantity.is_none_or(|w| w == *q))
            .collect();
        if wanted.is_empty() {
            continue;
        }
        match &r.not_representable {
            Some(reason) => {
                not_representable += wanted.len();
                tally_reason(&mut tallies, reason, &r.id);
            }
            None => errors.extend(
                r.comparisons
                    .iter()
                    .filter(|c| wanted.contains(&c.quantity))
                    .map(|c| c.relative_error),
            ),
        }
    }
    GroupSummary {
        group: group.to_string(),
        stats: error_stats(&errors, not_representable),
        not_representable: tallies,
    }
}

/// Validates every row and summarises per quantity and per source (in first-seen order).
pub fn validate_serving_runs(runs: &[ServingRun]) -> ServingValidationReport {
    let rows: Vec<ServingRowResult> = runs.iter().map(validate_serving_run).collect();
    let all: Vec<&ServingRowResult> = rows.iter().collect();
    let mut by_quantity: Vec<GroupSummary> = ServingQuantity::ALL
        .iter()
        .map(|q| summarize(q.id(), &all, Some(*q)))
        .collect();
    by_quantity.push(summarize(ALL_SERVING_GROUP, &all, None));
    let by_source = summarize_by_source(
        &rows,
        |r| r.source.as_str(),
        |s, group| summarize(s, group, None),
    );
    ServingValidationReport {
        dataset_rows: runs.len(),
        rows,
        by_quantity,
        by_source,
        conventions: serving_conventions(),
    }
}

/// Parses and validates a dataset's text.
pub fn run_serving_validation(json: &str) -> Result<ServingValidationReport, FieldError> {
    Ok(validate_serving_runs(&parse_serving_runs(json)?))
}
