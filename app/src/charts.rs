//! Canvas charts drawn with plotters: stacked memory bars, the pipeline
//! schedule grid and line charts.
//!
//! Canvases are sized by `devicePixelRatio` (backing store = CSS size × ratio)
//! so text and lines stay sharp on HiDPI screens; every length below is in CSS
//! pixels and multiplied by the ratio when drawn. Drawing functions return the
//! hit boxes (in CSS pixels) of what they drew, so hover tooltips point at the
//! same planner-core term the segment was drawn from.

use crate::canvas_backend::Canvas2d;
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use web_sys::HtmlCanvasElement;

use crate::format;

/// Colours of one theme (light or dark, from `prefers-color-scheme`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Theme {
    /// Canvas background.
    pub bg: RGBColor,
    /// Text and axes.
    pub fg: RGBColor,
    /// Secondary text.
    pub muted: RGBColor,
    /// Grid lines.
    pub grid: RGBColor,
    /// Idle pipeline slots.
    pub idle: RGBColor,
    /// Memory limit line.
    pub limit: RGBColor,
    /// Dark theme (lightens sharded segments differently).
    pub dark: bool,
}

impl Theme {
    /// The theme for a colour scheme.
    pub fn new(dark: bool) -> Self {
        if dark {
            Theme {
                bg: RGBColor(0x1b, 0x1e, 0x24),
                fg: RGBColor(0xe6, 0xe8, 0xeb),
                muted: RGBColor(0x9a, 0xa1, 0xab),
                grid: RGBColor(0x33, 0x38, 0x40),
                idle: RGBColor(0x2a, 0x2e, 0x36),
                limit: RGBColor(0xff, 0x6b, 0x6b),
                dark,
            }
        } else {
            Theme {
                bg: RGBColor(0xff, 0xff, 0xff),
                fg: RGBColor(0x1f, 0x23, 0x28),
                muted: RGBColor(0x5f, 0x66, 0x70),
                grid: RGBColor(0xe3, 0xe6, 0xea),
                idle: RGBColor(0xee, 0xf0, 0xf3),
                limit: RGBColor(0xc6, 0x28, 0x28),
                dark,
            }
        }
    }
}

/// Category colours (colour-blind-friendly Okabe–Ito order, then extras).
pub const PALETTE: [RGBColor; 10] = [
    RGBColor(0x00, 0x72, 0xb2),
    RGBColor(0xe6, 0x9f, 0x00),
    RGBColor(0x00, 0x9e, 0x73),
    RGBColor(0xcc, 0x79, 0xa7),
    RGBColor(0x56, 0xb4, 0xe9),
    RGBColor(0xd5, 0x5e, 0x00),
    RGBColor(0xf0, 0xe4, 0x42),
    RGBColor(0x7f, 0x7f, 0x7f),
    RGBColor(0x8c, 0x56, 0x4b),
    RGBColor(0x94, 0x67, 0xbd),
];

/// `#rrggbb` of a palette entry, for HTML legends.
pub fn css_color(index: usize) -> String {
    let RGBColor(r, g, b) = PALETTE[index % PALETTE.len()];
    format!("#{r:02x}{g:02x}{b:02x}")
}

/// What a tooltip shows for one drawn item.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Tip {
    /// Heading (term label, op name).
    pub title: String,
    /// Main value ("17.5 GB").
    pub value: String,
    /// Further lines (formula, worked numbers, assumption).
    pub lines: Vec<String>,
}

/// A drawn rectangle in CSS pixels and what it stands for.
#[derive(Clone, Debug, PartialEq)]
pub struct HitBox {
    /// Left.
    pub x0: f64,
    /// Top.
    pub y0: f64,
    /// Right.
    pub x1: f64,
    /// Bottom.
    pub y1: f64,
    /// Tooltip content.
    pub tip: Tip,
}

/// The hit box under a point (CSS pixels), if any.
#[cfg(test)]
pub fn hit(boxes: &[HitBox], x: f64, y: f64) -> Option<&HitBox> {
    hit_index(boxes, x, y).and_then(|i| boxes.get(i))
}

/// The index of the hit box under a point (CSS pixels), if any.
pub fn hit_index(boxes: &[HitBox], x: f64, y: f64) -> Option<usize> {
    boxes
        .iter()
        .position(|b| x >= b.x0 && x <= b.x1 && y >= b.y0 && y <= b.y1)
}

fn err<E: std::fmt::Debug>(e: E) -> String {
    format!("chart: {e:?}")
}

/// Sizes the backing store to CSS size × devicePixelRatio; returns the ratio
/// and the CSS width, or None when the canvas is not laid out yet. The width
/// comes from a ResizeObserver: reading `clientWidth` here, right after the
/// views changed the DOM, would force a synchronous layout on every input.
pub fn prepare(canvas: &HtmlCanvasElement, css_width: f64, css_height: f64) -> Option<(f64, f64)> {
    let ratio = web_sys::window()
        .map(|w| w.device_pixel_ratio())
        .filter(|r| r.is_finite() && *r > 0.0)
        .unwrap_or(1.0);
    if !css_width.is_finite() || css_width < 10.0 {
        return None;
    }
    let width = (css_width * ratio).round() as u32;
    let height = (css_height * ratio).round() as u32;
    if canvas.width() != width {
        canvas.set_width(width);
    }
    if canvas.height() != height {
        canvas.set_height(height);
    }
    Some((ratio, css_width))
}

