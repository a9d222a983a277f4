//! `gpu-bench`: measure collectives, GEMMs, memory bandwidth and sharded layer
//! steps on real GPUs and write a planner-core report.
//!
//! Exit status: 0 everything ran; 3 a report was written but is partial
//! (Ctrl-C, or a section failed); 1 nothing could be measured (missing
//! library, no GPU, rendezvous failure); 2 bad arguments.

// Product functions fit on a screen (clippy.toml sets the threshold); tests are exempt.
#![cfg_attr(not(test), warn(clippy::too_many_lines))]
use std::path::PathBuf;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use clap::{Args, Parser, Subcommand};
use gpu_bench::collectives::CollectiveConfig;
use gpu_bench::gpu::{self, Comm, Gpu};
use gpu_bench::groups::MeshLayout;
use gpu_bench::launch::{self, Launcher};
use gpu_bench::libs::{self, Lib};
use gpu_bench::rendezvous::{self, PeerInfo};
use gpu_bench::suite::{self, Run, SuiteConfig};
use gpu_bench::sweep::{parse_size, size_sweep};
use gpu_bench::{EXIT_FAILURE, EXIT_PARTIAL, EXIT_SUCCESS};
use planner_core::edges::report::{report_to_json, BenchReport, Environment, GpuInfo};

#[derive(Parser)]
#[command(
    name = "gpu-bench",
    version,
    about = "Measure NCCL collectives, GEMMs, memory bandwidth and sharded layer steps; write a meshplan report.",
    after_help = "Exit status: 0 complete; 3 report written but partial (Ctrl-C or a failed section); \
                  1 failure (missing library, no GPU, ranks that never joined); 2 bad arguments.\n\
                  One process for a node's GPUs: `gpu-bench all --gpus 8 -o report.json`.\n\
                  One process per GPU: `torchrun --nproc-per-node 8 gpu-bench all` (also srun, mpirun); \
                  rank 0 serves the NCCL id on MASTER_PORT+1 (or --port) and writes the report."
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Everything: collectives, GEMMs, memory bandwidth, layer steps.
    All(Opts),
    /// NCCL collectives only.
    Collectives(Opts),
    /// GEMMs only.
    Gemm(Opts),
    /// Device-to-device copy bandwidth only.
    Membw(Opts),
    /// TP MLP and FSDP unit steps only.
    Layers(Opts),
}

#[derive(Args, Clone)]
struct Opts {
    /// Report file (JSON, planner-core schema version 1).
    #[arg(short, long, default_value = "report.json")]
    output: PathBuf,
    /// Short run (under a minute): fewer sizes and iterations.
    #[arg(long)]
    quick: bool,
    /// GPUs this process drives when not under a launcher (default: all visible).
    #[arg(long)]
    gpus: Option<usize>,
    /// Smallest collective size (bytes; K, M, G suffixes).
    #[arg(long)]
    min_bytes: Option<String>,
    /// Largest collective size.
    #[arg(long)]
    max_bytes: Option<String>,
    /// Size step factor.
    #[arg(long)]
    factor: Option<u64>,
    /// Collectives: all, or a list of all_reduce, all_gather, reduce_scatter, all_to_all, broadcast, reduce, send_recv.
    #[arg(long, default_value = "all")]
    ops: String,
    /// Collective element types: bf16, fp16, fp32.
    #[arg(long, default_value = "bf16")]
    dtypes: String,
    /// Also sweep the sub-communicators of this layout, TP fastest (e.g. tp=8,dp=2,pp=1).
    #[arg(long)]
    layout: Option<String>,
    /// Warm-up iterations.
    #[arg(long)]
    warmup: Option<u32>,
    /// Timed iterations.
    #[arg(long)]
    iters: Option<u32>,
    /// Skip the element-by-element check of collective results.
    #[arg(long)]
    no_check: bool,
    /// GEMM input types: bf16, fp16, fp32, fp8.
    #[arg(long, default_value = "bf16,fp16,fp8")]
    gemm_dtypes: String,
    /// Model preset whose layer shapes are benchmarked.
    #[arg(long, default_value = "llama-3.1-70b")]
    model: String,
    /// TP degree of the per-rank GEMM shapes.
    #[arg(long, default_value_t = 8)]
    tp: u32,
    /// Tokens per step (micro-batch × sequence) for layer shapes and steps.
    #[arg(long)]
    tokens: Option<u64>,
    /// Host of rank 0 (default: MASTER_ADDR).
    #[arg(long)]
    master_addr: Option<String>,
    /// Port rank 0 serves the NCCL id on (default: MASTER_PORT + 1, or 29601).
    #[arg(long)]
    port: Option<u16>,
    /// Seconds to wait for every rank to join.
    #[arg(long, default_value_t = 300)]
    join_timeout: u64,
}

