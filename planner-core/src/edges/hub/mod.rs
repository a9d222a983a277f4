//! A model on the Hugging Face Hub, read from its `config.json`, its safetensors index and each
//! shard's header (never its weights): exact parameter counts and bytes per tensor class, what
//! the config alone would have said, and the checkpoint's quantization.
//!
//! Pure: the caller fetches the files (the `meshplan` command natively, the page from the
//! browser) and hands their text and header bytes here, where every field is checked.

pub mod classify;
pub mod quant;
pub mod safetensors;

use std::fmt;

use serde_json::Value;

use crate::edges::hf_config::{import_hf_config_noted, ImportError};
use crate::input::model::ModelSpec;
use classify::{classify, is_quant_side_tensor, layer_index, TensorClass};
use quant::Quantization;
use safetensors::{Dtype, ShardHeader};

/// Why a Hub model could not be read. Every variant names the file or field.
#[derive(Clone, Debug, PartialEq)]
pub enum HubError {
    /// The id is not `org/name` or a Hub URL of one.
    BadId(String),
    /// A file is not what its format says.
    BadFile {
        /// The file.
        file: String,
        /// What is wrong, naming the field.
        message: String,
    },
    /// `config.json` describes no decoder-only transformer (no layers, no hidden size).
    NotATransformer {
        /// Its `model_type`, made printable ("unknown" when absent).
        model_type: String,
    },
    /// `config.json` could not be mapped.
    Config(ImportError),
}

