//! Mesh search: every DP × TP × PP × CP × EP of the cluster crossed with ZeRO
//! stage, micro-batch, pipeline schedule and virtual stages, and recompute
//! policy; each candidate is rejected with machine-readable reasons or ranked
//! by predicted step time with its memory headroom.
//!
//! Built for speed: divisibility is checked once per mesh and once per knob
//! value, so a rule that fails rejects a whole block of candidates in one
//! record; per-mesh quantities (group placement) are computed once, and the
//! communication items once per micro-batch in two parts (data-parallel per ZeRO
//! stage, model-parallel per full recompute or not: [`crate::time::comms::chained`]);
//! the inner loop neither allocates nor formats.
//!
//! Counting: a candidate is one mesh (`dp·tp·pp·cp` = the cluster's GPUs, EP over
//! the divisors of the routed experts) crossed with one value of every knob in
//! the [`SearchSpace`] (ZeRO stage × recompute × micro-batch × schedule/virtual
//! stages; with PP = 1 the schedule is moot and counts once). A block rejected
//! by a mesh or knob rule counts every candidate it covers, so
//! `candidates = feasible + Σ rejected.candidates` (until `max_rejected` caps the list).
//! Micro-batches range over every divisor of `global_batch / dp` up to
//! [`SearchSpace::micro_batch_range`], virtual stages over `2..=`
//! [`SearchSpace::virtual_stage_range`] with a layer per chunk; where the layers do not
//! divide `pp × v`, each valid uneven split ([`SplitProposal::proposals`]) is one more
//! knob value (and none is a rejected block).
//! Sequence parallelism is on whenever TP > 1 (same traffic, less memory);
//! GPipe is left out by default (1F1B has its bubble with less memory), and a schedule
//! the scenario's framework cannot run is not proposed
//! ([`crate::input::framework::Framework::runs_schedule`]: no zero bubble under Megatron-Core,
//! 1F1B only under DeepSpeed).
//!
//! Bounded work: a candidate that passes the rules costs a memory and a time
//! evaluation; at most [`SearchSpace::max_evaluated`] are made. A space with more
//! (a million GPUs whose count has hundreds of divisors, a model every degree
//! divides) stops before the mesh that would pass the cap, and the result says so
//! in [`SearchResult::stopped`]. The rule checks of a mesh cost O(1) whatever the
//! number of candidates they reject.

use serde::{Deserialize, Serialize};

use crate::input::layout::{Layout, Recompute, Schedule, ZeroStage};
use crate::input::model::ModelSpec;
use crate::input::scenario::Scenario;
use crate::input::stage_split::SplitProposal;
use crate::parallel::topology::{GroupKind, Placement};
use crate::time::cost::StepModel;

mod blocks;

use blocks::search_blocks;

/// Why a candidate was rejected; a bit in [`Reasons`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RejectReason {
    /// Query heads not divisible by TP.
    HeadsNotDivisibleByTp,
    /// KV heads neither divisible by TP nor dividing it (replication).
    KvHeadsNotDivisibleByTp,
    /// Dense FFN width not divisible by TP.
    FfnNotDivisibleByTp,
    /// Expert FFN width not divisible by expert-TP.
    ExpertFfnNotDivisibleByEtp,
    /// TP larger than a node, or not dividing it: every layer's collectives would cross the
    /// network (a TP of 6 on 8-GPU nodes puts ranks 6–11 on two nodes, and the slowest
    /// group paces the step).
    TpExceedsNode,
    /// Layers not divisible by `pp × virtual_stages`.
    LayersNotDivisibleByPp,
    /// Sequence not divisible by `2 × cp` (load-balanced causal CP).
    SeqNotDivisibleBy2Cp,
    /// Routed experts not divisible by EP.
    ExpertsNotDivisibleByEp,
    /// `expert_tp × ep` does not divide `tp × cp × dp` (MoE parallel folding).
    FoldNotDividingStage,
    /// Global batch not divisible by `dp × micro_batch`.
    BatchNotDivisibleByDpMicroBatch,
    /// Interleaved schedule needs micro-batches divisible by PP (Megatron).
    MicroBatchesNotDivisibleByPp,
    /// Peak memory above capacity × usable fraction.
    MemoryOverCapacity,
    /// Offload's host memory or NVMe above the node's ([`crate::input::offload`]).
    HostMemoryOverNode,
}

impl RejectReason {
    /// Every reason, in bit order.
    pub const ALL: [RejectReason; 13] = [
        RejectReason::HeadsNotDivisibleByTp,
        RejectReason::KvHeadsNotDivisibleByTp,
        RejectReason::FfnNotDivisibleByTp,
        RejectReason::ExpertFfnNotDivisibleByEtp,
        RejectReason::TpExceedsNode,
        RejectReason::LayersNotDivisibleByPp,
        RejectReason::SeqNotDivisibleBy2Cp,
        RejectReason::ExpertsNotDivisibleByEp,
        RejectReason::FoldNotDividingStage,
        RejectReason::BatchNotDivisibleByDpMicroBatch,
        RejectReason::MicroBatchesNotDivisibleByPp,
        RejectReason::MemoryOverCapacity,
        RejectReason::HostMemoryOverNode,
    ];