/// Shows the top `css_height` CSS pixels of `canvas` at its full width, unscaled, whatever
/// its backing height: `object-fit: cover` scales the backing image by 1/device-pixel-ratio
/// (the width fits exactly) and `object-position: top` crops the rest below. Styles are set
/// only when they change, so an unchanged height restyles nothing.
fn show_top(canvas: &HtmlCanvasElement, css_height: f64) {
    let style = canvas.style();
    let height = format!("{css_height}px");
    for (name, value) in [
        ("object-fit", "cover"),
        ("object-position", "top"),
        ("height", height.as_str()),
    ] {
        if style.get_property_value(name).ok().as_deref() != Some(value) {
            let _ = style.set_property(name, value);
        }
    }
}

/// The part of `canvas` on screen, as a PNG data URL: the whole canvas, or its top where
/// [`show_top`] crops it (a copy of that part, so a download holds what the page shows).
pub fn visible_png(canvas: &HtmlCanvasElement) -> Option<String> {
    use wasm_bindgen::JsCast;
    let (w, h) = (canvas.width(), canvas.height());
    let shown =
        f64::from(canvas.client_height()) * f64::from(w) / f64::from(canvas.client_width().max(1));
    let rows = (shown.round() as u32).clamp(1, h.max(1));
    if rows >= h {
        return canvas.to_data_url().ok();
    }
    let document = web_sys::window()?.document()?;
    let copy: HtmlCanvasElement = document.create_element("canvas").ok()?.dyn_into().ok()?;
    copy.set_width(w);
    copy.set_height(rows);
    let context = context_2d(&copy).ok()?;
    context
        .draw_image_with_html_canvas_element(canvas, 0.0, 0.0)
        .ok()?;
    copy.to_data_url().ok()
}

fn area(canvas: &HtmlCanvasElement) -> Result<DrawingArea<Canvas2d, Shift>, String> {
    Canvas2d::new(canvas.clone())
        .map(IntoDrawingArea::into_drawing_area)
        .ok_or_else(|| "chart: no 2d context".to_string())
}

/// Lighter version of a colour (the sharded part of a bar).
fn tint(c: RGBColor, theme: &Theme) -> RGBColor {
    let mix = |v: u8, to: u8| ((f64::from(v) * 0.45) + (f64::from(to) * 0.55)).round() as u8;
    let to = if theme.dark { 0x1b } else { 0xff };
    RGBColor(mix(c.0, to), mix(c.1, to), mix(c.2, to))
}

/// One segment of a stacked bar.
#[derive(Clone, Debug, PartialEq)]
pub struct Segment {
    /// Bytes.
    pub bytes: f64,
    /// Palette index (same category, same colour in every bar).
    pub color: usize,
    /// Drawn light with an outline: the sharded part.
    pub light: bool,
    /// Hover content.
    pub tip: Tip,
}

/// One stacked bar.
#[derive(Clone, Debug, PartialEq)]
pub struct Bar {
    /// Label under the bar.
    pub label: String,
    /// Text above the bar (its total).
    pub caption: String,
    /// Bottom to top.
    pub segments: Vec<Segment>,
    /// Outline the bar (the layout's own choice).
    pub selected: bool,
}

/// A horizontal dashed line (GPU memory, usable memory).
#[derive(Clone, Debug, PartialEq)]
pub struct Limit {
    /// Bytes.
    pub bytes: f64,
    /// Label at its right end.
    pub label: String,
}

/// How a chart draws plotters' light mesh (a line every tenth of a label step, drawn before
/// the bold lines at the labels).
#[derive(Clone, Copy)]
pub(crate) enum LightMesh {
    /// Not drawn (the page's): in the background's colour, as before, the lines were
    /// invisible but cost a stroked path each, 81 of the 250 a DP move made in the memory
    /// view's two charts (counted in headless Chromium, issue 16).
    Skipped,
    /// In the background's colour, as before: the pixel tests' reference.
    #[cfg_attr(not(test), allow(dead_code))]
    InBackground,
}

impl LightMesh {
    /// The style plotters gets: a transparent line is never handed to the context
    /// (`Canvas2d` returns before any call when alpha is 0).
    pub(crate) fn style(self, theme: &Theme) -> ShapeStyle {
        match self {
            LightMesh::Skipped => TRANSPARENT.into(),
            LightMesh::InBackground => theme.bg.into(),
        }
    }
}

/// Stacked bars against dashed limit lines. Returns hit boxes per segment.
pub fn draw_stacked_bars(
    canvas: &HtmlCanvasElement,
    css_width: f64,
    css_height: f64,
    bars: &[Bar],
    limits: &[Limit],
    y_desc: &str,
    theme: &Theme,
) -> Result<Vec<HitBox>, String> {
    draw_stacked_bars_with(
        canvas,
        (css_width, css_height),
        bars,
        limits,
        y_desc,
        theme,
        LightMesh::Skipped,
    )
}

