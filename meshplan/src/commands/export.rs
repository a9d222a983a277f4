//! `export`: framework launch lines and config files for one scenario.

use std::fmt::Write;
use std::path::Path;

use planner_core::edges::export::{export, exports, Export, ExportFormat};
use planner_core::edges::link;

use crate::error::CliError;
use crate::input::read_scenario;

/// Arguments of `meshplan export`.
pub struct Args<'a> {
    /// Scenario file.
    pub path: Option<&'a Path>,
    /// Share-link query instead of a file.
    pub query: Option<&'a str>,
    /// "all" or one [`ExportFormat::id`].
    pub format: &'a str,
    /// Print JSON.
    pub json: bool,
    /// Write files into this folder instead of printing them.
    pub out_dir: Option<&'a Path>,
}

/// The exports named by `format` of the scenario in `path` or `query`: one export's
/// text alone (its notes on stderr), all of them under headers with notes as comments,
/// JSON, or files in `out_dir`.
pub fn run(args: &Args) -> Result<String, CliError> {
    let Args {
        path,
        query,
        format,
        json,
        out_dir,
    } = *args;
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
    if let Some(dir) = out_dir {
        return write_files(dir, &list);
    }
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
        out.push_str(&planner_core::edges::export::notes_as_comments(e));
        out.push('\n');
    }
    Ok(out.trim_end().to_string())
}

/// Writes each export to `dir/<file_name>` and all notes to `dir/NOTES.md`.
fn write_files(dir: &Path, list: &[Export]) -> Result<String, CliError> {
    let io = |p: &Path, e: std::io::Error| CliError::Io(format!("{}: {e}", p.display()));
    std::fs::create_dir_all(dir).map_err(|e| io(dir, e))?;
    let mut out = String::new();
    for e in list {
        let path = dir.join(e.file_name);
        std::fs::write(&path, &e.text).map_err(|err| io(&path, err))?;
        let _ = writeln!(out, "wrote {} ({})", path.display(), e.label);
    }
    let path = dir.join("NOTES.md");
    std::fs::write(&path, planner_core::edges::export::notes_markdown(list))
        .map_err(|err| io(&path, err))?;
    let _ = writeln!(out, "wrote {}", path.display());
    Ok(out.trim_end().to_string())
}
