//! The block search: every candidate of a (TP, PP, CP) mesh, its EP folds, schedules,
//! micro-batches, ZeRO stages and recompute policies, checked against the layout rules and
//! the GPU's memory, and priced when it fits, without allocating per candidate.

use crate::input::layout::{Layout, Recompute, Schedule, ZeroStage};
use crate::input::model::ModelSpec;
use crate::input::scenario::Scenario;
use crate::input::stage_split::SplitProposal;
use crate::parallel::topology::Placement;
use crate::time::comms::{chained, data_parallel_comms, model_parallel_comms, StepComms};
use crate::time::cost::StepModel;

use super::{
    divisors, layout_of, rank_order, Feasible, Knobs, MeshDims, Partial, PeakSource, PricingCaveat,
    Reasons, RejectReason, Rejected, SearchSpace,
};

/// One schedule option of a PP value: schedule, virtual stages, and the split that makes
/// the layers fit (`None`: none does, so its candidates are rejected).
#[derive(Clone, Copy, Debug)]
struct SchedOption {
    schedule: Schedule,
    v: u32,
    split: Option<SplitProposal>,
    /// The stage that sets the pace ([`crate::time::comms::CommInputs::pace`]), resolved once.
    pace: crate::input::stage_split::StagePace,
    /// A stage with more MoE layers ([`crate::time::comms::CommInputs::pace_rival`]): each
    /// candidate's step is then the slower of the two (`StepModel::pacing`).
    rival: Option<crate::input::stage_split::StagePace>,
}

/// The schedule options the search tries at `pp` for a model of `layers` layers: the
/// space's schedules that `framework` runs ([`crate::input::framework::Framework::runs_schedule`]).
fn sched_options(
    space: &SearchSpace,
    framework: crate::input::framework::Framework,
    inputs: &crate::time::comms::CommInputs,
    layers: u32,
    pp: u32,
) -> Vec<SchedOption> {
    let mut out = Vec::new();
    let layout = |v: u32, split: Option<SplitProposal>| Layout {
        pp,
        virtual_stages: v,
        stage_split: split.unwrap_or_default().stage_split(),
        ..Layout::default()
    };
    let pace = |v: u32, split: Option<SplitProposal>| inputs.pace(&layout(v, split));
    let rival = |v: u32, split: Option<SplitProposal>| inputs.pace_rival(&layout(v, split));
    let push = |out: &mut Vec<SchedOption>, schedule: Schedule, v: u32| {
        let (proposals, n) = if space.uneven_stages {
            SplitProposal::proposals(layers, pp, v)
        } else {
            let even = u64::from(layers).is_multiple_of(u64::from(pp) * u64::from(v));
            ([SplitProposal::Even; 2], usize::from(even))
        };
        if n == 0 {
            out.push(SchedOption {
                schedule,
                v,
                split: None,
                pace: pace(v, None),
                rival: rival(v, None),
            });
        }
        for &split in &proposals[..n] {
            out.push(SchedOption {
                schedule,
                v,
                split: Some(split),
                pace: pace(v, Some(split)),
                rival: rival(v, Some(split)),
            });
        }
    };
    if pp <= 1 {
        push(&mut out, Schedule::OneFOneB, 1);
        return out;
    }
    for &s in space
        .schedules
        .iter()
        .filter(|&&s| framework.runs_schedule(s))
    {
        if s != Schedule::Interleaved {
            push(&mut out, s, 1);
            continue;
        }
        match space.virtual_stage_range {
            // At least one layer per chunk on average.
            Some(max) => {
                for v in 2..=max.min(layers / pp) {
                    push(&mut out, s, v);
                }
            }
            None => {
                for &v in space.virtual_stages.iter().filter(|&&v| v >= 2) {
                    push(&mut out, s, v);
                }
            }
        }
    }
    if out.is_empty() {
        push(&mut out, Schedule::OneFOneB, 1);
    }
    out
}

