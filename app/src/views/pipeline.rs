//! Pipeline view: the simulated schedule grid (stages × time slots) and the
//! bubble against the micro-batch count, under both of its definitions.

use leptos::prelude::*;
use planner_core::view::pipeline::{
    elided_stages, forward_only_grid, pipeline as pipeline_view, Bubble, Op, OpKind,
    PipelineView as PipelineData, Timeline, MAX_DRAWN_STAGES,
};

use crate::app::Ctx;
use crate::views::markup::SectionHead;
use crate::views::visibility::{near_screen, scenario_while_visible};

use crate::charts::{
    draw_lines, draw_schedule, schedule_tip, GridOp, GridRow, HitBox, Line, OpShade, Theme,
};
use crate::format;
use crate::views::chart_canvas::{CaptionToggle, ChartCanvas, DrawInput};
use web_sys::HtmlCanvasElement;

/// The grid's rows for a pipeline of `stages` stages.
fn grid_rows(stages: u32) -> Vec<GridRow> {
    let Some((first, count)) = elided_stages(stages) else {
        return crate::charts::every_stage(stages);
    };
    let mut rows: Vec<GridRow> = (0..first).map(GridRow::Stage).collect();
    rows.push(GridRow::Elided { first, count });
    rows.extend((first + count..stages).map(GridRow::Stage));
    rows
}

/// The row `stage` is drawn in, or `None` when it is one of the elided stages.
fn row_of(stage: u32, stages: u32) -> Option<u32> {
    let half = MAX_DRAWN_STAGES / 2;
    if stages <= MAX_DRAWN_STAGES || stage < half {
        Some(stage)
    } else if stage >= stages - half {
        Some(stage - (stages - half) + half + 1)
    } else {
        None
    }
}

/// The ops of `t` the grid draws, in the timeline's order, each with its row.
fn drawn_ops(t: &Timeline) -> impl Iterator<Item = (GridOp, &Op)> + '_ {
    t.ops.iter().filter_map(move |op| {
        row_of(op.stage, t.stages).map(|row| {
            let drawn = GridOp {
                stage: row,
                ..grid_op(t, op)
            };
            (drawn, op)
        })
    })
}

fn shade(kind: OpKind) -> OpShade {
    match kind {
        OpKind::Forward => OpShade::Forward,
        OpKind::Backward => OpShade::Backward,
        OpKind::BackwardInput => OpShade::BackwardInput,
        OpKind::BackwardWeight => OpShade::BackwardWeight,
    }
}

/// One op of `t` in slots.
fn grid_op(t: &Timeline, op: &Op) -> GridOp {
    let per_slot = f64::from(t.ticks_per_slot.max(1));
    GridOp {
        stage: op.stage,
        start: op.start_tick as f64 / per_slot,
        duration: op.duration_ticks as f64 / per_slot,
        micro_batch: op.micro_batch,
        chunk: op.chunk,
        shade: shade(op.kind),
    }
}

/// The schedule grid of timeline `t` (deep pipelines drawn around one elided row).
fn draw_grid_of(
    canvas: &HtmlCanvasElement,
    css_width: f64,
    t: &Timeline,
    theme: &Theme,
) -> Vec<HitBox> {
    let per_slot = f64::from(t.ticks_per_slot.max(1));
    // In the timeline's order: the hit boxes follow it (see `grid_tip`).
    let ops: Vec<GridOp> = drawn_ops(t).map(|(drawn, _)| drawn).collect();
    let span = t.makespan_ticks() as f64 / per_slot;
    let rows = grid_rows(t.stages);
    draw_schedule(canvas, css_width, &rows, span, &ops, theme).unwrap_or_else(|e| {
        leptos::logging::warn!("{e}");
        Vec::new()
    })
}

/// The bubble against the micro-batch count, both definitions, with this layout's m marked.
fn draw_curve_of(canvas: &HtmlCanvasElement, css_width: f64, d: &PipelineData, theme: &Theme) {
    let line = |f: fn(&Bubble) -> f64, color: usize| Line {
        points: d.curve.iter().map(|(m, b)| (f64::from(*m), f(b))).collect(),
        color,
    };
    let lines = [
        line(|b| b.idle_fraction, 0),
        line(|b| b.overhead_vs_ideal, 5),
    ];
    if let Err(e) = draw_lines(
        canvas,
        (css_width, 240.0),
        &lines,
        ("micro-batches per step (m)", "bubble"),
        (d.stages > 1).then_some(f64::from(d.micro_batches)),
        theme,
    ) {
        leptos::logging::warn!("{e}");
    }
}

