//! The pipeline view: the simulated schedule grid, both bubble measures, the bubble
//! against the micro-batch count, and the uneven stage split. One builder, used by the
//! page and `meshplan eval`.
//!
//! With no pipeline (`p = 1`) nothing idles, so the grid and the curve show an example
//! of the same schedule at `p = 4` ([`PipelineView::curve_stages`] says which); the
//! bubble figures always use the layout's own `p`, `m` and `v`.

use serde::Serialize;

use crate::base::explain::Term;
use crate::input::layout::Schedule;
use crate::input::model::ModelSpec;
use crate::input::scenario::Scenario;
use crate::parallel::pipeline::{bubble, bubble_terms, forward_only_timeline, timeline};
use crate::time::cost::{CostOptions, StepModel};

/// Both bubble measures (idle share, overhead against ideal time): the figures show them.
pub use crate::parallel::pipeline::Bubble;

/// A simulated schedule and its ops: the grid draws them.
pub use crate::parallel::pipeline::{Op, OpKind, Timeline};

/// Most micro-batches drawn in the grid (the bubble figures use the real count).
pub const MAX_DRAWN_MICRO_BATCHES: u32 = 32;

/// Most stages drawn in the grid: a deeper pipeline shows its first and last half of
/// these around one row naming the stages between (issue 16: the grid stops growing).
pub const MAX_DRAWN_STAGES: u32 = 16;

/// Stages of the example drawn when the layout has no pipeline.
const EXAMPLE_STAGES: u32 = 4;

/// Micro-batch counts of the article's forward-pass bars.
const FORWARD_BAR_MICRO_BATCHES: [u32; 3] = [4, 16, 32];

/// The pipeline view's data.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PipelineView {
    /// The layout's schedule.
    pub schedule: Schedule,
    /// Pipeline stages of the layout.
    pub stages: u32,
    /// Micro-batches per step: `ceil(global_batch / (dp × micro_batch))`.
    pub micro_batches: u32,
    /// Chunks per rank (1 unless the schedule is interleaved).
    pub virtual_stages: u32,
    /// The drawn grid (an example when the layout has no pipeline), or why there is none.
    pub grid: Result<Timeline, String>,
    /// The grid's caption: what it shows and what it leaves out.
    pub grid_note: String,
    /// Stages of the drawn grid and the curve (4 when the layout has none).
    pub curve_stages: u32,
    /// Micro-batches of the drawn grid.
    pub grid_micro_batches: u32,
    /// Both bubble measures for the layout (closed form, equal to the simulation).
    pub bubble: Bubble,
    /// The two measures as explained terms: idle share, then overhead against ideal time.
    pub bubble_terms: [Term; 2],
    /// The uneven stage split, when the layout has a valid one.
    pub stage_split: Option<StageSplitView>,
    /// Bubble against micro-batches, every m from 1 to `clamp(2m, 64, 512)`, at `curve_stages`.
    pub curve: Vec<(u32, Bubble)>,
    /// The article's bars: a balanced GPipe forward pass's idle share at m = 4, 16, 32, at `curve_stages`.
    pub forward_idle_shares: Vec<(u32, f64)>,
}

/// An uneven stage split as the pipeline view shows it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct StageSplitView {
    /// The split in words.
    pub description: String,
    /// Its share-link value.
    pub link: String,
    /// Decoder layers of each pipeline rank (the first 256).
    pub layers_per_stage: Vec<u32>,
    /// The rank whose time per micro-batch sets the pace.
    pub pacing_stage: u32,
    /// Its decoder layers over the average stage's.
    pub pacing_layer_scale: f64,
}

/// The pipeline view of scenario `s`.
pub fn pipeline(s: &Scenario) -> PipelineView {
    let l = &s.layout;
    let schedule = l.schedule;
    let p = l.pp.max(1);
    // The same count the memory model and the step time use.
    let m = l.micro_batches(s.training.global_batch);
    let v = chunks(schedule, l.virtual_stages);
    let (gp, gm, grid_note) = grid_shape(schedule, p, m, v);
    let gv = if schedule == Schedule::Interleaved {
        v.max(2)
    } else {
        1
    };
    let grid = timeline(schedule, gp, gm, gv).map_err(|e| e.to_string());
    let x_max = m.saturating_mul(2).clamp(64, 512);
    let curve = (1..=x_max)
        .map(|mm| (mm, bubble(schedule, gp, mm, v)))
        .collect();
    let forward_idle_shares = FORWARD_BAR_MICRO_BATCHES
        .iter()
        .map(|&fm| (fm, bubble(Schedule::Gpipe, gp, fm, 1).idle_fraction))
        .collect();
    PipelineView {
        schedule,
        stages: p,
        micro_batches: m,
        virtual_stages: v,
        grid,
        grid_note,
        curve_stages: gp,
        grid_micro_batches: gm,
        bubble: bubble(schedule, p, m, v),
        bubble_terms: bubble_terms(schedule, p, m, v),
        stage_split: s
            .model_spec()
            .ok()
            .and_then(|model| stage_split_view(&model, s)),
        curve,
        forward_idle_shares,
    }
}