fn main() {
    let cli = Cli::parse();
    let (sections, opts) = match cli.command {
        Command::All(o) => ([true, true, true, true], o),
        Command::Collectives(o) => ([true, false, false, false], o),
        Command::Gemm(o) => ([false, true, false, false], o),
        Command::Membw(o) => ([false, false, true, false], o),
        Command::Layers(o) => ([false, false, false, true], o),
    };
    let code = match run(sections, &opts) {
        Ok(code) => code,
        Err(msg) => {
            eprintln!("gpu-bench: error: {msg}");
            EXIT_FAILURE
        }
    };
    std::process::exit(code);
}

fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|s| s.trim().to_string())
        .ok()
        .filter(|s| !s.is_empty())
        .or_else(|| std::env::var("HOSTNAME").ok())
        .unwrap_or_else(|| "localhost".into())
}

fn peer_of(gpu: &Gpu, rank: u32, host: &str) -> PeerInfo {
    let (major, minor) = gpu.compute_capability();
    PeerInfo {
        rank,
        host: host.to_string(),
        gpu_name: gpu.name(),
        memory_bytes: gpu.total_bytes(),
        compute_capability: format!("{major}.{minor}"),
    }
}

fn config(sections: [bool; 4], o: &Opts, world: u32) -> Result<SuiteConfig, String> {
    let q = o.quick;
    let min = parse_size(o.min_bytes.as_deref().unwrap_or("1K"))
        .map_err(|e| format!("--min-bytes: {e}"))?;
    let default_max = if q { "64M" } else { "1G" };
    let max = parse_size(o.max_bytes.as_deref().unwrap_or(default_max))
        .map_err(|e| format!("--max-bytes: {e}"))?;
    let factor = o.factor.unwrap_or(if q { 8 } else { 4 });
    let sizes = size_sweep(min, max, factor)?;
    let model = planner_core::resolve::presets::model_preset(&o.model).ok_or_else(|| {
        let ids: Vec<&str> = planner_core::resolve::presets::model_presets()
            .iter()
            .map(|p| p.id)
            .collect();
        format!(
            "--model: unknown preset '{}' (known: {})",
            o.model,
            ids.join(", ")
        )
    })?;
    let layout = o
        .layout
        .as_deref()
        .map(|l| MeshLayout::parse(l, world))
        .transpose()?;
    let warmup = o.warmup.unwrap_or(if q { 2 } else { 5 });
    let iters = o.iters.unwrap_or(if q { 5 } else { 20 });
    Ok(SuiteConfig {
        collectives: sections[0],
        gemms: sections[1],
        membw: sections[2],
        layers: sections[3],
        coll: CollectiveConfig {
            ops: suite::parse_ops(&o.ops)?,
            dtypes: suite::parse_dtypes(&o.dtypes, "--dtypes", false)?,
            sizes,
            warmup,
            iters,
            check: !o.no_check,
            check_limit_bytes: 64 << 20,
        },
        layout,
        square_sizes: if q {
            vec![4096, 8192]
        } else {
            vec![2048, 4096, 8192]
        },
        gemm_dtypes: suite::parse_dtypes(&o.gemm_dtypes, "--gemm-dtypes", true)?,
        model_id: o.model.clone(),
        model,
        gemm_tp: o.tp.max(1),
        tokens: o.tokens.unwrap_or(if q { 2048 } else { 4096 }).max(1),
        copy_bytes: if q { 256 << 20 } else { 1 << 30 },
        warmup,
        iters,
        tp_chunks: 4,
    })
}