    /// Machine key: the rule name [`crate::resolve::validate::layout_rule_violations`] uses.
    pub fn key(self) -> &'static str {
        match self {
            RejectReason::HeadsNotDivisibleByTp => "heads_divisible_by_tp",
            RejectReason::KvHeadsNotDivisibleByTp => "kv_heads_divisible_by_tp",
            RejectReason::FfnNotDivisibleByTp => "ffn_divisible_by_tp",
            RejectReason::ExpertFfnNotDivisibleByEtp => "expert_ffn_divisible_by_etp",
            RejectReason::TpExceedsNode => "tp_within_node",
            RejectReason::LayersNotDivisibleByPp => "layers_divisible_by_pp",
            RejectReason::SeqNotDivisibleBy2Cp => "seq_divisible_by_2cp",
            RejectReason::ExpertsNotDivisibleByEp => "experts_divisible_by_ep",
            RejectReason::FoldNotDividingStage => "etp_ep_divides_tp_cp_dp",
            RejectReason::BatchNotDivisibleByDpMicroBatch => "batch_divisible_by_dp_mbs",
            RejectReason::MicroBatchesNotDivisibleByPp => {
                "interleaved_micro_batches_divisible_by_pp"
            }
            RejectReason::MemoryOverCapacity => "memory_within_capacity",
            RejectReason::HostMemoryOverNode => "host_memory_within_node",
        }
    }

    /// The broken rule in words, for a person.
    pub fn message(self) -> &'static str {
        match self {
            RejectReason::HeadsNotDivisibleByTp => "query heads not divisible by TP",
            RejectReason::KvHeadsNotDivisibleByTp => {
                "KV heads neither divisible by TP nor dividing it"
            }
            RejectReason::FfnNotDivisibleByTp => "FFN width not divisible by TP",
            RejectReason::ExpertFfnNotDivisibleByEtp => {
                "expert FFN width not divisible by expert-TP"
            }
            RejectReason::TpExceedsNode => "TP larger than a node or not dividing it",
            RejectReason::LayersNotDivisibleByPp => "layers not divisible by PP × virtual stages",
            RejectReason::SeqNotDivisibleBy2Cp => "sequence not divisible by 2 × CP",
            RejectReason::ExpertsNotDivisibleByEp => "experts not divisible by EP",
            RejectReason::FoldNotDividingStage => "expert-TP × EP does not divide TP × CP × DP",
            RejectReason::BatchNotDivisibleByDpMicroBatch => {
                "global batch not divisible by DP × micro-batch"
            }
            RejectReason::MicroBatchesNotDivisibleByPp => {
                "interleaved: micro-batches not divisible by PP"
            }
            RejectReason::MemoryOverCapacity => "peak memory over capacity",
            RejectReason::HostMemoryOverNode => "offload's host memory or NVMe over the node's",
        }
    }

    /// The reason of a machine key ([`RejectReason::key`]).
    pub fn from_key(key: &str) -> Option<Self> {
        RejectReason::ALL.iter().copied().find(|r| r.key() == key)
    }

    fn bit(self) -> u32 {
        1 << (self as u32)
    }
}

/// A set of [`RejectReason`]s as bits.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Reasons(pub u32);

impl Reasons {
    /// Adds one reason.
    pub fn add(&mut self, r: RejectReason) {
        self.0 |= r.bit();
    }

    /// Whether a reason is in the set.
    pub fn has(self, r: RejectReason) -> bool {
        self.0 & r.bit() != 0
    }

    /// No reasons.
    pub fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// The reasons in the set.
    pub fn iter(self) -> impl Iterator<Item = RejectReason> {
        RejectReason::ALL.into_iter().filter(move |r| self.has(*r))
    }
}

/// The group sizes of a mesh.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct MeshDims {
    /// Data parallel.
    pub dp: u32,
    /// Tensor parallel.
    pub tp: u32,
    /// Pipeline parallel.
    pub pp: u32,
    /// Context parallel.
    pub cp: u32,
    /// Expert parallel (folded into the stage's tp × cp × dp ranks, [`crate::parallel::fold`]).
    pub ep: u32,
    /// Expert tensor parallel (1 for dense models).
    #[serde(default = "one")]
    pub expert_tp: u32,
}

/// Serde default of [`MeshDims::expert_tp`].
fn one() -> u32 {
    1
}

/// The per-layout switches the search crosses with each mesh.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Knobs {
    /// ZeRO stage.
    pub zero: ZeroStage,
    /// Recompute policy.
    pub recompute: Recompute,
    /// Pipeline schedule.
    pub schedule: Schedule,
    /// Virtual stages (interleaved), 1 otherwise.
    pub virtual_stages: u32,
    /// Sequences per micro-batch.
    pub micro_batch: u32,
    /// Layers per stage: even, or an uneven split when the layers do not divide `pp × v`.
    #[serde(default, skip_serializing_if = "SplitProposal::is_even")]
    pub split: SplitProposal,
}

/// Builds the layout of a mesh and knobs; sequence parallel is on whenever TP > 1
/// (same communication volume as plain TP, less activation memory).
pub fn layout_of(d: MeshDims, k: Knobs) -> Layout {
    Layout {
        dp: d.dp,
        tp: d.tp,
        pp: d.pp,
        cp: d.cp,
        ep: d.ep,
        expert_tp: d.expert_tp,
        virtual_stages: k.virtual_stages,
        micro_batch: k.micro_batch,
        schedule: k.schedule,
        zero: k.zero,
        recompute: k.recompute,
        sequence_parallel: d.tp > 1,
        stage_split: k.split.stage_split(),
    }
}

