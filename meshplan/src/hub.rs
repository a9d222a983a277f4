//! `--hf ORG/NAME`: a model fetched from the Hugging Face Hub (or any endpoint with its URL
//! layout), reading `config.json`, `hf_quant_config.json` when present, the safetensors index
//! and each shard's header by HTTP range reads, never the weights. Parsing and counting are
//! planner-core's (`edges::hub`); this module only moves bytes and caches them.
//!
//! Environment: `HF_ENDPOINT` (default `https://huggingface.co`), `HF_TOKEN` (sent as a bearer
//! token), `MESHPLAN_HUB_TIMEOUT_S` (per request, default 20 s), cache under
//! `$XDG_CACHE_HOME/meshplan/hub` or `~/.cache/meshplan/hub` (`MESHPLAN_HUB_CACHE` overrides;
//! `off` disables it).

use std::io::Read;
use std::path::PathBuf;
use std::time::Duration;

use planner_core::edges::hub::safetensors::{
    header_length, parse_header, parse_index, valid_file_name, ShardHeader, MAX_HEADER_BYTES,
};
use planner_core::edges::hub::{
    check_config, file_url, hub_model, parse_hub_id, status_message, HubFiles, HubModel,
};

use crate::error::CliError;

/// Largest JSON file read whole (`config.json`, the index): 64 MiB.
const MAX_JSON_BYTES: u64 = 64 << 20;

/// A fetched model and the files it read.
pub struct Fetched {
    /// The model.
    pub model: HubModel,
    /// Each file read, with where it came from (`network` or `cache`) and its bytes.
    pub files: Vec<String>,
}

struct Client {
    agent: ureq::Agent,
    endpoint: String,
    token: Option<String>,
    cache: Option<PathBuf>,
    repo: String,
    log: Vec<String>,
}