fn draw_stacked_bars_with(
    canvas: &HtmlCanvasElement,
    (css_width, css_height): (f64, f64),
    bars: &[Bar],
    limits: &[Limit],
    y_desc: &str,
    theme: &Theme,
    light: LightMesh,
) -> Result<Vec<HitBox>, String> {
    let Some((r, _)) = prepare(canvas, css_width, css_height) else {
        return Ok(Vec::new());
    };
    let root = area(canvas)?;
    root.fill(&theme.bg).map_err(err)?;
    let n = bars.len().max(1) as f64;
    // Fewer than three bars are drawn at the width three would have, centred.
    let pad = ((3.0 - n) / 2.0).max(0.0);
    let top = bars
        .iter()
        .map(|b| b.segments.iter().map(|s| s.bytes.max(0.0)).sum::<f64>())
        .chain(limits.iter().map(|l| l.bytes))
        .fold(1.0_f64, f64::max);
    let y_max = top * 1.14;
    let font = |size: f64| ("sans-serif", size * r).into_font().color(&theme.fg);
    let muted = |size: f64| ("sans-serif", size * r).into_font().color(&theme.muted);

    let mut chart = ChartBuilder::on(&root)
        .margin_top((24.0 * r) as i32)
        .margin_right((12.0 * r) as i32)
        .margin_left((6.0 * r) as i32)
        .x_label_area_size((30.0 * r) as u32)
        .y_label_area_size((54.0 * r) as u32)
        .build_cartesian_2d(-pad..n + pad, 0.0..y_max)
        .map_err(err)?;
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_labels(0)
        .y_labels(6)
        .y_desc(y_desc)
        .y_label_formatter(&|v| format::axis(*v / 1e9))
        .label_style(muted(11.0))
        .axis_desc_style(muted(11.0))
        .axis_style(theme.muted.stroke_width(r.max(1.0) as u32))
        .light_line_style(light.style(theme))
        .bold_line_style(theme.grid.stroke_width(r.max(1.0) as u32))
        .draw()
        .map_err(err)?;

    let mut boxes = Vec::new();
    for (i, bar) in bars.iter().enumerate() {
        let x0 = i as f64 + 0.2;
        let x1 = i as f64 + 0.8;
        let mut y = 0.0;
        for seg in bar.segments.iter().filter(|s| s.bytes > 0.0) {
            let base = PALETTE[seg.color % PALETTE.len()];
            let fill = if seg.light { tint(base, theme) } else { base };
            let rect = [(x0, y), (x1, y + seg.bytes)];
            chart
                .draw_series(std::iter::once(Rectangle::new(rect, fill.filled())))
                .map_err(err)?;
            if seg.light {
                chart
                    .draw_series(std::iter::once(Rectangle::new(
                        rect,
                        base.stroke_width(r.max(1.0) as u32),
                    )))
                    .map_err(err)?;
            }
            let (px0, py1) = chart.backend_coord(&(x0, y));
            let (px1, py0) = chart.backend_coord(&(x1, y + seg.bytes));
            boxes.push(HitBox {
                x0: f64::from(px0) / r,
                // At least 4 CSS px tall so thin segments can still be hovered.
                y0: (f64::from(py0) / r).min(f64::from(py1) / r - 4.0),
                x1: f64::from(px1) / r,
                y1: f64::from(py1) / r,
                tip: seg.tip.clone(),
            });
            y += seg.bytes;
        }
        if bar.selected {
            chart
                .draw_series(std::iter::once(Rectangle::new(
                    [(x0 - 0.04, 0.0), (x1 + 0.04, y)],
                    theme.fg.stroke_width((2.0 * r) as u32),
                )))
                .map_err(err)?;
        }
        chart
            .draw_series(std::iter::once(Text::new(
                bar.caption.clone(),
                (i as f64 + 0.5, y),
                font(12.0).pos(Pos::new(HPos::Center, VPos::Bottom)),
            )))
            .map_err(err)?;
        let (lx, ly) = chart.backend_coord(&(i as f64 + 0.5, 0.0));
        root.draw(&Text::new(
            bar.label.clone(),
            (lx, ly + (8.0 * r) as i32),
            font(12.0).pos(Pos::new(HPos::Center, VPos::Top)),
        ))
        .map_err(err)?;
    }
    for limit in limits {
        chart
            .draw_series(DashedLineSeries::new(
                vec![(-pad, limit.bytes), (n + pad, limit.bytes)],
                (7.0 * r) as i32,
                (5.0 * r) as i32,
                theme.limit.stroke_width((1.5 * r).max(1.0) as u32),
            ))
            .map_err(err)?;
    }
    // The limits' key sits above the plot, where no bar or caption can cover it.
    if !limits.is_empty() {
        let key = limits
            .iter()
            .map(|l| l.label.as_str())
            .collect::<Vec<_>>()
            .join(" · ");
        let (right, _) = chart.backend_coord(&(n + pad, y_max));
        root.draw(&Text::new(
            format!("- - {key}"),
            (right, (4.0 * r) as i32),
            ("sans-serif", 11.0 * r)
                .into_font()
                .color(&theme.limit)
                .pos(Pos::new(HPos::Right, VPos::Top)),
        ))
        .map_err(err)?;
    }
    root.present().map_err(err)?;
    Ok(boxes)
}

/// Kind of a pipeline op, for its shade.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OpShade {
    /// Forward pass.
    Forward,
    /// Whole backward pass.
    Backward,
    /// Backward for the input gradient (zero-bubble B).
    BackwardInput,
    /// Backward for the weight gradient (zero-bubble W).
    BackwardWeight,
}

impl OpShade {
    /// Short label for tooltips and legends.
    pub fn label(self) -> &'static str {
        match self {
            OpShade::Forward => "forward",
            OpShade::Backward => "backward",
            OpShade::BackwardInput => "backward (input grad, B)",
            OpShade::BackwardWeight => "backward (weight grad, W)",
        }
    }
}

/// One op of a schedule in time units (slots).
#[derive(Clone, Debug, PartialEq)]
pub struct GridOp {
    /// Pipeline stage (row), 0 = first.
    pub stage: u32,
    /// Start, in slots.
    pub start: f64,
    /// Duration, in slots.
    pub duration: f64,
    /// Micro-batch, 0-based (colour).
    pub micro_batch: u32,
    /// Virtual chunk (interleaved), 0-based.
    pub chunk: u32,
    /// Forward/backward shade.
    pub shade: OpShade,
}

