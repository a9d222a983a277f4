//! The run: local GPUs, their world communicators, the report being filled,
//! progress and Ctrl-C; and the sections `gpu-bench all` runs in order.

use std::sync::atomic::{AtomicBool, Ordering};

use indicatif::{ProgressBar, ProgressStyle};
use planner_core::edges::report::{
    BenchReport, CollectiveOp, Dtype, LayerStepResult, Note, NoteLevel,
};
use planner_core::input::model::ModelSpec;

use crate::collectives::{sweep, CollectiveConfig, Team};
use crate::gemm::{bench_gemm, layer_shapes, spin_up, square_shapes, supported, Blas};
use crate::gpu::{reduce_scalar, Combine, Comm, Gpu, GpuError};
use crate::groups::{group_ranks_per_node, GroupKind, MeshLayout};
use crate::layer::{fsdp_unit, tp_mlp};
use crate::membw::bench_copy;
use crate::table::{gemm_header, gemm_row, layer_row, membw_row};

static INTERRUPTED: AtomicBool = AtomicBool::new(false);

/// True once Ctrl-C was pressed: sections stop and the report is written as incomplete.
pub fn interrupted() -> bool {
    INTERRUPTED.load(Ordering::SeqCst)
}

/// Installs the Ctrl-C handler: the first press stops after the current
/// measurement, a second one exits at once (status 130).
pub fn install_ctrl_c() -> Result<(), String> {
    ctrlc::set_handler(|| {
        if INTERRUPTED.swap(true, Ordering::SeqCst) {
            std::process::exit(130);
        }
        eprintln!("\ninterrupted: finishing the current measurement, then writing what was measured (Ctrl-C again to quit now)");
    })
    .map_err(|e| format!("cannot install the Ctrl-C handler: {e}"))
}

/// Why a section returned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stop {
    /// It finished.
    Done,
    /// Ctrl-C.
    Interrupted,
}

/// Everything a section needs.
pub struct Run {
    /// GPUs this process drives (one under a launcher).
    pub gpus: Vec<Gpu>,
    /// Global rank of each local GPU.
    pub global_ranks: Vec<u32>,
    /// Ranks in the run.
    pub world_size: u32,
    /// Ranks per node.
    pub ranks_per_node: u32,
    /// This process holds global rank 0: it prints and writes the report.
    pub is_root: bool,
    /// Progress bar (rank 0, long runs).
    pub progress: Option<ProgressBar>,
    /// The report being filled.
    pub report: BenchReport,
    /// Measurements that failed and were noted while their section went on
    /// (a GEMM shape cuBLASLt rejected, one layer step): the report is then partial.
    pub failures: u32,
}

impl Run {
    /// Prints a line on rank 0 (above the progress bar when there is one).
    pub fn say(&self, line: &str) {
        if !self.is_root {
            return;
        }
        // `suspend` rather than `ProgressBar::println`: the latter prints nothing
        // when the bar is hidden (stderr not a terminal), which would lose the table.
        match &self.progress {
            Some(p) => p.suspend(|| println!("{line}")),
            None => println!("{line}"),
        }
    }

    /// Advances the progress bar.
    pub fn tick(&self) {
        if let Some(p) = &self.progress {
            p.inc(1);
        }
    }

    /// Adds a note to the report (and says it).
    pub fn note(&mut self, level: NoteLevel, section: &str, subject: &str, message: &str) {
        self.say(&format!("# {level:?}: {subject}: {message}"));
        self.report.notes.push(Note {
            level,
            section: section.into(),
            subject: subject.into(),
            message: message.into(),
        });
    }

    /// Combines this process's `value` with every other process's over all ranks.
    /// Without communicators (one process, one GPU, no NCCL: see [`needs_nccl`])
    /// there is nothing to combine with.
    pub fn combine(&self, world: &[Comm], value: f64, how: Combine) -> Result<f64, GpuError> {
        let values = per_gpu_values(value, self.gpus.len(), how);
        if world.is_empty() {
            return Ok(combine_on_host(&values, how));
        }
        reduce_scalar(&self.gpus, world, &values, how)
    }

    /// True when `ok` holds on every rank.
    pub fn agree(&self, world: &[Comm], ok: bool) -> Result<bool, GpuError> {
        Ok(self.combine(world, if ok { 1.0 } else { 0.0 }, Combine::Min)? > 0.5)
    }