/// Searches the meshes of `blocks` ((TP, PP, CP) triples) and adds them to `acc`;
/// stops (setting `acc.stopped`) before a mesh whose candidates could take the
/// evaluations past `space.max_evaluated`. Returns the blocks finished.
pub(super) fn search_blocks<P: PeakSource>(
    model: &ModelSpec,
    scenario: &Scenario,
    space: &SearchSpace,
    step_model: &StepModel,
    peak_memory: &mut P,
    blocks: &[(u32, u32, u32)],
    acc: &mut Partial,
) -> usize {
    if acc.stopped {
        return 0;
    }
    let cx = BlockCtx::new(model, scenario, space, step_model);
    let ep_values = cx.ep_values();
    // (schedule, v, split) options per PP, built once per PP value; `None` = no split fits.
    let mut per_pp: Vec<(u32, Vec<SchedOption>)> = Vec::new();
    let mut scratch = Scratch::new();
    let (n_zero, n_rc) = (space.zero_stages.len() as u64, space.recompute.len() as u64);
    for (done, &(tp, pp, cp)) in blocks.iter().enumerate() {
        let Some(dp64) = cx
            .world
            .checked_div(u64::from(tp))
            .and_then(|r| r.checked_div(u64::from(pp)))
            .and_then(|r| r.checked_div(u64::from(cp)))
        else {
            continue;
        };
        let Ok(dp) = u32::try_from(dp64) else {
            continue;
        };
        let scheds = cx.sched_options_at(&mut per_pp, pp);
        let any_split = scheds.iter().any(|o| o.split.is_some());
        cx.micro_batches(dp64, &mut scratch.mbs);
        let n_mb = scratch.mbs.len() as u64;
        let knobs_per_mesh = n_zero * n_rc * n_mb * scheds.len() as u64;
        // Expert-TP 1 (whole experts, EP folded over TP first) or = TP (Megatron's
        // default when --expert-tensor-parallel-size is unset): the two settings
        // Megatron-Bridge's MoE recipes use.
        let etp_options = [1, tp];
        let n_etp = if cx.experts > 0 && tp > 1 { 2 } else { 1 };
        let folds = ep_values
            .iter()
            .flat_map(|&ep| etp_options[..n_etp].iter().map(move |&etp| (ep, etp)));
        for (ep, expert_tp) in folds {
            let dims = MeshDims {
                dp,
                tp,
                pp,
                cp,
                ep,
                expert_tp,
            };
            let mesh_reasons = cx.mesh_reasons(dims, dp64, any_split);
            // Bounded work: stop before a mesh that could pass the evaluation cap.
            if mesh_reasons.is_empty()
                && acc.evaluated.saturating_add(knobs_per_mesh) > space.max_evaluated
            {
                acc.stopped = true;
                return done;
            }
            acc.total += knobs_per_mesh;
            if !mesh_reasons.is_empty() {
                let block = Rejected::whole_mesh(dims, mesh_reasons, knobs_per_mesh);
                acc.reject(block, space.max_rejected);
                continue;
            }
            let placement = Placement::of_sizes(
                u64::from(tp),
                u64::from(cp),
                dp64,
                u64::from(pp),
                (u64::from(expert_tp), u64::from(ep)),
                u64::from(cx.gpn),
                step_model.options.rank_order,
            );
            let mesh = Mesh {
                dims,
                dp64,
                placement: &placement,
            };
            for o in scheds {
                cx.schedule(&mesh, o, &mut scratch, peak_memory, acc);
            }
        }
    }
    blocks.len()
}

/// What every block of a search reads: the question, and what it derives from it once.
struct BlockCtx<'a> {
    model: &'a ModelSpec,
    scenario: &'a Scenario,
    space: &'a SearchSpace,
    step_model: &'a StepModel,
    world: u64,
    gpn: u32,
    /// Bytes of a GPU the layout may fill.
    usable: f64,
    /// Sequence length, tokens, and global batch, sequences.
    seq: u32,
    batch: u64,
    /// Routed experts (0: dense).
    experts: u32,
    /// Whether some layer has a dense FFN (split over TP).
    dense_ffn_layers: bool,
    /// The routed experts' FFN width (0 divides nothing away: `0 % tp == 0` for dense models).
    expert_ffn: u32,
    /// The parameter breakdown for offload's node limits (a rule of the layout's ZeRO stage,
    /// host RAM and NVMe); `None` without offload, which has none.
    params: Option<crate::input::model::ParamBreakdown>,
}

