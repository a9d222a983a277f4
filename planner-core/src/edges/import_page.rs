//! The page's import worker protocol: a pasted or dropped Hugging Face `config.json`
//! and a gpu-bench report or nccl-tests output are read in the Web Worker (`app-worker/`),
//! so `hf_config`, `report` (with `serde_path_to_error`), `nccl_tests`, `import_sniff`,
//! `calibration_fit` and `layer_step` stay out of the page's first-load wasm (issue 16).
//!
//! Both directions are plain text. A request is a header line ([`CONFIG_REQUEST`] or
//! [`BENCH_REQUEST`]) and its fields ([`Job::to_text`], [`Job::from_text`]). The worker
//! answers a config with the imported model inside a share link ([`ConfigReply`]: the
//! link is the one encoding of a custom model the page already reads), and a benchmark
//! with the fitted [`CalibrationSummary`] in its compact form (the link's `cal=`), the
//! bus-bandwidth chart's series ([`BusbwSeries`], drawn by the page) and the measurement
//! tables as markup ([`BenchImport`]).

use crate::edges::link;
use crate::input::calibration::CalibrationSummary;
use crate::input::model::ModelSpec;
use crate::input::scenario::{ModelChoice, Scenario};

/// First line of a config import request.
pub const CONFIG_REQUEST: &str = "import-config";
/// First line of a benchmark import request.
pub const BENCH_REQUEST: &str = "import-bench";
/// Separates a reply's fields (ASCII record separator: in no link, number or markup the
/// worker writes; the worker escapes every text it writes into markup).
const FIELD: char = '\u{1e}';

/// What the page asks the import worker.
#[derive(Clone, Debug, PartialEq)]
pub enum Job {
    /// A `config.json`'s text.
    Config {
        /// The file's text.
        json: String,
    },
    /// A measurement file: its name, the scenario (as its share link: the GPU the fit is
    /// relative to when the file names none) and its text.
    Bench {
        /// The file's name (the page shows it with the result).
        file_name: String,
        /// `link::encode` of the scenario.
        scenario_query: String,
        /// The file's text.
        text: String,
    },
}

impl Job {
    /// A benchmark request for `scenario`.
    pub fn bench(file_name: &str, scenario: &Scenario, text: String) -> Self {
        Job::Bench {
            file_name: file_name.to_string(),
            scenario_query: link::encode(scenario),
            text,
        }
    }

    /// The request as the page posts it.
    pub fn to_text(&self) -> String {
        match self {
            Job::Config { json } => format!("{CONFIG_REQUEST}\n{json}"),
            Job::Bench {
                file_name,
                scenario_query,
                text,
            } => format!(
                "{BENCH_REQUEST}\n{}\n{scenario_query}\n{text}",
                file_name.replace(['\n', '\r'], " ")
            ),
        }
    }

    /// Reads a request; `None` when `text` is no import request (another worker message).
    pub fn from_text(text: &str) -> Option<Self> {
        let (head, rest) = text.split_once('\n')?;
        match head {
            CONFIG_REQUEST => Some(Job::Config {
                json: rest.to_string(),
            }),
            BENCH_REQUEST => {
                let (file_name, rest) = rest.split_once('\n')?;
                let (scenario_query, text) = rest.split_once('\n')?;
                Some(Job::Bench {
                    file_name: file_name.to_string(),
                    scenario_query: scenario_query.to_string(),
                    text: text.to_string(),
                })
            }
            _ => None,
        }
    }
}

/// The worker's answer to a config: the model, or why not.
#[derive(Clone, Debug, PartialEq)]
pub enum ConfigReply {
    /// The imported shapes (a custom model).
    Imported(ModelSpec),
    /// Why the config was not used (the importer's message naming the field).
    Failed(String),
}

impl ConfigReply {
    /// `ok` and the share link of the default scenario with this model, or `err` and the message.
    pub fn to_text(&self) -> String {
        match self {
            ConfigReply::Imported(spec) => {
                let s = Scenario {
                    model: ModelChoice::Custom(spec.clone()),
                    ..crate::resolve::presets::default_scenario()
                };
                format!("ok{FIELD}{}", link::encode(&s))
            }
            ConfigReply::Failed(e) => format!("err{FIELD}{e}"),
        }
    }

    /// Reads the worker's answer; a link that does not decode to a custom model is `Failed`.
    pub fn from_text(text: &str) -> Self {
        match text.split_once(FIELD) {
            Some(("ok", query)) => match link::decode(query) {
                Ok(Scenario {
                    model: ModelChoice::Custom(spec),
                    ..
                }) => ConfigReply::Imported(spec),
                Ok(_) => {
                    ConfigReply::Failed("the import worker's link holds no custom model".into())
                }
                Err(errors) => ConfigReply::Failed(
                    errors
                        .iter()
                        .map(ToString::to_string)
                        .collect::<Vec<_>>()
                        .join("; "),
                ),
            },
            Some(("err", e)) => ConfigReply::Failed(e.to_string()),
            _ => ConfigReply::Failed("the import worker's reply did not parse".into()),
        }
    }
}