    /// True when any rank was interrupted; then every rank stops at the same
    /// point, so none is left waiting in a collective the others never join.
    pub fn should_stop(&self, world: &[Comm]) -> Result<bool, GpuError> {
        let stop = !self.agree(world, !interrupted())?;
        if stop {
            INTERRUPTED.store(true, Ordering::SeqCst);
        }
        Ok(stop)
    }

    /// [`Stop`] after a section: everyone stops if anyone was interrupted.
    pub fn section_end(&self, world: &[Comm]) -> Result<Stop, GpuError> {
        Ok(if self.should_stop(world)? {
            Stop::Interrupted
        } else {
            Stop::Done
        })
    }
}

/// One value per local GPU for [`reduce_scalar`] so that the reduction over
/// all GPUs of all processes counts this process's `value` once: the first
/// GPU carries it, the others the identity of `how` (0 for a sum; the value
/// itself for max and min). Padding a sum with copies would count it once per GPU.
pub fn per_gpu_values(value: f64, gpus: usize, how: Combine) -> Vec<f64> {
    let pad = match how {
        Combine::Sum => 0.0,
        Combine::Max | Combine::Min => value,
    };
    let mut all = vec![pad; gpus.max(1)];
    all[0] = value;
    all
}

fn combine_on_host(values: &[f64], how: Combine) -> f64 {
    let first = values.first().copied().unwrap_or(0.0);
    values[1.min(values.len())..]
        .iter()
        .fold(first, |acc, &v| match how {
            Combine::Sum => acc + v,
            Combine::Max => acc.max(v),
            Combine::Min => acc.min(v),
        })
}

/// Whether the run needs NCCL communicators: for the collectives and layer
/// steps, and wherever several GPUs (or processes) must agree on when to stop.
/// One process on one GPU running GEMMs or the copy needs none, so those
/// still run where NCCL is missing or fails to initialise.
pub fn needs_nccl(
    collectives: bool,
    layers: bool,
    single_process: bool,
    local_gpus: usize,
) -> bool {
    collectives || layers || !single_process || local_gpus > 1
}

/// What to run and how hard.
#[derive(Clone, Debug)]
pub struct SuiteConfig {
    /// Run the collective sweeps.
    pub collectives: bool,
    /// Run the GEMMs.
    pub gemms: bool,
    /// Run the copy bandwidth.
    pub membw: bool,
    /// Run the layer steps.
    pub layers: bool,
    /// Collective sweep settings.
    pub coll: CollectiveConfig,
    /// Sub-communicator layout, if any.
    pub layout: Option<MeshLayout>,
    /// Square GEMM sizes.
    pub square_sizes: Vec<u64>,
    /// GEMM input types.
    pub gemm_dtypes: Vec<Dtype>,
    /// Model preset id for layer shapes.
    pub model_id: String,
    /// The model's shapes.
    pub model: ModelSpec,
    /// TP degree for the per-rank GEMM shapes.
    pub gemm_tp: u32,
    /// Tokens (micro-batch × sequence) for layer shapes and steps.
    pub tokens: u64,
    /// Copy buffer size, bytes.
    pub copy_bytes: u64,
    /// GEMM / copy / layer warm-up iterations.
    pub warmup: u32,
    /// GEMM / copy / layer timed iterations.
    pub iters: u32,
    /// Token chunks of the TP MLP step.
    pub tp_chunks: u64,
}

impl SuiteConfig {
    /// Progress steps the run will take (for the bar).
    pub fn steps(&self, groups: usize) -> u64 {
        let mut n = 0;
        if self.collectives {
            n += (self.coll.ops.len() * self.coll.dtypes.len() * self.coll.sizes.len() * groups)
                as u64;
        }
        if self.gemms {
            n += ((self.square_sizes.len() + 4) * self.gemm_dtypes.len()) as u64;
        }
        if self.membw {
            n += 1;
        }
        if self.layers {
            n += 2;
        }
        n
    }
}

/// A progress bar for `steps` steps, drawn on stderr (hidden when it is not a terminal).
pub fn progress_bar(steps: u64) -> ProgressBar {
    let bar = ProgressBar::new(steps);
    if let Ok(style) =
        ProgressStyle::with_template("{elapsed_precise} [{bar:30}] {pos}/{len} {msg}")
    {
        bar.set_style(style.progress_chars("=> "));
    }
    bar
}