/// A mesh the search prices the knobs of.
struct Mesh<'p> {
    dims: MeshDims,
    dp64: u64,
    placement: &'p Placement,
}

/// Buffers the search reuses from mesh to mesh (no allocation after the first mesh).
struct Scratch {
    /// Micro-batches of the current mesh.
    mbs: Vec<u32>,
    /// Per (ZeRO, recompute): the micro-batch that overflowed first and its peak bytes.
    oom: Vec<Option<(u32, f64)>>,
    comms: MicroBatchComms,
}

/// One micro-batch's communication parts (by ZeRO stage and full recompute or not; by full
/// recompute or not), filled in place when first needed (no copy of an item array per
/// candidate).
struct MicroBatchComms {
    dp: [StepComms; 8],
    mp: [StepComms; 2],
    dp_built: [bool; 8],
    mp_built: [bool; 2],
}

impl Scratch {
    fn new() -> Self {
        Scratch {
            mbs: Vec::new(),
            oom: Vec::new(),
            comms: MicroBatchComms {
                dp: [StepComms::new(); 8],
                mp: [StepComms::new(); 2],
                dp_built: [false; 8],
                mp_built: [false; 2],
            },
        }
    }
}

impl Rejected {
    /// A whole mesh rejected by its own rules: every knob under it.
    fn whole_mesh(dims: MeshDims, reasons: Reasons, candidates: u64) -> Self {
        Rejected {
            dims,
            zero: None,
            recompute: None,
            schedule: None,
            virtual_stages: None,
            micro_batch: None,
            split: None,
            reasons,
            candidates,
            peak_memory_bytes: 0.0,
        }
    }
}

impl MicroBatchComms {
    /// The parts of `layout`'s step (its ZeRO stage and recompute read), built on first use
    /// since the last [`Self::reset`].
    fn items(
        &mut self,
        step_model: &StepModel,
        layout: &Layout,
        placement: &Placement,
        pace: &crate::input::stage_split::StagePace,
    ) -> impl Iterator<Item = &crate::time::comms::CommItem> {
        let (inp, comm) = (&step_model.comm_inputs, &step_model.comm);
        let f = usize::from(layout.recompute == Recompute::Full);
        let z = 2 * usize::from(layout.zero.number().min(3)) + f;
        if !self.dp_built[z] {
            self.dp[z].clear();
            data_parallel_comms(&mut self.dp[z], inp, layout, placement, comm, pace);
            self.dp_built[z] = true;
        }
        if !self.mp_built[f] {
            self.mp[f].clear();
            model_parallel_comms(&mut self.mp[f], inp, layout, placement, comm, pace);
            self.mp_built[f] = true;
        }
        chained(&self.dp[z], &self.mp[f])
    }

    /// A new micro-batch: every part is built again when first needed.
    fn reset(&mut self) {
        self.dp_built = [false; 8];
        self.mp_built = [false; 2];
    }
}

impl Partial {
    /// Counts a rejected block under its reasons and keeps it while fewer than `max_rejected`
    /// are kept.
    fn reject(&mut self, block: Rejected, max_rejected: usize) {
        for r in block.reasons.iter() {
            self.counts[r as usize] += block.candidates;
        }
        if self.rejected.len() < max_rejected {
            self.rejected.push(block);
        }
    }

    /// Keeps a feasible candidate. A mesh's candidates come in one run: with one row per mesh
    /// only its best so far is kept (what keep_best_per_mesh leaves anyway).
    fn keep(&mut self, candidate: Feasible, one_row_per_mesh: bool) {
        self.feasible_count += 1;
        match self.feasible.last_mut() {
            Some(last) if one_row_per_mesh && last.dims == candidate.dims => {
                if rank_order(&candidate, last) == std::cmp::Ordering::Less {
                    *last = candidate;
                }
            }
            _ => self.feasible.push(candidate),
        }
    }
}

