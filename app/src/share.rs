//! Share links: the URL's query always holds the whole scenario
//! (`planner_core::edges::link`), a link opens exactly the state it was copied from,
//! and a broken or outdated link falls back to defaults per parameter with a
//! visible message naming each one.

use std::cell::Cell;
use std::rc::Rc;
use std::time::Duration;

use leptos::prelude::*;
use planner_core::edges::link;
use planner_core::input::scenario::Scenario;
use planner_core::view::presets;
use wasm_bindgen::JsValue;

/// The scenario in the page's URL, with a `(parameter, message)` per bad
/// parameter. No query at all means the default scenario, silently.
pub fn load_from_location() -> (Scenario, Vec<(String, String)>) {
    let search = web_sys::window()
        .and_then(|w| w.location().search().ok())
        .unwrap_or_default();
    if search.trim_start_matches('?').is_empty() {
        return (presets::default_scenario(), Vec::new());
    }
    let (scenario, errors) = link::decode_lenient(&search);
    let notes = errors.into_iter().map(|e| (e.field, e.message)).collect();
    (scenario, notes)
}

/// The page URL without query or hash.
fn base_url() -> String {
    web_sys::window()
        .and_then(|w| {
            let loc = w.location();
            Some(format!("{}{}", loc.origin().ok()?, loc.pathname().ok()?))
        })
        .unwrap_or_default()
}

fn replace_query(query: &str) {
    if let Some(history) = web_sys::window().and_then(|w| w.history().ok()) {
        let url = format!("?{query}");
        // A failure only leaves the old URL in place; the copy box still shows the link.
        let _ = history.replace_state_with_url(&JsValue::NULL, "", Some(&url));
    }
}

/// Keeps the URL equal to the scenario, once the inputs have been still for
/// [`URL_SETTLE`]: `replaceState` costs Chromium a few milliseconds a call, so
/// while a slider is dragged it would land inside some moves' frames (and
/// Chromium throttles, and logs about, hundreds of calls per second).
/// The effect's first run writes nothing: the URL the page was opened with already opens
/// the state it shows (a bare URL the default scenario, a link what it decodes to), and a
/// rewrite 200 ms after load changed the address under a person who had not touched a
/// control (caught by e2e `the_idle_warm_up_leaves_the_page_as_it_found_it`, whose first
/// snapshot sometimes came before it).
pub fn sync_url(scenario: RwSignal<Scenario>) {
    let generation = Rc::new(Cell::new(0_u64));
    Effect::new(move |first_run_done: Option<()>| {
        scenario.track();
        if first_run_done.is_none() {
            return;
        }
        // A warm-up's neighbour and its way back leave the URL as it was.
        if crate::warm_up::visiting() {
            return;
        }
        let mine = generation.get().wrapping_add(1);
        generation.set(mine);
        let generation = Rc::clone(&generation);
        set_timeout(
            move || {
                if generation.get() == mine {
                    if let Some(query) = scenario.try_with_untracked(link::encode) {
                        replace_query(&query);
                    }
                }
            },
            URL_SETTLE,
        );
    });
}

/// How long the inputs stay still before the URL follows them.
const URL_SETTLE: Duration = Duration::from_millis(200);

/// The current link and a button that copies it.
#[component]
pub fn ShareBar(scenario: RwSignal<Scenario>) -> impl IntoView {
    let link_url = Memo::new(move |_| {
        crate::perf::timed("link", || {
            format!("{}?{}", base_url(), scenario.with(link::encode))
        })
    });
    let status = RwSignal::new(String::new());
    let input_ref = NodeRef::<leptos::html::Input>::new();
    let copy = move |_| {
        let url = link_url.get_untracked();
        if let Some((_, query)) = url.split_once('?') {
            replace_query(query);
        }
        if let Some(input) = input_ref.get_untracked() {
            input.select();
        }
        let Some(clipboard) = web_sys::window().map(|w| w.navigator().clipboard()) else {
            status.set("Select the link and copy it".into());
            return;
        };
        let promise = clipboard.write_text(&url);
        leptos::task::spawn_local(async move {
            match wasm_bindgen_futures::JsFuture::from(promise).await {
                Ok(_) => status.set("Copied".into()),
                Err(_) => status.set("Clipboard blocked: the link is selected, copy it".into()),
            }
        });
    };
    view! {
        <div class="share">
            <label for="share-link" class="hint">
                "Link to this exact state"
            </label>
            <div class="share-row">
                <input
                    id="share-link"
                    node_ref=input_ref
                    readonly
                    data-testid="share-link"
                    title="The whole scenario is in this link; opening it restores it exactly."
                    prop:value=move || link_url.get()
                    on:focus=move |_| {
                        if let Some(input) = input_ref.get_untracked() {
                            input.select();
                        }
                    }
                />
                <button data-testid="copy-link" on:click=copy>
                    "Copy link"
                </button>
            </div>
            <span class="status" role="status" data-testid="copy-status">
                {move || status.get()}
            </span>
        </div>
    }
}