/// What to enumerate besides the mesh.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SearchSpace {
    /// ZeRO stages tried.
    pub zero_stages: Vec<ZeroStage>,
    /// Recompute policies tried.
    pub recompute: Vec<Recompute>,
    /// Micro-batch sizes tried (ascending).
    pub micro_batches: Vec<u32>,
    /// Pipeline schedules tried when PP > 1 (GPipe is dominated by 1F1B and left out by default).
    pub schedules: Vec<Schedule>,
    /// Virtual stages tried with the interleaved schedule (each ≥ 2).
    pub virtual_stages: Vec<u32>,
    /// Largest EP tried for MoE models (EP ranges over divisors of the routed experts).
    pub max_ep: u32,
    /// Feasible candidates returned, best first.
    pub max_results: usize,
    /// Rejected blocks returned (counts by reason are always complete).
    pub max_rejected: usize,
    /// When set, the micro-batches tried are every `b ≤` this that divides the global batch
    /// over DP (`u32::MAX`, the default: the whole valid range) and `micro_batches` is not
    /// read; unset in older files.
    #[serde(default)]
    pub micro_batch_range: Option<u32>,
    /// When set, the virtual stages tried are every `v` in `2..=` this with at least one
    /// layer per chunk on average (`v ≤ layers / pp`; `u32::MAX`, the default: all of them),
    /// and `virtual_stages` is not read.
    #[serde(default)]
    pub virtual_stage_range: Option<u32>,
    /// Propose uneven stages ([`SplitProposal::proposals`]) when the layers do not divide `pp × v`.
    #[serde(default)]
    pub uneven_stages: bool,
    /// Most candidates whose memory and step time are computed: the search stops
    /// before the mesh that would pass this and says so in [`SearchResult::stopped`].
    #[serde(default = "default_max_evaluated")]
    pub max_evaluated: u64,
    /// When no candidate fits without offload, search again with each of
    /// [`crate::input::offload::Offload::SEARCH_VARIANTS`] in turn and keep the first that fits
    /// ([`SearchResult::offload`]); nothing more is searched when something fits.
    #[serde(default = "yes")]
    pub offload_fallback: bool,
    /// List each mesh (DP × TP × PP × CP × EP × expert TP) once, at its best candidate (the
    /// ZeRO stage, recompute, micro-batch, schedule and split that rank it highest), as a
    /// ranked list of meshes reads; `false` lists every knob setting as its own row.
    #[serde(default = "yes")]
    pub one_row_per_mesh: bool,
}

/// Serde default of [`SearchSpace::offload_fallback`].
fn yes() -> bool {
    true
}

/// Default of [`SearchSpace::max_evaluated`]: under a second natively for the worst space
/// found (997,920 GPUs and a tiny model every degree divides: it stops here after 0.84 s), and
/// above what real clusters need over the whole micro-batch and virtual-stage ranges (Llama
/// 3.1 405B on 16,384 GPUs prices 53,225 feasible candidates in 15 ms; a 256-layer MoE on
/// 65,536 GPUs evaluates about 2.0 million in 0.34 s; measured with `meshplan search`, session
/// 21). With one row per mesh the ranking keeps one candidate per mesh; listing every knob
/// setting keeps each feasible one (about 90 bytes each).
pub const DEFAULT_MAX_EVALUATED: u64 = 4_000_000;

fn default_max_evaluated() -> u64 {
    DEFAULT_MAX_EVALUATED
}

impl Default for SearchSpace {
    fn default() -> Self {
        SearchSpace {
            zero_stages: ZeroStage::ALL.to_vec(),
            recompute: Recompute::ALL.to_vec(),
            micro_batches: vec![1, 2, 4, 8],
            schedules: vec![
                Schedule::OneFOneB,
                Schedule::Interleaved,
                Schedule::ZeroBubble,
            ],
            virtual_stages: vec![2, 3, 4, 6, 8],
            // The whole valid range: every divisor of the batch per replica (memory rejects
            // the large ones without evaluating them, as it grows with the micro-batch).
            micro_batch_range: Some(u32::MAX),
            // The whole valid range: every v with at least one layer per chunk (Narayanan et
            // al. 2021 §2.2: more chunks shrink the bubble but multiply the point-to-point
            // traffic by v, so the time model, not a cap, says where it stops paying).
            virtual_stage_range: Some(u32::MAX),
            uneven_stages: true,
            max_ep: 256,
            max_results: 200,
            max_rejected: 100_000,
            max_evaluated: DEFAULT_MAX_EVALUATED,
            offload_fallback: true,
            one_row_per_mesh: true,
        }
    }
}

/// A cost the model is known to price below what published runs measured. A
/// candidate that carries one is ranked after every candidate without one (the
/// ranking never puts first a layout whose lead rests on an underestimate), and
/// the table says why.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PricingCaveat {
    /// ZeRO-3 / FSDP whose parameter gathers cross nodes, under a framework whose gather
    /// path has no measurement priced: the published runs of that kind ran slower than the
    /// link rates say (`meshplan validate`: torchtitan's FSDP2 run on 128 H100 by 21%; the
    /// Narayanan et al. 2021 ZeRO-3 runs on 384–2,240 A100s by 1.5–4.4× until DeepSpeed of
    /// 2021's own gather path was priced, `Framework::DeepSpeed2021`, which carries no caveat).
    Zero3InterNodeGathers,
}

