//! A canvas that redraws whenever the signals its draw callback reads change,
//! sized to its container, with hover tooltips from the drawn hit boxes.

use leptos::prelude::*;
use web_sys::HtmlCanvasElement;

use crate::charts::{hit, HitBox, Tip};

/// Bumped on window resize so charts redraw at their new width.
#[derive(Clone, Copy)]
pub struct ResizeTick(pub RwSignal<u32>);

/// A chart canvas. `draw` runs inside an effect: every signal it reads
/// schedules a redraw when it changes.
#[component]
pub fn ChartCanvas(
    /// Accessible description of the chart.
    #[prop(into)]
    label: Signal<String>,
    /// `data-testid` of the canvas.
    testid: &'static str,
    /// Draws and returns the hit boxes.
    draw: Callback<HtmlCanvasElement, Vec<HitBox>>,
) -> impl IntoView {
    let canvas_ref = NodeRef::<leptos::html::Canvas>::new();
    let boxes = StoredValue::new(Vec::<HitBox>::new());
    let hover = RwSignal::new(None::<(f64, f64, Tip)>);
    let resize = use_context::<ResizeTick>();
    Effect::new(move |_| {
        if let Some(tick) = resize {
            tick.0.track();
        }
        if let Some(canvas) = canvas_ref.get() {
            let drawn = draw.run(canvas);
            boxes.set_value(drawn);
        }
    });
    let on_move = move |ev: web_sys::MouseEvent| {
        let (x, y) = (f64::from(ev.offset_x()), f64::from(ev.offset_y()));
        let found = boxes.with_value(|b| hit(b, x, y).map(|h| h.tip.clone()));
        hover.set(found.map(|tip| (x, y, tip)));
    };
    view! {
        <div class="chart">
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
                        let width = canvas_ref
                            .get_untracked()
                            .map(|c| f64::from(c.client_width()))
                            .unwrap_or(600.0);
                        let left = if x + 300.0 > width { (x - 300.0).max(0.0) } else { x + 14.0 };
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