/// Chunks per rank the schedule runs: the layout's count for interleaving, else 1.
fn chunks(schedule: Schedule, virtual_stages: u32) -> u32 {
    if schedule == Schedule::Interleaved {
        virtual_stages.max(1)
    } else {
        1
    }
}

/// Stages and micro-batches of the drawn grid, and its caption.
fn grid_shape(schedule: Schedule, p: u32, m: u32, v: u32) -> (u32, u32, String) {
    if p == 1 {
        let ex_m = if schedule == Schedule::Interleaved {
            8
        } else {
            6
        };
        let note = format!(
            "PP = 1 in this layout, so nothing idles; the grid shows {} with p = {EXAMPLE_STAGES}, m = {ex_m} to illustrate.",
            schedule.label()
        );
        return (EXAMPLE_STAGES, ex_m, note);
    }
    let dm = drawn_micro_batches(schedule, p, m);
    let note = if dm == m {
        let chunks = if v > 1 {
            format!(", v = {v} chunks per rank")
        } else {
            String::new()
        };
        format!(
            "{}: p = {p} stages, m = {m} micro-batches{chunks}.",
            schedule.label()
        )
    } else {
        format!(
            "{}: p = {p}; drawn with m = {dm} of the layout's {m} micro-batches (the bubble figures use {m}).",
            schedule.label()
        )
    };
    // The caption names the rows the grid elides, as the grid's own row does.
    let note = match elided_stages(p) {
        Some((first, count)) => format!(
            "{note} Drawn: stages 1 to {first} and {} to {p}; stages {} to {} repeat the pattern one slot later each and are not drawn.",
            first + count + 1,
            first + 1,
            first + count
        ),
        None => note,
    };
    (p, dm, note)
}

/// Micro-batches to draw: at most 32 (or `p`), a multiple of `p` for interleaving.
fn drawn_micro_batches(schedule: Schedule, p: u32, m: u32) -> u32 {
    let m = m.clamp(1, MAX_DRAWN_MICRO_BATCHES.max(p));
    if schedule == Schedule::Interleaved && p > 1 {
        (m / p).max(1) * p
    } else {
        m
    }
}

/// The stages a grid of `stages` rows leaves out, as (first 0-based stage left out,
/// how many): `None` when every stage is drawn.
pub fn elided_stages(stages: u32) -> Option<(u32, u32)> {
    let half = MAX_DRAWN_STAGES / 2;
    (stages > MAX_DRAWN_STAGES).then(|| (half, stages - 2 * half))
}

/// The forward pass alone, GPipe-style (the article's figure), for the view's drawn
/// shape: 4 stages × 4 micro-batches when the layout has no pipeline.
pub fn forward_only_grid(view: &PipelineView) -> Result<Timeline, String> {
    let (p, m) = if view.stages == 1 {
        (EXAMPLE_STAGES, 4)
    } else {
        (view.curve_stages, view.grid_micro_batches)
    };
    forward_only_timeline(p, m).map_err(|e| e.to_string())
}

/// The pipeline view's stage split: `None` for the even split or one validation refuses.
pub fn stage_split_view(model: &ModelSpec, scenario: &Scenario) -> Option<StageSplitView> {
    let layout = &scenario.layout;
    let split = &layout.stage_split;
    let sh =
        crate::input::stage_split::SplitShape::new(model.layers, layout.pp, layout.virtual_stages);
    if split.is_even() || split.problem(sh).is_some() {
        return None;
    }
    let inputs = crate::time::comms::CommInputs::new(
        model,
        &scenario.precision,
        &scenario.training,
        &scenario.overheads,
    );
    // A stage with more MoE layers may pace the step instead (StepModel::pacing): priced
    // as the step prices it, only for such splits.
    let pace = if inputs.pace_rival(layout).is_some() {
        let step = StepModel::for_scenario(model, scenario, CostOptions::default());
        step.pacing(layout, &step.placement(layout)).0
    } else {
        inputs.pace(layout)
    };
    Some(StageSplitView {
        description: split.describe(sh),
        link: split.to_link(),
        layers_per_stage: split.rank_counts(sh, 256),
        pacing_stage: pace.rank,
        pacing_layer_scale: pace.layer_scale,
    })
}