impl PricingCaveat {
    /// Machine-readable key.
    pub fn key(self) -> &'static str {
        match self {
            PricingCaveat::Zero3InterNodeGathers => "zero3_inter_node_gathers",
        }
    }

    /// One line for the table.
    pub fn message(self) -> &'static str {
        match self {
            PricingCaveat::Zero3InterNodeGathers => {
                "ZeRO-3 gathers across nodes: priced at the links' rates, which published runs \
                 of this kind did not reach (torchtitan's FSDP2 on 128 H100 ran 21% slower \
                 than predicted; DeepSpeed of 2021, 1.5–4.4× slower until its gather path was \
                 priced: framework deepspeed-2021), so it is ranked after layouts without a \
                 known underestimate"
            }
        }
    }

    /// The caveat of a layout at its placement under `framework`, if any.
    pub fn of(
        layout: &Layout,
        placement: &Placement,
        framework: crate::input::framework::Framework,
    ) -> Option<PricingCaveat> {
        let measured_path = framework == crate::input::framework::Framework::DeepSpeed2021;
        (layout.zero == ZeroStage::Zero3
            && placement.group(GroupKind::DpCp).crosses_nodes()
            && !measured_path)
            .then_some(PricingCaveat::Zero3InterNodeGathers)
    }
}

/// One feasible candidate with its prediction.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Feasible {
    /// Group sizes.
    pub dims: MeshDims,
    /// Switches.
    pub knobs: Knobs,
    /// Predicted step time, seconds.
    pub step_s: f64,
    /// Model FLOPs utilisation.
    pub mfu: f64,
    /// Exposed communication, seconds.
    pub exposed_comm_s: f64,
    /// Pipeline bubble, seconds.
    pub bubble_s: f64,
    /// Peak memory per GPU, bytes.
    pub peak_memory_bytes: f64,
    /// Usable bytes minus peak bytes.
    pub headroom_bytes: f64,
    /// A cost the model knows it underestimates for this layout (ranked last).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub caveat: Option<PricingCaveat>,
}

impl Feasible {
    /// The full layout.
    pub fn layout(&self) -> Layout {
        layout_of(self.dims, self.knobs)
    }

    /// Training throughput per GPU: tokens of one step over its time and the GPUs it uses.
    pub fn tokens_per_s_per_gpu(&self, training: &crate::input::scenario::Training) -> f64 {
        let tokens = f64::from(training.global_batch) * f64::from(training.seq_len);
        let gpus = f64::from(self.dims.dp)
            * f64::from(self.dims.tp)
            * f64::from(self.dims.pp)
            * f64::from(self.dims.cp);
        tokens / (self.step_s * gpus)
    }
}

/// A block of rejected candidates sharing a mesh (and the knobs that are set).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Rejected {
    /// Group sizes.
    pub dims: MeshDims,
    /// ZeRO stage, or every stage when `None`.
    pub zero: Option<ZeroStage>,
    /// Recompute policy, or every policy when `None`.
    pub recompute: Option<Recompute>,
    /// Schedule, or every schedule when `None`.
    pub schedule: Option<Schedule>,
    /// Virtual stages, or every value when `None`.
    pub virtual_stages: Option<u32>,
    /// Micro-batch, or every value when `None`.
    pub micro_batch: Option<u32>,
    /// Stage split, or every split the search proposes when `None`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub split: Option<SplitProposal>,
    /// Why.
    pub reasons: Reasons,
    /// Candidates in the block.
    pub candidates: u64,
    /// Peak memory when the reason is memory, bytes (0 otherwise); for a micro-batch
    /// above one that already overflowed, that one's peak (a lower bound, not evaluated).
    pub peak_memory_bytes: f64,
}

impl Rejected {
    /// A block over every ZeRO stage and recompute policy of one schedule, `v`, and
    /// (when set) micro-batch and split: `(reasons, candidates) → Rejected`.
    fn knob_block(
        dims: MeshDims,
        (schedule, v, micro_batch, split): (Schedule, u32, Option<u32>, Option<SplitProposal>),
    ) -> impl Fn(Reasons, u64) -> Rejected {
        move |reasons, candidates| Rejected {
            dims,
            zero: None,
            recompute: None,
            schedule: Some(schedule),
            virtual_stages: Some(v),
            micro_batch,
            split,
            reasons,
            candidates,
            peak_memory_bytes: 0.0,
        }
    }
}

/// Candidates rejected for one reason (a candidate with two reasons counts under both).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReasonCount {
    /// Reason key.
    pub reason: String,
    /// Candidates.
    pub candidates: u64,
}

/// The reasons with candidates, in [`RejectReason::ALL`]'s order, from per-reason counts
/// indexed by `RejectReason as usize`.
pub fn reason_counts(counts: [u64; RejectReason::ALL.len()]) -> Vec<ReasonCount> {
    RejectReason::ALL
        .iter()
        .zip(counts)
        .filter(|(_, c)| *c > 0)
        .map(|(r, c)| ReasonCount {
            reason: r.key().to_string(),
            candidates: c,
        })
        .collect()
}

