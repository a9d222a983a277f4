//! One call that turns a [`Scenario`] into everything a view refresh needs.
//!
//! The app calls [`evaluate`] on every input event and the `meshplan eval`
//! command prints its result, so both always show the same numbers.

use crate::input::finetune::FineTuneMode;
use crate::time::adapters::FineTuneSummary;
use serde::{Deserialize, Serialize};

use crate::base::explain::Term;
use crate::input::model::{ModelSpec, ParamBreakdown};
use crate::input::scenario::Scenario;
use crate::memory::serving::{
    concurrency_table, serving_plan, ConcurrencyCell, Recommendation, ServingPlan,
};
use crate::memory::state_terms::{model_state_for, ModelStateBar};
use crate::memory::training_memory::{training_memory, TrainingMemory};
use crate::parallel::pipeline::{bubble, bubble_terms, timeline, Bubble, Timeline};
use crate::resolve::validate::{layout_rule_violations, FieldError, RuleViolation};
use crate::time::cost::{CostOptions, StepCost, StepModel};

/// Largest `p·m·v` drawn as a full timeline; beyond it the view shows the
/// closed-form bubble and says why the grid is missing.
const MAX_DRAWN_OPS: u64 = 4096;

/// Micro-batch counts of the bubble curve (the article's bars are 4, 16, 32).
const BUBBLE_CURVE_M: [u32; 10] = [1, 2, 4, 8, 12, 16, 24, 32, 48, 64];

/// Parameter counts of the scenario's model.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ParamSummary {
    /// Ψ used by the formulas (the nominal count when one is set).
    pub total: f64,
    /// Parameters one token uses (MoE: top-k experts only).
    pub active: f64,
    /// Counts by component, from the shapes.
    pub breakdown: ParamBreakdown,
}

/// One point of the bubble-versus-micro-batches curve.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BubblePoint {
    /// Micro-batches per step.
    pub micro_batches: u32,
    /// Both bubble measures at that count.
    pub bubble: Bubble,
}

/// The pipeline view: schedule grid and bubble.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PipelineView {
    /// Micro-batches per step: `ceil(global_batch / (dp × micro_batch))`.
    pub micro_batches: u32,
    /// Both bubble measures for the current layout (closed form, equal to the simulation).
    pub bubble: Bubble,
    /// The two measures as labelled terms ("Idle share of the schedule", "Bubble overhead vs ideal time").
    pub bubble_terms: Vec<Term>,
    /// The simulated schedule, when small enough to draw.
    pub timeline: Option<Timeline>,
    /// Why there is no timeline, when there is none.
    pub timeline_note: Option<String>,
    /// Bubble against micro-batch count for the current stages and schedule.
    pub curve: Vec<BubblePoint>,
    /// The uneven stage split, when the layout has a valid one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stage_split: Option<StageSplitView>,
}

/// An uneven stage split as the pipeline view shows it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StageSplitView {
    /// The split in words.
    pub description: String,
    /// Its share-link value.
    pub link: String,
    /// Decoder layers of each pipeline rank (the first 256).
    pub layers_per_stage: Vec<u32>,
    /// The rank whose time per micro-batch sets the pace.
    pub pacing_stage: u32,
    /// Its decoder layers over the average stage's.
    pub pacing_layer_scale: f64,
}

/// The serving view.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ServingView {
    /// The replica shape the user chose.
    pub plan: ServingPlan,
    /// Replicas or shard, and why.
    pub recommendation: Recommendation,
    /// Max concurrent sequences over TP × PP choices.
    pub table: Vec<ConcurrencyCell>,
}

/// Everything one refresh of the views needs.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Evaluation {
    /// The resolved model shapes.
    pub model: ModelSpec,
    /// Parameter counts.
    pub params: ParamSummary,
    /// Layout rules the current layout breaks (errors and warnings), for flags at the controls.
    pub rules: Vec<RuleViolation>,
    /// The article's chart: DDP, ZeRO-1, ZeRO-2, ZeRO-3 model state per GPU.
    pub model_state: Vec<ModelStateBar>,
    /// Per-stage training memory with every term, against the GPU's capacity.
    pub training: TrainingMemory,
    /// Schedule and bubble.
    pub pipeline: PipelineView,
    /// KV cache and serving; an error message when the serving inputs are invalid.
    pub serving: Result<ServingView, String>,
    /// Step time, throughput, MFU and the communication breakdown of the current layout,
    /// with measured numbers when a calibration is present and enabled.
    pub step: StepCost,
    /// LoRA/QLoRA: adapter count and step time against full fine-tuning; `None` for full training.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finetune: Option<FineTuneSummary>,
}

/// Why a scenario could not be evaluated: each error names its parameter.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct EvaluateError {
    /// One entry per bad parameter.
    pub errors: Vec<FieldError>,
}

impl std::fmt::Display for EvaluateError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let parts: Vec<String> = self
            .errors
            .iter()
            .map(|e| format!("{}: {}", e.field, e.message))
            .collect();
        write!(f, "{}", parts.join("; "))
    }
}

impl std::error::Error for EvaluateError {}

