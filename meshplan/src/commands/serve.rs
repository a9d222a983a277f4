//! `serve`: serving time of a scenario's replica (TTFT, TPOT, throughput), JSON or a table.

use std::fmt::Write;
use std::path::PathBuf;

use planner_core::base::explain::Term;
use planner_core::input::engine_scheduler::KvAdmission;
use planner_core::input::speculation::Speculation;
use planner_core::serving::latency::{serving_time, ServingLoad, ServingTime, MAX_CONCURRENCY};

use crate::error::CliError;
use crate::input::read_scenario;

/// Arguments of `meshplan serve`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Scenario JSON (its `serving` block gives the replica shape and dtypes); `-` reads stdin.
    pub scenario: PathBuf,
    /// `--hf MODEL_ID`: a Hub model in place of the scenario's.
    #[command(flatten)]
    pub hub: crate::input::HubFlag,
    /// Prompt tokens per request.
    #[arg(long, default_value_t = ServingLoad::default().prompt_tokens)]
    pub prompt: u32,
    /// Output tokens per request.
    #[arg(long, default_value_t = ServingLoad::default().output_tokens)]
    pub output: u32,
    /// Requests decoding at once per replica (default: serving.target_concurrency).
    #[arg(long)]
    pub concurrency: Option<u32>,
    /// Share of prompt tokens served from the prefix cache, 0..=1.
    #[arg(long, default_value_t = 0.0)]
    pub prefix_hit: f64,
    /// Prefill chunk size, tokens.
    #[arg(long, default_value_t = ServingLoad::default().prefill_chunk_tokens)]
    pub chunk: u32,
    /// Split routed experts whole over the TP ranks (all-to-all per MoE layer).
    #[arg(long)]
    pub expert_parallel: bool,
    /// Open-loop arrival rate, requests/s (default: what the concurrency sustains).
    #[arg(long)]
    pub arrival_rate: Option<f64>,
    /// The engine's cap on running sequences (default: serving.max_running_seqs, else the
    /// engine's own default).
    #[arg(long)]
    pub max_running: Option<u32>,
    /// How the engine admits against its KV pool: `preempt` (vLLM, SGLang) or `reserve`
    /// (TensorRT-LLM's GUARANTEED_NO_EVICT); default: serving.kv_admission, else the engine's.
    #[arg(long, value_parser = parse_admission)]
    pub admission: Option<KvAdmission>,
    /// Speculative decoding, `method,k,acceptance[,draft_params]` (method draft_model, eagle,
    /// eagle3 or mtp; e.g. `eagle,3,0.8`); default: serving.speculation.
    #[arg(long)]
    pub spec: Option<String>,
    /// Print a readable table instead of JSON.
    #[arg(long)]
    pub table: bool,
}

/// Evaluates the load on the scenario's replica and renders it.
pub fn run(args: &Args) -> Result<String, CliError> {
    let mut scenario = args.hub.apply(read_scenario(&args.scenario)?)?;
    if let Some(n) = args.max_running {
        if n == 0 || n > MAX_CONCURRENCY {
            return Err(CliError::BadInput(format!(
                "--max-running must be in 1..={MAX_CONCURRENCY}, got {n}"
            )));
        }
        scenario.serving.max_running_seqs = Some(n);
    }
    if let Some(a) = args.admission {
        scenario.serving.kv_admission = Some(a);
    }
    if let Some(v) = &args.spec {
        let sp = Speculation::from_link(v)
            .and_then(|sp| sp.check().map(|()| sp))
            .map_err(|e| CliError::BadInput(format!("--spec: {e}")))?;
        scenario.serving.speculation = Some(sp);
    }
    let load = ServingLoad {
        prompt_tokens: args.prompt,
        output_tokens: args.output,
        concurrency: args
            .concurrency
            .unwrap_or(scenario.serving.target_concurrency),
        prefix_hit_rate: args.prefix_hit,
        prefill_chunk_tokens: args.chunk,
        expert_parallel: args.expert_parallel,
        arrival_rate_per_s: args.arrival_rate,
        graph_padded_batch: None,
        decode_attention: None,
        prefill_first: false,
    };
    let t = serving_time(&scenario, &load)
        .map_err(|e| CliError::BadInput(format!("invalid serving load: {e}")))?;
    if args.table {
        Ok(render_table(&t))
    } else {
        serde_json::to_string_pretty(&t)
            .map_err(|e| CliError::BadInput(format!("result cannot be written as JSON: {e}")))
    }
}

fn parse_admission(v: &str) -> Result<KvAdmission, String> {
    KvAdmission::from_id(v).ok_or_else(|| format!("'{v}' is not preempt or reserve"))
}

/// A term's value as every table and the page write it: the term's own unit formats it.
fn value(t: &Term) -> String {
    t.unit.format(t.value)
}

fn render_table(t: &ServingTime) -> String {
    let l = &t.load;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "Replica TP {} × PP {} ({} GPUs) | prompt {} (prefix hit {}), output {}, concurrency {}, chunk {}{}",
        t.tp,
        t.pp,
        t.gpus_per_replica,
        l.prompt_tokens,
        l.prefix_hit_rate,
        l.output_tokens,
        l.concurrency,
        l.prefill_chunk_tokens,
        if l.expert_parallel { ", EP" } else { "" }
    );
    let _ = writeln!(
        out,
        "  TTFT {} (p90 {}, p99 {}) | TPOT {} | {} per replica, {} per GPU",
        value(&t.ttft),
        value(&t.ttft_p90),
        value(&t.ttft_p99),
        value(&t.tpot),
        value(&t.throughput_per_replica),
        value(&t.throughput_per_gpu)
    );
    let _ = writeln!(
        out,
        "  decode step {}-bound (micro-batch {}), prefill {}-bound ({} new tokens, {} chunk(s)); KV {}; running {} of {} (slot wait {})",
        t.decode.bound.id(),
        t.decode.micro_batch,
        t.prefill.bound.id(),
        t.prefill.new_tokens,
        t.prefill.chunks,
        if t.fits_kv {
            "fits"
        } else {
            "short: the engine runs what the pool holds and the rest wait"
        },
        t.running_batch.value,
        l.concurrency,
        value(&t.admission_wait)
    );
    let _ = writeln!(out, "Breakdown:");
    for term in t.terms() {
        let _ = writeln!(
            out,
            "  {:<44} {:>14}   {}",
            term.label,
            value(term),
            term.worked
        );
    }
    out.trim_end().to_string()
}
