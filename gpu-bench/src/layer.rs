//! Measured sharded layer steps, each timed four ways — compute alone,
//! communication alone, both on one stream (sequential), and communication on
//! its own stream overlapping compute — so the exposed communication is
//! `overlapped − compute`.
//!
//! * TP MLP (Megatron): column-parallel GEMM with a fused activation,
//!   row-parallel GEMM, all-reduce of the output; the tokens are split into
//!   chunks so chunk i's all-reduce can overlap chunk i+1's GEMMs.
//! * FSDP unit (ZeRO-3): two MLP units; all-gather each unit's parameters,
//!   forward both, backward both (data and weight gradients), reduce-scatter
//!   each unit's gradients. Overlapped, the second all-gather hides behind the
//!   first forward and the second unit's reduce-scatter behind the first's backward.

use cudarc::driver::CudaEvent;
use planner_core::edges::report::{CollectiveOp, Dtype, LayerStepKind, LayerStepResult};
use planner_core::input::model::ModelSpec;

use crate::gemm::{Blas, GemmPlan, GemmShape};
use crate::gpu::{enqueue, grouped, CollArgs, Combine, Comm, DeviceBuffer, Gpu, GpuError, Timer};
use crate::suite::Run;

/// How the four variants are timed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    Compute,
    Comm,
    Sequential,
    Overlapped,
}

const MODES: [Mode; 4] = [
    Mode::Compute,
    Mode::Comm,
    Mode::Sequential,
    Mode::Overlapped,
];

/// MLP widths: (hidden, ffn, width of the first projection's output).
fn mlp_widths(spec: &ModelSpec) -> (u64, u64, u64) {
    let h = u64::from(spec.hidden);
    let f = u64::from(spec.ffn);
    (h, f, f * (spec.ffn_kind.matrices() - 1))
}

/// Times `body` over `iters` runs on every local GPU and returns the slowest rank's mean, µs.
fn time_it<F>(
    run: &Run,
    world: &[Comm],
    warmup: u32,
    iters: u32,
    mut body: F,
) -> Result<f64, GpuError>
where
    F: FnMut() -> Result<(), GpuError>,
{
    for _ in 0..warmup {
        body()?;
    }
    for g in &run.gpus {
        g.synchronize()?;
    }
    let timers: Vec<Timer> = run.gpus.iter().map(Timer::new).collect::<Result<_, _>>()?;
    for (t, g) in timers.iter().zip(&run.gpus) {
        t.start(&g.stream)?;
    }
    let iters = iters.max(1);
    for _ in 0..iters {
        body()?;
    }
    for (t, g) in timers.iter().zip(&run.gpus) {
        // The step ends when both streams are done.
        g.stream.join(&g.comm_stream)?;
        t.stop(&g.stream)?;
    }
    let mut slowest = 0f64;
    for t in &timers {
        slowest = slowest.max(t.elapsed_us()?);
    }
    Ok(run.combine(world, slowest, Combine::Max)? / f64::from(iters))
}

/// Every rank's setup result: an error anywhere (out of memory on one GPU)
/// fails the step everywhere instead of leaving the others waiting in a collective.
fn agreed<T>(run: &Run, world: &[Comm], local: Result<T, GpuError>) -> Result<T, GpuError> {
    let all_ok = run.agree(world, local.is_ok())?;
    match local {
        Ok(v) if all_ok => Ok(v),
        Ok(_) => Err(GpuError::Driver(
            "another rank could not set up this step (see its output)".into(),
        )),
        Err(e) => Err(e),
    }
}

/// Makes each step start after the previous one finished on both streams, as
/// a training step does (the next all-gather cannot start before the optimizer step).
fn step_boundary(run: &Run) -> Result<(), GpuError> {
    for g in &run.gpus {
        g.stream.join(&g.comm_stream)?;
        g.comm_stream.join(&g.stream)?;
    }
    Ok(())
}

