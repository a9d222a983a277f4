//! Model import: paste or drop a Hugging Face `config.json`; planner-core's
//! importer (`hf_config::import_hf_config`, run in the page's worker: `views/worker_job.rs`)
//! turns it into custom shapes or names the field it cannot use. A rejected config changes nothing.

use leptos::prelude::*;
use planner_core::edges::hf_config::SUPPORTED_ARCHITECTURES;
use planner_core::edges::import_page::{ConfigReply, Job};
use planner_core::input::model::ModelSpec;
use planner_core::input::model::MAX_NAME_CHARS;
use planner_core::input::scenario::ModelChoice;

use crate::app::Ctx;
use crate::format;
use crate::views::files::{file_of_drop, read_text, FilePick, ImportMessage};
use crate::views::hub_import::HubImport;
use crate::views::worker_job;

/// Largest config read (real ones are a few KB).
const MAX_CONFIG_BYTES: usize = 1_000_000;

/// The model-import panel.
#[component]
pub fn ModelImport() -> impl IntoView {
    let ctx = expect_context::<Ctx>();
    let text = RwSignal::new(String::new());
    // (message, is_error)
    let message = RwSignal::new(None::<(String, bool)>);

    // `file`: the text came from a picked or dropped file, whose name names the
    // model when the config does not (`_name_or_path`).
    let applied = move |source: String, file: bool, mut spec: ModelSpec| {
        let stem_ok = !source
            .strip_suffix(".json")
            .unwrap_or(&source)
            .trim()
            .is_empty();
        if file && stem_ok && spec.name.starts_with("Imported ") {
            let stem = source.strip_suffix(".json").unwrap_or(&source);
            spec.name = stem.chars().take(MAX_NAME_CHARS).collect();
        }
        let moe = if spec.moe.is_some() {
            format!(
                ", {}B active per token",
                format::sig3(spec.active_params() / 1e9)
            )
        } else {
            String::new()
        };
        message.set(Some((
            format!(
                "{source}: applied “{}” as a custom model — {} layers, hidden {}, Ψ = {}B{moe}.",
                spec.name,
                spec.layers,
                spec.hidden,
                format::sig3(spec.params() / 1e9)
            ),
            false,
        )));
        ctx.scenario.update(|s| s.model = ModelChoice::Custom(spec));
    };
    // The worker reads the config (`hf_config::import_hf_config`, off the page's wasm).
    let apply = move |source: String, file: bool, json: String| {
        // No message until the worker answers (the last one would read as this one's).
        message.set(None);
        worker_job::ask(Job::Config { json }.to_text(), move |reply| {
            match reply.map(|t| ConfigReply::from_text(&t)) {
                Ok(ConfigReply::Imported(spec)) => applied(source, file, spec),
                Ok(ConfigReply::Failed(e)) | Err(e) => message.set(Some((
                    format!("{source}: {e}. The model was not changed."),
                    true,
                ))),
            }
        });
    };
    let take_file = move |file: Option<web_sys::File>| {
        let Some(file) = file else { return };
        leptos::task::spawn_local(async move {
            let name = file.name();
            match read_text(&file, MAX_CONFIG_BYTES).await {
                Ok(json) => {
                    text.set(json.clone());
                    apply(name, true, json);
                }
                Err(e) => message.set(Some((format!("{e}. The model was not changed."), true))),
            }
        });
    };

    view! {
        <section class="view model-import" aria-labelledby="model-import-title" data-testid="model-import">
            <h2 id="model-import-title">"Your own model: a Hub id or a config.json"</h2>
            <p class="explain">
                {format!(
                    "Paste or drop a Hugging Face config.json; its shapes become a custom model for every view. Supported architectures: {}. A setting the planner cannot model is named, and nothing changes.",
                    SUPPORTED_ARCHITECTURES.join(", ")
                )}
            </p>
            <HubImport />
            <textarea
                class="config-text"
                rows="7"
                spellcheck="false"
                placeholder="{ \"architectures\": [\"LlamaForCausalLM\"], \"hidden_size\": 4096, … }"
                aria-label="config.json text"
                data-testid="hf-config-text"
                bind:value=text
                on:dragover=move |ev: web_sys::DragEvent| ev.prevent_default()
                on:drop=move |ev: web_sys::DragEvent| {
                    ev.prevent_default();
                    take_file(file_of_drop(&ev));
                }
            ></textarea>
            <div class="import-row">
                <button
                    data-testid="hf-apply"
                    on:click=move |_| apply("Pasted config".into(), false, text.get_untracked())
                >
                    "Use this config"
                </button>
                <label class="file-pick">
                    "or pick a file: "
                    <FilePick accept=".json,application/json" testid="hf-file" take=Callback::new(take_file) />
                </label>
            </div>
            {move || {
                message
                    .get()
                    .map(|(text, error)| view! { <ImportMessage text=text error=error testid="hf-message" /> })
            }}
        </section>
    }
}