/// Sub-communicators of the layout, with their label and ranks per node.
pub struct Group {
    /// Dimension.
    pub kind: GroupKind,
    /// One communicator per local GPU.
    pub comms: Vec<Comm>,
    /// Ranks per group.
    pub ranks: u32,
    /// Members of a group that share a node.
    pub ranks_per_node: u32,
}

/// Splits the world into the layout's TP, DP and PP groups (those of degree > 1).
pub fn make_groups(run: &Run, world: &[Comm], layout: &MeshLayout) -> Result<Vec<Group>, GpuError> {
    let mut out = Vec::new();
    for kind in [GroupKind::Tp, GroupKind::Dp, GroupKind::Pp] {
        let degree = layout.degree(kind);
        if degree <= 1 {
            continue;
        }
        let colors: Vec<u32> = run
            .global_ranks
            .iter()
            .map(|r| layout.color(kind, *r))
            .collect();
        let comms = Comm::split(&run.gpus, world, &colors)?;
        let first = run.global_ranks.first().copied().unwrap_or(0);
        out.push(Group {
            kind,
            comms,
            ranks: degree,
            ranks_per_node: group_ranks_per_node(&layout.members(kind, first), run.ranks_per_node),
        });
    }
    Ok(out)
}

/// Runs one section; an error becomes a note and marks the report incomplete.
fn guarded<F>(run: &mut Run, section: &str, failed: &mut bool, f: F) -> Stop
where
    F: FnOnce(&mut Run) -> Result<Stop, GpuError>,
{
    match f(run) {
        Ok(s) => s,
        Err(e) => {
            *failed = true;
            run.note(
                NoteLevel::Warning,
                section,
                "section aborted",
                &e.to_string(),
            );
            Stop::Done
        }
    }
}

/// Runs the requested sections in order. Returns whether everything ran
/// (false after Ctrl-C or a section that failed).
pub fn run_suite(run: &mut Run, world: &[Comm], groups: &[Group], cfg: &SuiteConfig) -> bool {
    let mut failed = false;
    let mut stop = Stop::Done;

    if cfg.collectives {
        stop = guarded(run, "collectives", &mut failed, |run| {
            let world_team = Team {
                label: "world",
                comms: world,
                ranks: run.world_size,
                ranks_per_node: run.ranks_per_node,
            };
            if sweep(run, world, &world_team, &cfg.coll)? == Stop::Interrupted {
                return Ok(Stop::Interrupted);
            }
            for g in groups {
                let team = Team {
                    label: g.kind.label(),
                    comms: &g.comms,
                    ranks: g.ranks,
                    ranks_per_node: g.ranks_per_node,
                };
                if sweep(run, world, &team, &cfg.coll)? == Stop::Interrupted {
                    return Ok(Stop::Interrupted);
                }
            }
            Ok(Stop::Done)
        });
        if run.world_size == 1 && run.is_root {
            run.note(
                NoteLevel::Info,
                "collectives",
                "world size 1",
                "one rank: collectives move no data between GPUs (busbw is 0); run on several GPUs to measure links",
            );
        }
    }

    if stop == Stop::Done && cfg.gemms {
        stop = guarded(run, "gemms", &mut failed, |run| {
            gemm_section(run, world, cfg)
        });
    }
    if stop == Stop::Done && cfg.membw {
        stop = guarded(run, "memory_bandwidth", &mut failed, |run| {
            // Rank 0's first GPU measures; the others wait at the agreement.
            let mut outcome = Ok(());
            if run.is_root && !interrupted() {
                run.tick();
                match bench_copy(&run.gpus[0], cfg.copy_bytes, cfg.warmup, cfg.iters) {
                    Ok(r) => {
                        run.say(&membw_row(&r));
                        run.report.memory_bandwidth.push(r);
                    }
                    Err(GpuError::OutOfMemory { .. }) => {
                        let subject = format!("d2d copy {} B", cfg.copy_bytes);
                        run.note(
                            NoteLevel::Skipped,
                            "memory_bandwidth",
                            &subject,
                            "out of memory",
                        );
                    }
                    Err(e) => outcome = Err(e),
                }
            }
            let stop = run.section_end(world)?;
            outcome.map(|()| stop)
        });
    }
    if stop == Stop::Done && cfg.layers {
        stop = guarded(run, "layer_steps", &mut failed, |run| {
            let tp_comms = groups
                .iter()
                .find(|g| g.kind == GroupKind::Tp)
                .map(|g| &g.comms[..])
                .unwrap_or(world);
            let dp_comms = groups
                .iter()
                .find(|g| g.kind == GroupKind::Dp)
                .map(|g| &g.comms[..])
                .unwrap_or(world);
            // Each step on its own: one that fails (out of memory, say) is noted
            // and the other still runs. Setup failures are agreed on by every
            // rank, so all ranks take the same branch here.
            run.tick();
            let r = tp_mlp(
                run,
                world,
                tp_comms,
                &cfg.model_id,
                &cfg.model,
                cfg.tokens,
                cfg.tp_chunks,
                cfg.warmup,
                cfg.iters,
            );
            layer_outcome(run, "tp_mlp", r);
            if run.should_stop(world)? {
                return Ok(Stop::Interrupted);
            }
            run.tick();
            let r = fsdp_unit(
                run,
                world,
                dp_comms,
                &cfg.model_id,
                &cfg.model,
                cfg.tokens,
                cfg.warmup,
                cfg.iters,
            );
            layer_outcome(run, "fsdp_unit", r);
            run.section_end(world)
        });
    }
    if let Some(p) = &run.progress {
        p.finish_and_clear();
    }
    stop == Stop::Done && !failed && run.failures == 0 && !interrupted()
}

