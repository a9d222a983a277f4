//! `serve-search`: every serving deployment of a scenario's cluster (aggregated replicas and
//! disaggregated prefill/decode pools), ranked by output tokens/s per GPU against a latency
//! target, with the rejected ones counted by reason. JSON or a table.

use std::fmt::Write;
use std::path::PathBuf;

use planner_core::edges::export::{deployment_export, ExportFormat};
use planner_core::search::deployment::{
    serve_search, Percentile, ServeSearchResult, ServeSearchSpace, ServeTarget,
};
use planner_core::serving::latency::ServingLoad;

use crate::error::CliError;
use crate::input::read_scenario;

/// Arguments of `meshplan serve-search`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Scenario JSON (its model, cluster and `serving` dtypes and memory settings are used;
    /// its replica shape is what the search replaces); `-` reads stdin.
    pub scenario: PathBuf,
    /// `--hf MODEL_ID`: a Hub model in place of the scenario's.
    #[command(flatten)]
    pub hub: crate::input::HubFlag,
    /// Bound on TTFT at `--percentile`, milliseconds.
    #[arg(long)]
    pub ttft_ms: Option<f64>,
    /// Bound on TPOT (a request's mean time per output token), milliseconds.
    #[arg(long)]
    pub tpot_ms: Option<f64>,
    /// Which TTFT the bound applies to: mean, p90 or p99.
    #[arg(long, default_value = "p99")]
    pub percentile: String,
    /// Prompt tokens per request.
    #[arg(long, default_value_t = ServingLoad::default().prompt_tokens)]
    pub prompt: u32,
    /// Output tokens per request.
    #[arg(long, default_value_t = ServingLoad::default().output_tokens)]
    pub output: u32,
    /// Smallest concurrency per (decode) replica; the search doubles it up to `--max-concurrency`.
    #[arg(long, default_value_t = 1)]
    pub concurrency: u32,
    /// Largest concurrency per (decode) replica tried.
    #[arg(long, default_value_t = ServeSearchSpace::default().max_concurrency)]
    pub max_concurrency: u32,
    /// Share of prompt tokens served from the prefix cache, 0..=1.
    #[arg(long, default_value_t = 0.0)]
    pub prefix_hit: f64,
    /// Prefill chunk size, tokens.
    #[arg(long, default_value_t = ServingLoad::default().prefill_chunk_tokens)]
    pub chunk: u32,
    /// Aggregated replicas only (no disaggregated prefill/decode pools).
    #[arg(long)]
    pub no_disagg: bool,
    /// Deployments to print.
    #[arg(long, default_value_t = 10)]
    pub top: usize,
    /// Print a table (the default).
    #[arg(long, conflicts_with = "json")]
    pub table: bool,
    /// Print the full result as JSON.
    #[arg(long)]
    pub json: bool,
    /// Print the best deployment's launch commands instead: vllm or sglang.
    #[arg(long, conflicts_with_all = ["json", "table"])]
    pub export: Option<String>,
}

fn seconds_of(field: &str, ms: Option<f64>) -> Result<Option<f64>, CliError> {
    match ms {
        Some(v) if !v.is_finite() => Err(CliError::BadInput(format!(
            "{field}: must be a finite number of milliseconds, got {v}"
        ))),
        other => Ok(other.map(|v| v / 1e3)),
    }
}