/// Colour of micro-batch `mb`: spread hues, lighter forwards, darker backwards.
fn op_color(mb: u32, shade: OpShade, theme: &Theme) -> HSLColor {
    let hue = (f64::from(mb) * 0.618_034).fract();
    let (s, l) = match (shade, theme.dark) {
        (OpShade::Forward, false) => (0.62, 0.70),
        (OpShade::Forward, true) => (0.55, 0.58),
        (OpShade::Backward | OpShade::BackwardInput, false) => (0.62, 0.45),
        (OpShade::Backward | OpShade::BackwardInput, true) => (0.55, 0.40),
        (OpShade::BackwardWeight, false) => (0.25, 0.55),
        (OpShade::BackwardWeight, true) => (0.25, 0.45),
    };
    HSLColor(hue, s, l)
}

/// The tooltip of one op of the schedule grid.
pub fn schedule_tip(op: &GridOp) -> Tip {
    let chunk = if op.chunk > 0 {
        format!(", chunk {}", op.chunk + 1)
    } else {
        String::new()
    };
    Tip {
        title: format!("stage {}, micro-batch {}", op.stage + 1, op.micro_batch + 1),
        value: format!("{}{chunk}", op.shade.label()),
        lines: vec![format!(
            "slots {} to {}",
            format::sig3(op.start),
            format::sig3(op.start + op.duration)
        )],
    }
}

/// One row of the schedule grid.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum GridRow {
    /// A pipeline stage, 0 = first.
    Stage(u32),
    /// Stages not drawn, from the first (0-based) for `count` stages.
    Elided { first: u32, count: u32 },
}

/// The rows of a grid that draws every one of `stages` stages.
pub fn every_stage(stages: u32) -> Vec<GridRow> {
    (0..stages).map(GridRow::Stage).collect()
}

/// The schedule grid: stages down, time slots across; idle time shows as the
/// bare row background. `rows` names what each row shows, and each op's `stage` is the
/// row it is drawn in. Returns hit boxes per op, in `ops` order, with empty tips:
/// a grid has up to a thousand ops or more (16 stages × 32 micro-batches × 2), so the caller
/// builds the hovered one's tip with [`schedule_tip`] (`ChartCanvas`'s `tip_of`).
pub fn draw_schedule(
    canvas: &HtmlCanvasElement,
    css_width: f64,
    rows: &[GridRow],
    span: f64,
    ops: &[GridOp],
    theme: &Theme,
) -> Result<Vec<HitBox>, String> {
    let grid = ScheduleGrid { rows, span, ops };
    draw_schedule_with(canvas, css_width, &grid, theme, CellFills::OnePathPerColour)
}

/// What the schedule grid draws: its rows, its time span in slots, its ops.
struct ScheduleGrid<'a> {
    rows: &'a [GridRow],
    span: f64,
    ops: &'a [GridOp],
}

/// How the schedule grid fills its cells.
#[derive(Clone, Copy)]
enum CellFills {
    /// One path per colour (the page's).
    OnePathPerColour,
    /// A plotters `Rectangle` per cell, at the same corners: the pixel test's reference.
    #[cfg(test)]
    OneRectanglePerCell,
}

/// The canvas's 2D context.
fn context_2d(canvas: &HtmlCanvasElement) -> Result<web_sys::CanvasRenderingContext2d, String> {
    use wasm_bindgen::JsCast;
    canvas
        .get_context("2d")
        .ok()
        .flatten()
        .and_then(|c| c.dyn_into().ok())
        .ok_or_else(|| "chart: no 2d context".to_string())
}

