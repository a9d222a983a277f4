//! Model state explained: the weights, gradients and optimizer-state terms of a rank
//! (what each ZeRO stage replicates and what it shards, with formulas), and the
//! DDP/ZeRO-1/2/3 bars of the article's model-state chart ([`model_state`]).

use serde::{Deserialize, Serialize};

use crate::base::explain::{Term, Unit};
use crate::input::layout::{Layout, ZeroStage};
use crate::input::model::ModelSpec;
use crate::input::precision::Precision;
use crate::input::scenario::Training;

use crate::base::explain::{fmt_bytes, fmt_num};
use crate::memory::model_state::{
    model_state_bytes, rank_params, stage_spans_of, ModelStateBytes, RankParams, ShardGroups,
    StatePart,
};

/// One bar of the model-state chart: a ZeRO stage's bytes per GPU, split into
/// the part every rank replicates and the part it shards.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ModelStateBar {
    /// The stage.
    pub zero: ZeroStage,
    /// Categories every rank of the shard group holds in full.
    pub replicated: Vec<Term>,
    /// Categories each rank holds one shard of.
    pub sharded: Vec<Term>,
    /// Sum of both.
    pub total_bytes: f64,
}

#[derive(Clone, Copy)]
enum Category {
    Weights,
    Gradients,
    Optimizer,
}

impl Category {
    fn key(self) -> &'static str {
        match self {
            Category::Weights => "weights",
            Category::Gradients => "gradients",
            Category::Optimizer => "optimizer",
        }
    }
    fn label(self) -> &'static str {
        match self {
            Category::Weights => "weights",
            Category::Gradients => "gradients",
            Category::Optimizer => "optimizer state (master + moments)",
        }
    }
    fn bytes_per_param(self, p: &Precision) -> f64 {
        match self {
            Category::Weights => p.weight_bytes,
            Category::Gradients => p.grad_bytes,
            Category::Optimizer => p.optimizer_state_bytes(),
        }
    }
    /// Rajbhandari et al. 2020 §5: the first ZeRO stage that shards this category.
    fn sharded_under(self, zero: ZeroStage) -> bool {
        let from = match self {
            Category::Optimizer => 1,
            Category::Gradients => 2,
            Category::Weights => 3,
        };
        zero.number() >= from
    }
    fn part(self, s: &ModelStateBytes) -> StatePart {
        match self {
            Category::Weights => s.weights,
            Category::Gradients => s.gradients,
            Category::Optimizer => s.optimizer,
        }
    }
}

/// What the model-state terms' text needs.
pub(crate) struct StateText<'a> {
    pub(crate) rank: &'a RankParams,
    pub(crate) groups: &'a ShardGroups,
    pub(crate) precision: &'a Precision,
    pub(crate) layout: &'a Layout,
    pub(crate) key_prefix: &'a str,
}

