//! Model-state bytes per rank: which layers and embeddings each pipeline stage holds
//! ([`stage_spans`]), the parameters one rank keeps of them ([`rank_params`]), the
//! groups ZeRO shards over ([`ShardGroups`]), and weights, gradients and optimizer
//! state per rank for DDP and ZeRO-1/2/3 ([`model_state_bytes`]). Numbers only: the
//! explained terms are [`crate::memory::state_terms`] and [`crate::memory::training_memory`].

use serde::{Deserialize, Serialize};

use crate::input::layout::{Layout, ZeroStage};
use crate::input::model::{ModelSpec, ParamBreakdown};
use crate::input::precision::Precision;
use crate::input::stage_split::SplitShape;

/// Where a pipeline stage sits.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StagePosition {
    /// No pipeline: one stage holds everything.
    Only,
    /// First stage: embedding plus its layers.
    First,
    /// A middle stage (the second one, which holds the most in-flight micro-batches of the middles).
    Middle,
    /// Last stage: its layers, final norm, output projection and loss.
    Last,
}

impl StagePosition {
    /// "first stage", ...
    pub fn label(self) -> &'static str {
        match self {
            StagePosition::Only => "single stage",
            StagePosition::First => "first stage",
            StagePosition::Middle => "middle stage",
            StagePosition::Last => "last stage",
        }
    }
}

/// The layers and model ends one pipeline stage holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct StageSpan {
    /// Position in the pipeline.
    pub position: StagePosition,
    /// 0-based stage index.
    pub index: u32,
    /// Index of its first decoder layer.
    pub first_layer: u32,
    /// Decoder layers on the stage.
    pub layers: u32,
    /// Of those, layers with a dense FFN.
    pub dense_layers: u32,
    /// Of those, MoE layers.
    pub moe_layers: u32,
    /// Holds the input embedding.
    pub embedding: bool,
    /// Holds the final norm, output projection and loss.
    pub output: bool,
    /// MTP modules on the stage: all of them on the last (Megatron places MTP on the last
    /// pipeline stage: its layout letter `m` before the loss `L`), none elsewhere.
    pub mtp_layers: u32,
}

/// The stages to evaluate: the single one (pp = 1), or first, middle (pp ≥ 3)
/// and last. Layers are split as evenly as possible with the extra ones on the
/// earliest stages; dense-FFN layers are the model's first layers (DeepSeek).
pub fn stage_spans(params: &ParamBreakdown, pp: u32) -> ([StageSpan; 3], usize) {
    let p = pp.max(1);
    let mtp = u32::try_from(params.mtp_modules).unwrap_or(u32::MAX);
    let total = u32::try_from(params.dense_layers + params.moe_layers).unwrap_or(u32::MAX);
    let dense_total = u32::try_from(params.dense_layers).unwrap_or(u32::MAX);
    let base = total / p;
    let rem = total % p;
    let span = |position, index: u32| {
        let layers = base + u32::from(index < rem);
        let first_layer = index * base + index.min(rem);
        let end = first_layer + layers;
        let dense_layers = dense_total.min(end).saturating_sub(first_layer);
        StageSpan {
            position,
            index,
            first_layer,
            layers,
            dense_layers,
            moe_layers: layers - dense_layers,
            embedding: index == 0,
            output: index == p - 1,
            mtp_layers: if index == p - 1 { mtp } else { 0 },
        }
    };
    let only = span(StagePosition::Only, 0);
    match p {
        1 => ([only, only, only], 1),
        2 => {
            let last = span(StagePosition::Last, 1);
            ([span(StagePosition::First, 0), last, last], 2)
        }
        _ => (
            [
                span(StagePosition::First, 0),
                span(StagePosition::Middle, 1),
                span(StagePosition::Last, p - 1),
            ],
            3,
        ),
    }
}

