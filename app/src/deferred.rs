//! The deferred sections: the mesh explorer, the step-time breakdown, the accuracy section,
//! topology, learn, model import, measured numbers, the run's bill, fine-tuning and exports live in a second
//! wasm module (`src/bin/app-deferred.rs`), so the
//! page's first download carries none of their code. trunk cannot split one module, so
//! the page builds two from this library; each links only what its own views reach.
//!
//! The page renders an empty container at the sections' place ([`DeferredViews`], mounted
//! with the rest of the page below its first screen, after the first chart is on screen)
//! and, once mounted, imports the deferred module ([`load`]), which mounts the sections
//! into it ([`start`]). The two modules
//! share no memory, so they share the scenario as its share link
//! (`planner_core::edges::link`), through events on `window`:
//! - [`READY_EVENT`] (deferred → page, once): the page answers with the scenario;
//! - [`SCENARIO_EVENT`] (page → deferred, after every change): the scenario's link;
//! - [`APPLY_EVENT`] (deferred → page): the scenario after a model import or a
//!   calibration, which the page decodes as it decodes any link and takes.
//!
//! The link is the whole scenario (its property tests say encode → decode is
//! the identity), so both modules always hold the same one.

use std::cell::{Cell, RefCell};
use std::rc::Rc;

use leptos::prelude::*;
use planner_core::edges::link;
use planner_core::input::scenario::Scenario;
use planner_core::view::presets;
use wasm_bindgen::{JsCast, JsValue};

use crate::app::{page_theme, resolved_model, Ctx};
use crate::views::{
    AccuracyView, BillSection, ExportsView, FineTuneView, LearnView, MeasuredView, MeshView,
    ModelImport, StepBreakdownView, TopologyView,
};

/// The container's element id (the e2e tests wait for its `data-ready="1"`).
pub const CONTAINER_ID: &str = "deferred-views";
/// Page → deferred module: `detail` is the scenario's link query.
pub const SCENARIO_EVENT: &str = "meshplan:scenario";
/// Deferred module → page: `detail` is the link query of the scenario to take.
pub const APPLY_EVENT: &str = "meshplan:apply";
/// Deferred module → page, once it listens: send the scenario now.
pub const READY_EVENT: &str = "meshplan:deferred-ready";

/// Imports the deferred module relative to the page (trunk writes it beside index.html
/// as a worker-type build: `app-deferred.js` + `app-deferred_bg.wasm`, no script tag).
/// A failure says so in the container instead of leaving it empty.
const LOADER_JS: &str = r#"import init from "./app-deferred.js";
init({ module_or_path: "./app-deferred_bg.wasm" }).catch((e) => {
  const el = document.getElementById("deferred-views");
  if (el) {
    el.dataset.ready = "failed";
    el.textContent = "The mesh explorer, step-time, accuracy, topology, learn, import, fine-tuning and export sections could not be loaded (" + e + "). Reload the page to try again.";
  }
});"#;

thread_local! {
    /// The page asked for the deferred module (once).
    static LOAD_STARTED: Cell<bool> = const { Cell::new(false) };
    /// The deferred module listens: the page sends it every scenario from now on.
    static DEFERRED_READY: Cell<bool> = const { Cell::new(false) };
}

/// Starts loading the deferred module (once; later calls do nothing).
pub fn load() {
    if LOAD_STARTED.with(|s| s.replace(true)) {
        return;
    }
    let Some(doc) = web_sys::window().and_then(|w| w.document()) else {
        return;
    };
    let Ok(script) = doc.create_element("script") else {
        return;
    };
    let _ = script.set_attribute("type", "module");
    script.set_text_content(Some(LOADER_JS));
    if let Some(head) = doc.head() {
        let _ = head.append_child(&script);
    }
}

/// Dispatches `name` on `window` with `detail` (synchronously: listeners run before it returns).
fn dispatch(name: &str, detail: &str) {
    let Some(w) = web_sys::window() else { return };
    let init = web_sys::CustomEventInit::new();
    init.set_detail(&JsValue::from_str(detail));
    if let Ok(event) = web_sys::CustomEvent::new_with_event_init_dict(name, &init) {
        let _ = w.dispatch_event(&event);
    }
}