fn draw_schedule_with(
    canvas: &HtmlCanvasElement,
    css_width: f64,
    grid: &ScheduleGrid,
    theme: &Theme,
    fills: CellFills,
) -> Result<Vec<HitBox>, String> {
    let &ScheduleGrid { rows, span, ops } = grid;
    let stages = u32::try_from(rows.len()).unwrap_or(u32::MAX);
    // The page draws at most 17 rows (views/pipeline.rs elides deeper pipelines' middle
    // stages); a taller grid, drawn whole, takes compact rows.
    let row_css = if stages > 17 { 14.0 } else { 26.0 };
    let grid_height = |rows: u32| 34.0 + row_css * f64::from(rows.max(1)) + 8.0;
    let css_height = grid_height(stages);
    // The canvas keeps the backing store of the tallest page grid (17 rows) and shows its
    // top `css_height`: resizing a canvas reallocates its backing store, and the first fill
    // after that cost 0.5–14.6 ms in headless Chromium on a PP move (1.4 ms median at
    // 1027 × 484 against 0.1 ms for the same fill on a canvas of unchanged size).
    let backing_height = if stages > 17 {
        css_height
    } else {
        grid_height(17)
    };
    let Some((r, _)) = prepare(canvas, css_width, backing_height) else {
        return Ok(Vec::new());
    };
    show_top(canvas, css_height);
    let root = area(canvas)?;
    root.fill(&theme.bg).map_err(err)?;
    let left = 64.0;
    let top = 26.0;
    let right = 10.0;
    let span = span.max(1.0);
    let slot = (css_width - left - right) / span;
    let px = |v: f64| (v * r).round() as i32;

    draw_time_axis(&root, theme, r, (left, top, slot), span, css_height)?;
    draw_row_labels(&root, theme, r, rows, (left, top, slot, row_css), span)?;
    // Three passes (fills, outlines, then labels by colour) so the context's
    // fill colour changes once per cell rather than twice.
    let cell = |op: &GridOp| {
        let x0 = left + op.start * slot;
        let x1 = left + (op.start + op.duration) * slot;
        let y0 = top + row_css * f64::from(op.stage) + 2.0;
        (x0, x1, y0, y0 + row_css - 4.0)
    };
    // A cell at least 4 CSS px wide stops one device pixel short of its right edge, so the
    // row's idle colour shows as a line between two neighbouring cells. (Until 2026-12-05 a
    // background-coloured `strokeRect` per cell drew that line: at PP 16 to 64 on the default
    // page, 1,024 strokes beside 1,024–2,048 fills, issue 16.)
    let gap = r.max(1.0).round() as i32;
    // The device-pixel corners of a cell's fill (smaller first).
    let corners = |op: &GridOp| {
        let (x0, x1, y0, y1) = cell(op);
        let (a, b) = ((px(x0), px(y0)), (px(x1), px(y1)));
        let right = a.0.max(b.0) - if x1 - x0 >= 4.0 { gap } else { 0 };
        ((a.0.min(b.0), a.1.min(b.1)), (right, a.1.max(b.1)))
    };
    match fills {
        CellFills::OnePathPerColour => {
            fill_by_colour(&root, canvas, ops, theme, &corners)?;
        }
        #[cfg(test)]
        CellFills::OneRectanglePerCell => {
            // Fills in colour order (a colour is a micro-batch and a shade): the context's
            // fill style changes once per colour, not once per cell.
            let mut by_colour: Vec<&GridOp> = ops.iter().collect();
            by_colour.sort_by_key(|op| (op.micro_batch, op.shade as u8));
            for op in by_colour {
                let color = op_color(op.micro_batch, op.shade, theme);
                let (a, b) = corners(op);
                root.draw(&Rectangle::new([a, b], color.filled()))
                    .map_err(err)?;
            }
        }
    }
    // The labels through a backend of their own: its state cache starts empty, so it sets
    // every style the fills above set on the context directly.
    let root = area(canvas)?;
    if row_css >= 20.0 {
        let on_light = |shade: OpShade| matches!(shade, OpShade::Forward | OpShade::BackwardWeight);
        let dark_label = ("sans-serif", 10.0 * r).into_font().color(&BLACK);
        let light_label = ("sans-serif", 10.0 * r).into_font().color(&WHITE);
        for (light_cell, label) in [(true, dark_label), (false, light_label)] {
            let style = label.pos(Pos::new(HPos::Center, VPos::Center));
            for op in ops.iter().filter(|op| on_light(op.shade) == light_cell) {
                let (x0, x1, y0, y1) = cell(op);
                if x1 - x0 >= 16.0 {
                    root.draw(&Text::new(
                        format!("{}", op.micro_batch + 1),
                        (px((x0 + x1) / 2.0), px((y0 + y1) / 2.0)),
                        style.clone(),
                    ))
                    .map_err(err)?;
                }
            }
        }
    }
    let boxes = ops
        .iter()
        .map(|op| {
            let (x0, x1, y0, y1) = cell(op);
            HitBox {
                x0,
                y0,
                x1,
                y1,
                tip: Tip::default(),
            }
        })
        .collect();
    root.present().map_err(err)?;
    Ok(boxes)
}

/// The schedule's time axis: a line and a label every few slots, from `left` at `top` down to
/// the grid's foot.
fn draw_time_axis(
    root: &DrawingArea<Canvas2d, Shift>,
    theme: &Theme,
    r: f64,
    (left, top, slot): (f64, f64, f64),
    span: f64,
    css_height: f64,
) -> Result<(), String> {
    let px = |v: f64| (v * r).round() as i32;
    let font = ("sans-serif", 11.0 * r).into_font().color(&theme.muted);
    // Time axis: a tick label every k slots so labels never overlap.
    let every = [1.0, 2.0, 5.0, 10.0, 20.0, 50.0, 100.0, 200.0, 500.0, 1000.0]
        .into_iter()
        .find(|k| k * slot >= 28.0)
        .unwrap_or(2000.0);
    let mut t = 0.0;
    while t <= span + 1e-9 {
        let x = left + t * slot;
        root.draw(&PathElement::new(
            vec![(px(x), px(top - 4.0)), (px(x), px(css_height - 8.0))],
            theme.grid.stroke_width(r.max(1.0) as u32),
        ))
        .map_err(err)?;
        root.draw(&Text::new(
            format!("{t}"),
            (px(x), px(top - 6.0)),
            font.clone().pos(Pos::new(HPos::Center, VPos::Bottom)),
        ))
        .map_err(err)?;
        t += every;
    }

    Ok(())
}

/// Each row's idle background and its stage's name, or the note on the stages not drawn.
fn draw_row_labels(
    root: &DrawingArea<Canvas2d, Shift>,
    theme: &Theme,
    r: f64,
    rows: &[GridRow],
    (left, top, slot, row_css): (f64, f64, f64, f64),
    span: f64,
) -> Result<(), String> {
    let px = |v: f64| (v * r).round() as i32;
    let font = ("sans-serif", 11.0 * r).into_font().color(&theme.muted);
    for (i, row) in rows.iter().enumerate() {
        let y = top + row_css * i as f64;
        let mid = px(y + row_css / 2.0);
        match *row {
            GridRow::Stage(s) => {
                root.draw(&Rectangle::new(
                    [
                        (px(left), px(y + 2.0)),
                        (px(left + span * slot), px(y + row_css - 2.0)),
                    ],
                    theme.idle.filled(),
                ))
                .map_err(err)?;
                root.draw(&Text::new(
                    format!("stage {}", s + 1),
                    (px(left - 8.0), mid),
                    font.clone().pos(Pos::new(HPos::Right, VPos::Center)),
                ))
                .map_err(err)?;
            }
            GridRow::Elided { first, count } => {
                root.draw(&Text::new(
                    "⋮".to_string(),
                    (px(left - 24.0), mid),
                    font.clone().pos(Pos::new(HPos::Center, VPos::Center)),
                ))
                .map_err(err)?;
                root.draw(&Text::new(
                    format!(
                        "stages {} to {} ({count}) run the same pattern and are not drawn",
                        first + 1,
                        first + count
                    ),
                    (px(left + 4.0), mid),
                    font.clone().pos(Pos::new(HPos::Left, VPos::Center)),
                ))
                .map_err(err)?;
            }
        }
    }
    Ok(())
}

