//! One call that turns a [`Scenario`] into everything a view refresh needs.
//!
//! `meshplan eval`, the validation runs and the tests call [`evaluate`]; the page's
//! sections are built by [`crate::view`], whose builders share these functions (the
//! serving view is [`serving_view`]), and `meshplan eval` prints both.

use crate::input::finetune::FineTuneMode;
use crate::time::adapters::FineTuneSummary;
use serde::{Deserialize, Serialize};

use crate::input::hardware::Cluster;
use crate::input::model::{ModelSpec, ParamBreakdown};
use crate::input::scenario::{Scenario, Serving};
use crate::memory::serving::{
    concurrency_table, serving_plan, ConcurrencyCell, Recommendation, ServingPlan,
};
use crate::memory::state_terms::{model_state_for, ModelStateBar};
use crate::memory::training_memory::{training_memory, TrainingMemory};
use crate::resolve::validate::{layout_rule_violations, FieldError, RuleViolation};
use crate::time::cost::{CostOptions, StepCost, StepModel};

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
        scenario.overheads.framework,
    );
    let training = training_memory(scenario, &model);
    if let Some(host) = &training.host {
        rules.extend(crate::memory::offload::capacity_violations(host));
    }
    let serving = serving_view(&model, &scenario.serving, &scenario.cluster);
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

/// The serving view of `model` under `serving` on `cluster`; an error message when the
/// serving inputs are invalid.
pub fn serving_view(
    model: &ModelSpec,
    serving: &Serving,
    cluster: &Cluster,
) -> Result<ServingView, String> {
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