/// Records one layer step, or notes why it is missing.
fn layer_outcome(run: &mut Run, subject: &str, r: Result<LayerStepResult, GpuError>) {
    match r {
        Ok(r) => {
            run.say(&layer_row(&r));
            run.report.layer_steps.push(r);
        }
        Err(GpuError::OutOfMemory { .. }) => {
            run.note(NoteLevel::Skipped, "layer_steps", subject, "out of memory")
        }
        Err(e) => {
            run.failures += 1;
            run.note(NoteLevel::Warning, "layer_steps", subject, &e.to_string());
        }
    }
}

fn gemm_section(run: &mut Run, world: &[Comm], cfg: &SuiteConfig) -> Result<Stop, GpuError> {
    // GEMMs run on rank 0's first GPU only: the GPUs of a run are alike, and
    // the other ranks wait at the agreement below (reached even after an error).
    let outcome = if run.is_root {
        gemms_on_root(run, cfg)
    } else {
        Ok(())
    };
    let stop = run.section_end(world)?;
    outcome.map(|()| stop)
}

/// How long [`gemms_on_root`] spins the GPU up before the first timed GEMM.
pub const GEMM_SPIN_UP_MS: u64 = 300;

fn gemms_on_root(run: &mut Run, cfg: &SuiteConfig) -> Result<(), GpuError> {
    let gpu_cc = run.gpus[0].compute_capability();
    let mut shapes = square_shapes(&cfg.square_sizes);
    match layer_shapes(&cfg.model_id, &cfg.model, cfg.gemm_tp, cfg.tokens) {
        Ok(s) => shapes.extend(s),
        Err(msg) => run.note(NoteLevel::Skipped, "gemms", "layer shapes", &msg),
    }
    let blas = Blas::new(&run.gpus[0])?;
    run.say(&gemm_header());
    // The collectives leave the GPU at low clocks (their checks run on the
    // host): bring it up first, as gpu_check.py does for PyTorch.
    let spin = if supported(Dtype::Bf16, gpu_cc).is_ok() {
        Dtype::Bf16
    } else {
        Dtype::Fp16
    };
    if let Err(e) = spin_up(&run.gpus[0], &blas, spin, GEMM_SPIN_UP_MS) {
        run.note(
            NoteLevel::Warning,
            "gemms",
            "spin-up",
            &format!("could not run the untimed spin-up GEMMs ({e}); the first GEMMs may start at low clocks"),
        );
    }
    'dtypes: for &dtype in &cfg.gemm_dtypes {
        if let Err(msg) = supported(dtype, gpu_cc) {
            run.note(NoteLevel::Skipped, "gemms", dtype.nccl_name(), &msg);
            continue;
        }
        for shape in &shapes {
            if interrupted() {
                break 'dtypes;
            }
            run.tick();
            let subject = format!(
                "{} {}×{}×{} {}",
                dtype.nccl_name(),
                shape.m,
                shape.n,
                shape.k,
                shape.label
            );
            match bench_gemm(&run.gpus[0], &blas, shape, dtype, cfg.warmup, cfg.iters) {
                Ok(r) => {
                    run.say(&gemm_row(&r));
                    run.report.gemms.push(r);
                }
                Err(GpuError::OutOfMemory { .. }) => {
                    run.note(NoteLevel::Skipped, "gemms", &subject, "out of memory")
                }
                Err(GpuError::Unsupported(m)) => {
                    run.note(NoteLevel::Skipped, "gemms", &subject, &m)
                }
                // One shape cuBLASLt rejects need not cost the others: note it, go on.
                Err(e @ GpuError::Blas(_)) => {
                    run.failures += 1;
                    run.note(NoteLevel::Warning, "gemms", &subject, &e.to_string());
                }
                Err(e) => return Err(e),
            }
        }
    }
    Ok(())
}