/// The GPUs this process drives, their global ranks and the world size: `--gpus` of the
/// visible ones without a launcher, the local rank's one under a launcher.
fn open_gpus(
    env: &launch::LaunchInfo,
    visible: usize,
    o: &Opts,
) -> Result<(Vec<Gpu>, Vec<u32>, u32), String> {
    Ok(if env.launcher == Launcher::Single {
        let n = o.gpus.unwrap_or(visible);
        if n == 0 || n > visible {
            return Err(format!("--gpus {n}: the driver sees {visible} GPU(s)"));
        }
        let gpus = (0..n)
            .map(Gpu::open)
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| e.to_string())?;
        (gpus, (0..n as u32).collect::<Vec<_>>(), n as u32)
    } else {
        if o.gpus.is_some_and(|g| g != 1) {
            return Err("--gpus applies without a launcher; under torchrun/srun/mpirun each process drives one GPU".into());
        }
        // With CUDA_VISIBLE_DEVICES set per rank, each process sees only its GPU as ordinal 0.
        let ordinal = if visible == 1 {
            0
        } else {
            env.local_rank as usize
        };
        if ordinal >= visible {
            return Err(format!(
                "local rank {} but the driver sees {visible} GPU(s) on this node",
                env.local_rank
            ));
        }
        (
            vec![Gpu::open(ordinal).map_err(|e| e.to_string())?],
            vec![env.rank],
            env.world_size,
        )
    })
}

/// Every rank's host and GPU, and this process's NCCL communicators: one per local GPU
/// without a launcher, else one from the id rank 0 serves.
fn connect(
    env: &launch::LaunchInfo,
    gpus: &[Gpu],
    global_ranks: &[u32],
    host: &str,
    use_nccl: bool,
    timeout: Duration,
) -> Result<(Vec<PeerInfo>, Vec<Comm>), String> {
    Ok(if env.launcher == Launcher::Single {
        let peers = gpus
            .iter()
            .zip(global_ranks)
            .map(|(g, r)| peer_of(g, *r, host))
            .collect();
        let comms = if use_nccl {
            Comm::init_all(gpus).map_err(|e| format!("NCCL init: {e}"))?
        } else {
            Vec::new()
        };
        (peers, comms)
    } else {
        let me = peer_of(&gpus[0], env.rank, host);
        let (id, peers) = if env.rank == 0 {
            let id = gpu::nccl_unique_id().map_err(|e| e.to_string())?;
            let peers = if env.world_size > 1 {
                rendezvous::serve(env.port, env.world_size, me, &id, timeout)?
            } else {
                vec![me]
            };
            (id, peers)
        } else {
            let addr = env.master_addr.clone().unwrap_or_default();
            rendezvous::join(&addr, env.port, &me, timeout)?
        };
        let comm = Comm::init_rank(&gpus[0], &id, env.rank, env.world_size)
            .map_err(|e| format!("NCCL init: {e}"))?;
        (peers, vec![comm])
    })
}

/// Writes the report (rank 0), or the raw results beside it when it fails its own check.
fn write_report(
    report: &BenchReport,
    output: &std::path::Path,
    complete: bool,
) -> Result<(), String> {
    let text = match report_to_json(report) {
        Ok(t) => t,
        Err(e) => {
            // Keep the measurements for inspection even though the app would reject them.
            let raw = output.with_extension("invalid.json");
            let _ = serde_json::to_string_pretty(report).map(|t| std::fs::write(&raw, t));
            return Err(format!(
                "the report failed its own check ({e}); raw results saved to {}",
                raw.display()
            ));
        }
    };
    std::fs::write(output, text + "\n")
        .map_err(|e| format!("cannot write the report to {}: {e}", output.display()))?;
    eprintln!(
        "gpu-bench: wrote {} ({}; {} collective rows, {} GEMMs, {} notes)",
        output.display(),
        if complete { "complete" } else { "partial" },
        report.collectives.len(),
        report.gemms.len(),
        report.notes.len()
    );
    Ok(())
}