impl fmt::Display for HubError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HubError::BadId(m) => write!(f, "Hub id: {m}"),
            HubError::BadFile { file, message } => write!(f, "{file}: {message}"),
            HubError::NotATransformer { model_type } => write!(
                f,
                "config.json: not a transformer language model (model_type `{model_type}`, no `num_hidden_layers` / `hidden_size`)"
            ),
            HubError::Config(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for HubError {}

/// `org/name` from what a person types or pastes: the id itself, or a Hub URL of the model
/// (`https://huggingface.co/org/name`, with `/tree/main…`, `/blob/…` or `/resolve/…` after it).
/// Each part: ASCII letters, digits, `-`, `_`, `.`, starting with a letter or digit, at most 96
/// characters (the Hub's repo-name rule, huggingface_hub `validate_repo_id`).
pub fn parse_hub_id(input: &str) -> Result<String, HubError> {
    let t = input.trim();
    let schemed = ["https://", "http://"]
        .iter()
        .find_map(|p| t.strip_prefix(p));
    let hosted = ["huggingface.co/", "www.huggingface.co/", "hf.co/"]
        .iter()
        .find_map(|p| schemed.unwrap_or(t).strip_prefix(p));
    // A URL must be the Hub's; a bare id has no host.
    let rest = match (schemed, hosted) {
        (_, Some(r)) => r,
        (None, None) => t,
        (Some(_), None) => "",
    };
    let mut parts = rest.split(['/', '?', '#']);
    let (org, name) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
    let ok = |s: &str| {
        (1..=96).contains(&s.len())
            && s.starts_with(|c: char| c.is_ascii_alphanumeric())
            && s.bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
            && !s.contains("..")
            && !s.contains("--")
    };
    if ok(org) && ok(name) {
        Ok(format!("{org}/{name}"))
    } else {
        Err(HubError::BadId(format!(
            "`{}` is not `org/name` or a huggingface.co URL of one",
            crate::base::free_text::one_line(t)
                .chars()
                .take(80)
                .collect::<String>()
        )))
    }
}

/// The URL of `file` in `repo` at `endpoint`, the Hub's layout
/// `{endpoint}/{repo}/resolve/main/{file}` (huggingface_hub `hf_hub_url`).
pub fn file_url(endpoint: &str, repo: &str, file: &str) -> String {
    format!(
        "{}/{repo}/resolve/main/{file}",
        endpoint.trim_end_matches('/')
    )
}

/// The Hub's address when none is given (huggingface_hub `constants.ENDPOINT`).
pub const DEFAULT_ENDPOINT: &str = "https://huggingface.co";

/// An endpoint a person typed (an `HF_ENDPOINT`-style mirror): `https://host[:port][/path]`,
/// or `http://` only to this machine (`127.0.0.1`, `localhost`, `[::1]`: a local mirror or
/// the tests' fixture hub); printable ASCII without spaces, quotes, `?` or `#`, at most 200
/// characters. Returned without its trailing `/`.
pub fn parse_endpoint(input: &str) -> Result<String, HubError> {
    let t = input.trim().trim_end_matches('/');
    let refuse = || {
        HubError::BadId(format!(
            "endpoint `{}` is not an https:// URL (or http:// to 127.0.0.1 or localhost)",
            crate::base::free_text::one_line(t)
                .chars()
                .take(80)
                .collect::<String>()
        ))
    };
    let host = match (t.strip_prefix("https://"), t.strip_prefix("http://")) {
        (Some(rest), _) => rest,
        (None, Some(rest)) => {
            let host = rest.split(['/', ':']).next().unwrap_or("");
            let local = ["127.0.0.1", "localhost"].contains(&host) || rest.starts_with("[::1]");
            if !local {
                return Err(refuse());
            }
            rest
        }
        _ => return Err(refuse()),
    };
    let clean = t.len() <= 200
        && !host.is_empty()
        && !host.starts_with(['/', ':'])
        && t.bytes().all(|b| {
            b.is_ascii_graphic() && !matches!(b, b'"' | b'\'' | b'<' | b'>' | b'?' | b'#' | b'`')
        });
    if clean {
        Ok(t.to_string())
    } else {
        Err(refuse())
    }
}

/// What an HTTP status refusing `file` of `repo` means (`url` its address), the alternatives
/// named: `gated_alternatives` is what the asker can do about a gated or private model (the
/// command's `HF_TOKEN`, the page's pasted config). The Hub answers 401 for a repository it
/// does not show an anonymous reader (gated, private or absent), 404 for a missing file of a
/// visible one, 429 past its rate limit (huggingface_hub `utils/_http.py`,
/// `hf_raise_for_status`).
pub fn status_message(
    repo: &str,
    file: &str,
    url: &str,
    status: u16,
    gated_alternatives: &str,
) -> String {
    match status {
        401 | 403 => format!(
            "{repo} is gated or private (HTTP {status} for {file}). Alternatives: {gated_alternatives}"
        ),
        404 => format!(
            "{repo}: {file} not found (HTTP 404 at {url}): is the id right, and is it a model repository?"
        ),
        429 => format!(
            "the Hub refused {file} of {repo}: rate limited (HTTP 429). Wait and retry"
        ),
        s => format!("{url}: HTTP {s}"),
    }
}

/// Parameters and bytes of one class of tensors.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct ClassTotals {
    /// The class.
    pub class: TensorClass,
    /// Its label.
    pub label: String,
    /// Tensors (scales included).
    pub tensors: u64,
    /// Parameters (packed sub-byte weights unpacked; scales not counted).
    pub params: u64,
    /// Bytes of the weights as stored.
    pub weight_bytes: u64,
    /// Bytes of their quantization scales, zero points and indices.
    pub scale_bytes: u64,
}

impl ClassTotals {
    /// Stored bytes per parameter, scales included (0 for a class without parameters).
    pub fn bytes_per_param(&self) -> f64 {
        if self.params == 0 {
            0.0
        } else {
            (self.weight_bytes + self.scale_bytes) as f64 / self.params as f64
        }
    }
}