/// Ops in the order they run, parsed from names like `all_reduce,all_gather`.
pub fn parse_ops(text: &str) -> Result<Vec<CollectiveOp>, String> {
    if text.trim() == "all" {
        return Ok(CollectiveOp::ALL.to_vec());
    }
    text.split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|name| {
            CollectiveOp::ALL
                .into_iter()
                .find(|op| op.name() == name)
                .ok_or_else(|| {
                    format!(
                        "--ops: unknown collective '{name}' (use {})",
                        CollectiveOp::ALL.map(|o| o.name()).join(", ")
                    )
                })
        })
        .collect()
}

/// Element types parsed from `bf16,fp16,fp32,fp8`.
pub fn parse_dtypes(text: &str, flag: &str, allow_fp8: bool) -> Result<Vec<Dtype>, String> {
    text.split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|name| match name {
            "bf16" => Ok(Dtype::Bf16),
            "fp16" => Ok(Dtype::Fp16),
            "fp32" => Ok(Dtype::Fp32),
            "fp8" if allow_fp8 => Ok(Dtype::Fp8E4m3),
            other => Err(format!(
                "{flag}: unknown type '{other}' (use bf16, fp16, fp32{})",
                if allow_fp8 { ", fp8" } else { "" }
            )),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_process_value_counts_once_whatever_its_gpu_count() {
        // 3 wrong elements found by a process driving 8 GPUs: the sum over its GPUs is 3, not 24.
        let v = per_gpu_values(3.0, 8, Combine::Sum);
        assert_eq!(v.len(), 8);
        assert_eq!(v.iter().sum::<f64>(), 3.0);
        let v = per_gpu_values(250.0, 4, Combine::Max);
        assert_eq!(v.iter().cloned().fold(f64::MIN, f64::max), 250.0);
        let v = per_gpu_values(0.0, 4, Combine::Min);
        assert_eq!(v.iter().cloned().fold(f64::MAX, f64::min), 0.0);
        assert_eq!(per_gpu_values(1.0, 0, Combine::Sum), vec![1.0]);
    }

    #[test]
    fn nccl_only_where_ranks_must_talk() {
        // `gpu-bench gemm` / `membw` on one GPU: no NCCL.
        assert!(!needs_nccl(false, false, true, 1));
        assert!(needs_nccl(true, false, true, 1), "collectives");
        assert!(needs_nccl(false, true, true, 1), "layer steps");
        assert!(
            needs_nccl(false, false, true, 2),
            "two local GPUs agree through NCCL"
        );
        assert!(needs_nccl(false, false, false, 1), "under a launcher");
        assert_eq!(combine_on_host(&[3.0, 0.0], Combine::Sum), 3.0);
        assert_eq!(combine_on_host(&[3.0, 5.0], Combine::Max), 5.0);
        assert_eq!(combine_on_host(&[3.0, 5.0], Combine::Min), 3.0);
        assert_eq!(combine_on_host(&[], Combine::Sum), 0.0);
    }

    #[test]
    fn op_and_dtype_lists_parse_with_named_errors() {
        assert_eq!(parse_ops("all").unwrap().len(), 7);
        assert_eq!(
            parse_ops("all_reduce, send_recv").unwrap(),
            vec![CollectiveOp::AllReduce, CollectiveOp::SendRecv]
        );
        assert!(parse_ops("allreduce").unwrap_err().contains("'allreduce'"));
        assert_eq!(
            parse_dtypes("bf16,fp8", "--gemm-dtypes", true)
                .unwrap()
                .len(),
            2
        );
        assert!(parse_dtypes("fp8", "--dtypes", false)
            .unwrap_err()
            .contains("--dtypes"));
    }
}