fn cache_root() -> Option<PathBuf> {
    match std::env::var("MESHPLAN_HUB_CACHE") {
        Ok(v) if v == "off" => return None,
        Ok(v) if !v.is_empty() => return Some(PathBuf::from(v)),
        _ => {}
    }
    let base = std::env::var_os("XDG_CACHE_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))?;
    Some(base.join("meshplan").join("hub"))
}

impl Client {
    fn new(repo: &str) -> Self {
        let timeout_s = std::env::var("MESHPLAN_HUB_TIMEOUT_S")
            .ok()
            .and_then(|v| v.parse::<f64>().ok())
            .filter(|s| s.is_finite() && *s > 0.0 && *s <= 600.0)
            .unwrap_or(20.0);
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .timeout_global(Some(Duration::from_secs_f64(timeout_s)))
            .http_status_as_error(false)
            .build()
            .into();
        Client {
            agent,
            endpoint: std::env::var("HF_ENDPOINT")
                .ok()
                .filter(|e| !e.is_empty())
                .unwrap_or_else(|| planner_core::edges::hub::DEFAULT_ENDPOINT.to_string()),
            token: std::env::var("HF_TOKEN").ok().filter(|t| !t.is_empty()),
            cache: cache_root(),
            repo: repo.to_string(),
            log: Vec::new(),
        }
    }

    fn cache_path(&self, file: &str) -> Option<PathBuf> {
        // `repo` passed parse_hub_id and `file` valid_file_name: no `..`, no absolute parts.
        let root = self.cache.as_ref()?;
        Some(root.join(&self.repo).join(file))
    }

    /// `file`'s bytes (a range of them), from the cache or the endpoint; `Ok(None)` on 404
    /// when `optional`.
    fn get(
        &mut self,
        file: &str,
        range: Option<(u64, u64)>,
        optional: bool,
    ) -> Result<Option<Vec<u8>>, CliError> {
        let cache_name = match range {
            Some((a, b)) => format!("{file}.bytes-{a}-{b}"),
            None => file.to_string(),
        };
        if let Some(bytes) = self
            .cache_path(&cache_name)
            .and_then(|p| std::fs::read(p).ok())
        {
            self.log
                .push(format!("{cache_name} (cache, {} bytes)", bytes.len()));
            return Ok(Some(bytes));
        }
        let url = file_url(&self.endpoint, &self.repo, file);
        let mut req = self.agent.get(&url);
        if let Some((a, b)) = range {
            req = req.header("Range", format!("bytes={a}-{b}"));
        }
        if let Some(t) = &self.token {
            req = req.header("Authorization", format!("Bearer {t}"));
        }
        let resp = req.call().map_err(|e| self.transport(file, &e))?;
        let status = resp.status().as_u16();
        match status {
            200 | 206 => {}
            404 if optional => return Ok(None),
            _ => return Err(self.status_error(file, status)),
        }
        let limit = range.map_or(MAX_JSON_BYTES, |(a, b)| b - a + 1);
        let mut bytes = Vec::new();
        resp.into_body()
            .into_reader()
            .take(limit)
            .read_to_end(&mut bytes)
            .map_err(|e| CliError::Hub(format!("{url}: reading the response: {e}")))?;
        self.log
            .push(format!("{cache_name} (network, {} bytes)", bytes.len()));
        if let Some(p) = self.cache_path(&cache_name) {
            // A cache that cannot be written is skipped: the fetch itself succeeded.
            let _ = p.parent().map(std::fs::create_dir_all);
            let _ = std::fs::write(p, &bytes);
        }
        Ok(Some(bytes))
    }

    fn transport(&self, file: &str, e: &ureq::Error) -> CliError {
        let url = file_url(&self.endpoint, &self.repo, file);
        match e {
            ureq::Error::Timeout(_) => CliError::Hub(format!(
                "{url}: no answer in time (timeout; MESHPLAN_HUB_TIMEOUT_S sets it): nothing changed"
            )),
            other => CliError::Hub(format!("{url}: {other}: nothing changed")),
        }
    }

    fn status_error(&self, file: &str, status: u16) -> CliError {
        let repo = &self.repo;
        let url = file_url(&self.endpoint, repo, file);
        CliError::Hub(match status {
            429 => format!(
                "{}, or set HF_TOKEN (signed-in requests get a higher limit)",
                status_message(repo, file, &url, status, "")
            ),
            s => status_message(
                repo,
                file,
                &url,
                s,
                "accept its licence on the Hub and set HF_TOKEN to a token with access, or paste its config.json as a custom model (a scenario file's model.custom)",
            ),
        })
    }

    fn json(&mut self, file: &str, optional: bool) -> Result<Option<String>, CliError> {
        let Some(bytes) = self.get(file, None, optional)? else {
            return Ok(None);
        };
        String::from_utf8(bytes)
            .map(Some)
            .map_err(|_| CliError::Hub(format!("{}/{file}: not UTF-8 text", self.repo)))
    }

    fn shard(&mut self, file: &str) -> Result<ShardHeader, CliError> {
        let hub = |e: planner_core::edges::hub::HubError| CliError::Hub(e.to_string());
        let prefix = self.get(file, Some((0, 7)), false)?.unwrap_or_default();
        let n = header_length(file, &prefix).map_err(hub)?;
        debug_assert!(n <= MAX_HEADER_BYTES);
        let header = self
            .get(file, Some((8, 8 + n - 1)), false)?
            .unwrap_or_default();
        if header.len() as u64 != n {
            return Err(CliError::Hub(format!(
                "{file}: the header should be {n} bytes, the server sent {}",
                header.len()
            )));
        }
        parse_header(file, &header).map_err(hub)
    }
}

/// Fetches `id` (`org/name` or a Hub URL) and builds its model; an error changes nothing.
pub fn fetch(id: &str) -> Result<Fetched, CliError> {
    let repo = parse_hub_id(id).map_err(|e| CliError::BadInput(e.to_string()))?;
    let mut c = Client::new(&repo);
    let config = c.json("config.json", false)?.unwrap_or_default();
    // A config the planner cannot map (not a transformer, an unknown architecture) is
    // refused before any header is asked for.
    check_config(&repo, &config, None).map_err(|e| CliError::Hub(format!("{repo}: {e}")))?;
    let quant = c.json("hf_quant_config.json", true)?;
    let files = match c.json("model.safetensors.index.json", true)? {
        Some(index) => {
            parse_index(&index)
                .map_err(|e| CliError::Hub(e.to_string()))?
                .files
        }
        // A model in one file has no index.
        None => vec!["model.safetensors".to_string()],
    };
    let mut shards = Vec::with_capacity(files.len());
    for f in &files {
        if !valid_file_name(f) {
            return Err(CliError::Hub(format!("{repo}: shard name `{f}` refused")));
        }
        shards.push(c.shard(f)?);
    }
    let model = hub_model(&HubFiles {
        repo: &repo,
        config: &config,
        hf_quant_config: quant.as_deref(),
        shards: &shards,
    })
    .map_err(|e| CliError::Hub(format!("{repo}: {e}")))?;
    Ok(Fetched {
        model,
        files: c.log,
    })
}
