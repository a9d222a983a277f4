//! `export`: framework launch lines and config files for one scenario.

use std::fmt::Write;
use std::path::Path;

use planner_core::export::{export, exports, Export, ExportFormat};
use planner_core::link;

use crate::error::CliError;
use crate::input::read_scenario;

/// The exports named by `format` ("all" or one [`ExportFormat::id`]) of the scenario in
/// `path` or `query`: one export's text alone (its notes on stderr), all of them
/// under headers with notes as comments, or JSON.
pub fn run(
    path: Option<&Path>,
    query: Option<&str>,
    format: &str,
    json: bool,
) -> Result<String, CliError> {
    let scenario = match (path, query) {
        (_, Some(q)) => {
            link::decode(q).map_err(|errors| CliError::fields("invalid link:", &errors))?
        }
        (Some(p), None) => read_scenario(p)?,
        (None, None) => return Err(CliError::BadInput("give a scenario file or --link".into())),
    };
    let model = scenario
        .model_spec()
        .map_err(|e| CliError::BadInput(e.to_string()))?;
    let list: Vec<Export> = if format == "all" {
        exports(&scenario, &model)
    } else {
        let f = ExportFormat::from_id(format).ok_or_else(|| {
            let known: Vec<&str> = ExportFormat::ALL.iter().map(|f| f.id()).collect();
            CliError::BadInput(format!(
                "--format: unknown export '{format}' (known: {}, all)",
                known.join(", ")
            ))
        })?;
        vec![export(f, &scenario, &model)]
    };
    if json {
        return serde_json::to_string_pretty(&list)
            .map_err(|e| CliError::BadInput(format!("exports cannot be written as JSON: {e}")));
    }
    let single = list.len() == 1;
    let mut out = String::new();
    for e in &list {
        if !single {
            let _ = writeln!(out, "==> {} ({}) <==", e.file_name, e.label);
        }
        out.push_str(&e.text);
        if single {
            // stdout stays exactly the file (`> ds_config.json`); notes go to stderr.
            for n in &e.notes {
                eprintln!("note: {n}");
            }
            continue;
        }
        // Several files in one listing: notes follow each as comments in its syntax.
        let mark = if e.language == "json" { "//" } else { "#" };
        if !e.notes.is_empty() {
            let _ = writeln!(out, "\n{mark} Notes:");
            for n in &e.notes {
                let _ = writeln!(out, "{mark} - {n}");
            }
        }
        out.push('\n');
    }
    Ok(out.trim_end().to_string())
}