/// Mean time of each [`Mode`] in µs (in [`MODES`] order), and the peak device memory after the runs.
struct ModeTimes {
    us: [f64; 4],
    peak_memory_bytes: u64,
}

/// Times `step` in every mode, then reads the peak memory.
fn measure_modes<F>(
    run: &Run,
    world: &[Comm],
    warmup: u32,
    iters: u32,
    step: F,
) -> Result<ModeTimes, GpuError>
where
    F: Fn(Mode) -> Result<(), GpuError>,
{
    let mut us = [0f64; 4];
    for (slot, mode) in MODES.into_iter().enumerate() {
        us[slot] = time_it(run, world, warmup, iters, || step(mode))?;
    }
    Ok(ModeTimes {
        us,
        peak_memory_bytes: peak_used(run, world)?,
    })
}

/// What a layer step ran on.
struct Shape {
    hidden: u64,
    ffn: u64,
    tokens: u64,
    dtype: Dtype,
    tp: u32,
    dp: u32,
}

impl Shape {
    fn result(self, kind: LayerStepKind, label: String, times: ModeTimes) -> LayerStepResult {
        let [compute_us, comm_us, sequential_us, overlapped_us] = times.us;
        LayerStepResult {
            kind,
            label,
            hidden: self.hidden,
            ffn: self.ffn,
            tokens: self.tokens,
            dtype: self.dtype,
            tp: self.tp,
            dp: self.dp,
            compute_us,
            comm_us,
            sequential_us,
            overlapped_us,
            // Exposed communication: what overlapping leaves on top of compute alone.
            exposed_comm_us: (overlapped_us - compute_us).max(0.0),
            peak_memory_bytes: times.peak_memory_bytes,
        }
    }
}

fn peak_used(run: &Run, world: &[Comm]) -> Result<u64, GpuError> {
    let mut local = 0u64;
    for g in &run.gpus {
        local = local.max(g.used_bytes()?);
    }
    Ok(run.combine(world, local as f64, Combine::Max)? as u64)
}

fn all_reduce_args(ptr: u64, count: u64) -> CollArgs {
    CollArgs {
        send: ptr,
        recv: ptr,
        send_count: count,
        recv_count: count,
    }
}

struct TpMlpGpu {
    blas: Blas,
    up: GemmPlan,
    down: GemmPlan,
    x: DeviceBuffer,
    w_up: DeviceBuffer,
    w_down: DeviceBuffer,
    act: DeviceBuffer,
    y: DeviceBuffer,
    ready: CudaEvent,
}

