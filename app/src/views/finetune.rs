//! Fine-tuning: the setup as a person reads it, "Will it fit" (largest micro-batch,
//! longest sequence, the fixes cheapest first, each a button that applies it) and the time
//! per epoch of a dataset size typed here. Everything is
//! `planner_core::view::fit::fit_view`, shown unchanged; the search takes tens of
//! microseconds natively, so it runs here (timed as `fit` in `window.__meshplanMs`).

use leptos::prelude::*;
use planner_core::view::fit::{epoch_line, fit_view, setup_rows, Dataset, FitView};

use crate::app::Ctx;
use crate::views::markup::SectionHead;
use crate::views::visibility::section_inputs;

/// The dataset as typed: tokens, or examples and their mean length.
#[derive(Clone, Copy, PartialEq)]
enum DatasetInput {
    Tokens(f64),
    Examples(f64, f64),
}

impl DatasetInput {
    fn dataset(self) -> Dataset {
        match self {
            DatasetInput::Tokens(tokens) => Dataset::Tokens { tokens },
            DatasetInput::Examples(examples, mean_tokens) => Dataset::Examples {
                examples,
                mean_tokens,
            },
        }
    }
}

/// Parses a number field's text; `None` (and the field shows why) for anything else.
fn number(text: &str) -> Option<f64> {
    text.trim().parse::<f64>().ok().filter(|v| v.is_finite())
}

#[component]
fn Setup(rows: Memo<Vec<(&'static str, String)>>) -> impl IntoView {
    view! {
        <dl class="finetune-setup" data-testid="finetune-setup">
            {move || {
                rows.get()
                    .into_iter()
                    .map(|(k, v)| {
                        view! {
                            <dt>{k}</dt>
                            <dd data-testid=format!("setup-{}", k.to_lowercase().replace([' ', '/'], "-"))>{v}</dd>
                        }
                    })
                    .collect_view()
            }}
        </dl>
    }
}

#[component]
fn Fixes(view_: Memo<FitView>) -> impl IntoView {
    let ctx = expect_context::<Ctx>();
    move || {
        let v = view_.get();
        let Some(r) = v.report.as_ref() else {
            return view! { <p class="issue error" data-testid="fit-error">{v.error.clone()}</p> }
                .into_any();
        };
        if r.current.fits {
            return ().into_any();
        }
        if v.fixes.is_empty() {
            return view! { <p data-testid="fit-no-fix">"No change meshplan prices makes it fit (context parallelism or a larger GPU might)."</p> }
                .into_any();
        }
        let items = v
            .fixes
            .into_iter()
            .enumerate()
            .map(|(i, f)| {
                let scenario = f.scenario.clone();
                view! {
                    <li data-testid="fit-fix" data-fix-id=f.id.clone()>
                        <strong>{f.label}</strong>
                        ": "
                        <span data-testid="fit-fix-memory">{f.memory}</span>
                        "; "
                        <span data-testid="fit-fix-time">{f.time}</span>
                        " "
                        <button
                            data-testid=format!("fit-apply-{i}")
                            on:click=move |_| ctx.scenario.set(scenario.clone())
                        >
                            "Apply"
                        </button>
                    </li>
                }
            })
            .collect_view();
        view! {
            <p class="explain">"Fixes, cheapest first: the smallest added GPU-seconds per step (the step time when the GPU count stays). Each is the scenario changed and priced again by the memory and time models."</p>
            <ol class="fit-fixes" data-testid="fit-fixes">{items}</ol>
        }
        .into_any()
    }
}

#[component]
fn Limits(view_: Memo<FitView>) -> impl IntoView {
    move || {
        let v = view_.get();
        let fits = v.report.as_ref()?.current.fits;
        Some(view! {
            <p data-testid="fit-current" class=if fits { "fit ok" } else { "fit over" }>
                "Peak memory " {v.current_memory} ": " <strong>{v.verdict}</strong>
            </p>
            <p data-testid="fit-max-mbs">{v.micro_batch_line}</p>
            <p data-testid="fit-max-seq">{v.seq_len_line}</p>
        })
    }
}

#[component]
fn Epoch(view_: Memo<FitView>, input: RwSignal<DatasetInput>) -> impl IntoView {
    let (tokens, examples, mean) = (
        RwSignal::new("10000000".to_string()),
        RwSignal::new(String::new()),
        RwSignal::new(String::new()),
    );
    let update = move || {
        let parsed = match (number(&examples.get()), number(&mean.get())) {
            (Some(e), Some(m)) => Some(DatasetInput::Examples(e, m)),
            _ => number(&tokens.get()).map(DatasetInput::Tokens),
        };
        if let Some(p) = parsed {
            input.set(p);
        }
    };
    let field = move |label: &'static str, id: &'static str, sig: RwSignal<String>| {
        view! {
            <label class="epoch-field">
                {label}
                " "
                <input
                    type="number"
                    min="1"
                    data-testid=format!("input-{id}")
                    prop:value=move || sig.get()
                    on:input=move |ev| {
                        sig.set(event_target_value(&ev));
                        update();
                    }
                />
            </label>
        }
    };
    let result = move || {
        view_.with(|v| match &v.epoch {
            Some(Ok(e)) => epoch_line(e),
            Some(Err((field, message))) => format!("{field}: {message}"),
            None => String::new(),
        })
    };
    view! {
        <h3>"Time per epoch"</h3>
        <div class="epoch-inputs">
            {field("Dataset tokens", "dataset-tokens", tokens)}
            " or "
            {field("examples", "examples", examples)}
            " × mean length "
            {field("tokens", "mean-len", mean)}
        </div>
        <p data-testid="epoch-time">{result}</p>
    }
}

/// The fine-tuning section.
#[component]
pub fn FineTuneView() -> impl IntoView {
    let ctx = expect_context::<Ctx>();
    let (section, scenario, model) = section_inputs(ctx.scenario);
    let input = RwSignal::new(DatasetInput::Tokens(1e7));
    let fit = Memo::new(move |_| {
        crate::perf::timed("fit", || {
            scenario.with(|s| {
                model.with(|m| match m {
                    Ok(spec) => fit_view(s, spec, Some(input.get().dataset())),
                    Err(e) => FitView::unavailable(e),
                })
            })
        })
    });
    let rows = Memo::new(move |_| {
        scenario.with(|s| {
            model.with(|m| {
                m.as_ref()
                    .map(|spec| setup_rows(s, spec))
                    .unwrap_or_default()
            })
        })
    });
    view! {
        <section node_ref=section id="finetune" class="view finetune" aria-labelledby="finetune-title" data-testid="finetune-view">
            <SectionHead id="finetune-title" title="Fine-tuning: will it fit?" explain="The setup below is the side panel's (method, rank, targets, GPU, sequence, batch, packing). Fits means the peak stage's device memory is at most the usable share of the GPU, as in the memory view." />
            <Setup rows=rows />
            <div class="fit" data-testid="will-it-fit">
                <Limits view_=fit />
                <Fixes view_=fit />
            </div>
            <Epoch view_=fit input=input />
        </section>
    }
}