/// A cell's device-pixel corners, smaller first.
type CellCorners = ((i32, i32), (i32, i32));

/// The cells' fills, one path per colour (`corners`: a cell's device-pixel corners).
fn fill_by_colour(
    root: &DrawingArea<Canvas2d, Shift>,
    canvas: &HtmlCanvasElement,
    ops: &[GridOp],
    theme: &Theme,
    corners: &dyn Fn(&GridOp) -> CellCorners,
) -> Result<(), String> {
    // Fills in colour order (a colour is a micro-batch and a shade), each colour one
    // path of its cells filled once: the same pixels as a `fillRect` per cell (the
    // corners are whole device pixels and the colours opaque; `schedule_grid_pixels`
    // compares them), with one fill per colour instead of one per cell (issue 16:
    // the grid was the costliest view of a PP move, 64 stages × 32 micro-batches × 2).
    // First, what plotters drew is stroked: the backend may hold an open path of lines.
    root.present().map_err(err)?;
    let context = context_2d(canvas)?;
    let mut by_colour: Vec<&GridOp> = ops.iter().collect();
    by_colour.sort_by_key(|op| (op.micro_batch, op.shade as u8));
    for group in
        by_colour.chunk_by(|a, b| (a.micro_batch, a.shade as u8) == (b.micro_batch, b.shade as u8))
    {
        let color = op_color(group[0].micro_batch, group[0].shade, theme).to_backend_color();
        if color.alpha == 0.0 {
            continue;
        }
        context.set_fill_style_str(&crate::canvas_backend::css(color));
        context.begin_path();
        for op in group {
            let ((x0, y0), (x1, y1)) = corners(op);
            context.rect(
                f64::from(x0),
                f64::from(y0),
                f64::from(x1 - x0),
                f64::from(y1 - y0),
            );
        }
        context.fill();
    }
    Ok(())
}

/// One line of a line chart.
#[derive(Clone, Debug, PartialEq)]
pub struct Line {
    /// Points (x, y).
    pub points: Vec<(f64, f64)>,
    /// Palette index.
    pub color: usize,
}

/// Lines over a shared x axis, y as a percentage, with a marker at `mark_x`.
pub fn draw_lines(
    canvas: &HtmlCanvasElement,
    size: (f64, f64),
    lines: &[Line],
    (x_desc, y_desc): (&str, &str),
    mark_x: Option<f64>,
    theme: &Theme,
) -> Result<(), String> {
    draw_lines_with(
        canvas,
        size,
        lines,
        (x_desc, y_desc),
        mark_x,
        theme,
        LightMesh::Skipped,
    )
}

