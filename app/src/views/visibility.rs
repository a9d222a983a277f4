//! Views far below the fold skip their work until they scroll near the
//! viewport: a slider move then recomputes only what can be seen. Printing
//! shows every view, so while the page prints every view counts as near.

use leptos::prelude::*;
use planner_core::input::model::ModelSpec;
use planner_core::input::scenario::Scenario;
use wasm_bindgen::closure::Closure;
use wasm_bindgen::JsCast;

/// True between the window's `beforeprint` and `afterprint` events. Reference
/// counted, not owned by the first view that asks (a chart in a tab comes and goes).
fn printing() -> ArcRwSignal<bool> {
    thread_local! {
        static PRINTING: ArcRwSignal<bool> = {
            let printing = ArcRwSignal::new(false);
            if let Some(w) = web_sys::window() {
                for (event, value) in [("beforeprint", true), ("afterprint", false)] {
                    let target = printing.clone();
                    // The listeners live as long as the page.
                    gloo_events::EventListener::new(&w, event, move |_| target.set(value)).forget();
                }
            }
            printing
        };
    }
    PRINTING.with(ArcRwSignal::clone)
}

/// Whether `target` is within 100 px of the viewport (an IntersectionObserver;
/// `true` until it first reports, so a view always draws once), or the page is printing.
pub fn near_screen<E>(target: NodeRef<E>) -> Signal<bool>
where
    E: leptos::html::ElementType,
    E::Output: JsCast + Clone + 'static,
{
    let (visible, set_visible) = signal(true);
    Effect::new(move |observing: Option<bool>| {
        if observing == Some(true) {
            return true;
        }
        let Some(el) = target.get() else {
            return false;
        };
        let callback = Closure::<dyn Fn(js_sys::Array)>::new(move |entries: js_sys::Array| {
            // Entries arrive oldest first: the last one is the current state.
            let last = entries
                .iter()
                .filter_map(|e| e.dyn_into::<web_sys::IntersectionObserverEntry>().ok())
                .next_back();
            if let Some(e) = last {
                set_visible.set(e.is_intersecting());
            }
        });
        let init = web_sys::IntersectionObserverInit::new();
        init.set_root_margin("100px");
        let Ok(observer) = web_sys::IntersectionObserver::new_with_options(
            callback.as_ref().unchecked_ref(),
            &init,
        ) else {
            return false;
        };
        observer.observe(el.unchecked_ref::<web_sys::Element>());
        // Views live as long as the page: the observer and its callback too.
        callback.forget();
        std::mem::forget(observer);
        true
    });
    let printing = printing();
    Signal::derive(move || visible.get() || printing.get())
}

/// The scenario as last seen while the view was near the screen: while it is
/// off screen this does not even subscribe to the scenario, so nothing downstream runs.
pub fn scenario_while_visible(
    scenario: RwSignal<Scenario>,
    visible: Signal<bool>,
) -> Memo<Scenario> {
    Memo::new(move |prev: Option<&Scenario>| match prev {
        Some(p) if !visible.get() => p.clone(),
        _ => scenario.get(),
    })
}

/// The model of a view's [`scenario_while_visible`], resolved from that scenario: a
/// model change while the view is off screen recomputes nothing of it (a view reading
/// the page's `Ctx::model` instead would rebuild, off screen, with the new model and
/// its old scenario).
pub fn model_while_visible(scenario: Memo<Scenario>) -> Memo<Result<ModelSpec, String>> {
    Memo::new(move |_| scenario.with(|s| s.model_spec().map_err(|e| e.to_string())))
}

/// A section's element (watched for nearness to the screen), and the scenario and model as
/// last seen while it was near ([`scenario_while_visible`], [`model_while_visible`]).
pub type SectionInputs = (
    NodeRef<leptos::html::Section>,
    Memo<Scenario>,
    Memo<Result<ModelSpec, String>>,
);

/// The [`SectionInputs`] of a new section over the page's `scenario`.
pub fn section_inputs(scenario: RwSignal<Scenario>) -> SectionInputs {
    let section = NodeRef::<leptos::html::Section>::new();
    let scenario = scenario_while_visible(scenario, near_screen(section));
    (section, scenario, model_while_visible(scenario))
}
