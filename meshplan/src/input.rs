//! Reading scenario files (shared by every subcommand that takes one).

use std::io::Read;
use std::path::Path;

use planner_core::input::scenario::Scenario;

use crate::error::CliError;

/// Reads `path` (or stdin for `-`) as scenario JSON and validates it.
pub fn read_scenario(path: &Path) -> Result<Scenario, CliError> {
    let shown = path.display();
    let text = if path.as_os_str() == "-" {
        let mut s = String::new();
        std::io::stdin()
            .read_to_string(&mut s)
            .map_err(|e| CliError::Io(format!("reading stdin: {e}")))?;
        s
    } else {
        std::fs::read_to_string(path).map_err(|e| CliError::Io(format!("{shown}: {e}")))?
    };
    Scenario::from_json(&text)
        .map_err(|errors| CliError::fields(&format!("{shown}: invalid scenario:"), &errors))
}

/// A scenario from a file path (`-` reads stdin) or, when no such file exists, a share link
/// (query, `?query` or full URL).
pub fn read_file_or_link(arg: &str) -> Result<Scenario, CliError> {
    let path = Path::new(arg);
    if arg == "-" || path.exists() {
        return read_scenario(path);
    }
    planner_core::edges::link::decode(arg)
        .map_err(|errors| CliError::fields("not a file, and an invalid link:", &errors))
}

/// `--hf MODEL_ID` on the commands that take a scenario (`fit`, `bill`, `deadline`, `fleet`,
/// `serve`, `serve-search`, `search`): the Hub model replaces the scenario's.
#[derive(Debug, Default, clap::Args)]
pub struct HubFlag {
    /// A model on the Hugging Face Hub (`org/name` or its URL), read from its config.json and
    /// safetensors headers, replacing the scenario's model. `HF_ENDPOINT`, `HF_TOKEN`, cached.
    #[arg(long, value_name = "MODEL_ID")]
    pub hf: Option<String>,
}

impl HubFlag {
    /// `scenario` with the Hub model in place of its own (unchanged without `--hf`).
    pub fn apply(&self, scenario: Scenario) -> Result<Scenario, CliError> {
        with_hub_model(scenario, self.hf.as_deref()).map(|(s, _)| s)
    }
}

/// `scenario` with its model replaced by the Hub model `hf` names (when given), and what was
/// fetched; an error leaves nothing changed.
pub fn with_hub_model(
    mut scenario: Scenario,
    hf: Option<&str>,
) -> Result<(Scenario, Option<crate::hub::Fetched>), CliError> {
    let Some(id) = hf else {
        return Ok((scenario, None));
    };
    let fetched = crate::hub::fetch(id)?;
    scenario.model = planner_core::input::scenario::ModelChoice::Custom(fetched.model.spec.clone());
    Ok((scenario, Some(fetched)))
}

/// The fetched model as table lines: counts, what the headers changed, classes, files.
pub fn hub_table(h: &crate::hub::Fetched) -> String {
    use std::fmt::Write;
    let m = &h.model;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{} ({}): {} parameters from the safetensors headers; config.json's shapes alone: {}",
        m.repo, m.architecture, m.model_params, m.config_params
    );
    if let Some(q) = &m.quantization {
        let _ = writeln!(
            out,
            "  quantization ({}): {} — {}",
            q.source, q.method, q.format
        );
    }
    for c in &m.classes {
        let _ = writeln!(
            out,
            "  {:<34} {:>16} params {:>16} bytes {:>12} scale bytes",
            c.label, c.params, c.weight_bytes, c.scale_bytes
        );
    }
    for n in &m.notes {
        let _ = writeln!(out, "  note: {n}");
    }
    let _ = writeln!(out, "  read: {}\n", h.files.join(", "));
    out
}