/// The pipeline section.
#[component]
pub fn PipelineView() -> impl IntoView {
    let ctx = expect_context::<Ctx>();
    let section = NodeRef::<leptos::html::Section>::new();
    let scenario = scenario_while_visible(ctx.scenario, near_screen(section));
    let data = Memo::new(move |_| crate::perf::timed("pipeline", || scenario.with(pipeline_view)));
    // The article's figure: the forward pass alone, GPipe-style.
    let forward_only = RwSignal::new(false);
    // The grid redraws only when the drawn timeline changes, not on every m.
    let grid = Memo::new(move |_| {
        if forward_only.get() {
            data.with(forward_only_grid)
        } else {
            data.with(|d| d.grid.clone())
        }
    });
    let grid_note = move || {
        if !forward_only.get() {
            return data.with(|d| d.grid_note.clone());
        }
        grid.with(|g| match g {
            Ok(t) => {
                let slots = t.makespan_ticks();
                let cells = u64::from(t.stages) * slots;
                format!(
                    "Forward pass only (the article's figure): {} stages × {} micro-batches over {slots} time steps; {} of {cells} slots idle = {}, the (p−1)/(m+p−1) of a balanced GPipe forward pass.",
                    t.stages,
                    t.micro_batches,
                    t.idle_ticks(),
                    format::percent(t.idle_fraction()),
                )
            }
            Err(e) => e.clone(),
        })
    };

    let draw_grid = Callback::new(move |(canvas, css_width): DrawInput| {
        let theme = ctx.theme.get();
        grid.with(|g| match g {
            Ok(t) => draw_grid_of(&canvas, css_width, t, &theme),
            Err(_) => Vec::new(),
        })
    });
    // The hovered op's tooltip, from the drawn grid (hit boxes follow its ops' order).
    let grid_tip = Callback::new(move |i: usize| {
        grid.with(|g| {
            g.as_ref()
                .ok()
                .and_then(|t| {
                    drawn_ops(t)
                        .nth(i)
                        .map(|(_, op)| schedule_tip(&grid_op(t, op)))
                })
                .unwrap_or_default()
        })
    });

    view! {
        <section node_ref=section class="view" aria-labelledby="pipeline-title" data-testid="pipeline-view">
            <SectionHead id="pipeline-title" title="Pipeline schedule" explain="Pipeline parallelism puts consecutive layers on different GPUs and streams micro-batches through them; only activations cross stage boundaries (point-to-point). A stage waits while the first micro-batch fills the pipe and while the last one drains: that idle time is the bubble. More micro-batches shrink it; the interleaved schedule gives each GPU several smaller chunks, dividing it by v; zero-bubble splits the backward pass into input- and weight-gradient halves and fills the gaps with the weight halves." />
            <figure>
                <figcaption>
                    <span data-testid="grid-note">{grid_note}</span>
                    <CaptionToggle
                        title="Draw only the forward pass, as the article's figure does"
                        testid="forward-only"
                        text=" forward pass only"
                        on=forward_only
                    />
                </figcaption>
                {move || grid.with(|g| g.as_ref().err().map(|e| view! { <p class="issue error">{e.clone()}</p> }))}
                <ChartCanvas
                    label=Signal::derive(grid_note)
                    testid="chart-schedule"
                    draw=draw_grid
                    tip_of=grid_tip
                />
                <ul class="legend">
                    <li><span class="swatch fwd"></span>"forward (light)"</li>
                    <li><span class="swatch bwd"></span>"backward (dark)"</li>
                    <li><span class="swatch wgt"></span>"weight-gradient half (grey-ish, zero bubble)"</li>
                    <li><span class="swatch idle"></span>"idle"</li>
                    <li>"colour = micro-batch; 1 slot = one stage's forward"</li>
                </ul>
            </figure>
            <BubbleFigures data=data />
            <BubbleCurve data=data />
        </section>
    }
}

