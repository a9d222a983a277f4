//! Exports: the current layout written for torchrun, Accelerate (FSDP2),
//! DeepSpeed, Megatron-LM, torchtitan, vLLM and SGLang, each with what its
//! tool cannot express, a copy button and a download. The text is
//! `planner_core::export::exports`, shown unchanged.

use leptos::prelude::*;
use planner_core::export::{exports, Export};

use crate::app::Ctx;
use crate::views::files::{copy_text, data_url};

fn mime(language: &str) -> &'static str {
    match language {
        "json" => "application/json",
        "yaml" => "application/yaml",
        "toml" => "application/toml",
        _ => "text/x-shellscript",
    }
}

/// One export: label, file name, text, notes, copy and download.
#[component]
fn ExportCard(export: Export) -> impl IntoView {
    let id = export.id;
    let pre_ref = NodeRef::<leptos::html::Pre>::new();
    let status = RwSignal::new(String::new());
    let text = export.text.clone();
    let copy = move |_| {
        let text = text.clone();
        let el = pre_ref
            .get_untracked()
            .map(|p| -> web_sys::Element { p.into() });
        leptos::task::spawn_local(async move {
            status.set(copy_text(&text, el).await);
        });
    };
    let href = data_url(&export.text, mime(export.language));
    let notes = export.notes.clone();
    view! {
        <article class="export" data-testid=format!("export-{id}")>
            <header class="export-head">
                <h3>{export.label}</h3>
                <code class="file-name">{export.file_name}</code>
                <div class="export-actions">
                    <button data-testid=format!("export-copy-{id}") on:click=copy>"Copy"</button>
                    <a
                        class="button"
                        data-testid=format!("export-download-{id}")
                        download=export.file_name
                        href=href
                    >
                        "Download"
                    </a>
                    <span class="status" role="status" data-testid=format!("export-status-{id}")>
                        {move || status.get()}
                    </span>
                </div>
            </header>
            <pre
                node_ref=pre_ref
                class=format!("export-text lang-{}", export.language)
                data-testid=format!("export-text-{id}")
                tabindex="0"
            >
                {export.text}
            </pre>
            {(!notes.is_empty())
                .then(|| {
                    view! {
                        <ul class="export-notes" data-testid=format!("export-notes-{id}")>
                            {notes.into_iter().map(|n| view! { <li>{n}</li> }).collect_view()}
                        </ul>
                    }
                })}
        </article>
    }
}

/// The exports section.
#[component]
pub fn ExportsView() -> impl IntoView {
    let ctx = expect_context::<Ctx>();
    let all = Memo::new(move |_| {
        ctx.model.with(|m| match m {
            Ok(spec) => Ok(ctx.scenario.with(|s| exports(s, spec))),
            Err(e) => Err(e.clone()),
        })
    });
    view! {
        <section class="view exports" aria-labelledby="exports-title" data-testid="exports-view">
            <h2 id="exports-title">"Run it: exports of this layout"</h2>
            <p class="explain">
                "The layout above written for each tool, with only options that tool has. What a tool cannot express of the plan, and what you fill in yourself (addresses, data, learning rate), is listed under it. vLLM and SGLang take the serving view's replica shape."
            </p>
            {move || {
                match all.get() {
                    Ok(list) => {
                        list.into_iter()
                            .map(|e| view! { <ExportCard export=e /> })
                            .collect_view()
                            .into_any()
                    }
                    Err(e) => view! { <p class="issue error">{e}</p> }.into_any(),
                }
            }}
        </section>
    }
}