/// Runs the search and renders it.
pub fn run(args: &Args) -> Result<String, CliError> {
    let scenario = args.hub.apply(read_scenario(&args.scenario)?)?;
    let model = scenario
        .model_spec()
        .map_err(|e| CliError::BadInput(format!("model: {e}")))?;
    let percentile = Percentile::from_id(&args.percentile).ok_or_else(|| {
        CliError::BadInput(format!(
            "target.percentile: must be mean, p90 or p99, got {:?}",
            planner_core::base::free_text::one_line(&args.percentile)
        ))
    })?;
    let target = ServeTarget {
        ttft_s: seconds_of("target.ttft_s", args.ttft_ms)?,
        tpot_s: seconds_of("target.tpot_s", args.tpot_ms)?,
        percentile,
    };
    let load = ServingLoad {
        prompt_tokens: args.prompt,
        output_tokens: args.output,
        concurrency: args.concurrency,
        prefix_hit_rate: args.prefix_hit,
        prefill_chunk_tokens: args.chunk,
        expert_parallel: false,
        arrival_rate_per_s: None,
        graph_padded_batch: None,
        decode_attention: None,
        prefill_first: false,
    };
    if args.max_concurrency == 0
        || args.max_concurrency > planner_core::serving::latency::MAX_CONCURRENCY
    {
        return Err(CliError::BadInput(format!(
            "space.max_concurrency: must be in 1..={}, got {}",
            planner_core::serving::latency::MAX_CONCURRENCY,
            args.max_concurrency
        )));
    }
    let space = ServeSearchSpace {
        disaggregated: !args.no_disagg,
        max_concurrency: args.max_concurrency,
        top: args.top.min(1000),
        ..ServeSearchSpace::default()
    };
    let r = serve_search(&model, &scenario, &load, &target, &space)
        .map_err(|e| CliError::BadInput(format!("invalid serving search: {e}")))?;
    if let Some(id) = &args.export {
        let format = ExportFormat::from_id(id)
            .filter(|f| matches!(f, ExportFormat::Vllm | ExportFormat::Sglang))
            .ok_or_else(|| {
                CliError::BadInput(format!(
                    "export: must be vllm or sglang, got {:?}",
                    planner_core::base::free_text::one_line(id)
                ))
            })?;
        let best = r.ranked.first().ok_or_else(|| {
            CliError::BadInput("export: no deployment meets the target".to_string())
        })?;
        let e = deployment_export(format, &scenario, &model, &best.deployment, args.chunk)
            .ok_or_else(|| CliError::BadInput("export: not a serving format".to_string()))?;
        return Ok(format!(
            "{}{}",
            e.text,
            planner_core::edges::export::notes_as_comments(&e)
        )
        .trim_end()
        .to_string());
    }
    if args.json {
        serde_json::to_string_pretty(&r)
            .map_err(|e| CliError::BadInput(format!("result cannot be written as JSON: {e}")))
    } else {
        Ok(render_table(&r))
    }
}

fn ms(s: f64) -> String {
    if s < 1.0 {
        format!("{:.2} ms", s * 1e3)
    } else {
        format!("{s:.3} s")
    }
}

fn render_table(r: &ServeSearchResult) -> String {
    let mut out = String::new();
    let t = &r.target;
    let bound = |v: Option<f64>| v.map_or("none".to_string(), ms);
    let _ = writeln!(
        out,
        "{} GPUs | prompt {}, output {}, concurrency from {} | target TTFT {} ≤ {}, TPOT ≤ {}",
        r.gpus,
        r.load.prompt_tokens,
        r.load.output_tokens,
        r.load.concurrency,
        t.percentile.id(),
        bound(t.ttft_s),
        bound(t.tpot_s)
    );
    let _ = writeln!(
        out,
        "{} deployments: {} meet the target, {} rejected",
        r.candidates, r.feasible_count, r.rejected_count
    );
    if let Some(s) = &r.stopped {
        let _ = writeln!(out, "note: {s}");
    }
    let _ = writeln!(
        out,
        "{:>4}  {:<40} {:>5} {:>6} {:>11} {:>10} {:>12} {:>10}  bound",
        "rank", "deployment", "GPUs", "conc", "TTFT", "TPOT", "tok/s/GPU", "KV xfer"
    );
    for (i, d) in r.ranked.iter().enumerate() {
        let _ = writeln!(
            out,
            "{:>4}  {:<40} {:>5} {:>6} {:>11} {:>10} {:>12.1} {:>10}  {}",
            i + 1,
            d.label,
            d.gpus,
            d.deployment.concurrency,
            ms(d.ttft_s),
            ms(d.tpot_s),
            d.throughput_per_gpu,
            if d.kv_transfer_s > 0.0 {
                ms(d.kv_transfer_s)
            } else {
                "-".to_string()
            },
            d.decode_bound.id()
        );
    }
    if !r.rejections.is_empty() {
        let _ = writeln!(out, "Rejected by reason:");
        for c in &r.rejections {
            let msg = planner_core::search::deployment::ServeRejectReason::ALL
                .iter()
                .find(|x| x.key() == c.reason)
                .map_or("", |x| x.message());
            let _ = writeln!(out, "  {:<28} {:>6}  {msg}", c.reason, c.candidates);
        }
        let _ = writeln!(out, "First rejected:");
        for x in r.rejected.iter().take(8) {
            let _ = writeln!(
                out,
                "  {:<40} {}: {}",
                x.label,
                x.reasons.join(", "),
                x.detail
            );
        }
    }
    out.trim_end().to_string()
}