/// A starting point from the article for this cluster size, next to the ranking.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Hint {
    /// Stable key.
    pub key: String,
    /// The article's advice.
    pub text: String,
    /// Rank (0-based) of the best feasible candidate that follows the advice, if any.
    pub best_rank: Option<usize>,
}

/// Everything a search found.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SearchResult {
    /// GPUs every candidate uses.
    pub world: u64,
    /// Candidates considered.
    pub candidates: u64,
    /// Candidates that passed every rule and fit.
    pub feasible_count: u64,
    /// Distinct meshes among them ([`MeshDims`]: each with one or more knob settings).
    #[serde(default)]
    pub feasible_meshes: u64,
    /// Best feasible candidates, fastest first: one per mesh unless
    /// [`SearchSpace::one_row_per_mesh`] is off.
    pub feasible: Vec<Feasible>,
    /// Rejected blocks (up to `max_rejected`).
    pub rejected: Vec<Rejected>,
    /// Rejected candidates by reason.
    pub rejections: Vec<ReasonCount>,
    /// Memory limit used: capacity × usable fraction, bytes.
    pub usable_bytes: f64,
    /// The article's starting points for this cluster size.
    pub hints: Vec<Hint>,
    /// Inputs of the time model and whether each was measured or assumed.
    pub inputs: Vec<crate::time::cost::InputSource>,
    /// Set when the search stopped at [`SearchSpace::max_evaluated`] before the end
    /// of the space; the counts and the ranking then cover only what was searched.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stopped: Option<SearchStopped>,
    /// The offload every ranked candidate uses: none, unless nothing fit without it
    /// ([`SearchSpace::offload_fallback`]).
    #[serde(
        default,
        skip_serializing_if = "crate::input::offload::Offload::is_none"
    )]
    pub offload: crate::input::offload::Offload,
    /// With an offload fallback: the rejections of the search without offload (every
    /// candidate was rejected there, so these say why offload was needed).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rejections_without_offload: Vec<ReasonCount>,
}

/// Where a search stopped early, and why.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SearchStopped {
    /// Candidates considered before stopping (ranked or rejected).
    pub candidates: u64,
    /// Of those, candidates whose memory and step time were computed.
    pub evaluated: u64,
    /// The cap that stopped it ([`SearchSpace::max_evaluated`]).
    pub max_evaluated: u64,
    /// (TP, PP, CP) blocks finished before stopping, of `blocks`.
    pub blocks_searched: usize,
    /// (TP, PP, CP) blocks of the whole space.
    pub blocks: usize,
    /// The same, in words.
    pub message: String,
}

impl SearchStopped {
    fn new(
        candidates: u64,
        evaluated: u64,
        max_evaluated: u64,
        searched: usize,
        blocks: usize,
    ) -> Self {
        SearchStopped {
            candidates,
            evaluated,
            max_evaluated,
            blocks_searched: searched,
            blocks,
            message: format!(
                "search stopped at {candidates} candidates: evaluating the next mesh would pass the cap of {max_evaluated} evaluated candidates ({evaluated} so far); {searched} of {blocks} (TP, PP, CP) blocks searched, in order of TP, then PP, then CP, so the ranking covers only those. Narrow the search (fewer GPUs, or a GPU count with fewer divisors) to see the rest"
            ),
        }
    }
}

fn divisors(n: u64) -> Vec<u32> {
    let mut out = Vec::new();
    let mut i = 1u64;
    while i * i <= n {
        if n.is_multiple_of(i) {
            out.push(i as u32);
            if i * i != n {
                out.push((n / i) as u32);
            }
        }
        i += 1;
    }
    out.sort_unstable();
    out
}

/// Searches with the planner's memory model: first without offload (the scenario's own
/// offload choice is not searched), then, only when nothing fits, with each offload variant
/// ([`offload_fallback`]).
pub fn search(
    model: &ModelSpec,
    scenario: &Scenario,
    space: &SearchSpace,
    step_model: &StepModel,
) -> SearchResult {
    let (plain, plain_step) =
        with_offload(scenario, step_model, crate::input::offload::Offload::None);
    let result = search_once(model, &plain, space, &plain_step);
    offload_fallback(model, scenario, space, step_model, result)
}

/// The scenario and time model with `offload` in place of the scenario's choice.
fn with_offload(
    scenario: &Scenario,
    step_model: &StepModel,
    offload: crate::input::offload::Offload,
) -> (Scenario, StepModel) {
    let mut sc = scenario.clone();
    sc.training.offload = offload;
    let mut step = step_model.clone();
    step.offload = crate::time::offload::OffloadTime::of(&sc);
    (sc, step)
}

/// `plain` (a search without offload) when anything fit or the fallback is off; else the
/// first of [`crate::input::offload::Offload::SEARCH_VARIANTS`] whose search finds a candidate
/// that fits GPU and node, with `plain`'s rejections kept beside it. When no variant fits
/// either, `plain`.
pub fn offload_fallback(
    model: &ModelSpec,
    scenario: &Scenario,
    space: &SearchSpace,
    step_model: &StepModel,
    plain: SearchResult,
) -> SearchResult {
    if plain.feasible_count > 0 || !space.offload_fallback || plain.stopped.is_some() {
        return plain;
    }
    for variant in crate::input::offload::Offload::SEARCH_VARIANTS {
        let (sc, step) = with_offload(scenario, step_model, variant);
        let mut r = search_once(model, &sc, space, &step);
        if r.feasible_count > 0 {
            r.rejections_without_offload = plain.rejections;
            return r;
        }
    }
    plain
}

