//! Command-line arguments.

use std::path::PathBuf;

use clap::{Parser, Subcommand};

/// Plan LLM training and serving meshes: memory, time and communication per GPU.
#[derive(Debug, Parser)]
#[command(name = "meshplan", version, about)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// Subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Evaluate a scenario: model state, per-stage training memory, pipeline bubble, KV cache
    /// and serving, every number with its formula. JSON by default.
    Eval {
        /// Scenario JSON file (`-` reads stdin). Omit when using `--link` or `--hf` alone.
        #[arg(required_unless_present_any = ["link", "hf"], conflicts_with = "link")]
        scenario: Option<PathBuf>,
        /// A share link (query, `?query` or full URL) instead of a file.
        #[arg(long)]
        link: Option<String>,
        /// A model on the Hugging Face Hub (`org/name` or its URL), read from its config.json
        /// and safetensors headers, replacing the scenario's model (the default scenario's
        /// when no scenario is given). `HF_ENDPOINT`, `HF_TOKEN`, cached.
        #[arg(long, value_name = "MODEL_ID")]
        hf: Option<String>,
        /// Print a readable table instead of JSON.
        #[arg(long)]
        table: bool,
    },
    /// Print the launch line and config files that run the scenario's layout in a framework:
    /// torchrun, Accelerate FSDP2, DeepSpeed, Megatron-LM, torchtitan (training) and vLLM,
    /// SGLang (its serving settings). What a tool cannot express is printed as notes.
    Export {
        /// Scenario JSON file (`-` reads stdin). Omit when using `--link`.
        #[arg(required_unless_present = "link", conflicts_with = "link")]
        scenario: Option<PathBuf>,
        /// A share link (query, `?query` or full URL) instead of a file.
        #[arg(long)]
        link: Option<String>,
        /// Which export: torchrun, accelerate, deepspeed, megatron, torchtitan, vllm, sglang or all.
        #[arg(long, default_value = "all")]
        format: String,
        /// Print the exports (text, notes, file name) as JSON instead.
        #[arg(long, conflicts_with = "out_dir")]
        json: bool,
        /// Write each export to DIR/<file name> (launch.sh, fsdp2.yaml, ds_config.json, ...)
        /// and their notes to DIR/NOTES.md; prints what was written.
        #[arg(long, value_name = "DIR")]
        out_dir: Option<PathBuf>,
    },
    /// Will the fine-tuning (or training) scenario fit its GPU: the largest micro-batch, the
    /// longest sequence, and when it does not fit the changes that make it fit, cheapest first
    /// (smallest added GPU-seconds per step), each with its peak memory and step time; with a
    /// dataset size, the time per epoch.
    Fit {
        /// Scenario JSON file (`-` reads stdin) or a share link (query, `?query` or full URL).
        input: String,
        /// Dataset size in tokens (packing on: `pack=1` / `training.packing`).
        #[arg(long, conflicts_with_all = ["examples", "mean_len"])]
        dataset_tokens: Option<f64>,
        /// Dataset size in examples (with --mean-len).
        #[arg(long, requires = "mean_len")]
        examples: Option<f64>,
        /// Mean tokens per example (with --examples).
        #[arg(long, requires = "examples")]
        mean_len: Option<f64>,
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
        /// `--hf MODEL_ID`: a Hub model in place of the scenario's.
        #[command(flatten)]
        hub: crate::input::HubFlag,
    },
    /// The run's bill: ideal and expected days, GPU-hours, dollars, energy, tokens per joule,
    /// expected interruptions, checkpoint size and write time, the Young checkpoint interval,
    /// restart cost and goodput, each with its formula; every default cited.
    Bill(crate::commands::bill::Args),
    /// The smallest cluster (node counts listed, or powers of two) whose best mesh trains the
    /// token budget by the deadline (and within the budget), with each smaller size's reason.
    Deadline(crate::commands::deadline::Args),
    /// The fewest GPUs of each allowed type that serve a request rate within TTFT and TPOT
    /// bounds, ranked by dollars per million output tokens, with joules per million tokens and
    /// idle power.
    Fleet(crate::commands::fleet::Args),
    /// Serving time of the scenario's replica (serving.tp × serving.pp): TTFT, TPOT, throughput.
    Serve(crate::commands::serve::Args),
    /// Rank every serving deployment of the scenario's cluster (replicas × TP × PP, × EP for
    /// MoE, and disaggregated prefill/decode pools) by output tokens/s per GPU meeting a TTFT
    /// and TPOT target; rejected deployments counted by reason.
    ServeSearch(crate::commands::serve_search::Args),
    /// Print the share-link query of a scenario JSON file.
    Link {
        /// Scenario JSON (e.g. examples/article-70b-mesh.json); `-` reads stdin.
        scenario: PathBuf,
    },
    /// Print the scenario JSON a share link (query, `?query` or full URL) describes.
    DecodeLink {
        /// The link or its query string.
        query: String,
        /// Fall back to defaults for bad parameters (reported on stderr) instead of failing.
        #[arg(long)]
        lenient: bool,
    },
    /// Rank every DP × TP × PP × CP × EP mesh of the scenario's cluster (each at its best ZeRO
    /// stage, micro-batch, schedule and recompute) by predicted step time; list rejections by reason.
    Search {
        /// Scenario JSON (its layout is ignored; its model, cluster, batch and, when switched on,
        /// its calibration are used, as `eval` uses them); `-` reads stdin.
        scenario: PathBuf,
        /// Calibration summary JSON (from `meshplan calibrate`) to use instead of assumed links and
        /// GEMM rates; its fits take precedence over the scenario's own calibration.
        #[arg(long)]
        calibration: Option<PathBuf>,
        /// Feasible candidates to print.
        #[arg(long, default_value_t = 20)]
        top: usize,
        /// Rejected blocks to include in the JSON (counts by reason are always complete).
        #[arg(long, default_value_t = 50)]
        rejected: usize,
        /// Rank numbering order, fastest first (Megatron default `tp-cp-ep-dp-pp`).
        #[arg(long, default_value = "tp-cp-ep-dp-pp")]
        rank_order: String,
        /// List every knob setting of a mesh as its own row (default: each mesh once, at its best).
        #[arg(long)]
        every_knob: bool,
        /// Print a table instead of JSON.
        #[arg(long)]
        table: bool,
        /// `--hf MODEL_ID`: a Hub model in place of the scenario's.
        #[command(flatten)]
        hub: crate::input::HubFlag,
    },
    /// Check the step-time model against published training runs: per row the prediction,
    /// the measurement and their relative error; summaries per quantity and per source; the
    /// rank of each published mesh in the mesh search. Exits 0 whatever the accuracy.
    Validate {
        /// Dataset JSON (default: validation/public-runs.json, or with `--serving`
        /// validation/serving-runs.json, built into the binary).
        dataset: Option<PathBuf>,
        /// Score the serving time model against published serving measurements (TTFT, TPOT,
        /// output tokens/s) instead of the step-time model against training runs.
        #[arg(long, conflicts_with = "no_search")]
        serving: bool,
        /// Score the model's parts against published micro-benchmarks instead
        /// (validation/parts/: nccl-tests bus bandwidth, GEMMs by shape, attention kernels,
        /// HBM streaming); DATASET is then one part's file, named by its part
        /// (collectives.json, gemm.json, attention.json, hbm.json).
        #[arg(long, conflicts_with_all = ["serving", "no_search", "write_errors"])]
        parts: bool,
        /// Score the memory model against published fine-tuning and ZeRO peak-memory rows
        /// instead (validation/memory-runs.json: allocated and reserved peaks, each compared with
        /// the matching prediction); no mesh search.
        #[arg(long, conflicts_with_all = ["serving", "parts", "write_errors"])]
        memory: bool,
        /// Set the planner's expected GPU-hours (goodput included) against the totals model
        /// cards and technical reports state (validation/gpu-hours.json); no mesh search.
        #[arg(long, conflicts_with_all = ["serving", "parts", "memory", "write_errors"])]
        gpu_hours: bool,
        /// Print the full result as JSON.
        #[arg(long, conflicts_with = "table")]
        json: bool,
        /// Print the per-row table (breakdown, defaults, rule violations) before the summaries.
        #[arg(long)]
        table: bool,
        /// Skip the mesh search (the comparison alone).
        #[arg(long)]
        no_search: bool,
        /// Also write each row's first-seen and current error to FILE, the table the error
        /// bands of `eval`, `search` and the page read (validation/errors.tsv).
        #[arg(long, value_name = "FILE", conflicts_with = "serving")]
        write_errors: Option<PathBuf>,
    },
    /// Fit link bandwidth/latency and GEMM efficiency from gpu-bench reports and
    /// nccl-tests outputs (text table or `-J` JSON); prints the calibration summary.
    Calibrate {
        /// gpu-bench report JSON files and/or nccl-tests outputs.
        #[arg(required = true)]
        inputs: Vec<PathBuf>,
        /// GPU preset the GEMM efficiencies are relative to (default: from the report, else h100-sxm).
        #[arg(long)]
        gpu: Option<String>,
        /// Operation of nccl-tests outputs that do not name it (all_reduce, all_gather, ...).
        #[arg(long)]
        op: Option<String>,
        /// Ranks of nccl-tests outputs that do not list them.
        #[arg(long)]
        ranks: Option<u64>,
        /// Ranks per node of nccl-tests outputs (default: from their host names, else all on one node).
        #[arg(long)]
        ranks_per_node: Option<u64>,
        /// Print a table instead of JSON.
        #[arg(long, conflicts_with = "compact")]
        table: bool,
        /// Print the short form a share link carries (`cal=` parameter) instead of JSON.
        #[arg(long)]
        compact: bool,
    },
}