/// TP MLP step over the communicator `tp_comms` (one per local GPU).
#[allow(clippy::too_many_arguments)]
pub fn tp_mlp(
    run: &Run,
    world: &[Comm],
    tp_comms: &[Comm],
    model_id: &str,
    spec: &ModelSpec,
    tokens: u64,
    chunks: u64,
    warmup: u32,
    iters: u32,
) -> Result<LayerStepResult, GpuError> {
    let dtype = Dtype::Bf16;
    let e = dtype.bytes();
    let tp = tp_comms.first().map(|c| c.size).unwrap_or(1).max(1);
    let (h, f, f_in) = mlp_widths(spec);
    let tp64 = u64::from(tp);
    if f % tp64 != 0 {
        return Err(GpuError::Unsupported(format!(
            "{model_id}: ffn width {f} does not split over tp={tp}"
        )));
    }
    let chunks = chunks.max(1);
    let mc = (tokens / chunks).max(1);
    let tokens = mc * chunks;
    let (f_rank, f_in_rank) = (f / tp64, f_in / tp64);
    let up_shape = GemmShape {
        m: mc,
        n: f_in_rank,
        k: h,
        label: "tp mlp up".into(),
    };
    // The activation output is f_in/tp wide (gate and up for SwiGLU); the down
    // projection reads f/tp of it — the GEMM work and traffic of SwiGLU, without its elementwise product.
    let down_shape = GemmShape {
        m: mc,
        n: h,
        k: f_rank,
        label: "tp mlp down".into(),
    };
    let setup = || -> Result<Vec<TpMlpGpu>, GpuError> {
        let mut per = Vec::new();
        for g in &run.gpus {
            let blas = Blas::new(g)?;
            let up = GemmPlan::new(&blas, &up_shape, dtype, true)?;
            let down = GemmPlan::new(&blas, &down_shape, dtype, false)?;
            let item = TpMlpGpu {
                x: DeviceBuffer::alloc(g, tokens * h * e)?,
                w_up: DeviceBuffer::alloc(g, h * f_in_rank * e)?,
                w_down: DeviceBuffer::alloc(g, f_rank * h * e)?,
                act: DeviceBuffer::alloc(g, tokens * f_in_rank * e)?,
                y: DeviceBuffer::alloc(g, tokens * h * e)?,
                ready: g.ctx.new_event(None)?,
                blas,
                up,
                down,
            };
            // Random operands, as the GEMM section times (tensor cores clock higher on low-entropy data).
            item.x.fill_random(g, dtype, 1)?;
            item.w_up.fill_random(g, dtype, 2)?;
            item.w_down.fill_random(g, dtype, 3)?;
            per.push(item);
        }
        Ok(per)
    };
    let per = agreed(run, world, setup())?;

    let compute = |g: &Gpu, p: &TpMlpGpu, c: u64| -> Result<(), GpuError> {
        g.ctx.bind_to_thread()?;
        p.up.run(
            &p.blas,
            p.w_up.ptr(),
            p.x.at(c * mc * h * e),
            p.act.at(c * mc * f_in_rank * e),
            &g.stream,
        )?;
        p.down.run(
            &p.blas,
            p.w_down.ptr(),
            p.act.at(c * mc * f_in_rank * e),
            p.y.at(c * mc * h * e),
            &g.stream,
        )
    };
    let reduce = |c: u64, overlapped: bool| -> Result<(), GpuError> {
        grouped(run.gpus.len(), |i| {
            let g = &run.gpus[i];
            g.ctx.bind_to_thread()?;
            let stream = if overlapped {
                &g.comm_stream
            } else {
                &g.stream
            };
            if overlapped {
                stream.wait(&per[i].ready)?;
            }
            enqueue(
                CollectiveOp::AllReduce,
                dtype,
                &tp_comms[i],
                all_reduce_args(per[i].y.at(c * mc * h * e), mc * h),
                stream,
            )
        })
    };
    let step = |mode: Mode| -> Result<(), GpuError> {
        step_boundary(run)?;
        for c in 0..chunks {
            if mode != Mode::Comm {
                for (g, p) in run.gpus.iter().zip(&per) {
                    compute(g, p, c)?;
                    if mode == Mode::Overlapped {
                        p.ready.record(&g.stream)?;
                    }
                }
            }
            if matches!(mode, Mode::Comm | Mode::Sequential) {
                reduce(c, false)?;
            } else if mode == Mode::Overlapped {
                reduce(c, true)?;
            }
        }
        Ok(())
    };
    let shape = Shape {
        hidden: h,
        ffn: f,
        tokens,
        dtype,
        tp,
        dp: 1,
    };
    measure_modes(run, world, warmup, iters, step).map(|times| {
        shape.result(
            LayerStepKind::TpMlp,
            format!(
                "{model_id} mlp, {chunks} chunk(s), activation fused in cuBLASLt (GELU epilogue)"
            ),
            times,
        )
    })
}

/// Buffers of one FSDP unit on one GPU.
struct Unit {
    param_shard: DeviceBuffer,
    params: DeviceBuffer,
    grads: DeviceBuffer,
    grad_shard: DeviceBuffer,
    x: DeviceBuffer,
    act: DeviceBuffer,
    y: DeviceBuffer,
    dy: DeviceBuffer,
    d_act: DeviceBuffer,
    dx: DeviceBuffer,
}