/// A Hub model: the planner's shapes with the exact parameter count from the headers.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct HubModel {
    /// `org/name`.
    pub repo: String,
    /// `architectures[0]`.
    pub architecture: String,
    /// The shapes, `nominal_params` set to [`HubModel::model_params`] so every formula uses the
    /// exact count, tied embeddings and MTP modules as the headers show them.
    pub spec: ModelSpec,
    /// What the shapes of `config.json` alone give (the importer's count).
    pub config_params: u64,
    /// Parameters of the language model the planner prices: every tensor but scales, encoders
    /// and the MTP modules' copies of the embedding and head.
    pub model_params: u64,
    /// Parameters of every tensor in the headers.
    pub header_params: u64,
    /// Bytes of every tensor in the headers (what the weights occupy on disk).
    pub header_bytes: u64,
    /// Per class, in [`TensorClass`] order, classes without tensors left out.
    pub classes: Vec<ClassTotals>,
    /// The checkpoint's quantization, when its files state one.
    pub quantization: Option<Quantization>,
    /// Shard files read.
    pub shards: usize,
    /// One sentence for each thing the headers changed or the mapping approximated.
    pub notes: Vec<String>,
}

/// What the caller fetched.
pub struct HubFiles<'a> {
    /// `org/name` (already checked with [`parse_hub_id`]).
    pub repo: &'a str,
    /// `config.json`.
    pub config: &'a str,
    /// `hf_quant_config.json`, when the repository has one.
    pub hf_quant_config: Option<&'a str>,
    /// Each shard's header.
    pub shards: &'a [ShardHeader],
}

/// Parameters one stored tensor holds: packed sub-byte weights (an integer container holding
/// several `element_bits`-wide values: MXFP4 `_blocks` and NVFP4 `weight` in U8, two per
/// byte; AWQ/GPTQ `qweight` in I32, eight 4-bit values) unpacked; side tensors none.
fn tensor_params(name: &str, dtype: Dtype, elements: u64, element_bits: Option<u32>) -> u64 {
    if is_quant_side_tensor(name) {
        return 0;
    }
    match element_bits.map(u64::from) {
        Some(b) if dtype.is_integer() && b > 0 && b < dtype.bits() => elements * (dtype.bits() / b),
        _ => elements,
    }
}

/// Whether `config.json` (and `hf_quant_config.json`) describe a model the planner can map,
/// checked before any shard header is asked for: [`hub_model`] reports every problem of the
/// configs before it counts tensors, so with no shards only "no tensors" means they are fine.
pub fn check_config(
    repo: &str,
    config: &str,
    hf_quant_config: Option<&str>,
) -> Result<(), HubError> {
    let no_shards = HubFiles {
        repo,
        config,
        hf_quant_config,
        shards: &[],
    };
    match hub_model(&no_shards) {
        Err(HubError::BadFile { .. }) | Ok(_) => Ok(()),
        Err(e) => Err(e),
    }
}

