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

use crate::edges::{hub, link};
use crate::input::calibration::CalibrationSummary;
use crate::input::model::ModelSpec;
use crate::input::scenario::{ModelChoice, Scenario};

/// First line of a config import request.
pub const CONFIG_REQUEST: &str = "import-config";
/// First line of a Hub model's first request: its configs and safetensors index.
pub const HUB_FILES_REQUEST: &str = "import-hub-files";
/// First line of a Hub model's second request: its configs and every shard's header.
pub const HUB_HEADERS_REQUEST: &str = "import-hub-headers";
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
    /// A Hub model's configs and index (`None`: the repository has no such file): the worker
    /// checks the configs and answers the shard files to read ([`hub_files_answer`]).
    HubFiles {
        /// `org/name`, checked by `hub::parse_hub_id`.
        repo: String,
        /// `config.json`.
        config: String,
        /// `hf_quant_config.json`.
        quant: Option<String>,
        /// `model.safetensors.index.json`.
        index: Option<String>,
    },
    /// A Hub model's configs and each shard's header JSON: the worker answers the model
    /// ([`HubReply`]).
    HubHeaders {
        /// `org/name`.
        repo: String,
        /// `config.json`.
        config: String,
        /// `hf_quant_config.json`.
        quant: Option<String>,
        /// (shard file, its header's JSON text), in the order read.
        headers: Vec<(String, String)>,
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
            Job::HubFiles {
                repo,
                config,
                quant,
                index,
            } => fields(
                HUB_FILES_REQUEST,
                [repo, config, opt(quant), opt(index)].into_iter(),
            ),
            Job::HubHeaders {
                repo,
                config,
                quant,
                headers,
            } => fields(
                HUB_HEADERS_REQUEST,
                [repo.as_str(), config, opt(quant)]
                    .into_iter()
                    .chain(headers.iter().flat_map(|(f, h)| [f.as_str(), h.as_str()])),
            ),
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
            HUB_FILES_REQUEST => match rest.split(FIELD).collect::<Vec<_>>().as_slice() {
                [repo, config, quant, index] => Some(Job::HubFiles {
                    repo: repo.to_string(),
                    config: config.to_string(),
                    quant: some(quant),
                    index: some(index),
                }),
                _ => None,
            },
            HUB_HEADERS_REQUEST => {
                let f: Vec<&str> = rest.split(FIELD).collect();
                let (head, pairs) = (f.get(..3)?, f.get(3..)?);
                (pairs.len() % 2 == 0).then(|| Job::HubHeaders {
                    repo: head[0].to_string(),
                    config: head[1].to_string(),
                    quant: some(head[2]),
                    headers: pairs
                        .chunks(2)
                        .map(|p| (p[0].to_string(), p[1].to_string()))
                        .collect(),
                })
            }
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

/// `head`, then each field after the record separator.
fn fields<'a>(head: &str, parts: impl Iterator<Item = &'a str>) -> String {
    let mut out = format!("{head}\n");
    for (i, p) in parts.enumerate() {
        if i > 0 {
            out.push(FIELD);
        }
        out.push_str(p);
    }
    out
}

/// An absent file as an empty field (no JSON file is empty).
fn opt(text: &Option<String>) -> &str {
    text.as_deref().unwrap_or("")
}

fn some(field: &str) -> Option<String> {
    (!field.is_empty()).then(|| field.to_string())
}

/// Whether a fetched file can travel in a request: valid JSON never holds the record
/// separator (a control character), so a file that does is refused before it is sent.
pub fn fits_a_field(text: &str) -> bool {
    !text.contains(FIELD)
}

/// The worker's answer to [`Job::HubFiles`]: the shard files to read, or why not.
pub fn hub_files_answer(
    repo: &str,
    config: &str,
    quant: Option<&str>,
    index: Option<&str>,
) -> Result<Vec<String>, String> {
    let repo = hub::parse_hub_id(repo).map_err(|e| e.to_string())?;
    hub::check_config(&repo, config, quant).map_err(|e| format!("{repo}: {e}"))?;
    let files = match index {
        Some(text) => {
            hub::safetensors::parse_index(text)
                .map_err(|e| e.to_string())?
                .files
        }
        // A model in one file has no index.
        None => vec!["model.safetensors".to_string()],
    };
    match files.iter().find(|f| !hub::safetensors::valid_file_name(f)) {
        Some(f) => Err(format!(
            "model.safetensors.index.json: shard name `{}` refused",
            crate::base::free_text::one_line(f)
        )),
        None => Ok(files),
    }
}

