//! The issue list: every message the page shows under its controls, from range
//! validation and the layout rules, each once and keyed by its link parameter.

use serde::Serialize;

use crate::input::model::ModelSpec;
use crate::input::scenario::Scenario;
use crate::resolve::validate::layout_rule_violations;

/// One message for the controls.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Issue {
    /// Share-link parameter name ("tp", "gbs", ...).
    pub field: String,
    /// What is wrong.
    pub message: String,
    /// An error (the layout cannot run) rather than a warning.
    pub error: bool,
}

/// Every message for the controls: range errors from `Scenario::validate` and layout
/// rules from [`layout_rule_violations`], keyed by link parameter; `model` is the
/// scenario's resolved model or why it could not be resolved.
pub fn issues(s: &Scenario, model: &Result<ModelSpec, String>) -> Vec<Issue> {
    let mut out: Vec<Issue> = match s.validate() {
        Ok(()) => Vec::new(),
        Err(errors) => errors
            .into_iter()
            .map(|e| Issue {
                field: e.field,
                message: e.message,
                error: true,
            })
            .collect(),
    };
    match model {
        // Each problem once: a rule that restates a validation error (a layout larger than
        // the cluster) was shown twice under the DP slider.
        Ok(spec) => out.extend(
            layout_rule_violations(spec, s)
                .into_iter()
                .filter(|v| !v.restates_validation())
                .map(|v| Issue {
                    error: v.is_error(),
                    field: v.field,
                    message: v.message,
                }),
        ),
        Err(message) => out.push(Issue {
            field: "model".into(),
            message: message.clone(),
            error: true,
        }),
    }
    out
}