/// One search of the scenario as given (its offload included).
fn search_once(
    model: &ModelSpec,
    scenario: &Scenario,
    space: &SearchSpace,
    step_model: &StepModel,
) -> SearchResult {
    let params = model.param_breakdown();
    let mut memo = crate::search::memo::PeakMemo::new();
    let mut peak = MemoPeak {
        memo: &mut memo,
        model,
        params: &params,
        scenario,
    };
    let mut acc = Partial::default();
    let blocks = mesh_blocks(scenario.cluster.world_size());
    let searched = search_blocks(
        model, scenario, space, step_model, &mut peak, &blocks, &mut acc,
    );
    finish(scenario, space, step_model, acc, (searched, blocks.len()))
}

/// Where the search gets a candidate's peak memory per GPU, bytes.
trait PeakSource {
    fn peak_bytes(&mut self, layout: &Layout) -> f64;
}

/// A caller's memory model ([`search_with`]).
struct FnPeak<'f, F>(&'f F);

impl<F: Fn(&Layout) -> f64> PeakSource for FnPeak<'_, F> {
    fn peak_bytes(&mut self, layout: &Layout) -> f64 {
        (self.0)(layout)
    }
}

/// The planner's memory model through the search's memo ([`crate::search::memo`]).
struct MemoPeak<'a> {
    memo: &'a mut crate::search::memo::PeakMemo,
    model: &'a ModelSpec,
    params: &'a crate::input::model::ParamBreakdown,
    scenario: &'a Scenario,
}

impl PeakSource for MemoPeak<'_> {
    fn peak_bytes(&mut self, layout: &Layout) -> f64 {
        self.memo
            .peak_bytes(self.model, self.params, self.scenario, layout)
    }
}

/// Searches with a caller-supplied peak-memory function (bytes per GPU).
pub fn search_with<F: Fn(&Layout) -> f64>(
    model: &ModelSpec,
    scenario: &Scenario,
    space: &SearchSpace,
    step_model: &StepModel,
    peak_memory_bytes: F,
) -> SearchResult {
    let mut acc = Partial::default();
    let blocks = mesh_blocks(scenario.cluster.world_size());
    let searched = search_blocks(
        model,
        scenario,
        space,
        step_model,
        &mut FnPeak(&peak_memory_bytes),
        &blocks,
        &mut acc,
    );
    finish(scenario, space, step_model, acc, (searched, blocks.len()))
}

/// What a search has gathered so far: the sum over the blocks searched.
#[derive(Clone, Debug, Default)]
struct Partial {
    counts: [u64; 13],
    total: u64,
    rejected: Vec<Rejected>,
    feasible: Vec<Feasible>,
    feasible_count: u64,
    /// Candidates whose memory (and, when they fit, step time) were computed.
    evaluated: u64,
    /// The search hit `max_evaluated` and stopped.
    stopped: bool,
}

/// The (TP, PP, CP) triples of a world size (DP is the rest), in the order the
/// one-shot search visits them; each is one block of candidates (every EP and knob under it).
pub fn mesh_blocks(world: u64) -> Vec<(u32, u32, u32)> {
    let mut out = Vec::new();
    for &tp in &divisors(world) {
        let rest_tp = world / u64::from(tp);
        for &pp in &divisors(rest_tp) {
            for &cp in &divisors(rest_tp / u64::from(pp)) {
                out.push((tp, pp, cp));
            }
        }
    }
    out
}

/// Ranks what the blocks gathered: article hints, best `max_results` first,
/// counts by reason. `(searched, blocks)`: blocks finished and blocks in all, for
/// the note of a search stopped at its cap.
fn finish(
    scenario: &Scenario,
    space: &SearchSpace,
    step_model: &StepModel,
    acc: Partial,
    (searched, blocks): (usize, usize),
) -> SearchResult {
    let Partial {
        counts,
        total,
        rejected,
        mut feasible,
        feasible_count,
        evaluated,
        stopped,
    } = acc;
    let stopped = stopped
        .then(|| SearchStopped::new(total, evaluated, space.max_evaluated, searched, blocks));
    let cluster = &scenario.cluster;
    let world = cluster.world_size();
    let gpn = cluster.gpus_per_node;
    let usable = cluster.gpu.memory_bytes * scenario.overheads.usable_fraction;

    let by_rank = rank_order;
    let feasible_meshes = if space.one_row_per_mesh {
        keep_best_per_mesh(&mut feasible, by_rank)
    } else {
        distinct_meshes(&feasible)
    };
    let mut hints = article_hints(cluster.nodes, gpn, world, &feasible, by_rank);
    // PCIe-class links inside the node (well below NVLink's hundreds of GB/s).
    if cluster.intra_node.bytes_per_s < 100e9 {
        let best = feasible
            .iter()
            .filter(|c| c.dims.tp <= 2)
            .min_by(|a, b| by_rank(a, b))
            .map(|top| {
                feasible
                    .iter()
                    .filter(|c| by_rank(c, top) == std::cmp::Ordering::Less)
                    .count()
            });
        hints.push(Hint {
            key: "pcie_tp_at_most_2".into(),
            text: "GPUs without NVLink: keep TP at 1 or 2, because every layer's all-reduce crosses PCIe".into(),
            best_rank: best,
        });
    }
    let keep = space.max_results.min(feasible.len());
    if keep > 0 && keep < feasible.len() {
        feasible.select_nth_unstable_by(keep - 1, by_rank);
        feasible.truncate(keep);
    }
    feasible.sort_unstable_by(by_rank);
    feasible.truncate(space.max_results);

    let rejections = reason_counts(counts);
    SearchResult {
        world,
        candidates: total,
        feasible_count,
        feasible_meshes,
        feasible,
        rejected,
        rejections,
        usable_bytes: usable,
        hints,
        inputs: step_model.input_sources(),
        stopped,
        offload: scenario.training.offload,
        rejections_without_offload: Vec::new(),
    }
}