struct FsdpGpu {
    blas: Blas,
    plans: Vec<GemmPlan>,
    units: Vec<Unit>,
    gathered: Vec<CudaEvent>,
    backward_done: Vec<CudaEvent>,
}

const UNITS: usize = 2;

/// The sizes an FSDP unit step allocates and moves, in elements.
#[derive(Clone, Copy)]
struct FsdpSizes {
    hidden: u64,
    /// Width of the first projection's output.
    ffn_in: u64,
    tokens: u64,
    /// One rank's parameter shard.
    shard: u64,
    /// The gathered parameters, padded to split evenly.
    padded: u64,
}

impl Unit {
    /// One unit's buffers on `g`, its operands filled with random numbers from `seed`.
    fn new(g: &Gpu, s: FsdpSizes, dtype: Dtype, seed: u64) -> Result<Self, GpuError> {
        let e = dtype.bytes();
        let (h, f_in, tokens) = (s.hidden, s.ffn_in, s.tokens);
        let unit = Unit {
            param_shard: DeviceBuffer::alloc(g, s.shard * e)?,
            params: DeviceBuffer::alloc(g, s.padded * e)?,
            grads: DeviceBuffer::alloc(g, s.padded * e)?,
            grad_shard: DeviceBuffer::alloc(g, s.shard * e)?,
            x: DeviceBuffer::alloc(g, tokens * h * e)?,
            act: DeviceBuffer::alloc(g, tokens * f_in * e)?,
            y: DeviceBuffer::alloc(g, tokens * h * e)?,
            dy: DeviceBuffer::alloc(g, tokens * h * e)?,
            d_act: DeviceBuffer::alloc(g, tokens * f_in * e)?,
            dx: DeviceBuffer::alloc(g, tokens * h * e)?,
        };
        unit.param_shard.fill_random(g, dtype, seed + 1)?;
        // Compute-alone runs before any all-gather: give it real numbers to multiply.
        unit.params.fill_random(g, dtype, seed + 2)?;
        unit.x.fill_random(g, dtype, seed + 3)?;
        unit.dy.fill_random(g, dtype, seed + 4)?;
        Ok(unit)
    }
}

impl FsdpGpu {
    /// One GPU's cuBLAS handle, GEMM plans, [`UNITS`] units and their events.
    fn new(g: &Gpu, shapes: &[GemmShape], s: FsdpSizes, dtype: Dtype) -> Result<Self, GpuError> {
        let blas = Blas::new(g)?;
        let plans = shapes
            .iter()
            .map(|shape| GemmPlan::new(&blas, shape, dtype, false))
            .collect::<Result<Vec<_>, _>>()?;
        let mut units = Vec::new();
        for u in 0..UNITS {
            units.push(Unit::new(g, s, dtype, 16 * u as u64)?);
        }
        Ok(FsdpGpu {
            blas,
            plans,
            gathered: (0..UNITS)
                .map(|_| g.ctx.new_event(None))
                .collect::<Result<_, _>>()?,
            backward_done: (0..UNITS)
                .map(|_| g.ctx.new_event(None))
                .collect::<Result<_, _>>()?,
            units,
        })
    }

    /// Unit `u`'s forward: act = W_in·x, y = W_out·act (W_out at `w_out_offset` bytes).
    fn forward(&self, g: &Gpu, u: usize, w_out_offset: u64) -> Result<(), GpuError> {
        let (p, x) = (self, &self.units[u]);
        g.ctx.bind_to_thread()?;
        p.plans[0].run(&p.blas, x.params.ptr(), x.x.ptr(), x.act.ptr(), &g.stream)?;
        p.plans[1].run(
            &p.blas,
            x.params.at(w_out_offset),
            x.act.ptr(),
            x.y.ptr(),
            &g.stream,
        )
    }