fn run(sections: [bool; 4], o: &Opts) -> Result<i32, String> {
    // Libraries first: cudarc panics on a missing one. NCCL is needed by the
    // collectives and layer steps, and (checked below, once the GPU count is
    // known) wherever several GPUs or processes must agree; a lone `gemm` or
    // `membw` run on one GPU goes without it.
    let mut needed = vec![Lib::Driver];
    if sections[0] || sections[3] {
        needed.push(Lib::Nccl);
    }
    if sections[1] || sections[3] {
        needed.push(Lib::CublasLt);
    }
    libs::check(&needed)?;

    let env = launch::from_env(&launch::process_env(), o.master_addr.as_deref(), o.port)?;
    let visible = Gpu::count().map_err(|e| {
        let hint = if e.to_string().contains("STUB_LIBRARY") {
            " (the libcuda.so loaded is the CUDA toolkit's link-time stub: take its `stubs` folder off LD_LIBRARY_PATH)"
        } else {
            ""
        };
        format!("cannot query GPUs: {e}{hint}")
    })?;
    if visible == 0 {
        return Err(
            "the CUDA driver sees no GPU (check nvidia-smi and CUDA_VISIBLE_DEVICES)".into(),
        );
    }
    let host = hostname();
    let (gpus, global_ranks, world_size) = open_gpus(&env, visible, o)?;
    let cfg = config(sections, o, world_size)?;
    let use_nccl = suite::needs_nccl(
        sections[0],
        sections[3],
        env.launcher == Launcher::Single,
        gpus.len(),
    );
    if use_nccl {
        libs::check(&[Lib::Nccl])?;
    }

    // Share the NCCL id and learn every rank's host and GPU.
    let timeout = Duration::from_secs(o.join_timeout.max(1));
    let (peers, world) = connect(&env, &gpus, &global_ranks, &host, use_nccl, timeout)?;

    let mut hosts: Vec<String> = Vec::new();
    for p in &peers {
        if !hosts.contains(&p.host) {
            hosts.push(p.host.clone());
        }
    }
    let ranks_per_node = hosts
        .iter()
        .map(|h| peers.iter().filter(|p| &p.host == h).count() as u32)
        .max()
        .unwrap_or(1);
    let environment = Environment {
        gpus: peers
            .iter()
            .map(|p| GpuInfo {
                rank: p.rank,
                host: p.host.clone(),
                name: p.gpu_name.clone(),
                memory_bytes: p.memory_bytes,
                compute_capability: p.compute_capability.clone(),
            })
            .collect(),
        gpu_count: world_size,
        driver_version: gpu::driver_version(),
        cuda_version: Gpu::cuda_version(),
        nccl_version: if use_nccl || Lib::Nccl.present() {
            gpu::nccl_version()
        } else {
            String::new()
        },
        hosts: hosts.clone(),
        ranks: world_size,
        ranks_per_node,
        topology: format!(
            "{} node(s) × {ranks_per_node} GPU(s), launched by {:?}; links not probed (see `nvidia-smi topo -m`)",
            hosts.len(),
            env.launcher
        ),
    };
    let created = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let tool = format!("gpu-bench {}", env!("CARGO_PKG_VERSION"));
    let is_root = global_ranks.first() == Some(&0);
    let mut run = Run {
        gpus,
        global_ranks,
        world_size,
        ranks_per_node,
        is_root,
        progress: None,
        report: BenchReport::new(&tool, created, environment),
        failures: 0,
    };
    suite::install_ctrl_c()?;

    let groups = match &cfg.layout {
        Some(layout) => {
            suite::make_groups(&run, &world, layout).map_err(|e| format!("--layout: {e}"))?
        }
        None => Vec::new(),
    };
    if is_root {
        run.progress = Some(suite::progress_bar(cfg.steps(1 + groups.len())));
        run.say(&format!(
            "# gpu-bench: {} rank(s) on {} node(s), {} ({}), driver {}, CUDA {}, NCCL {}",
            world_size,
            hosts.len(),
            run.report
                .environment
                .gpus
                .first()
                .map(|g| g.name.as_str())
                .unwrap_or("?"),
            run.report
                .environment
                .gpus
                .first()
                .map(|g| g.compute_capability.as_str())
                .unwrap_or("?"),
            run.report.environment.driver_version,
            run.report.environment.cuda_version,
            run.report.environment.nccl_version
        ));
    }
    let complete = suite::run_suite(&mut run, &world, &groups, &cfg);
    // Which copies of the libraries were loaded (pip wheel or system), read
    // after the sections ran (cuBLASLt loads at its first call).
    let loaded = libs::loaded();
    if !loaded.is_empty() {
        run.note(
            planner_core::edges::report::NoteLevel::Info,
            "environment",
            "libraries",
            &loaded.join(", "),
        );
    }
    run.report.complete = complete;
    drop(groups);
    drop(world);

    if is_root {
        write_report(&run.report, &o.output, complete)?;
    }
    Ok(if complete { EXIT_SUCCESS } else { EXIT_PARTIAL })
}