/// Distinct meshes among `feasible`: the runs of equal [`MeshDims`] (see [`keep_best_per_mesh`]).
fn distinct_meshes(feasible: &[Feasible]) -> u64 {
    let runs = feasible
        .windows(2)
        .filter(|w| w[0].dims != w[1].dims)
        .count();
    (runs + usize::from(!feasible.is_empty())) as u64
}

/// The ranking's order: candidates without a known underestimate first; then fastest first;
/// among equal step times, more headroom first; ties broken by the layout itself so capped
/// and full rankings agree.
fn rank_order(a: &Feasible, b: &Feasible) -> std::cmp::Ordering {
    let key = |f: &Feasible| {
        let (d, k) = (f.dims, f.knobs);
        (
            [d.tp, d.pp, d.cp, d.dp, d.ep, d.expert_tp],
            [
                u32::from(k.zero.number()),
                k.recompute as u32,
                k.schedule as u32,
                k.virtual_stages,
                k.micro_batch,
            ],
            k.split,
        )
    };
    (a.caveat.is_some().cmp(&b.caveat.is_some()))
        .then(a.step_s.total_cmp(&b.step_s))
        .then(b.headroom_bytes.total_cmp(&a.headroom_bytes))
        .then_with(|| key(a).cmp(&key(b)))
}

/// Keeps each mesh's best candidate by `order` (the ranking's own order, so the mesh's place
/// in the list is the place its best knob setting had among all of them) and returns how many
/// meshes are left. A mesh's candidates are one run of the list: `search_blocks` pushes every
/// knob setting of one (EP, expert TP) of a block before the next, and blocks are appended in
/// turn; so one linear pass over the runs does it, with no map (a map over the 405B search's
/// 26,637 candidates took it from 10.2 to 11.5 ms in one criterion run of `benches/search.rs`).
fn keep_best_per_mesh(
    feasible: &mut Vec<Feasible>,
    order: impl Fn(&Feasible, &Feasible) -> std::cmp::Ordering,
) -> u64 {
    let n = feasible.len();
    let (mut kept, mut i) = (0, 0);
    while i < n {
        let (mut best, mut j) = (i, i + 1);
        while j < n && feasible[j].dims == feasible[i].dims {
            if order(&feasible[j], &feasible[best]) == std::cmp::Ordering::Less {
                best = j;
            }
            j += 1;
        }
        // `kept ≤ i ≤ best`: the slots before `i` are already read.
        feasible[kept] = feasible[best];
        kept += 1;
        i = j;
    }
    feasible.truncate(kept);
    // The runs hold whole meshes (as above): debug builds check that no mesh is left twice.
    debug_assert_eq!(
        feasible
            .iter()
            .map(|f| f.dims)
            .collect::<std::collections::HashSet<_>>()
            .len(),
        kept,
        "a mesh's candidates were not one run of the list"
    );
    kept as u64
}

/// A search run a few blocks at a time, so a page can search 16,384 GPUs
/// without freezing: call [`SlicedSearch::step`] once per frame until it
/// returns `true`, then [`SlicedSearch::finish`]. The result equals
/// [`search`]'s for the same inputs (blocks are visited in the same order and
/// ranked once at the end).
#[derive(Clone, Debug)]
pub struct SlicedSearch {
    model: ModelSpec,
    params: crate::input::model::ParamBreakdown,
    scenario: Scenario,
    space: SearchSpace,
    step_model: StepModel,
    /// The scenario and time model as asked (with their offload), for [`offload_fallback`].
    asked: Box<(Scenario, StepModel)>,
    blocks: Vec<(u32, u32, u32)>,
    next: usize,
    acc: Partial,
    memo: crate::search::memo::PeakMemo,
}

impl SlicedSearch {
    /// Prepares a search of `scenario`'s cluster for `model` (nothing is searched yet).
    pub fn new(
        model: ModelSpec,
        scenario: Scenario,
        space: SearchSpace,
        step_model: StepModel,
    ) -> Self {
        let blocks = mesh_blocks(scenario.cluster.world_size());
        // As `search`: the slices search without offload; `finish` falls back to offload.
        let (plain, plain_step) =
            with_offload(&scenario, &step_model, crate::input::offload::Offload::None);
        SlicedSearch {
            params: model.param_breakdown(),
            model,
            scenario: plain,
            space,
            step_model: plain_step,
            asked: Box::new((scenario, step_model)),
            blocks,
            next: 0,
            acc: Partial::default(),
            memo: crate::search::memo::PeakMemo::new(),
        }
    }