    /// Unit `u`'s backward: d_act = W_outᵀ·dy, dW_out = dy·actᵀ, dx = W_inᵀ·d_act, dW_in = x·d_actᵀ.
    fn backward(&self, g: &Gpu, u: usize, w_out_offset: u64) -> Result<(), GpuError> {
        let (p, x) = (self, &self.units[u]);
        g.ctx.bind_to_thread()?;
        p.plans[2].run(
            &p.blas,
            x.params.at(w_out_offset),
            x.dy.ptr(),
            x.d_act.ptr(),
            &g.stream,
        )?;
        p.plans[3].run(
            &p.blas,
            x.dy.ptr(),
            x.act.ptr(),
            x.grads.at(w_out_offset),
            &g.stream,
        )?;
        p.plans[4].run(
            &p.blas,
            x.params.ptr(),
            x.d_act.ptr(),
            x.dx.ptr(),
            &g.stream,
        )?;
        p.plans[5].run(&p.blas, x.d_act.ptr(), x.x.ptr(), x.grads.ptr(), &g.stream)
    }
}

/// One FSDP unit step: the local GPUs' units and their data-parallel communicators.
struct FsdpStep<'a> {
    run: &'a Run,
    dp_comms: &'a [Comm],
    per: Vec<FsdpGpu>,
    dtype: Dtype,
    sizes: FsdpSizes,
    /// Byte offset of W_out in a unit's gathered parameters.
    w_out_offset: u64,
}

impl FsdpStep<'_> {
    /// All-gathers unit `u`'s parameters; `overlapped`: on the comm stream, recording `gathered`.
    fn gather(&self, u: usize, overlapped: bool) -> Result<(), GpuError> {
        let run = self.run;
        grouped(run.gpus.len(), |i| {
            let g = &run.gpus[i];
            g.ctx.bind_to_thread()?;
            let stream = if overlapped {
                &g.comm_stream
            } else {
                &g.stream
            };
            let unit = &self.per[i].units[u];
            enqueue(
                CollectiveOp::AllGather,
                self.dtype,
                &self.dp_comms[i],
                CollArgs {
                    send: unit.param_shard.ptr(),
                    recv: unit.params.ptr(),
                    send_count: self.sizes.shard,
                    recv_count: self.sizes.padded,
                },
                stream,
            )
        })?;
        // Grouped NCCL work is launched at group end, so the events go after it.
        if overlapped {
            for (g, p) in run.gpus.iter().zip(&self.per) {
                p.gathered[u].record(&g.comm_stream)?;
            }
        }
        Ok(())
    }

    /// Reduce-scatters unit `u`'s gradients; `overlapped`: on the comm stream, after `backward_done`.
    fn scatter(&self, u: usize, overlapped: bool) -> Result<(), GpuError> {
        let run = self.run;
        grouped(run.gpus.len(), |i| {
            let g = &run.gpus[i];
            g.ctx.bind_to_thread()?;
            let stream = if overlapped {
                &g.comm_stream
            } else {
                &g.stream
            };
            if overlapped {
                stream.wait(&self.per[i].backward_done[u])?;
            }
            let unit = &self.per[i].units[u];
            enqueue(
                CollectiveOp::ReduceScatter,
                self.dtype,
                &self.dp_comms[i],
                CollArgs {
                    send: unit.grads.ptr(),
                    recv: unit.grad_shard.ptr(),
                    send_count: self.sizes.padded,
                    recv_count: self.sizes.shard,
                },
                stream,
            )
        })
    }

    fn each_gpu(&self, f: &dyn Fn(&Gpu, &FsdpGpu) -> Result<(), GpuError>) -> Result<(), GpuError> {
        for (g, p) in self.run.gpus.iter().zip(&self.per) {
            f(g, p)?;
        }
        Ok(())
    }

    /// One step in `mode`: forward every unit, then backward in reverse order.
    fn step(&self, mode: Mode) -> Result<(), GpuError> {
        let w = self.w_out_offset;
        step_boundary(self.run)?;
        match mode {
            Mode::Compute => {
                for u in 0..UNITS {
                    self.each_gpu(&|g, p| p.forward(g, u, w))?;
                }
                for u in (0..UNITS).rev() {
                    self.each_gpu(&|g, p| p.backward(g, u, w))?;
                }
            }
            Mode::Comm => {
                for u in 0..UNITS {
                    self.gather(u, false)?;
                }
                for u in (0..UNITS).rev() {
                    self.scatter(u, false)?;
                }
            }
            Mode::Sequential => {
                for u in 0..UNITS {
                    self.gather(u, false)?;
                    self.each_gpu(&|g, p| p.forward(g, u, w))?;
                }
                for u in (0..UNITS).rev() {
                    self.each_gpu(&|g, p| p.backward(g, u, w))?;
                    self.scatter(u, false)?;
                }
            }
            Mode::Overlapped => {
                for u in 0..UNITS {
                    self.gather(u, true)?;
                }
                for u in 0..UNITS {
                    self.each_gpu(&|g, p| {
                        g.stream.wait(&p.gathered[u])?;
                        p.forward(g, u, w)
                    })?;
                }
                for u in (0..UNITS).rev() {
                    self.each_gpu(&|g, p| {
                        p.backward(g, u, w)?;
                        p.backward_done[u].record(&g.stream)?;
                        Ok(())
                    })?;
                    self.scatter(u, true)?;
                }
            }
        }
        Ok(())
    }
}

