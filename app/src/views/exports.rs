//! Exports: the current layout written for torchrun, Accelerate (FSDP2),
//! DeepSpeed, Megatron-LM, torchtitan, vLLM and SGLang, each with what its
//! tool cannot express, a copy button and a download. The text is
//! `planner_core::edges::export::exports`, shown unchanged.

use leptos::prelude::*;
use planner_core::edges::export::{exports, Export, ExportFormat};

use crate::app::Ctx;
use crate::views::files::{copy_text, data_url};
use crate::views::markup::SectionHead;
use crate::views::visibility::section_inputs;

fn mime(language: &str) -> &'static str {
    match language {
        "json" => "application/json",
        "yaml" => "application/yaml",
        "toml" => "application/toml",
        _ => "text/x-shellscript",
    }
}

/// One export: label, file name, text, notes, copy and download. The card is
/// built once per format; an input updates its text in place, and only when
/// the export itself changed.
#[component]
fn ExportCard(export: Memo<Option<Export>>) -> impl IntoView {
    let Some(first) = export.get_untracked() else {
        return ().into_any();
    };
    let (id, label, file_name, language) = (first.id, first.label, first.file_name, first.language);
    let text = move || export.with(|e| e.as_ref().map(|e| e.text.clone()).unwrap_or_default());
    let notes = Memo::new(move |_| {
        export.with(|e| e.as_ref().map(|e| e.notes.clone()).unwrap_or_default())
    });
    let pre_ref = NodeRef::<leptos::html::Pre>::new();
    let status = RwSignal::new(String::new());
    let copy = move |_| {
        let text = text();
        let el = pre_ref
            .get_untracked()
            .map(|p| -> web_sys::Element { p.into() });
        leptos::task::spawn_local(async move {
            status.set(copy_text(&text, el).await);
        });
    };
    view! {
        <article class="export" data-testid=format!("export-{id}")>
            <header class="export-head">
                <h3>{label}</h3>
                <code class="file-name">{file_name}</code>
                <div class="export-actions">
                    <button data-testid=format!("export-copy-{id}") on:click=copy>"Copy"</button>
                    <a
                        class="button"
                        data-testid=format!("export-download-{id}")
                        download=file_name
                        href=move || data_url(&text(), mime(language))
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
                class=format!("export-text lang-{language}")
                data-testid=format!("export-text-{id}")
                tabindex="0"
            >
                {text}
            </pre>
            {move || {
                let notes = notes.get();
                (!notes.is_empty())
                    .then(|| {
                        view! {
                            <ul class="export-notes" data-testid=format!("export-notes-{id}")>
                                {notes.into_iter().map(|n| view! { <li>{n}</li> }).collect_view()}
                            </ul>
                        }
                    })
            }}
        </article>
    }
    .into_any()
}

/// The exports section.
#[component]
pub fn ExportsView() -> impl IntoView {
    let ctx = expect_context::<Ctx>();
    // Far below the fold: regenerate the files only when scrolled near.
    let (section, scenario, model) = section_inputs(ctx.scenario);
    let all = Memo::new(move |_| {
        model.with(|m| match m {
            Ok(spec) => Ok(scenario.with(|s| exports(s, spec))),
            Err(e) => Err(e.clone()),
        })
    });
    let error = Memo::new(move |_| all.with(|a| a.as_ref().err().cloned()));
    let cards = ExportFormat::ALL
        .into_iter()
        .map(|format| {
            let one = Memo::new(move |_| {
                all.with(|a| {
                    a.as_ref()
                        .ok()
                        .and_then(|list| list.iter().find(|e| e.id == format.id()).cloned())
                })
            });
            view! {
                <Show when=move || one.with(Option::is_some)>
                    <ExportCard export=one />
                </Show>
            }
        })
        .collect_view();
    view! {
        <section node_ref=section class="view exports" aria-labelledby="exports-title" data-testid="exports-view">
            <SectionHead id="exports-title" title="Run it: exports of this layout" explain="The layout above written for each tool, with only options that tool has. What a tool cannot express of the plan, and what you fill in yourself (addresses, data, learning rate), is listed under it. vLLM and SGLang take the serving view's replica shape." />
            {move || error.get().map(|e| view! { <p class="issue error">{e}</p> })}
            {cards}
        </section>
    }
}