fn state_term(category: Category, part: StatePart, ctx: &StateText, sharded: bool) -> Term {
    let StateText {
        rank,
        groups,
        precision,
        layout,
        key_prefix,
    } = *ctx;
    let k = category.bytes_per_param(precision);
    let kk = fmt_num(k);
    let has_experts = rank.expert > 0.0;
    let (bytes, formula, worked) = match (sharded, has_experts) {
        (false, false) => (
            part.replicated,
            format!("{kk}Ψ"),
            format!("{kk} × {}", fmt_num(rank.dense)),
        ),
        (false, true) => (
            part.replicated,
            format!("{kk}(Ψd + Ψe)"),
            format!(
                "{kk} × ({} + {})",
                fmt_num(rank.dense),
                fmt_num(rank.expert)
            ),
        ),
        (true, false) => (
            part.sharded,
            format!("{kk}Ψ/N"),
            format!("{kk} × {} / {}", fmt_num(rank.dense), fmt_num(groups.dense)),
        ),
        (true, true) => (
            part.sharded,
            format!("{kk}(Ψd/N + Ψe/Ne)"),
            format!(
                "{kk} × ({} / {} + {} / {})",
                fmt_num(rank.dense),
                fmt_num(groups.dense),
                fmt_num(rank.expert),
                fmt_num(groups.expert)
            ),
        ),
    };
    let split = if layout.tp > 1 || layout.pp > 1 || has_experts {
        format!(
            "Ψ = parameters on this rank (TP ÷{}, norms/router replicated; PP stage share; routed experts Ψe ÷EP·ETP {}·{})",
            layout.tp, layout.ep, layout.expert_tp
        )
    } else {
        "Ψ = all parameters".to_string()
    };
    let group = if sharded {
        format!(
            "; N = dp·cp = {}{}",
            fmt_num(groups.dense),
            if has_experts {
                format!(", Ne = tp·cp·dp/(ep·etp) = {}", fmt_num(groups.expert))
            } else {
                String::new()
            }
        )
    } else {
        String::new()
    };
    Term {
        key: format!("{key_prefix}{}", category.key()),
        label: format!(
            "{} ({})",
            category.label(),
            if sharded { "sharded" } else { "replicated" }
        ),
        value: bytes,
        unit: Unit::Bytes,
        formula,
        worked: format!("{worked} = {}", fmt_bytes(bytes)),
        assumption: format!(
            "{} B/param ({}); {split}{group}; ZeRO paper (Rajbhandari et al. 2020) §5",
            kk,
            precision.recipe.label()
        ),
    }
}

pub(crate) fn state_terms(
    zero: ZeroStage,
    state: &ModelStateBytes,
    ctx: &StateText,
) -> (Vec<Term>, Vec<Term>) {
    let mut replicated = Vec::new();
    let mut sharded = Vec::new();
    for c in [Category::Weights, Category::Gradients, Category::Optimizer] {
        let is_sharded = c.sharded_under(zero);
        let term = state_term(c, c.part(state), ctx, is_sharded);
        if is_sharded {
            sharded.push(term);
        } else {
            replicated.push(term);
        }
    }
    (replicated, sharded)
}

/// [`model_state`] in the scenario's fine-tuning mode: under LoRA/QLoRA the frozen base
/// and the adapters' state ([`crate::memory::adapters::model_state_bars`]).
pub fn model_state_for(
    model: &ModelSpec,
    precision: &Precision,
    layout: &Layout,
    training: &Training,
    framework: crate::input::framework::Framework,
) -> Vec<ModelStateBar> {
    let mut bars = crate::memory::adapters::model_state_bars(
        model,
        precision,
        layout,
        &training.finetune,
        framework,
    )
    .unwrap_or_else(|| model_state(model, precision, layout));
    crate::memory::offload::offload_bars(&mut bars, training.offload);
    bars
}

/// The four model-state bars (DDP, ZeRO-1, ZeRO-2, ZeRO-3) for this layout's
/// shard group, on the pipeline stage holding the most parameters.
///
/// With TP = PP = 1 and no experts these are the ZeRO paper's 16Ψ,
/// 4Ψ + 12Ψ/N, 2Ψ + 14Ψ/N and 16Ψ/N for mixed-precision Adam.
pub fn model_state(
    model: &ModelSpec,
    precision: &Precision,
    layout: &Layout,
) -> Vec<ModelStateBar> {
    let params = model.param_breakdown();
    let spans = stage_spans_of(&params, layout);
    let spans = spans.as_slice();
    let mut rank = rank_params(model, &params, layout, &spans[0]);
    for span in spans.iter().skip(1) {
        let r = rank_params(model, &params, layout, span);
        if r.total() > rank.total() {
            rank = r;
        }
    }
    let groups = ShardGroups::of(layout);
    ZeroStage::ALL
        .iter()
        .map(|&zero| {
            let state = model_state_bytes(&rank, &groups, precision, zero);
            let ctx = StateText {
                rank: &rank,
                groups: &groups,
                precision,
                layout,
                key_prefix: "",
            };
            let (replicated, sharded) = state_terms(zero, &state, &ctx);
            ModelStateBar {
                zero,
                replicated,
                sharded,
                total_bytes: state.total(),
            }
        })
        .collect()
}