/// [`hub_files_answer`] as the worker sends it: `ok` and the files, or `err` and why.
pub fn hub_files_reply_text(reply: &Result<Vec<String>, String>) -> String {
    match reply {
        Ok(files) => format!("ok{FIELD}{}", files.join(&FIELD.to_string())),
        Err(e) => format!("err{FIELD}{e}"),
    }
}

/// Reads [`hub_files_reply_text`]; every file name checked again.
pub fn hub_files_reply(text: &str) -> Result<Vec<String>, String> {
    match text.split_once(FIELD) {
        Some(("ok", files)) => {
            let files: Vec<String> = files.split(FIELD).map(str::to_string).collect();
            if files.iter().all(|f| hub::safetensors::valid_file_name(f)) {
                Ok(files)
            } else {
                Err("the import worker named a shard file that is refused".into())
            }
        }
        Some(("err", e)) => Err(e.to_string()),
        _ => Err("the import worker's reply did not parse".into()),
    }
}

/// What the page shows of a Hub model: the model and what its headers changed.
#[derive(Clone, Debug, PartialEq)]
pub struct HubReply {
    /// The shapes, with the exact count as `nominal_params`.
    pub spec: ModelSpec,
    /// `architectures[0]`.
    pub architecture: String,
    /// Parameters the headers count (the model the planner prices).
    pub model_params: u64,
    /// What config.json's shapes alone give.
    pub config_params: u64,
    /// Bytes of every tensor in the headers.
    pub weight_bytes: u64,
    /// The quantization the files state, in words ("" when none).
    pub quantization: String,
    /// What the headers changed or the mapping approximated, one sentence each.
    pub notes: Vec<String>,
}

/// The worker's answer to [`Job::HubHeaders`]: every header parsed, the model built.
pub fn hub_headers_answer(
    repo: &str,
    config: &str,
    quant: Option<&str>,
    headers: &[(String, String)],
) -> Result<HubReply, String> {
    let repo = hub::parse_hub_id(repo).map_err(|e| e.to_string())?;
    let shards = headers
        .iter()
        .map(|(file, json)| hub::safetensors::parse_header(file, json.as_bytes()))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| e.to_string())?;
    let m = hub::hub_model(&hub::HubFiles {
        repo: &repo,
        config,
        hf_quant_config: quant,
        shards: &shards,
    })
    .map_err(|e| format!("{repo}: {e}"))?;
    Ok(HubReply {
        spec: m.spec,
        architecture: m.architecture,
        model_params: m.model_params,
        config_params: m.config_params,
        weight_bytes: m.header_bytes,
        quantization: m
            .quantization
            .map(|q| format!("{} ({}): {}", q.method, q.source, q.format))
            .unwrap_or_default(),
        notes: m.notes,
    })
}

impl HubReply {
    /// `ok`, the model's share link, then the other fields; notes one a line.
    pub fn to_text(&self) -> String {
        let link = ConfigReply::Imported(self.spec.clone()).to_text();
        let clean = |t: &str| t.replace([FIELD, '\n'], " ");
        [
            link,
            clean(&self.architecture),
            self.model_params.to_string(),
            self.config_params.to_string(),
            self.weight_bytes.to_string(),
            clean(&self.quantization),
            self.notes
                .iter()
                .map(|n| clean(n))
                .collect::<Vec<_>>()
                .join("\n"),
        ]
        .join(&FIELD.to_string())
    }

    /// A failure as the worker sends it.
    pub fn failed_text(message: &str) -> String {
        format!("err{FIELD}{message}")
    }

    /// Reads the worker's answer: the model, or why there is none.
    pub fn from_text(text: &str) -> Result<Self, String> {
        let f: Vec<&str> = text.split(FIELD).collect();
        let [ok, link, arch, model, config, bytes, quant, notes] = f.as_slice() else {
            return match text.split_once(FIELD) {
                Some(("err", e)) => Err(e.to_string()),
                _ => Err("the import worker's reply did not parse".into()),
            };
        };
        let spec = match ConfigReply::from_text(&format!("{ok}{FIELD}{link}")) {
            ConfigReply::Imported(spec) => spec,
            ConfigReply::Failed(e) => return Err(e),
        };
        let count = |v: &str| {
            v.parse::<u64>()
                .map_err(|_| "the import worker's reply holds a bad count".to_string())
        };
        Ok(HubReply {
            spec,
            architecture: arch.to_string(),
            model_params: count(model)?,
            config_params: count(config)?,
            weight_bytes: count(bytes)?,
            quantization: quant.to_string(),
            notes: notes
                .lines()
                .filter(|l| !l.is_empty())
                .map(str::to_string)
                .collect(),
        })
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