/// The stages to evaluate for a layout: [`stage_spans`] for the even split; for an
/// uneven one the first, second and last ranks (the middle ranks hold equal counts, or
/// the earliest the most), or every rank of an explicit list, each with its own layers
/// (`StageSplit::rank_layers`) and dense-FFN layers among them. Allocates only for lists.
/// A split validation refuses is evaluated as the even one (its rule reports the error).
pub fn stage_spans_of(params: &ParamBreakdown, layout: &Layout) -> StageSpans {
    let split = &layout.stage_split;
    let total = u32::try_from(params.dense_layers + params.moe_layers).unwrap_or(u32::MAX);
    let sh = SplitShape::new(total, layout.pp, layout.virtual_stages);
    if split.is_even() || split.problem(sh).is_some() {
        let (fixed, count) = stage_spans(params, layout.pp);
        return StageSpans {
            fixed,
            count,
            listed: Vec::new(),
        };
    }
    let p = layout.pp.max(1);
    let dense_total = u32::try_from(params.dense_layers).unwrap_or(u32::MAX);
    let mtp = u32::try_from(params.mtp_modules).unwrap_or(u32::MAX);
    let span = |index: u32| {
        let layers = split.rank_layers(sh, index);
        let dense_layers = split.rank_dense_layers(sh, index, dense_total).min(layers);
        let position = match (index == 0, index + 1 == p) {
            (true, true) => StagePosition::Only,
            (true, false) => StagePosition::First,
            (false, true) => StagePosition::Last,
            (false, false) => StagePosition::Middle,
        };
        StageSpan {
            position,
            index,
            first_layer: u32::try_from(split.chunk_start(sh, u64::from(index))).unwrap_or(u32::MAX),
            layers,
            dense_layers,
            moe_layers: layers - dense_layers,
            embedding: index == 0,
            output: index + 1 == p,
            mtp_layers: if index + 1 == p { mtp } else { 0 },
        }
    };
    let mut out = StageSpans {
        fixed: [span(0); 3],
        count: 0,
        listed: Vec::new(),
    };
    if matches!(split, crate::input::layout::StageSplit::Chunks(_)) {
        out.listed = split.ranks_to_check(p).map(span).collect();
    } else {
        for r in split.ranks_to_check(p) {
            out.fixed[out.count] = span(r);
            out.count += 1;
        }
    }
    out
}

/// The stages [`stage_spans_of`] evaluates.
#[derive(Clone, Debug, PartialEq)]
pub struct StageSpans {
    fixed: [StageSpan; 3],
    count: usize,
    listed: Vec<StageSpan>,
}

impl StageSpans {
    /// The stages, first to last.
    pub fn as_slice(&self) -> &[StageSpan] {
        if self.listed.is_empty() {
            &self.fixed[..self.count.clamp(1, 3)]
        } else {
            &self.listed
        }
    }
}

/// Parameters one rank of a stage holds (after TP, PP and EP), split by the
/// ZeRO group that shards them.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct RankParams {
    /// Dense parameters (attention, norms, dense FFN, shared experts, router,
    /// embedding/output), sharded by ZeRO over `dp·cp`.
    pub dense: f64,
    /// Routed-expert parameters, sharded by ZeRO over the expert-data-parallel
    /// group `tp·cp·dp/(expert_tp·ep)`.
    pub expert: f64,
    /// The largest unit FSDP/ZeRO-3 gathers at once (one layer, or the
    /// embedding/output), on this rank after TP/EP.
    pub largest_unit: f64,
}

impl RankParams {
    /// All parameters on the rank.
    pub fn total(&self) -> f64 {
        self.dense + self.expert
    }
}

/// Parameters one rank of `span` holds.
///
/// Megatron conventions: attention, dense FFN, shared experts, embedding and
/// output are split by TP (vocab-parallel embedding); norms and the router are
/// replicated in the TP group; routed experts are split by EP and each expert by
/// expert-TP ([`crate::parallel::fold`]);
/// tied embeddings keep a second copy on the last stage when pp > 1.
/// `nominal_params` scales every component by `Ψ_nominal / Ψ_computed`.
pub fn rank_params(
    model: &ModelSpec,
    params: &ParamBreakdown,
    layout: &Layout,
    span: &StageSpan,
) -> RankParams {
    let t = f64::from(layout.tp.max(1));
    // Liu et al. 2025 (arXiv 2504.14960) §3: a rank holds routed/EP experts of each MoE
    // layer, each split over ETP, so routed parameters per layer ÷ (EP·ETP).
    let expert_split = f64::from(layout.ep.max(1)) * f64::from(layout.expert_tp.max(1));
    let computed_total = params.total() as f64;
    let psi = model.nominal_params.unwrap_or(computed_total);
    // Ratio first, so a rank holding the whole model gets exactly Ψ_nominal.
    let scale = |raw: f64| {
        if computed_total > 0.0 {
            raw / computed_total * psi
        } else {
            0.0
        }
    };
    let attention = params.attention_per_layer as f64 / t + params.norms_per_layer as f64;
    let dense_layer = attention + params.dense_ffn_per_layer as f64 / t;
    let moe_dense_part =
        attention + params.shared_experts_per_layer as f64 / t + params.router_per_layer as f64;
    let experts_per_layer = params.routed_experts_per_layer as f64 / expert_split;
    let embedding = params.embedding as f64 / t;
    let output = if params.output > 0 {
        params.output as f64 / t
    } else if layout.pp > 1 {
        // Tied weights: Megatron keeps a copy of the embedding on the last stage.
        embedding
    } else {
        0.0
    };
    let mut dense =
        f64::from(span.dense_layers) * dense_layer + f64::from(span.moe_layers) * moe_dense_part;
    let mut largest: f64 = 0.0;
    if span.dense_layers > 0 {
        largest = dense_layer;
    }
    if span.moe_layers > 0 {
        largest = largest.max(moe_dense_part + experts_per_layer);
    }
    if span.embedding {
        dense += embedding;
        largest = largest.max(embedding);
    }
    // MTP modules (on the last stage): each one decoder layer of the model's kind (an MoE
    // layer in an MoE model) split as above, its `2h → h` projection split over TP
    // (Megatron's `eh_proj` is a column-parallel linear), its norms replicated.
    let mtp = f64::from(span.mtp_layers);
    let mtp_moe = if params.moe_layers > 0 { mtp } else { 0.0 };
    if span.mtp_layers > 0 {
        let layer = if params.moe_layers > 0 {
            moe_dense_part
        } else {
            dense_layer
        };
        let extra =
            params.mtp_projection_per_module as f64 / t + params.mtp_norms_per_module as f64;
        dense += mtp * (layer + extra);
        largest = largest.max(
            layer
                + extra
                + if params.moe_layers > 0 {
                    experts_per_layer
                } else {
                    0.0
                },
        );
    }
    if span.output {
        dense += output + params.final_norm as f64;
        largest = largest.max(output + params.final_norm as f64);
    }
    RankParams {
        dense: scale(dense),
        expert: scale((f64::from(span.moe_layers) + mtp_moe) * experts_per_layer),
        largest_unit: scale(largest),
    }
}