impl<'a> BlockCtx<'a> {
    fn new(
        model: &'a ModelSpec,
        scenario: &'a Scenario,
        space: &'a SearchSpace,
        step_model: &'a StepModel,
    ) -> Self {
        let cluster = &scenario.cluster;
        BlockCtx {
            model,
            scenario,
            space,
            step_model,
            world: cluster.world_size(),
            gpn: cluster.gpus_per_node,
            usable: cluster.gpu.memory_bytes * scenario.overheads.usable_fraction,
            seq: scenario.training.seq_len,
            batch: u64::from(scenario.training.global_batch),
            experts: model.moe.as_ref().map_or(0, |m| m.routed_experts),
            dense_ffn_layers: model.moe.as_ref().is_none_or(|m| m.dense_layers > 0),
            expert_ffn: model.moe.as_ref().map_or(0, |m| m.expert_ffn),
            params: (!scenario.training.offload.is_none()).then(|| model.param_breakdown()),
        }
    }

    /// The expert-parallel degrees tried: the divisors of the routed experts up to the space's
    /// largest (1 for a dense model).
    fn ep_values(&self) -> Vec<u32> {
        if self.experts > 0 {
            divisors(u64::from(self.experts))
                .into_iter()
                .filter(|&e| e <= self.space.max_ep.max(1))
                .collect()
        } else {
            vec![1]
        }
    }

