//! `fit`: will the scenario fit its GPU, the fixes when it does not, and the time per epoch
//! (`planner_core::view::fit::fit_view`, what the page's fine-tuning section shows).

use std::fmt::Write;

use planner_core::base::explain::fmt_seconds;
use planner_core::view::fit::{epoch_line, fit_view, Dataset, FitView};

use crate::error::CliError;
use planner_core::input::scenario::Scenario;

/// The dataset the flags describe (clap makes the two forms exclusive and `--examples`
/// need `--mean-len`); the numbers are checked by the epoch model, which names the flag.
pub fn dataset(
    tokens: Option<f64>,
    examples: Option<f64>,
    mean_len: Option<f64>,
) -> Option<Dataset> {
    match (tokens, examples, mean_len) {
        (Some(tokens), _, _) => Some(Dataset::Tokens { tokens }),
        (None, Some(examples), Some(mean_tokens)) => Some(Dataset::Examples {
            examples,
            mean_tokens,
        }),
        _ => None,
    }
}

/// Prints the fit of `scenario` (read from a file or link), as a table or JSON.
pub fn run(scenario: &Scenario, dataset: Option<Dataset>, json: bool) -> Result<String, CliError> {
    let model = scenario
        .model_spec()
        .map_err(|e| CliError::BadInput(e.to_string()))?;
    let view = fit_view(scenario, &model, dataset);
    if let Some(Err((field, message))) = &view.epoch {
        return Err(CliError::BadInput(format!(
            "--{}: {message}",
            field.replace('_', "-")
        )));
    }
    if json {
        return serde_json::to_string_pretty(&view)
            .map_err(|e| CliError::BadInput(format!("the fit cannot be written as JSON: {e}")));
    }
    render(&view)
}

fn render(view: &FitView) -> Result<String, CliError> {
    let Some(r) = &view.report else {
        return Err(CliError::BadInput(view.error.clone().unwrap_or_default()));
    };
    let mut out = String::new();
    let _ = writeln!(
        out,
        "peak memory: {} ({})",
        view.current_memory, view.verdict
    );
    let _ = writeln!(out, "step time: {}", fmt_seconds(r.current.step_s));
    let _ = writeln!(out, "{}", view.micro_batch_line);
    let _ = writeln!(out, "{}", view.seq_len_line);
    if !r.current.fits {
        if view.fixes.is_empty() {
            let _ = writeln!(out, "no change meshplan prices makes it fit");
        } else {
            let _ = writeln!(
                out,
                "fixes, cheapest first (smallest added GPU-seconds per step):"
            );
        }
        for (i, f) in view.fixes.iter().enumerate() {
            let _ = writeln!(out, "  {}. {}: {}; {}", i + 1, f.label, f.memory, f.time);
        }
    }
    if let Some(Ok(e)) = &view.epoch {
        let _ = writeln!(
            out,
            "epoch: {}; {} dataset tokens a step",
            epoch_line(e),
            e.tokens_per_step
        );
    }
    Ok(out.trim_end().to_string())
}