/// Ranks sharing ZeRO state: `dp·cp` for dense parameters (CP ranks hold the
/// same weights; Megatron shards the optimizer over DP×CP) and the expert-data-parallel
/// group `tp·cp·dp/(expert_tp·ep)` for routed experts ([`crate::parallel::fold`]).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct ShardGroups {
    /// `N` for dense parameters.
    pub dense: f64,
    /// `N_e` for routed experts.
    pub expert: f64,
}

impl ShardGroups {
    /// The groups of a layout.
    pub fn of(layout: &Layout) -> Self {
        let dense = f64::from(layout.dp.max(1)) * f64::from(layout.cp.max(1));
        ShardGroups {
            dense,
            // Megatron parallel_state.py: expert_data_parallel_size = world / (ETP·EP·PP).
            expert: crate::parallel::fold::expert_dp_ranks(layout),
        }
    }
}

/// Bytes of one model-state category: the part every rank of the shard group
/// replicates and the part it holds one shard of.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct StatePart {
    /// Replicated on every rank of the group.
    pub replicated: f64,
    /// This rank's shard.
    pub sharded: f64,
}

impl StatePart {
    fn of(rank: &RankParams, groups: &ShardGroups, bytes_per_param: f64, sharded: bool) -> Self {
        if sharded {
            StatePart {
                replicated: 0.0,
                sharded: bytes_per_param * rank.dense / groups.dense
                    + bytes_per_param * rank.expert / groups.expert,
            }
        } else {
            StatePart {
                replicated: bytes_per_param * rank.total(),
                sharded: 0.0,
            }
        }
    }

    /// Both parts.
    pub fn total(&self) -> f64 {
        self.replicated + self.sharded
    }
}

/// Model-state bytes on one rank, per category.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct ModelStateBytes {
    /// Working weights.
    pub weights: StatePart,
    /// Gradients.
    pub gradients: StatePart,
    /// Optimizer state: master weights plus moments.
    pub optimizer: StatePart,
}

impl ModelStateBytes {
    /// Everything.
    pub fn total(&self) -> f64 {
        self.weights.total() + self.gradients.total() + self.optimizer.total()
    }
}

/// Model state per rank under a ZeRO stage (Rajbhandari et al. 2020, §5, Fig. 1):
/// stage 1 shards optimizer state, 2 also gradients, 3 also weights.
pub fn model_state_bytes(
    rank: &RankParams,
    groups: &ShardGroups,
    precision: &Precision,
    zero: ZeroStage,
) -> ModelStateBytes {
    let n = zero.number();
    ModelStateBytes {
        weights: StatePart::of(rank, groups, precision.weight_bytes, n >= 3),
        gradients: StatePart::of(rank, groups, precision.grad_bytes, n >= 2),
        optimizer: StatePart::of(rank, groups, precision.optimizer_state_bytes(), n >= 1),
    }
}
