//! A model by its Hugging Face Hub id: on the person's click (never on load) the page fetches
//! `config.json`, `hf_quant_config.json` (when there is one), the safetensors index (or the
//! one `model.safetensors`) and each shard's 8-byte length and header by range reads, never
//! the weights (`views/hub_fetch.rs`). The worker parses and checks them
//! (`import_page::hub_files_answer`, `hub_headers_answer`, planner-core `edges::hub`); the
//! exact model is applied, or a message names what went wrong and nothing changes.

use leptos::prelude::*;
use planner_core::edges::hub::safetensors::header_length;
use planner_core::edges::hub::{
    file_url, parse_endpoint, parse_hub_id, status_message, DEFAULT_ENDPOINT,
};
use planner_core::edges::import_page::{fits_a_field, hub_files_reply, HubReply, Job};
use planner_core::input::scenario::ModelChoice;

use crate::app::Ctx;
use crate::format;
use crate::views::files::ImportMessage;
use crate::views::hub_fetch::{start, FetchError, Pending};
use crate::views::worker_job;

/// Largest JSON file read whole (config, index): 64 MiB, as the command reads.
const MAX_JSON_BYTES: u64 = 64 << 20;

/// What the person can do about a gated or private model from the page.
const GATED_ALTERNATIVES: &str = "accept its licence on the Hub and paste its config.json below (the page sends no token), or run `meshplan eval --hf` with HF_TOKEN";

/// One repository's fetch: where from, and each file read with its bytes.
#[derive(Clone)]
struct Fetch {
    endpoint: String,
    repo: String,
    config: String,
    quant: Option<String>,
    read: Vec<String>,
}

impl Fetch {
    fn url(&self, file: &str) -> String {
        file_url(&self.endpoint, &self.repo, file)
    }

    fn refusal(&self, file: &str, e: FetchError) -> String {
        match e {
            FetchError::Status(s) => {
                status_message(&self.repo, file, &self.url(file), s, GATED_ALTERNATIVES)
            }
            FetchError::Network(m) => format!(
                "{}: no answer ({m}): offline, blocked, or the server does not let this page read it (CORS)",
                self.url(file)
            ),
        }
    }

    /// A JSON file's text; `Ok(None)` for an optional file the server does not have (404).
    async fn json(&mut self, file: &str, optional: bool) -> Result<Option<String>, String> {
        let pending =
            start(&self.url(file), None, MAX_JSON_BYTES).map_err(|e| self.refusal(file, e))?;
        let bytes = match pending.bytes().await {
            Ok(b) => b,
            Err(FetchError::Status(404)) if optional => return Ok(None),
            Err(e) => return Err(self.refusal(file, e)),
        };
        self.read.push(format!("{file} ({} bytes)", bytes.len()));
        let text = String::from_utf8(bytes).map_err(|_| format!("{file}: not UTF-8 text"))?;
        if !fits_a_field(&text) {
            return Err(format!(
                "{file}: holds a control character (U+001E): not JSON"
            ));
        }
        Ok(Some(text))
    }

    /// Every shard's header JSON: all lengths asked for together, then all headers.
    async fn headers(&mut self, files: &[String]) -> Result<Vec<(String, String)>, String> {
        let started = |this: &Self, file: &String, range: (u64, u64)| {
            start(&this.url(file), Some(range), range.1 - range.0 + 1)
                .map_err(|e| this.refusal(file, e))
        };
        let prefixes: Vec<Pending> = files
            .iter()
            .map(|f| started(self, f, (0, 7)))
            .collect::<Result<_, _>>()?;
        let mut lengths = Vec::with_capacity(files.len());
        for (file, p) in files.iter().zip(prefixes) {
            let bytes = p.bytes().await.map_err(|e| self.refusal(file, e))?;
            lengths.push(header_length(file, &bytes).map_err(|e| e.to_string())?);
            self.read.push(format!("{file} bytes 0–7"));
        }
        let pending: Vec<Pending> = files
            .iter()
            .zip(&lengths)
            .map(|(f, n)| started(self, f, (8, 8 + n - 1)))
            .collect::<Result<_, _>>()?;
        let mut out = Vec::with_capacity(files.len());
        for ((file, p), n) in files.iter().zip(pending).zip(&lengths) {
            let bytes = p.bytes().await.map_err(|e| self.refusal(file, e))?;
            if bytes.len() as u64 != *n {
                return Err(format!(
                    "{file}: the header should be {n} bytes, the server sent {}",
                    bytes.len()
                ));
            }
            self.read.push(format!("{file} header ({n} bytes)"));
            let text = String::from_utf8(bytes)
                .map_err(|_| format!("{file}: the header is not UTF-8 JSON"))?;
            if !fits_a_field(&text) {
                return Err(format!(
                    "{file}: the header holds a control character (U+001E): not JSON"
                ));
            }
            out.push((file.clone(), text));
        }
        Ok(out)
    }
}

/// The worker's answer to `job`, awaited (`worker_job::ask` answers in a callback).
async fn ask(job: Job) -> Result<String, String> {
    let slot = std::rc::Rc::new(std::cell::RefCell::new(None::<Result<String, String>>));
    let mut resolve = None;
    // The executor runs at once: `resolve` is set when `new` returns.
    let promise = js_sys::Promise::new(&mut |r, _| resolve = Some(r));
    let answered = slot.clone();
    worker_job::ask(job.to_text(), move |reply| {
        *answered.borrow_mut() = Some(reply);
        if let Some(r) = &resolve {
            let _ = r.call0(&wasm_bindgen::JsValue::NULL);
        }
    });
    let _ = wasm_bindgen_futures::JsFuture::from(promise).await;
    let reply = slot.borrow_mut().take();
    reply.unwrap_or_else(|| Err("the import worker gave no answer".into()))
}

