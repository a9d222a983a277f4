//! NCCL collective sweeps: every op × dtype × size, out-of-place and in-place,
//! with a correctness check, warm-up and timed iterations, reported with
//! nccl-tests' algbw and busbw.

use planner_core::edges::report::{
    algbw_gb_per_s, busbw_gb_per_s, CollectiveOp, CollectiveResult, Dtype, NoteLevel,
};

use crate::data::{count_wrong, counts};
use crate::gpu::{enqueue, grouped, CollArgs, Combine, Comm, DeviceBuffer, GpuError, Timer};
use crate::suite::{Run, Stop};
use crate::sweep::align_bytes;
use crate::table::{collective_header, collective_row};

/// What to sweep.
#[derive(Clone, Debug)]
pub struct CollectiveConfig {
    /// Collectives to run.
    pub ops: Vec<CollectiveOp>,
    /// Element types.
    pub dtypes: Vec<Dtype>,
    /// Sizes (nccl-tests "size": bytes of the largest buffer).
    pub sizes: Vec<u64>,
    /// Untimed iterations first.
    pub warmup: u32,
    /// Timed iterations.
    pub iters: u32,
    /// Check results element by element before timing.
    pub check: bool,
    /// Bytes of each receive buffer checked at most (the first and last halves of this window).
    pub check_limit_bytes: u64,
}

/// One communicator layer to sweep over: the world, or all TP (or DP, PP) groups at once.
pub struct Team<'a> {
    /// "world", "tp", "dp", "pp".
    pub label: &'a str,
    /// This process's member of the group, per local GPU.
    pub comms: &'a [Comm],
    /// Ranks in each group.
    pub ranks: u32,
    /// Members of a group that share a node.
    pub ranks_per_node: u32,
}

/// In-place is defined by NCCL for these ops; all-to-all and send/recv need separate buffers.
pub fn has_in_place(op: CollectiveOp) -> bool {
    !matches!(op, CollectiveOp::AllToAll | CollectiveOp::SendRecv)
}

struct Buffers {
    send: DeviceBuffer,
    recv: Option<DeviceBuffer>,
}

impl Buffers {
    fn args(
        &self,
        op: CollectiveOp,
        rank: u32,
        send_count: u64,
        recv_count: u64,
        elem: u64,
    ) -> CollArgs {
        let base = self.send.ptr();
        match &self.recv {
            Some(r) => CollArgs {
                send: base,
                recv: r.ptr(),
                send_count,
                recv_count,
            },
            // NCCL in-place: all-gather sends from its own slot of the output;
            // reduce-scatter receives into its own slot of the input.
            None => {
                let (send, recv) = match op {
                    CollectiveOp::AllGather => (base + u64::from(rank) * send_count * elem, base),
                    CollectiveOp::ReduceScatter => {
                        (base, base + u64::from(rank) * recv_count * elem)
                    }
                    _ => (base, base),
                };
                CollArgs {
                    send,
                    recv,
                    send_count,
                    recv_count,
                }
            }
        }
    }

    fn recv_buffer(&self) -> &DeviceBuffer {
        self.recv.as_ref().unwrap_or(&self.send)
    }
}

/// Sweeps `team` and appends rows to the report; prints the nccl-tests table on rank 0.
pub fn sweep(
    run: &mut Run,
    world: &[Comm],
    team: &Team<'_>,
    cfg: &CollectiveConfig,
) -> Result<Stop, GpuError> {
    for &op in &cfg.ops {
        for &dtype in &cfg.dtypes {
            run.say(&collective_header(
                op,
                team.label,
                team.ranks,
                team.ranks_per_node,
            ));
            let mut too_big = false;
            for &size in &cfg.sizes {
                if run.should_stop(world)? {
                    return Ok(Stop::Interrupted);
                }
                run.tick();
                let subject = format!(
                    "{} {} {} B on '{}'",
                    op.name(),
                    dtype.nccl_name(),
                    size,
                    team.label
                );
                if too_big {
                    run.note(
                        NoteLevel::Skipped,
                        "collectives",
                        &subject,
                        "skipped: a smaller size already ran out of memory",
                    );
                    continue;
                }
                let mut row: [Option<CollectiveResult>; 2] = [None, None];
                for (slot, in_place) in [false, true].into_iter().enumerate() {
                    if in_place && !has_in_place(op) {
                        continue;
                    }
                    match measure(run, world, team, cfg, op, dtype, size, in_place)? {
                        Some(r) => row[slot] = Some(r),
                        None => {
                            too_big = true;
                            run.note(
                                NoteLevel::Skipped,
                                "collectives",
                                &subject,
                                "out of memory on at least one rank",
                            );
                            break;
                        }
                    }
                }
                for slot in &mut row {
                    if slot
                        .as_ref()
                        .is_some_and(|r| r.time_us.is_nan() || r.time_us <= 0.0)
                    {
                        *slot = None;
                        run.note(
                            NoteLevel::Warning,
                            "collectives",
                            &subject,
                            "time below the event timer's resolution; row dropped",
                        );
                    }
                }
                if row[0].is_some() || row[1].is_some() {
                    run.say(&collective_row(row[0].as_ref(), row[1].as_ref()));
                }
                for r in row.into_iter().flatten() {
                    run.report.collectives.push(r);
                }
            }
        }
    }
    Ok(Stop::Done)
}