    /// Searches up to `max_blocks` more (TP, PP, CP) blocks; `true` once every block
    /// is done or the search stopped at [`SearchSpace::max_evaluated`] (as [`search`] stops).
    pub fn step(&mut self, max_blocks: usize) -> bool {
        if self.is_done() {
            return true;
        }
        let end = self
            .next
            .saturating_add(max_blocks.max(1))
            .min(self.blocks.len());
        let (model, sc) = (&self.model, &self.scenario);
        let mut peak = MemoPeak {
            memo: &mut self.memo,
            model,
            params: &self.params,
            scenario: sc,
        };
        let searched = search_blocks(
            model,
            sc,
            &self.space,
            &self.step_model,
            &mut peak,
            &self.blocks[self.next..end],
            &mut self.acc,
        );
        self.next += searched;
        self.is_done()
    }

    /// Every block searched, or the search stopped at its cap ([`SlicedSearch::stopped`]).
    pub fn is_done(&self) -> bool {
        self.acc.stopped || self.next >= self.blocks.len()
    }

    /// Whether the search stopped at [`SearchSpace::max_evaluated`] before the last block.
    pub fn stopped(&self) -> bool {
        self.acc.stopped
    }

    /// Blocks searched and blocks in all (fewer searched once it [`SlicedSearch::stopped`]).
    pub fn progress(&self) -> (usize, usize) {
        (self.next, self.blocks.len())
    }

    /// Candidates considered so far.
    pub fn candidates_so_far(&self) -> u64 {
        self.acc.total
    }

    /// Ranks what was searched (everything once [`SlicedSearch::is_done`]).
    pub fn finish(self) -> SearchResult {
        let blocks = (self.next, self.blocks.len());
        let plain = finish(
            &self.scenario,
            &self.space,
            &self.step_model,
            self.acc,
            blocks,
        );
        let (scenario, step_model) = *self.asked;
        offload_fallback(&self.model, &scenario, &self.space, &step_model, plain)
    }
}

/// The article's starting candidates by cluster size ("to benchmark rather than
/// adopt"), each with the rank of the best feasible candidate that follows it
/// (`feasible` in any order; `order` is the ranking).
pub fn article_hints(
    nodes: u32,
    gpus_per_node: u32,
    world: u64,
    feasible: &[Feasible],
    order: impl Fn(&Feasible, &Feasible) -> std::cmp::Ordering,
) -> Vec<Hint> {
    let best = |f: &dyn Fn(&Feasible) -> bool| {
        let top = feasible
            .iter()
            .filter(|c| f(c))
            .min_by(|a, b| order(a, b))?;
        Some(
            feasible
                .iter()
                .filter(|c| order(c, top) == std::cmp::Ordering::Less)
                .count(),
        )
    };
    let mut out = Vec::new();
    if nodes <= 1 {
        out.push(Hint {
            key: "one_node_ddp".into(),
            text: "One node: DDP when a full training replica fits with headroom".into(),
            best_rank: best(&|c| {
                c.dims.tp == 1 && c.dims.pp == 1 && c.knobs.zero == ZeroStage::Ddp
            }),
        });
        out.push(Hint {
            key: "one_node_fsdp".into(),
            text: "One node: FSDP2 or ZeRO-2/3 when model state needs sharding; TP=2 only if a layer still does not fit".into(),
            best_rank: best(&|c| {
                c.dims.tp <= 2
                    && c.dims.pp == 1
                    && matches!(c.knobs.zero, ZeroStage::Zero2 | ZeroStage::Zero3)
            }),
        });
    } else if nodes <= 16 {
        out.push(Hint {
            key: "few_nodes_tp_in_node".into(),
            text: "2–16 nodes: TP inside each node (4 or 8 with NVLink), FSDP or DP across nodes, PP only if the model still does not fit".into(),
            best_rank: best(&|c| {
                matches!(c.dims.tp, 4 | 8) && c.dims.tp <= gpus_per_node && c.dims.pp == 1
            }),
        });
        out.push(Hint {
            key: "few_nodes_with_pp".into(),
            text: "2–16 nodes, model does not fit: add PP across nodes".into(),
            best_rank: best(&|c| matches!(c.dims.tp, 4 | 8) && c.dims.pp > 1),
        });
    } else {
        out.push(Hint {
            key: "large_tp_pp_cp_dp".into(),
            text: format!(
                "Hundreds of GPUs or more ({world}): TP × PP × CP × DP with TP inside a node, e.g. the article's TP 8 × PP 4 × CP 4 × DP 4 on 512 GPUs"
            ),
            best_rank: best(&|c| c.dims.tp == gpus_per_node && c.dims.pp > 1),
        });
    }
    out
}

/// Searches a scenario's cluster for its model and batch (its layout is ignored),
/// with `calibration` when given; like [`crate::time::cost::evaluate_scenario`], the
/// scenario's own calibration is not consulted.
pub fn search_scenario(
    scenario: &Scenario,
    space: &SearchSpace,
    options: crate::time::cost::CostOptions,
    calibration: Option<&crate::input::calibration::CalibrationSummary>,
) -> Result<SearchResult, crate::resolve::presets::ScenarioError> {
    let model = scenario.model_spec()?;
    let mut step_model = StepModel::new(&model, scenario, options);
    if let Some(cal) = calibration {
        step_model = step_model.with_calibration(cal);
    }
    Ok(search(&model, scenario, space, &step_model))
}
