//! A canvas that redraws whenever the signals its draw callback reads change,
//! sized to its container, with hover tooltips from the drawn hit boxes.

use leptos::prelude::*;
use wasm_bindgen::closure::Closure;
use wasm_bindgen::JsCast;
use web_sys::HtmlCanvasElement;

use crate::charts::{hit_index, HitBox, Tip};
use crate::views::visibility::near_screen;

/// What a draw callback gets: the canvas and its CSS width.
pub type DrawInput = (HtmlCanvasElement, f64);

/// A chart canvas. `draw` runs inside an effect: every signal it reads
/// schedules a redraw when it changes, and so does a change of width; while the
/// chart is off screen it does not redraw.
#[component]
pub fn ChartCanvas(
    /// Accessible description of the chart.
    #[prop(into)]
    label: Signal<String>,
    /// `data-testid` of the canvas.
    testid: &'static str,
    /// Draws and returns the hit boxes.
    draw: Callback<DrawInput, Vec<HitBox>>,
    /// The tooltip of the hit box at an index, built when it is hovered, for charts
    /// whose boxes carry empty tips (the schedule grid's thousands of ops); without
    /// it a box's own tip shows.
    #[prop(optional)]
    tip_of: Option<Callback<usize, Tip>>,
) -> impl IntoView {
    let canvas_ref = NodeRef::<leptos::html::Canvas>::new();
    let box_ref = NodeRef::<leptos::html::Div>::new();
    let boxes = StoredValue::new(Vec::<HitBox>::new());
    let hover = RwSignal::new(None::<(f64, f64, Tip)>);
    let width = RwSignal::new(0.0_f64);
    // Charts in tabs are removed and re-created: disconnect their observer then.
    type Observing = (web_sys::ResizeObserver, Closure<dyn Fn(js_sys::Array)>);
    let held = StoredValue::new_local(None::<Observing>);
    on_cleanup(move || {
        if let Some((observer, _)) = held.try_update_value(Option::take).flatten() {
            observer.disconnect();
        }
    });
    // The container's width from a ResizeObserver: delivered after layout,
    // so drawing never forces a synchronous reflow.
    Effect::new(move |observing: Option<bool>| {
        if observing == Some(true) {
            return true;
        }
        let Some(div) = box_ref.get() else {
            return false;
        };
        let callback = Closure::<dyn Fn(js_sys::Array)>::new(move |entries: js_sys::Array| {
            if let Ok(entry) = entries.get(0).dyn_into::<web_sys::ResizeObserverEntry>() {
                let w = entry.content_rect().width();
                if width
                    .try_get_untracked()
                    .is_some_and(|old| (w - old).abs() > 0.5)
                {
                    width.try_set(w);
                }
            }
        });
        let Ok(observer) = web_sys::ResizeObserver::new(callback.as_ref().unchecked_ref()) else {
            return false;
        };
        observer.observe(&div);
        // The observer and its callback live as long as the chart.
        held.set_value(Some((observer, callback)));
        true
    });
    // Off screen the effect reads nothing of `draw`'s inputs, so a slider move
    // costs this chart nothing; it draws the current data when it comes near.
    let visible = near_screen(box_ref);
    Effect::new(move |_| {
        if !visible.get() {
            return;
        }
        let w = width.get();
        if let Some(canvas) = canvas_ref.get() {
            if w >= 10.0 {
                let drawn = crate::perf::timed(testid, || draw.run((canvas, w)));
                boxes.set_value(drawn);
                crate::prerender::chart_drawn();
            }
        }
    });
    let on_move = move |ev: web_sys::MouseEvent| {
        let (x, y) = (f64::from(ev.offset_x()), f64::from(ev.offset_y()));
        let found = boxes.with_value(|b| {
            let i = hit_index(b, x, y)?;
            match tip_of {
                Some(tip_of) => Some(tip_of.run(i)),
                None => b.get(i).map(|h| h.tip.clone()),
            }
        });
        hover.set(found.map(|tip| (x, y, tip)));
    };
    // PNG export: the canvas as a data URL, handed to the link just before the browser follows it.
    let on_download = move |ev: web_sys::MouseEvent| {
        let url = canvas_ref
            .get()
            .and_then(|c| crate::charts::visible_png(&c));
        let link = ev
            .current_target()
            .and_then(|t| t.dyn_into::<web_sys::Element>().ok());
        if let (Some(url), Some(link)) = (url, link) {
            let _ = link.set_attribute("href", &url);
        }
    };
    view! {
        <div class="chart" node_ref=box_ref>
            <a
                class="chart-download"
                href="#"
                download=format!("meshplan-{testid}.png")
                data-testid=format!("download-{testid}")
                title="Download this chart as PNG"
                on:click=on_download
            >
                "PNG"
            </a>
            <canvas
                node_ref=canvas_ref
                role="img"
                aria-label=move || label.get()
                data-testid=testid
                on:mousemove=on_move
                on:mouseleave=move |_| hover.set(None)
            ></canvas>
            {move || {
                hover
                    .get()
                    .map(|(x, y, tip)| {
                        let w = width.get_untracked();
                        let left = if x + 300.0 > w { (x - 300.0).max(0.0) } else { x + 14.0 };
                        view! {
                            <div
                                class="tooltip"
                                data-testid="tooltip"
                                style=format!("left:{left:.0}px;top:{:.0}px", y + 14.0)
                            >
                                <strong>{tip.title}</strong>
                                <div class="tip-value">{tip.value}</div>
                                {tip
                                    .lines
                                    .into_iter()
                                    .filter(|l| !l.is_empty())
                                    .map(|l| view! { <div class="tip-line">{l}</div> })
                                    .collect_view()}
                            </div>
                        }
                    })
            }}
        </div>
    }
}

/// A checkbox in a chart's caption that switches what the chart draws.
#[component]
pub fn CaptionToggle(
    title: &'static str,
    testid: &'static str,
    text: &'static str,
    on: RwSignal<bool>,
) -> impl IntoView {
    view! {
        <label class="inline" title=title>
            <input
                type="checkbox"
                data-testid=testid
                prop:checked=move || on.get()
                on:change=move |ev| on.set(event_target_checked(&ev))
            />
            {text}
        </label>
    }
}