fn draw_lines_with(
    canvas: &HtmlCanvasElement,
    (css_width, css_height): (f64, f64),
    lines: &[Line],
    (x_desc, y_desc): (&str, &str),
    mark_x: Option<f64>,
    theme: &Theme,
    light: LightMesh,
) -> Result<(), String> {
    let Some((r, _)) = prepare(canvas, css_width, css_height) else {
        return Ok(());
    };
    let root = area(canvas)?;
    root.fill(&theme.bg).map_err(err)?;
    let x_max = lines
        .iter()
        .flat_map(|l| l.points.iter().map(|p| p.0))
        .fold(1.0_f64, f64::max);
    let y_max = lines
        .iter()
        .flat_map(|l| l.points.iter().map(|p| p.1))
        .filter(|y| y.is_finite())
        .fold(0.05_f64, f64::max)
        // Beyond 100% the curve says nothing new; clip it so small m does not flatten the rest.
        .min(1.0)
        * 1.08;
    let muted = ("sans-serif", 11.0 * r).into_font().color(&theme.muted);
    let mut chart = ChartBuilder::on(&root)
        .margin((10.0 * r) as i32)
        .x_label_area_size((34.0 * r) as u32)
        .y_label_area_size((48.0 * r) as u32)
        .build_cartesian_2d(1.0..x_max, 0.0..y_max)
        .map_err(err)?;
    chart
        .configure_mesh()
        .x_desc(x_desc)
        .y_desc(y_desc)
        .x_labels(8)
        .y_labels(6)
        .x_label_formatter(&|v| format!("{v:.0}"))
        .y_label_formatter(&|v| format!("{:.0}%", v * 100.0))
        .label_style(muted.clone())
        .axis_desc_style(muted)
        .axis_style(theme.muted.stroke_width(r.max(1.0) as u32))
        .light_line_style(light.style(theme))
        .bold_line_style(theme.grid.stroke_width(r.max(1.0) as u32))
        .draw()
        .map_err(err)?;
    for line in lines {
        let color = PALETTE[line.color % PALETTE.len()];
        let points: Vec<(f64, f64)> = line
            .points
            .iter()
            .copied()
            .filter(|p| p.1.is_finite())
            .map(|(x, y)| (x, y.min(y_max)))
            .collect();
        chart
            .draw_series(LineSeries::new(
                points,
                color.stroke_width((2.0 * r) as u32),
            ))
            .map_err(err)?;
    }
    if let Some(x) = mark_x.filter(|x| *x >= 1.0 && *x <= x_max) {
        chart
            .draw_series(DashedLineSeries::new(
                vec![(x, 0.0), (x, y_max)],
                (5.0 * r) as i32,
                (4.0 * r) as i32,
                theme.fg.stroke_width(r.max(1.0) as u32),
            ))
            .map_err(err)?;
        for line in lines {
            if let Some(&(_, y)) = line
                .points
                .iter()
                .min_by(|a, b| (a.0 - x).abs().total_cmp(&(b.0 - x).abs()))
            {
                let color = PALETTE[line.color % PALETTE.len()];
                chart
                    .draw_series(std::iter::once(Circle::new(
                        (x, y.min(y_max)),
                        (4.0 * r) as i32,
                        color.filled(),
                    )))
                    .map_err(err)?;
            }
        }
    }
    root.present().map_err(err)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use wasm_bindgen_test::wasm_bindgen_test;

    fn tip() -> Tip {
        Tip {
            title: "t".into(),
            value: "v".into(),
            lines: vec![],
        }
    }

    #[wasm_bindgen_test]
    fn hit_finds_the_box_under_the_pointer() {
        let boxes = vec![
            HitBox {
                x0: 0.0,
                y0: 0.0,
                x1: 10.0,
                y1: 10.0,
                tip: tip(),
            },
            HitBox {
                x0: 20.0,
                y0: 0.0,
                x1: 30.0,
                y1: 10.0,
                tip: Tip {
                    title: "second".into(),
                    ..tip()
                },
            },
        ];
        assert_eq!(
            hit(&boxes, 25.0, 5.0).map(|b| b.tip.title.as_str()),
            Some("second")
        );
        assert!(hit(&boxes, 15.0, 5.0).is_none());
    }

    /// A canvas in the test page, `css_width` wide.
    fn test_canvas() -> HtmlCanvasElement {
        use wasm_bindgen::JsCast;
        let document = web_sys::window()
            .and_then(|w| w.document())
            .expect("a document");
        let canvas: HtmlCanvasElement = document
            .create_element("canvas")
            .expect("canvas")
            .dyn_into()
            .expect("a canvas element");
        document
            .body()
            .expect("body")
            .append_child(&canvas)
            .expect("appended");
        canvas
    }

    fn pixels(canvas: &HtmlCanvasElement) -> Vec<u8> {
        context_2d(canvas)
            .expect("2d")
            .get_image_data(
                0.0,
                0.0,
                f64::from(canvas.width()),
                f64::from(canvas.height()),
            )
            .expect("image data")
            .data()
            .0
    }

    /// A pipeline of `stages` × `micro_batches` with half-slot backward-weight ops and two
    /// chunks, so cells start and end between device pixels and some are narrower than the
    /// outline and label thresholds.
    fn grid_ops(stages: u32, micro_batches: u32) -> Vec<GridOp> {
        let mut ops = Vec::new();
        for s in 0..stages {
            for mb in 0..micro_batches {
                let f = f64::from(s + mb);
                ops.push(GridOp {
                    stage: s,
                    start: f,
                    duration: 1.0,
                    micro_batch: mb,
                    chunk: mb % 2,
                    shade: OpShade::Forward,
                });
                let b = f64::from(stages + micro_batches + mb) + f64::from(stages - s);
                ops.push(GridOp {
                    stage: s,
                    start: b,
                    duration: 1.5,
                    micro_batch: mb,
                    chunk: 0,
                    shade: if mb % 3 == 0 {
                        OpShade::BackwardInput
                    } else {
                        OpShade::Backward
                    },
                });
                ops.push(GridOp {
                    stage: s,
                    start: b + 1.5,
                    duration: 0.5,
                    micro_batch: mb,
                    chunk: 0,
                    shade: OpShade::BackwardWeight,
                });
            }
        }
        ops
    }

    /// The grid with one path per colour is the grid with a plotters rectangle per cell,
    /// pixel for pixel: 4 and 16 stages (labelled cells), 64 stages × 32 micro-batches
    /// (the search's largest), light and dark, at two widths.
    #[wasm_bindgen_test]
    fn schedule_grid_pixels_are_those_of_a_rectangle_per_cell() {
        for (stages, mbs) in [(4, 8), (16, 16), (64, 32)] {
            let ops = grid_ops(stages, mbs);
            let span = ops.iter().map(|o| o.start + o.duration).fold(0.0, f64::max);
            let rows = every_stage(stages);
            let grid = ScheduleGrid {
                rows: &rows,
                span,
                ops: &ops,
            };
            for dark in [false, true] {
                let theme = Theme::new(dark);
                for width in [640.0, 1203.0] {
                    let (a, b) = (test_canvas(), test_canvas());
                    draw_schedule_with(&a, width, &grid, &theme, CellFills::OnePathPerColour)
                        .expect("drawn");
                    draw_schedule_with(&b, width, &grid, &theme, CellFills::OneRectanglePerCell)
                        .expect("drawn");
                    let (pa, pb) = (pixels(&a), pixels(&b));
                    assert_eq!(pa.len(), pb.len());
                    let differ = pa.iter().zip(&pb).filter(|(x, y)| x != y).count();
                    assert_eq!(
                        differ, 0,
                        "{stages} stages × {mbs}, dark {dark}, width {width}"
                    );
                    // The grid drew something: the cells' colours are on the canvas.
                    assert!(pa.chunks(4).any(|p| p[..3] != pa[..3]));
                    a.remove();
                    b.remove();
                }
            }
        }
    }

    /// Two neighbouring cells in one row are parted by one device-pixel column of the row's
    /// idle colour, and each cell keeps its own colour up to that column.
    #[wasm_bindgen_test]
    fn neighbouring_cells_are_parted_by_a_column_of_the_row() {
        let op = |start: f64, micro_batch: u32| GridOp {
            stage: 0,
            start,
            duration: 1.0,
            micro_batch,
            chunk: 0,
            shade: OpShade::Forward,
        };
        let ops = [op(0.0, 0), op(1.0, 1)];
        let theme = Theme::new(false);
        let canvas = test_canvas();
        // 64 px of stage labels and a 10 px right margin leave 100 px per slot.
        draw_schedule(&canvas, 274.0, &every_stage(1), 2.0, &ops, &theme).expect("drawn");
        let width = canvas.width() as usize;
        let ratio = width as f64 / 274.0;
        let data = pixels(&canvas);
        // Halfway down the row: 26 px above the grid, 2 px to the cell, 22 px of cell.
        let y = ((26.0 + 13.0) * ratio).round() as usize;
        let at = |x: usize| data[(y * width + x) * 4..(y * width + x) * 4 + 3].to_vec();
        let rgb = |c: plotters_backend::BackendColor| vec![c.rgb.0, c.rgb.1, c.rgb.2];
        let boundary = ((64.0 + 100.0) * ratio).round() as usize;
        let gap = ratio.max(1.0).round() as usize;
        let first = op_color(0, OpShade::Forward, &theme).to_backend_color();
        let second = op_color(1, OpShade::Forward, &theme).to_backend_color();
        assert_eq!(
            at(boundary - gap - 1),
            rgb(first),
            "the first cell up to its gap"
        );
        for x in boundary - gap..boundary {
            assert_eq!(
                at(x),
                rgb(theme.idle.to_backend_color()),
                "the gap at x = {x}"
            );
        }
        assert_eq!(
            at(boundary),
            rgb(second),
            "the second cell from the boundary"
        );
        canvas.remove();
    }

    /// Bars of one to four stacked segments (some light, one bar selected) under two limits.
    fn test_bars(n: usize) -> Vec<Bar> {
        (0..n)
            .map(|i| Bar {
                label: format!("bar {i}"),
                caption: format!("{i}0 GB"),
                segments: (0..=i % 4)
                    .map(|k| Segment {
                        bytes: 7.3e9 * (k + 1) as f64 + 1.1e9 * i as f64,
                        color: k + i,
                        light: k % 2 == 1,
                        tip: Tip {
                            title: String::new(),
                            value: String::new(),
                            lines: Vec::new(),
                        },
                    })
                    .collect(),
                selected: i == 1,
            })
            .collect()
    }

    /// Both charts, pixel for pixel, with the light mesh skipped and with it drawn in the
    /// background's colour as before: one, four and sixteen bars, the lines chart, light and
    /// dark, at two widths.
    #[wasm_bindgen_test]
    fn skipping_the_light_mesh_leaves_every_pixel() {
        let limits = [
            Limit {
                bytes: 85.9e9,
                label: "GPU memory".into(),
            },
            Limit {
                bytes: 77.0e9,
                label: "usable".into(),
            },
        ];
        let lines = [Line {
            points: (1..=64)
                .map(|m| (f64::from(m), 3.0 / f64::from(m + 3)))
                .collect(),
            color: 0,
        }];
        let same = |draw: &dyn Fn(&HtmlCanvasElement, LightMesh), case: &str| {
            let (a, b) = (test_canvas(), test_canvas());
            draw(&a, LightMesh::Skipped);
            draw(&b, LightMesh::InBackground);
            let (pa, pb) = (pixels(&a), pixels(&b));
            assert_eq!(pa.len(), pb.len(), "{case}");
            let differ = pa.iter().zip(&pb).filter(|(x, y)| x != y).count();
            assert_eq!(differ, 0, "{case}");
            assert!(pa.chunks(4).any(|p| p[..3] != pa[..3]), "{case}: drawn");
            a.remove();
            b.remove();
        };
        for dark in [false, true] {
            let theme = Theme::new(dark);
            for width in [480.0, 917.0] {
                for n in [1, 4, 16] {
                    let bars = test_bars(n);
                    same(
                        &|c, light| {
                            draw_stacked_bars_with(
                                c,
                                (width, 300.0),
                                &bars,
                                &limits,
                                "GB per GPU",
                                &theme,
                                light,
                            )
                            .expect("drawn");
                        },
                        &format!("{n} bars, dark {dark}, width {width}"),
                    );
                }
                same(
                    &|c, light| {
                        draw_lines_with(
                            c,
                            (width, 240.0),
                            &lines,
                            ("m", "bubble"),
                            Some(8.0),
                            &theme,
                            light,
                        )
                        .expect("drawn");
                    },
                    &format!("lines, dark {dark}, width {width}"),
                );
            }
        }
    }

    /// The hovered op's tip, built on demand, says what the eager one said: stage and
    /// micro-batch 1-based, the chunk only when it is not the first, slots with sig3's
    /// two decimals below 10 (start 1.5 + 0.5 = 2.00).
    #[wasm_bindgen_test]
    fn schedule_tip_names_the_op_and_its_slots() {
        let op = GridOp {
            stage: 2,
            start: 1.5,
            duration: 0.5,
            micro_batch: 0,
            chunk: 1,
            shade: OpShade::Backward,
        };
        let t = schedule_tip(&op);
        assert_eq!(t.title, "stage 3, micro-batch 1");
        assert_eq!(t.value, "backward, chunk 2");
        assert_eq!(t.lines, vec!["slots 1.50 to 2.00".to_string()]);
        let first_chunk = schedule_tip(&GridOp { chunk: 0, ..op });
        assert_eq!(first_chunk.value, "backward");
    }

    #[wasm_bindgen_test]
    fn palette_css_colours() {
        assert_eq!(css_color(0), "#0072b2");
        assert_eq!(css_color(PALETTE.len()), "#0072b2");
    }
}