/// Calls `f` with each `name` event's string `detail`, for the page's lifetime.
fn listen(name: &str, f: impl Fn(String) + 'static) {
    let Some(w) = web_sys::window() else { return };
    // The listener lives as long as the page.
    gloo_events::EventListener::new(&w, name.to_string(), move |e| {
        let detail = e
            .dyn_ref::<web_sys::CustomEvent>()
            .and_then(|c| c.detail().as_string())
            .unwrap_or_default();
        f(detail);
    })
    .forget();
}

/// The page's side: the container the deferred module mounts into, and the scenario
/// traffic with it.
#[component]
pub fn DeferredViews() -> impl IntoView {
    let ctx = expect_context::<Ctx>();
    let send = move || {
        if DEFERRED_READY.with(Cell::get) {
            if let Some(query) = ctx.scenario.try_with_untracked(link::encode) {
                dispatch(SCENARIO_EVENT, &query);
            }
        }
    };
    listen(READY_EVENT, move |_| {
        DEFERRED_READY.with(|r| r.set(true));
        send();
    });
    listen(APPLY_EVENT, move |query| match link::decode(&query) {
        Ok(s) => {
            if ctx.scenario.with_untracked(|current| current != &s) {
                ctx.scenario.set(s);
            }
        }
        // Not expected (the deferred module encodes a scenario it holds); both sides
        // go back to the page's scenario rather than disagree.
        Err(errors) => {
            let fields: Vec<_> = errors.iter().map(|e| e.field.as_str()).collect();
            web_sys::console::warn_1(
                &format!("deferred sections sent a scenario with bad {fields:?}").into(),
            );
            send();
        }
    });
    Effect::new(move |_| {
        ctx.scenario.track();
        send();
    });
    // Effects run once the container is in the document: the module has a place to mount.
    Effect::new(move |_| load());
    view! {
        <div id=CONTAINER_ID class="deferred-views" data-ready="0" data-testid="deferred-views">
            <p class="deferred-note">
                "The mesh explorer, step time, accuracy, topology, learn, model import, measured numbers, fine-tuning and exports load after the first chart…"
            </p>
        </div>
    }
}

/// The deferred module's entry: mounts the sections into the page's container.
pub fn start() {
    console_error_panic_hook::set_once();
    // Its charts draw after the page's first one; they must not mark it again.
    crate::prerender::first_chart_already_drawn();
    // The page's warm-up visits reach its views too: they skip them as the page's do.
    crate::warm_up::follow_the_page();
    let Some(container) = web_sys::window()
        .and_then(|w| w.document())
        .and_then(|d| d.get_element_by_id(CONTAINER_ID))
    else {
        return;
    };
    container.replace_children_with_node_0();
    let Ok(parent) = container.clone().dyn_into::<web_sys::HtmlElement>() else {
        return;
    };
    leptos::mount::mount_to(parent, DeferredSections).forget();
    let _ = container.set_attribute("data-ready", "1");
}

/// The deferred module's side: its own copy of the scenario, kept equal to the page's.
#[component]
fn DeferredSections() -> impl IntoView {
    let scenario = RwSignal::new(presets::default_scenario());
    // The last scenario the page sent: a change equal to it came from the page and goes
    // no further; `None` until the page has spoken, so nothing is sent back before it.
    let from_page: Rc<RefCell<Option<Scenario>>> = Rc::new(RefCell::new(None));
    let received = Rc::clone(&from_page);
    listen(SCENARIO_EVENT, move |query| {
        // The page encodes what it holds; a query that does not decode is ignored.
        let Ok(s) = link::decode(&query) else { return };
        if scenario.with_untracked(|current| current != &s) {
            scenario.set(s.clone());
        }
        *received.borrow_mut() = Some(s);
    });
    dispatch(READY_EVENT, "");
    Effect::new(move |_| {
        let changed_here =
            scenario.with(|s| from_page.borrow().as_ref().is_some_and(|page| page != s));
        if changed_here {
            if let Some(query) = scenario.try_with_untracked(link::encode) {
                dispatch(APPLY_EVENT, &query);
            }
        }
    });
    let ctx = Ctx {
        scenario,
        model: resolved_model(scenario),
        theme: page_theme(),
    };
    provide_context(ctx);
    view! {
        // First, in the page's order: they stood right above the container in the page's module.
        <MeshView />
        <StepBreakdownView />
        <AccuracyView />
        <TopologyView />
        <LearnView />
        <ModelImport />
        <MeasuredView />
        <BillSection />
        // Just above the exports it writes (torchtune, TRL); last but one, so its height,
        // which follows the scenario when near the screen, moves only the exports below it.
        <FineTuneView />
        <ExportsView />
    }
}