#[allow(clippy::too_many_arguments)]
fn measure(
    run: &mut Run,
    world: &[Comm],
    team: &Team<'_>,
    cfg: &CollectiveConfig,
    op: CollectiveOp,
    dtype: Dtype,
    size: u64,
    in_place: bool,
) -> Result<Option<CollectiveResult>, GpuError> {
    let elem = dtype.bytes();
    let n = team.ranks.max(1);
    // Whole elements, a multiple of 4·n so every rank's chunk starts on the pattern's period.
    let bytes = align_bytes(size, elem * 4, u64::from(n));
    let total = bytes / elem;
    let c = counts(op, n, total);
    let chunk = match op {
        CollectiveOp::AllGather => c.send,
        CollectiveOp::ReduceScatter => c.recv,
        _ => c.send / u64::from(n),
    };

    // Allocate on every local GPU, then agree across ranks: one rank out of memory skips the size for all.
    let mut bufs: Vec<Buffers> = Vec::with_capacity(run.gpus.len());
    let mut ok = true;
    for gpu in &run.gpus {
        let attempt = if in_place {
            DeviceBuffer::alloc(gpu, c.send.max(c.recv) * elem)
                .map(|send| Buffers { send, recv: None })
        } else {
            DeviceBuffer::alloc(gpu, c.send * elem).and_then(|send| {
                DeviceBuffer::alloc(gpu, c.recv * elem).map(|r| Buffers {
                    send,
                    recv: Some(r),
                })
            })
        };
        match attempt {
            Ok(b) => bufs.push(b),
            Err(GpuError::OutOfMemory { .. }) => {
                ok = false;
                break;
            }
            Err(e) => return Err(e),
        }
    }
    if !run.agree(world, ok)? {
        return Ok(None);
    }

    let args: Vec<CollArgs> = bufs
        .iter()
        .zip(team.comms)
        .map(|(b, comm)| b.args(op, comm.rank, c.send, c.recv, elem))
        .collect();
    let launch = |run: &Run| {
        grouped(run.gpus.len(), |i| {
            run.gpus[i].ctx.bind_to_thread()?;
            enqueue(op, dtype, &team.comms[i], args[i], &run.gpus[i].stream)
        })
    };

    let mut wrong_local = 0u64;
    if cfg.check {
        for (i, b) in bufs.iter().enumerate() {
            b.send
                .fill_pattern(&run.gpus[i], dtype, team.comms[i].rank)?;
        }
        launch(run)?;
        for g in &run.gpus {
            g.stream.synchronize()?;
        }
        for (i, b) in bufs.iter().enumerate() {
            let offset = args[i].recv - b.recv_buffer().ptr();
            wrong_local += check(
                b.recv_buffer(),
                offset,
                op,
                dtype,
                n,
                team.comms[i].rank,
                chunk,
                c.recv,
                cfg.check_limit_bytes,
            )?;
        }
    }
    let wrong = run.combine(world, wrong_local as f64, Combine::Sum)? as u64;

    for _ in 0..cfg.warmup {
        launch(run)?;
    }
    for g in &run.gpus {
        g.stream.synchronize()?;
    }
    let timers: Vec<Timer> = run.gpus.iter().map(Timer::new).collect::<Result<_, _>>()?;
    for (t, g) in timers.iter().zip(&run.gpus) {
        t.start(&g.stream)?;
    }
    let iters = cfg.iters.max(1);
    for _ in 0..iters {
        launch(run)?;
    }
    for (t, g) in timers.iter().zip(&run.gpus) {
        t.stop(&g.stream)?;
    }
    let mut local_max = 0f64;
    for t in &timers {
        local_max = local_max.max(t.elapsed_us()?);
    }
    // The slowest rank sets the collective's time. Within one process this is
    // what nccl-tests measures (one host timer over all of a thread's GPUs);
    // across processes nccl-tests averages by default (`-a 1`) and takes the
    // maximum with `-a 3`: ranks finish a collective together, so these agree closely.
    let total_us = run.combine(world, local_max, Combine::Max)?;
    let time_us = total_us / f64::from(iters);
    Ok(Some(CollectiveResult {
        op,
        ranks: n,
        ranks_per_node: team.ranks_per_node.min(n),
        group: team.label.to_string(),
        dtype,
        bytes,
        count: total,
        in_place,
        time_us,
        algbw_gb_per_s: algbw_gb_per_s(bytes, time_us),
        busbw_gb_per_s: busbw_gb_per_s(op, n, bytes, time_us),
        wrong,
    }))
}

/// Downloads the receive buffer from byte `offset` (or its first and last halves of `limit` bytes) and counts wrong elements.
#[allow(clippy::too_many_arguments)]
fn check(
    recv: &DeviceBuffer,
    offset: u64,
    op: CollectiveOp,
    dtype: Dtype,
    ranks: u32,
    rank: u32,
    chunk: u64,
    recv_count: u64,
    limit: u64,
) -> Result<u64, GpuError> {
    let elem = dtype.bytes();
    let recv_bytes = recv_count * elem;
    let windows: Vec<(u64, u64)> = if recv_bytes <= limit {
        vec![(0, recv_count)]
    } else {
        let half = (limit / 2 / elem).max(1);
        vec![(0, half), (recv_count - half, half)]
    };
    let mut wrong = 0;
    for (start, len) in windows {
        let mut host = vec![0u8; (len * elem) as usize];
        recv.download(offset + start * elem, &mut host)?;
        wrong += count_wrong(op, dtype, ranks, rank, chunk, start, &host);
    }
    Ok(wrong)
}