/// One collective on one group shape, for the bus-bandwidth chart.
#[derive(Clone, Debug, PartialEq)]
pub struct BusbwSeries {
    /// "all_reduce, 2 ranks (2 per node)".
    pub label: String,
    /// Palette index.
    pub color: usize,
    /// (bytes, bytes/s) measured.
    pub measured: Vec<(f64, f64)>,
    /// (bytes, bytes/s) of the fit.
    pub fitted: Vec<(f64, f64)>,
    /// (bytes, bytes/s) of the preset assumption.
    pub preset: Vec<(f64, f64)>,
}

/// Points as `x,y;x,y` (Rust's shortest round-trip float text).
fn points_text(points: &[(f64, f64)]) -> String {
    points
        .iter()
        .map(|(x, y)| format!("{x},{y}"))
        .collect::<Vec<_>>()
        .join(";")
}

fn points_from(text: &str) -> Result<Vec<(f64, f64)>, String> {
    if text.is_empty() {
        return Ok(Vec::new());
    }
    text.split(';')
        .map(|p| {
            let (x, y) = p.split_once(',').ok_or("a point without a comma")?;
            let num = |v: &str| {
                v.parse::<f64>()
                    .ok()
                    .filter(|v| v.is_finite())
                    .ok_or_else(|| format!("`{v}` is not a finite number"))
            };
            Ok((num(x)?, num(y)?))
        })
        .collect()
}

/// What the page shows of an accepted measurement file.
#[derive(Clone, Debug, PartialEq)]
pub struct BenchImport {
    /// The file's name.
    pub file_name: String,
    /// "gpu-bench report" or "nccl-tests output".
    pub kind: String,
    /// The fit (what the scenario and its link keep).
    pub summary: CalibrationSummary,
    /// The bus-bandwidth chart's series (one per collective and group shape).
    pub busbw: Vec<BusbwSeries>,
    /// Markup: the file's heading and notes.
    pub head_html: String,
    /// Markup: the collectives' table (empty when the file has none).
    pub comm_html: String,
    /// Markup: the GEMM and layer-step tables.
    pub rest_html: String,
}

/// Field of a series line.
const SERIES_FIELD: char = '\t';

impl BenchImport {
    /// `ok`, then the fields, separated by the record separator; series one a line.
    pub fn to_text(&self) -> String {
        let series = self
            .busbw
            .iter()
            .map(|s| {
                [
                    s.label.replace([SERIES_FIELD, '\n', FIELD], " "),
                    s.color.to_string(),
                    points_text(&s.measured),
                    points_text(&s.fitted),
                    points_text(&s.preset),
                ]
                .join("\t")
            })
            .collect::<Vec<_>>()
            .join("\n");
        [
            "ok".to_string(),
            self.file_name.replace(FIELD, " "),
            self.kind.replace(FIELD, " "),
            self.summary.to_compact(),
            series,
            self.head_html.replace(FIELD, " "),
            self.comm_html.replace(FIELD, " "),
            self.rest_html.replace(FIELD, " "),
        ]
        .join(&FIELD.to_string())
    }

    /// A failure as the worker sends it.
    pub fn failed_text(message: &str) -> String {
        format!("err{FIELD}{message}")
    }

    /// Reads the worker's answer: the import, or the message of a file it could not use.
    pub fn from_text(text: &str) -> Result<Self, String> {
        let fields: Vec<&str> = text.split(FIELD).collect();
        match fields.as_slice() {
            ["err", message] => Err((*message).to_string()),
            ["ok", file_name, kind, summary, series, head, comm, rest] => {
                let summary = CalibrationSummary::from_compact(summary)?;
                let busbw = series
                    .lines()
                    .filter(|l| !l.is_empty())
                    .map(|line| {
                        let parts: Vec<&str> = line.split(SERIES_FIELD).collect();
                        let [label, color, measured, fitted, preset] = parts.as_slice() else {
                            return Err("a bus-bandwidth series without five fields".to_string());
                        };
                        Ok(BusbwSeries {
                            label: (*label).to_string(),
                            color: color
                                .parse()
                                .map_err(|_| format!("series colour `{color}`"))?,
                            measured: points_from(measured)?,
                            fitted: points_from(fitted)?,
                            preset: points_from(preset)?,
                        })
                    })
                    .collect::<Result<Vec<_>, String>>()?;
                Ok(BenchImport {
                    file_name: (*file_name).to_string(),
                    kind: (*kind).to_string(),
                    summary,
                    busbw,
                    head_html: (*head).to_string(),
                    comm_html: (*comm).to_string(),
                    rest_html: (*rest).to_string(),
                })
            }
            _ => Err("the import worker's reply did not parse".to_string()),
        }
    }
}