    /// The schedule options at `pp`, built on the first mesh of that PP and kept in `per_pp`.
    fn sched_options_at<'p>(
        &self,
        per_pp: &'p mut Vec<(u32, Vec<SchedOption>)>,
        pp: u32,
    ) -> &'p [SchedOption] {
        let at = match per_pp.iter().position(|(p, _)| *p == pp) {
            Some(i) => i,
            None => {
                per_pp.push((
                    pp,
                    sched_options(
                        self.space,
                        self.scenario.overheads.framework,
                        &self.step_model.comm_inputs,
                        self.model.layers,
                        pp,
                    ),
                ));
                per_pp.len() - 1
            }
        };
        &per_pp[at].1
    }

    /// Fills `mbs` with the micro-batches a mesh of `dp64` replicas tries.
    fn micro_batches(&self, dp64: u64, mbs: &mut Vec<u32>) {
        let batch = self.batch;
        mbs.clear();
        match self.space.micro_batch_range {
            Some(max) if batch.is_multiple_of(dp64) => {
                // Every divisor of the batch per replica up to `max`, found in pairs up to √q.
                let (q, max) = (batch / dp64, u64::from(max.max(1)));
                let mut b = 1;
                while b * b <= q {
                    if q.is_multiple_of(b) {
                        for d in [b, q / b] {
                            if d <= max {
                                mbs.push(u32::try_from(d).unwrap_or(u32::MAX));
                            }
                        }
                    }
                    b += 1;
                }
                mbs.sort_unstable();
                mbs.dedup();
            }
            // The mesh is rejected for its batch; one micro-batch stands for its candidates.
            Some(_) => mbs.push(1),
            None => mbs.extend_from_slice(&self.space.micro_batches),
        }
    }

    /// Rules of the mesh alone.
    fn mesh_reasons(&self, dims: MeshDims, dp64: u64, any_split: bool) -> Reasons {
        let (model, tp, cp, ep, expert_tp) =
            (self.model, dims.tp, dims.cp, dims.ep, dims.expert_tp);
        let kv_heads = model.kv_heads;
        let mut mesh_reasons = Reasons::default();
        if !model.heads.is_multiple_of(tp) {
            mesh_reasons.add(RejectReason::HeadsNotDivisibleByTp);
        }
        if model.mla.is_none() && !kv_heads.is_multiple_of(tp) && tp % kv_heads.max(1) != 0 {
            mesh_reasons.add(RejectReason::KvHeadsNotDivisibleByTp);
        }
        if !model.ffn.is_multiple_of(tp) && self.dense_ffn_layers {
            mesh_reasons.add(RejectReason::FfnNotDivisibleByTp);
        }
        if !self.expert_ffn.is_multiple_of(expert_tp) {
            mesh_reasons.add(RejectReason::ExpertFfnNotDivisibleByEtp);
        }
        if !crate::input::hardware::tp_within_node(tp, self.gpn) {
            mesh_reasons.add(RejectReason::TpExceedsNode);
        }
        if !any_split {
            mesh_reasons.add(RejectReason::LayersNotDivisibleByPp);
        }
        if cp > 1 && !self.seq.is_multiple_of(2 * cp) {
            mesh_reasons.add(RejectReason::SeqNotDivisibleBy2Cp);
        }
        if self.experts > 0 && !self.experts.is_multiple_of(ep) {
            mesh_reasons.add(RejectReason::ExpertsNotDivisibleByEp);
        }
        // Liu et al. 2025 §3: expert_tp × ep must divide the stage's tp·cp·dp ranks.
        let stage = dp64 * u64::from(cp) * u64::from(tp);
        if !stage.is_multiple_of(u64::from(ep) * u64::from(expert_tp)) {
            mesh_reasons.add(RejectReason::FoldNotDividingStage);
        }
        if !self.batch.is_multiple_of(dp64) {
            mesh_reasons.add(RejectReason::BatchNotDivisibleByDpMicroBatch);
        }
        mesh_reasons
    }

    /// Every micro-batch and (ZeRO, recompute) pair of one schedule option on a mesh.
    fn schedule<P: PeakSource>(
        &self,
        mesh: &Mesh<'_>,
        o: &SchedOption,
        scratch: &mut Scratch,
        peak_memory: &mut P,
        acc: &mut Partial,
    ) {
        let space = self.space;
        let (dims, schedule, v) = (mesh.dims, o.schedule, o.v);
        let (n_zero, n_rc) = (space.zero_stages.len() as u64, space.recompute.len() as u64);
        let Some(split) = o.split else {
            let mut r = Reasons::default();
            r.add(RejectReason::LayersNotDivisibleByPp);
            let block = Rejected::knob_block(dims, (schedule, v, None, None));
            let n_mb = scratch.mbs.len() as u64;
            acc.reject(block(r, n_zero * n_rc * n_mb), space.max_rejected);
            return;
        };
        // Memory grows with the micro-batch (activations ∝ b × in-flight micro-batches,
        // min(p, m)·b ≤ the batch per replica; state does not shrink): once a (ZeRO,
        // recompute) pair overflows at b, every larger b overflows too and is rejected
        // without evaluating it, with the smaller b's peak as its lower bound.
        scratch.oom.clear();
        scratch
            .oom
            .resize(space.zero_stages.len() * space.recompute.len(), None);
        for &mb in &scratch.mbs {
            let per = mesh.dp64 * u64::from(mb.max(1));
            let mut r = Reasons::default();
            if !self.batch.is_multiple_of(per) {
                r.add(RejectReason::BatchNotDivisibleByDpMicroBatch);
            }
            // As the validator counts it: whole micro-batches per pipeline.
            if schedule == Schedule::Interleaved
                && !(self.batch / per).is_multiple_of(u64::from(dims.pp))
            {
                r.add(RejectReason::MicroBatchesNotDivisibleByPp);
            }
            if !r.is_empty() {
                let block = Rejected::knob_block(dims, (schedule, v, Some(mb), Some(split)));
                acc.reject(block(r, n_zero * n_rc), space.max_rejected);
                continue;
            }
            let knobs = Knobs {
                zero: ZeroStage::Ddp,
                recompute: Recompute::None,
                schedule,
                virtual_stages: v,
                micro_batch: mb,
                split,
            };
            let (oom, comms) = (&mut scratch.oom, &mut scratch.comms);
            self.micro_batch(mesh, o, knobs, (oom, comms), peak_memory, acc);
        }
    }

    /// Every (ZeRO, recompute) pair of one micro-batch: `base` holds its other knobs.
    fn micro_batch<P: PeakSource>(
        &self,
        mesh: &Mesh<'_>,
        o: &SchedOption,
        base: Knobs,
        (oom, comms): (&mut [Option<(u32, f64)>], &mut MicroBatchComms),
        peak_memory: &mut P,
        acc: &mut Partial,
    ) {
        let (space, dims, mb) = (self.space, mesh.dims, base.micro_batch);
        // This micro-batch's communication, in its two parts (crate::time::comms::chained):
        // the data-parallel items read the ZeRO stage and whether recompute is full
        // (DeepSpeed's ZeRO-3 gathers for the recomputed forward), the model-parallel items
        // only whether recompute is full; each is built on its first feasible candidate.
        comms.reset();
        // The layout of this micro-batch, built once: each candidate sets its ZeRO
        // stage and recompute policy (the only fields of `layout_of` they change).
        let mut layout = layout_of(dims, base);
        for (zi, &zero) in space.zero_stages.iter().enumerate() {
            for (ri, &recompute) in space.recompute.iter().enumerate() {
                let slot = zi * space.recompute.len() + ri;
                let knobs = Knobs {
                    zero,
                    recompute,
                    ..base
                };
                let known = oom[slot].filter(|&(at, _)| mb > at);
                layout.zero = zero;
                layout.recompute = recompute;
                let peak = match known {
                    Some((_, lower_bound)) => lower_bound,
                    None => {
                        acc.evaluated += 1;
                        peak_memory.peak_bytes(&layout)
                    }
                };
                let over_gpu = peak.is_nan() || peak > self.usable;
                if over_gpu && oom[slot].is_none() {
                    oom[slot] = Some((mb, peak));
                }
                let why = if over_gpu {
                    Some(RejectReason::MemoryOverCapacity)
                } else if !self.host_fits(&layout) {
                    Some(RejectReason::HostMemoryOverNode)
                } else {
                    None
                };
                if let Some(why) = why {
                    let mut r = Reasons::default();
                    r.add(why);
                    acc.reject(
                        Rejected {
                            dims,
                            zero: Some(zero),
                            recompute: Some(recompute),
                            schedule: Some(knobs.schedule),
                            virtual_stages: Some(knobs.virtual_stages),
                            micro_batch: Some(mb),
                            split: Some(knobs.split),
                            reasons: r,
                            candidates: 1,
                            peak_memory_bytes: peak,
                        },
                        space.max_rejected,
                    );
                    continue;
                }
                let candidate = self.priced(mesh, o, &layout, knobs, peak, comms);
                acc.keep(candidate, space.one_row_per_mesh);
            }
        }
    }

    /// Offload's node limits, checked only for candidates that fit the GPU.
    fn host_fits(&self, layout: &Layout) -> bool {
        match &self.params {
            None => true,
            Some(p) => {
                crate::memory::offload::layout_fits_host(self.model, p, self.scenario, layout)
            }
        }
    }

    /// A candidate that fits, with its step priced.
    fn priced(
        &self,
        mesh: &Mesh<'_>,
        o: &SchedOption,
        layout: &Layout,
        knobs: Knobs,
        peak: f64,
        comms: &mut MicroBatchComms,
    ) -> Feasible {
        let step_model = self.step_model;
        let items = comms.items(step_model, layout, mesh.placement, &o.pace);
        let mut s = step_model.seconds_with(layout, items, &o.pace);
        // A stage with more MoE layers may be the slower one (StepModel::pacing): priced
        // whole, only for such splits (caching its items as above measured no faster).
        if let Some(rival) = &o.rival {
            let r = step_model.seconds_paced(layout, mesh.placement, rival);
            if r.total > s.total {
                s = r;
            }
        }
        Feasible {
            dims: mesh.dims,
            knobs,
            step_s: s.total,
            mfu: step_model.mfu(s.total, self.world as f64),
            exposed_comm_s: s.exposed_comm_total(),
            bubble_s: s.bubble,
            peak_memory_bytes: peak,
            headroom_bytes: self.usable - peak,
            caveat: PricingCaveat::of(layout, mesh.placement, self.scenario.overheads.framework),
        }
    }
}