/// Evaluates a whole scenario. Fails only on invalid input (each error names its parameter);
/// a layout that breaks a divisibility rule is still evaluated, and the rule is listed.
pub fn evaluate(scenario: &Scenario) -> Result<Evaluation, EvaluateError> {
    scenario
        .validate()
        .map_err(|errors| EvaluateError { errors })?;
    let model = scenario.model_spec().map_err(|e| EvaluateError {
        errors: vec![FieldError {
            field: "model".to_string(),
            message: e.to_string(),
        }],
    })?;

    let breakdown = model.param_breakdown();
    let params = ParamSummary {
        total: model.params(),
        active: model.active_params(),
        breakdown,
    };
    let mut rules = layout_rule_violations(&model, scenario);
    let model_state = model_state_for(
        &model,
        &scenario.precision,
        &scenario.layout,
        &scenario.training,
    );
    let training = training_memory(scenario, &model);
    if let Some(host) = &training.host {
        rules.extend(crate::memory::offload::capacity_violations(host));
    }
    let pipeline = pipeline_view(&model, scenario);
    let serving = serving_view(&model, scenario);
    let step = step_cost(&model, scenario);
    let finetune = scenario.training.finetune.adapters().and_then(|_| {
        let mut full = scenario.clone();
        full.training.finetune.mode = FineTuneMode::Full;
        let full_s = step_cost(&model, &full).seconds.total;
        crate::time::adapters::summary(
            &model,
            &scenario.training.finetune,
            step.seconds.total,
            full_s,
        )
    });

    Ok(Evaluation {
        model,
        params,
        rules,
        model_state,
        training,
        pipeline,
        serving,
        step,
        finetune,
    })
}

/// The time model for the current layout, calibrated when the user switched measured numbers on.
fn step_cost(model: &ModelSpec, scenario: &Scenario) -> StepCost {
    StepModel::for_scenario(model, scenario, CostOptions::default()).evaluate(&scenario.layout)
}

/// Micro-batches per step: `ceil(global_batch / (dp × micro_batch))`, as the memory model counts them.
pub fn micro_batches(scenario: &Scenario) -> u32 {
    scenario
        .layout
        .micro_batches(scenario.training.global_batch)
}

/// The pipeline view's stage split: `None` for the even split or one validation refuses.
pub fn stage_split_view(model: &ModelSpec, scenario: &Scenario) -> Option<StageSplitView> {
    let layout = &scenario.layout;
    let split = &layout.stage_split;
    let sh =
        crate::input::stage_split::SplitShape::new(model.layers, layout.pp, layout.virtual_stages);
    if split.is_even() || split.problem(sh).is_some() {
        return None;
    }
    let inputs = crate::time::comms::CommInputs::new(
        model,
        &scenario.precision,
        &scenario.training,
        &scenario.overheads,
    );
    // A stage with more MoE layers may pace the step instead (StepModel::pacing): priced
    // as the step prices it, only for such splits.
    let pace = if inputs.pace_rival(layout).is_some() {
        let step = StepModel::for_scenario(model, scenario, CostOptions::default());
        step.pacing(layout, &step.placement(layout)).0
    } else {
        inputs.pace(layout)
    };
    Some(StageSplitView {
        description: split.describe(sh),
        link: split.to_link(),
        layers_per_stage: split.rank_counts(sh, 256),
        pacing_stage: pace.rank,
        pacing_layer_scale: pace.layer_scale,
    })
}

fn pipeline_view(model: &ModelSpec, scenario: &Scenario) -> PipelineView {
    let layout = &scenario.layout;
    let (p, v) = (layout.pp.max(1), layout.virtual_stages.max(1));
    let m = micro_batches(scenario);
    let schedule = layout.schedule;

    let ops = (u64::from(p) * u64::from(m)).saturating_mul(u64::from(v));
    let (timeline, timeline_note) = if ops > MAX_DRAWN_OPS {
        (
            None,
            Some(format!(
                "{p} stages × {m} micro-batches × {v} chunks is too many slots to draw; the bubble below is the closed form"
            )),
        )
    } else {
        match timeline(schedule, p, m, v) {
            Ok(t) => (Some(t), None),
            Err(e) => (None, Some(e.to_string())),
        }
    };

    let curve = BUBBLE_CURVE_M
        .iter()
        .map(|&mb| BubblePoint {
            micro_batches: mb,
            bubble: bubble(schedule, p, mb, v),
        })
        .collect();

    PipelineView {
        stage_split: stage_split_view(model, scenario),
        micro_batches: m,
        bubble: bubble(schedule, p, m, v),
        bubble_terms: bubble_terms(schedule, p, m, v).to_vec(),
        timeline,
        timeline_note,
        curve,
    }
}

fn serving_view(model: &ModelSpec, scenario: &Scenario) -> Result<ServingView, String> {
    let (serving, cluster) = (&scenario.serving, &scenario.cluster);
    let plan = serving_plan(model, serving, cluster).map_err(|e| e.to_string())?;
    // `serving_plan` already ran `recommend` on the same inputs.
    let recommendation = plan.recommendation.clone();
    let table = concurrency_table(model, serving, cluster).map_err(|e| e.to_string())?;
    Ok(ServingView {
        plan,
        recommendation,
        table,
    })
}