/// The model a Hub repository's files describe.
pub fn hub_model(files: &HubFiles<'_>) -> Result<HubModel, HubError> {
    let config: Value = serde_json::from_str(files.config)
        .map_err(|e| HubError::Config(ImportError::NotJson(e.to_string())))?;
    let text = config
        .get("text_config")
        .filter(|t| t.is_object())
        .unwrap_or(&config);
    if text.get("num_hidden_layers").is_none() && text.get("hidden_size").is_none() {
        let model_type = config
            .get("model_type")
            .and_then(Value::as_str)
            .unwrap_or("unknown");
        return Err(HubError::NotATransformer {
            model_type: crate::base::free_text::one_line(model_type),
        });
    }
    let (mut spec, mut notes) = import_hf_config_noted(files.config).map_err(HubError::Config)?;
    let architecture = config
        .pointer("/architectures/0")
        .and_then(Value::as_str)
        .map(crate::base::free_text::one_line)
        .unwrap_or_default();
    let config_params = spec.param_breakdown().total();
    let quantization = quant::quantization(&config, files.hf_quant_config)?;
    let bits = quantization.as_ref().and_then(|q| q.element_bits);
    let layers = u64::from(spec.layers);
    let mut classes: Vec<ClassTotals> = Vec::new();
    let mut mtp_layers = std::collections::BTreeSet::new();
    let (mut header_params, mut header_bytes) = (0u64, 0u64);
    for t in files.shards.iter().flat_map(|s| &s.tensors) {
        let class = classify(&t.name, layers);
        if class == TensorClass::Mtp {
            mtp_layers.extend(layer_index(&t.name));
        }
        let params = tensor_params(&t.name, t.dtype, t.elements, bits);
        let side = is_quant_side_tensor(&t.name);
        let i = match classes.iter().position(|c| c.class == class) {
            Some(i) => i,
            None => {
                classes.push(ClassTotals {
                    class,
                    label: class.label().to_string(),
                    tensors: 0,
                    params: 0,
                    weight_bytes: 0,
                    scale_bytes: 0,
                });
                classes.len() - 1
            }
        };
        let c = &mut classes[i];
        c.tensors += 1;
        c.params = c.params.saturating_add(params);
        if side {
            c.scale_bytes = c.scale_bytes.saturating_add(t.bytes);
        } else {
            c.weight_bytes = c.weight_bytes.saturating_add(t.bytes);
        }
        header_params = header_params.saturating_add(params);
        header_bytes = header_bytes.saturating_add(t.bytes);
    }
    classes.sort_by_key(|c| c.class);
    let model_params: u64 = classes
        .iter()
        .filter(|c| c.class.in_model())
        .map(|c| c.params)
        .sum();
    if model_params == 0 {
        return Err(HubError::BadFile {
            file: "safetensors headers".to_string(),
            message: "no tensors of a language model".to_string(),
        });
    }
    apply_headers(&mut spec, &config, &classes, mtp_layers.len(), &mut notes);
    spec.name = files
        .repo
        .rsplit('/')
        .next()
        .unwrap_or(files.repo)
        .to_string();
    spec.nominal_params = Some(model_params as f64);
    if let Err(errors) = crate::resolve::validate::validate_model(&spec) {
        return Err(HubError::BadFile {
            file: "safetensors headers".to_string(),
            message: format!("the model they describe is refused: {}", errors[0]),
        });
    }
    if model_params != config_params {
        notes.insert(0, format!(
            "the headers count {model_params} parameters where config.json's shapes give {config_params} ({:+.3}%)",
            (model_params as f64 - config_params as f64) / config_params.max(1) as f64 * 100.0
        ));
    }
    Ok(HubModel {
        repo: files.repo.to_string(),
        architecture,
        spec,
        config_params,
        model_params,
        header_params,
        header_bytes,
        classes,
        quantization,
        shards: files.shards.len(),
        notes,
    })
}

/// What the headers say that the config does not: whether the head is tied (no `lm_head`
/// tensor), how many MTP modules are stored.
fn apply_headers(
    spec: &mut ModelSpec,
    config: &Value,
    classes: &[ClassTotals],
    mtp_modules: usize,
    notes: &mut Vec<String>,
) {
    let has = |k: TensorClass| classes.iter().any(|c| c.class == k);
    let tied = !has(TensorClass::Output);
    if tied != spec.tied_embeddings {
        notes.push(format!(
            "config.json's tie_word_embeddings says {}, the headers {} an LM head: {}",
            spec.tied_embeddings,
            if tied { "hold no" } else { "hold" },
            if tied { "tied" } else { "untied" }
        ));
        spec.tied_embeddings = tied;
    }
    let said = config
        .get("num_nextn_predict_layers")
        .and_then(Value::as_u64)
        .unwrap_or(0);
    let stored = u32::try_from(mtp_modules)
        .unwrap_or(u32::MAX)
        .min(spec.layers);
    if stored > 0 {
        spec.mtp_layers = stored;
        notes.push(format!(
            "{stored} MTP module(s) stored past layer {} (config.json: num_nextn_predict_layers = {said}); their copies of the embedding and head are not counted again",
            spec.layers
        ));
    }
    if let Some(e) = classes.iter().find(|c| c.class == TensorClass::Encoder) {
        notes.push(format!(
            "an encoder of {} parameters (vision/audio) is in the checkpoint and not planned",
            e.params
        ));
    }
}