/// Fetches and reads `id` at `endpoint`: the model and the files read, or what went wrong.
async fn fetch_model(endpoint: &str, id: &str) -> Result<(HubReply, Vec<String>), String> {
    let repo = parse_hub_id(id).map_err(|e| e.to_string())?;
    let endpoint = parse_endpoint(endpoint).map_err(|e| e.to_string())?;
    let mut f = Fetch {
        endpoint,
        repo: repo.clone(),
        config: String::new(),
        quant: None,
        read: Vec::new(),
    };
    f.config = f.json("config.json", false).await?.unwrap_or_default();
    f.quant = f.json("hf_quant_config.json", true).await?;
    let index = f.json("model.safetensors.index.json", true).await?;
    let files = hub_files_reply(
        &ask(Job::HubFiles {
            repo: repo.clone(),
            config: f.config.clone(),
            quant: f.quant.clone(),
            index,
        })
        .await?,
    )?;
    let headers = f.headers(&files).await?;
    let reply = ask(Job::HubHeaders {
        repo,
        config: f.config.clone(),
        quant: f.quant.clone(),
        headers,
    })
    .await?;
    Ok((HubReply::from_text(&reply)?, f.read))
}

/// The sentence shown for an applied model.
fn applied_text(repo: &str, m: &HubReply, read: &[String]) -> String {
    let changed = if m.model_params == m.config_params {
        "the same count config.json's shapes give".to_string()
    } else {
        format!(
            "config.json's shapes alone give {} ({})",
            format::thousands(m.config_params),
            format::signed_percent(
                (m.config_params as f64 - m.model_params as f64) / m.model_params.max(1) as f64
            )
        )
    };
    let quant = if m.quantization.is_empty() {
        String::new()
    } else {
        format!(" Quantization: {}.", m.quantization)
    };
    let notes = if m.notes.is_empty() {
        String::new()
    } else {
        format!(" Headers: {}.", m.notes.join("; "))
    };
    format!(
        "{repo} ({}): applied “{}” — {} parameters from the safetensors headers ({} of weights, never downloaded); {changed}.{quant}{notes} Read: {}.",
        m.architecture,
        m.spec.name,
        format::thousands(m.model_params),
        format::bytes(m.weight_bytes as f64),
        read.join(", ")
    )
}

/// The Hub id input, its button and its message.
#[component]
pub fn HubImport() -> impl IntoView {
    let ctx = expect_context::<Ctx>();
    let id = RwSignal::new(String::new());
    let endpoint = RwSignal::new(DEFAULT_ENDPOINT.to_string());
    // (message, is_error, exact parameters when applied)
    let message = RwSignal::new(None::<(String, bool, Option<u64>)>);
    let busy = RwSignal::new(false);
    let go = move || {
        if busy.get_untracked() {
            return;
        }
        busy.set(true);
        let (typed, at) = (id.get_untracked(), endpoint.get_untracked());
        let shown: String = typed.trim().chars().take(80).collect();
        message.set(Some((format!("Fetching {shown}…"), false, None)));
        leptos::task::spawn_local(async move {
            match fetch_model(&at, &typed).await {
                Ok((m, read)) => {
                    let repo = parse_hub_id(&typed).unwrap_or_default();
                    message.set(Some((
                        applied_text(&repo, &m, &read),
                        false,
                        Some(m.model_params),
                    )));
                    ctx.scenario
                        .update(|s| s.model = ModelChoice::Custom(m.spec));
                }
                Err(e) => message.set(Some((
                    format!("{e}. The model was not changed."),
                    true,
                    None,
                ))),
            }
            busy.set(false);
        });
    };
    view! {
        <div class="hub-import" data-testid="hub-import">
            <h3>"From the Hugging Face Hub"</h3>
            <p class="explain">
                "Type or paste a model id (org/name) or its huggingface.co address. On your click this page reads the model's config.json and its safetensors headers (a few kB per shard, never the weights), so parameters and bytes are exact. Nothing is requested until you click."
            </p>
            <div class="import-row">
                <input
                    type="text"
                    class="hub-id"
                    spellcheck="false"
                    placeholder="meta-llama/Llama-3.2-1B"
                    aria-label="Hub model id"
                    data-testid="hub-id"
                    bind:value=id
                    on:keydown=move |ev: web_sys::KeyboardEvent| {
                        if ev.key() == "Enter" {
                            go();
                        }
                    }
                />
                <button data-testid="hub-fetch" prop:disabled=move || busy.get() on:click=move |_| go()>
                    "Fetch from the Hub"
                </button>
                <label class="hub-endpoint">
                    "endpoint "
                    <input
                        type="url"
                        spellcheck="false"
                        aria-label="Hub endpoint"
                        data-testid="hub-endpoint"
                        bind:value=endpoint
                    />
                </label>
            </div>
            {move || {
                message.get().map(|(text, error, params)| {
                    let params = params.map(|p| p.to_string()).unwrap_or_default();
                    view! { <ImportMessage text=text error=error testid="hub-message" params=params /> }
                })
            }}
        </div>
    }
}