/// The bubble's two definitions, the article's forward idle shares, and this layout's
/// p, m, v and stage split.
#[component]
fn BubbleFigures(data: Memo<PipelineData>) -> impl IntoView {
    view! {
        <dl class="figures-inline">
            <div tabindex="0" title=move || data.with(|d| d.bubble_terms[0].assumption.clone())>
                <dt>"Idle fraction of the schedule"</dt>
                <dd data-testid="bubble-idle">{move || data.with(|d| format::percent(d.bubble.idle_fraction))}</dd>
                <dd class="hint">"idle share of the stages × time grid: " {move || data.with(|d| d.bubble_terms[0].worked.clone())}</dd>
            </div>
            <div tabindex="0" title=move || data.with(|d| d.bubble_terms[1].assumption.clone())>
                <dt>"Overhead vs ideal time"</dt>
                <dd data-testid="bubble-overhead">{move || data.with(|d| format::percent(d.bubble.overhead_vs_ideal))}</dd>
                <dd class="hint">"extra time over a bubble-free step: " {move || data.with(|d| d.bubble_terms[1].worked.clone())}</dd>
            </div>
            <div tabindex="0" title="The article's bars: idle share of a balanced GPipe forward pass, (p−1)/(m+p−1)">
                <dt>{move || data.with(|d| format!("Forward idle share at p = {}", d.curve_stages))}</dt>
                <dd data-testid="forward-idle-shares">
                    {move || {
                        data.with(|d| {
                            d.forward_idle_shares
                                .iter()
                                .map(|&(m, idle)| format!("m = {m}: {}", format::percent(idle)))
                                .collect::<Vec<_>>()
                                .join(" · ")
                        })
                    }}
                </dd>
                <dd class="hint">"more micro-batches, smaller bubble (and smaller kernels)"</dd>
            </div>
            <div>
                <dt>"This layout"</dt>
                <dd data-testid="pipeline-pmv">{move || data.with(|d| format!("p = {}, m = {}, v = {}", d.stages, d.micro_batches, d.virtual_stages))}</dd>
                <dd class="hint">"m = global batch ÷ (DP × micro-batch)"</dd>
            </div>
            {move || {
                data.with(|d| d.stage_split.clone())
                    .map(|x| {
                        let layers: Vec<String> = x.layers_per_stage.iter().map(u32::to_string).collect();
                        view! {
                            <div>
                                <dt>"Stage split"</dt>
                                <dd data-testid="pipeline-split">
                                    {format!("{}; layers per stage {}", x.description, layers.join(" "))}
                                </dd>
                                <dd class="hint" data-testid="pipeline-split-pace">
                                    {format!("stage {} sets the pace: {:.3} × the average stage's layers", x.pacing_stage, x.pacing_layer_scale)}
                                </dd>
                            </div>
                        }
                    })
            }}
        </dl>
    }
}

/// The bubble against the micro-batch count, both definitions.
#[component]
fn BubbleCurve(data: Memo<PipelineData>) -> impl IntoView {
    let ctx = expect_context::<Ctx>();
    let draw_curve = Callback::new(move |(canvas, css_width): DrawInput| {
        let theme = ctx.theme.get();
        data.with(|d| draw_curve_of(&canvas, css_width, d, &theme));
        Vec::new()
    });
    view! {
        <figure>
            <figcaption>
                {move || data.with(|d| format!("Bubble against micro-batch count for p = {}{}, both definitions: ", d.curve_stages, if d.stages == 1 { " (example)" } else { "" }))}
                <span class="key k0">"idle fraction"</span>
                ", "
                <span class="key k5">"overhead vs ideal"</span>
                "; dashed line = this layout's m"
            </figcaption>
            <ChartCanvas
                label=Signal::derive(move || data.with(|d| format!("Bubble against micro-batches for p = {}", d.stages)))
                testid="chart-bubble"
                draw=draw_curve
            />
        </figure>
    }
}

#[cfg(test)]
mod tests {
    use super::{grid_rows, row_of, MAX_DRAWN_STAGES};
    use crate::charts::GridRow;
    use wasm_bindgen_test::wasm_bindgen_test;

    #[wasm_bindgen_test]
    fn a_deep_pipeline_draws_its_first_and_last_stages_around_one_row() {
        assert_eq!(grid_rows(4).len(), 4);
        assert_eq!(grid_rows(MAX_DRAWN_STAGES).len(), 16);
        let rows = grid_rows(64);
        assert_eq!(rows.len(), 17);
        assert_eq!(rows[7], GridRow::Stage(7));
        assert_eq!(
            rows[8],
            GridRow::Elided {
                first: 8,
                count: 48
            }
        );
        assert_eq!(rows[9], GridRow::Stage(56));
        assert_eq!(rows[16], GridRow::Stage(63));
        // Every drawn stage lands in the row that names it; the elided ones in none.
        for stage in 0..64 {
            match row_of(stage, 64) {
                Some(r) => assert_eq!(rows[r as usize], GridRow::Stage(stage)),
                None => assert!((8..56).contains(&stage), "{stage}"),
            }
        }
        assert_eq!(row_of(15, 16), Some(15));
    }
}