/// FSDP unit step over the data-parallel communicator `dp_comms`.
#[allow(clippy::too_many_arguments)]
pub fn fsdp_unit(
    run: &Run,
    world: &[Comm],
    dp_comms: &[Comm],
    model_id: &str,
    spec: &ModelSpec,
    tokens: u64,
    warmup: u32,
    iters: u32,
) -> Result<LayerStepResult, GpuError> {
    let dtype = Dtype::Bf16;
    let e = dtype.bytes();
    let dp = dp_comms.first().map(|c| c.size).unwrap_or(1).max(1);
    let dp64 = u64::from(dp);
    let (h, f, f_in) = mlp_widths(spec);
    // Parameters of one unit: W_in (h × f_in) and W_out (f × h), padded to split evenly.
    let unit_params = h * f_in + f * h;
    let shard = unit_params.div_ceil(dp64);
    let padded = shard * dp64;
    let shape = |m: u64, n: u64, k: u64, label: &str| GemmShape {
        m,
        n,
        k,
        label: label.into(),
    };
    // Forward: act = W_in·x, y = W_out·act. Backward: d_act = W_outᵀ·dy, dW_out = dy·actᵀ,
    // dx = W_inᵀ·d_act, dW_in = x·d_actᵀ (Narayanan et al. 2021 §5.1: backward = 2× forward FLOPs).
    let shapes = [
        shape(tokens, f_in, h, "fwd in"),
        shape(tokens, h, f, "fwd out"),
        shape(tokens, f, h, "bwd out data"),
        shape(f, h, tokens, "bwd out weight"),
        shape(tokens, h, f_in, "bwd in data"),
        shape(h, f_in, tokens, "bwd in weight"),
    ];
    let sizes = FsdpSizes {
        hidden: h,
        ffn_in: f_in,
        tokens,
        shard,
        padded,
    };
    let setup = || -> Result<Vec<FsdpGpu>, GpuError> {
        run.gpus
            .iter()
            .map(|g| FsdpGpu::new(g, &shapes, sizes, dtype))
            .collect()
    };
    let per = agreed(run, world, setup())?;
    let fsdp = FsdpStep {
        run,
        dp_comms,
        per,
        dtype,
        sizes,
        w_out_offset: h * f_in * e,
    };
    let shape = Shape {
        hidden: h,
        ffn: f,
        tokens,
        dtype,
        tp: 1,
        dp,
    };
    measure_modes(run, world, warmup, iters, |mode| fsdp.step(mode)).map(|times| {
        shape.result(
            LayerStepKind::FsdpUnit,
            format!("{model_id} mlp, {UNITS} units, fwd+bwd"),
            times,
        )
    })
}
