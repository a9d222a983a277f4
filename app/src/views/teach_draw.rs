//! Canvas drawings of the teaching figures. Everything drawn comes from
//! `planner_core::figures::teaching`; lengths are CSS pixels, scaled by the device
//! pixel ratio when drawn (as in `charts.rs`).

use crate::canvas_backend::Canvas2d;
use planner_core::figures::teaching::{
    ChunkCell, CollectiveDemo, CpAttention, CpGrid, DdpOverlapDemo, DdpTimeline, EpRouting,
    FsdpLane, FsdpLanes, MlpSplit, StrategySketch, WeightSplit,
};
use planner_core::input::collective::{Collective, LinkDomain};
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use web_sys::HtmlCanvasElement;

use crate::charts::{prepare, HitBox, Theme, Tip, PALETTE};
use crate::format;
pub use crate::format::seconds;

type Area = DrawingArea<Canvas2d, Shift>;

fn err<E: std::fmt::Debug>(e: E) -> String {
    format!("teaching figure: {e:?}")
}

/// A drawing surface in CSS pixels.
struct Pen {
    root: Area,
    r: f64,
    theme: Theme,
    width: f64,
}

impl Pen {
    fn new(
        canvas: &HtmlCanvasElement,
        css_width: f64,
        css_height: f64,
        theme: &Theme,
    ) -> Result<Option<Pen>, String> {
        let Some((r, width)) = prepare(canvas, css_width, css_height) else {
            return Ok(None);
        };
        let root = Canvas2d::new(canvas.clone())
            .map(IntoDrawingArea::into_drawing_area)
            .ok_or_else(|| "teaching figure: no 2d context".to_string())?;
        root.fill(&theme.bg).map_err(err)?;
        Ok(Some(Pen {
            root,
            r,
            theme: *theme,
            width,
        }))
    }

    fn p(&self, v: f64) -> i32 {
        (v * self.r).round() as i32
    }

    fn pt(&self, x: f64, y: f64) -> (i32, i32) {
        (self.p(x), self.p(y))
    }

    fn fill(&self, x0: f64, y0: f64, x1: f64, y1: f64, c: RGBColor) -> Result<(), String> {
        self.root
            .draw(&Rectangle::new(
                [self.pt(x0, y0), self.pt(x1, y1)],
                c.filled(),
            ))
            .map_err(err)
    }

    fn outline(
        &self,
        x0: f64,
        y0: f64,
        x1: f64,
        y1: f64,
        c: RGBColor,
        w: f64,
    ) -> Result<(), String> {
        self.root
            .draw(&Rectangle::new(
                [self.pt(x0, y0), self.pt(x1, y1)],
                c.stroke_width((w * self.r).max(1.0) as u32),
            ))
            .map_err(err)
    }

    fn line(&self, pts: &[(f64, f64)], c: RGBColor, w: f64) -> Result<(), String> {
        self.root
            .draw(&PathElement::new(
                pts.iter().map(|&(x, y)| self.pt(x, y)).collect::<Vec<_>>(),
                c.stroke_width((w * self.r).max(1.0) as u32),
            ))
            .map_err(err)
    }

    fn dashed(&self, a: (f64, f64), b: (f64, f64), c: RGBColor, w: f64) -> Result<(), String> {
        let len = ((b.0 - a.0).powi(2) + (b.1 - a.1).powi(2)).sqrt();
        let n = (len / 6.0).floor().max(1.0) as usize;
        for i in (0..n).step_by(2) {
            let t0 = i as f64 / n as f64;
            let t1 = ((i + 1) as f64 / n as f64).min(1.0);
            self.line(
                &[
                    (a.0 + (b.0 - a.0) * t0, a.1 + (b.1 - a.1) * t0),
                    (a.0 + (b.0 - a.0) * t1, a.1 + (b.1 - a.1) * t1),
                ],
                c,
                w,
            )?;
        }
        Ok(())
    }

    fn poly(&self, pts: &[(f64, f64)], c: RGBColor) -> Result<(), String> {
        self.root
            .draw(&Polygon::new(
                pts.iter().map(|&(x, y)| self.pt(x, y)).collect::<Vec<_>>(),
                c.filled(),
            ))
            .map_err(err)
    }

    fn dot(&self, x: f64, y: f64, radius: f64, c: RGBColor) -> Result<(), String> {
        self.root
            .draw(&Circle::new(self.pt(x, y), self.p(radius), c.filled()))
            .map_err(err)
    }

    #[allow(clippy::too_many_arguments)]
    fn text(
        &self,
        s: &str,
        x: f64,
        y: f64,
        size: f64,
        c: RGBColor,
        h: HPos,
        v: VPos,
    ) -> Result<(), String> {
        let style = ("sans-serif", size * self.r)
            .into_font()
            .color(&c)
            .pos(Pos::new(h, v));
        self.root
            .draw(&Text::new(s.to_string(), self.pt(x, y), style))
            .map_err(err)
    }

    /// An arrow from `a` to `b` with a filled head.
    fn arrow(&self, a: (f64, f64), b: (f64, f64), c: RGBColor, w: f64) -> Result<(), String> {
        self.line(&[a, b], c, w)?;
        let (dx, dy) = (b.0 - a.0, b.1 - a.1);
        let len = (dx * dx + dy * dy).sqrt().max(1e-9);
        let (ux, uy) = (dx / len, dy / len);
        let head = 6.0;
        self.poly(
            &[
                b,
                (
                    b.0 - ux * head - uy * head * 0.5,
                    b.1 - uy * head + ux * head * 0.5,
                ),
                (
                    b.0 - ux * head + uy * head * 0.5,
                    b.1 - uy * head - ux * head * 0.5,
                ),
            ],
            c,
        )
    }

    fn present(self) -> Result<(), String> {
        self.root.present().map_err(err)
    }
}

/// Text colour that reads on palette colour `i`.
fn on(i: usize) -> RGBColor {
    if matches!(i % PALETTE.len(), 1 | 3 | 4 | 6) {
        BLACK
    } else {
        WHITE
    }
}

fn pal(i: usize) -> RGBColor {
    PALETTE[i % PALETTE.len()]
}

/// `A`, `B`, ... for rank `r`'s data.
fn letter(r: u32) -> char {
    char::from_u32('A' as u32 + (r % 26)).unwrap_or('?')
}

fn tip(title: String, value: String, lines: Vec<String>) -> Tip {
    Tip {
        title,
        value,
        lines,
    }
}

/// Short name of a collective.
pub fn op_label(op: Collective) -> &'static str {
    match op {
        Collective::AllReduce => "all-reduce",
        Collective::AllGather => "all-gather",
        Collective::ReduceScatter => "reduce-scatter",
        Collective::AllToAll => "all-to-all",
        Collective::Broadcast => "broadcast",
        Collective::Reduce => "reduce",
        Collective::SendRecv => "send/recv",
    }
}

// ---------------------------------------------------------------------------
// Collectives
// ---------------------------------------------------------------------------

/// Height of a collective figure.
pub const COLLECTIVE_HEIGHT: f64 = 150.0;

/// Before and after grids of one collective.
pub fn draw_collective(
    canvas: &HtmlCanvasElement,
    css_width: f64,
    demo: &CollectiveDemo,
    theme: &Theme,
) -> Result<Vec<HitBox>, String> {
    let Some(pen) = Pen::new(canvas, css_width, COLLECTIVE_HEIGHT, theme)? else {
        return Ok(Vec::new());
    };
    let n = demo.ranks.max(1) as f64;
    let left = 50.0;
    let gap = 44.0;
    let cell = ((pen.width - left - gap - 8.0) / (2.0 * n)).clamp(14.0, 40.0);
    let row = ((COLLECTIVE_HEIGHT - 34.0) / n).min(28.0);
    let top = 26.0;
    let grid_w = cell * n;
    let x_after = left + grid_w + gap;
    let mut boxes = Vec::new();
    for (label, x0) in [("before", left), ("after", x_after)] {
        pen.text(
            label,
            x0 + grid_w / 2.0,
            top - 8.0,
            12.0,
            theme.muted,
            HPos::Center,
            VPos::Bottom,
        )?;
    }
    let sum_fill = theme.fg;
    let sum_text = theme.bg;
    let draw_grid = |x0: f64, grid: &Vec<Vec<Option<ChunkCell>>>, boxes: &mut Vec<HitBox>| {
        for (r, slots) in grid.iter().enumerate() {
            let y = top + row * r as f64;
            for (c, slot) in slots.iter().enumerate() {
                let x = x0 + cell * c as f64;
                let (a, b) = ((x + 1.5, y + 1.5), (x + cell - 1.5, y + row - 1.5));
                match slot {
                    None => pen.outline(a.0, a.1, b.0, b.1, theme.grid, 1.0)?,
                    Some(cellv) => {
                        let single = cellv.from.len() == 1;
                        let (fill, fg, text) = if single {
                            let f = cellv.from[0] as usize;
                            (
                                pal(f),
                                on(f),
                                format!("{}{}", letter(cellv.from[0]), cellv.chunk),
                            )
                        } else {
                            (sum_fill, sum_text, format!("Σ{}", cellv.chunk))
                        };
                        pen.fill(a.0, a.1, b.0, b.1, fill)?;
                        pen.text(
                            &text,
                            x + cell / 2.0,
                            y + row / 2.0,
                            11.0,
                            fg,
                            HPos::Center,
                            VPos::Center,
                        )?;
                        let who = if single {
                            format!("rank {}'s chunk {}", cellv.from[0], cellv.chunk)
                        } else {
                            format!(
                                "chunk {} summed over ranks {}",
                                cellv.chunk,
                                cellv
                                    .from
                                    .iter()
                                    .map(u32::to_string)
                                    .collect::<Vec<_>>()
                                    .join(", ")
                            )
                        };
                        boxes.push(HitBox {
                            x0: x,
                            y0: y,
                            x1: x + cell,
                            y1: y + row,
                            tip: tip(format!("rank {r}, slot {c}"), who, Vec::new()),
                        });
                    }
                }
            }
        }
        Ok::<(), String>(())
    };
    for r in 0..demo.ranks {
        pen.text(
            &format!("rank {r}"),
            left - 6.0,
            top + row * (f64::from(r) + 0.5),
            11.0,
            theme.muted,
            HPos::Right,
            VPos::Center,
        )?;
    }
    draw_grid(left, &demo.before, &mut boxes)?;
    draw_grid(x_after, &demo.after, &mut boxes)?;
    let mid_y = top + row * n / 2.0;
    pen.arrow(
        (left + grid_w + 8.0, mid_y),
        (x_after - 8.0, mid_y),
        theme.fg,
        2.0,
    )?;
    pen.present()?;
    Ok(boxes)
}

// ---------------------------------------------------------------------------
// Strategy sketches
// ---------------------------------------------------------------------------

/// Height of the six sketches (two rows of three).
pub fn sketches_height(css_width: f64) -> f64 {
    if css_width < 620.0 {
        3.0 * 150.0
    } else {
        2.0 * 150.0
    }
}

/// The six strategies on four GPUs; `used[i]`: the layout uses sketch i.
pub fn draw_sketches(
    canvas: &HtmlCanvasElement,
    css_width: f64,
    sketches: &[StrategySketch],
    used: &[bool],
    theme: &Theme,
) -> Result<Vec<HitBox>, String> {
    let height = sketches_height(css_width);
    let Some(pen) = Pen::new(canvas, css_width, height, theme)? else {
        return Ok(Vec::new());
    };
    let cols = if css_width < 620.0 { 2 } else { 3 };
    let panel_w = pen.width / f64::from(cols);
    let panel_h = 150.0;
    let mut boxes = Vec::new();
    for (i, sk) in sketches.iter().enumerate() {
        let px = panel_w * (i as u32 % cols) as f64;
        let py = panel_h * (i as u32 / cols) as f64;
        let in_use = used.get(i).copied().unwrap_or(false);
        if in_use {
            pen.outline(
                px + 2.0,
                py + 2.0,
                px + panel_w - 2.0,
                py + panel_h - 2.0,
                pal(0),
                2.0,
            )?;
        }
        pen.text(
            &format!("{} · {}", sk.label, op_label(sk.collective)),
            px + 10.0,
            py + 8.0,
            12.5,
            theme.fg,
            HPos::Left,
            VPos::Top,
        )?;
        if in_use {
            pen.text(
                "in this layout",
                px + panel_w - 10.0,
                py + 9.0,
                10.5,
                pal(0),
                HPos::Right,
                VPos::Top,
            )?;
        }
        let gap = 6.0;
        let gpu_w = (panel_w - 20.0 - 3.0 * gap) / 4.0;
        let layer_h = 13.0;
        let gy = py + 28.0;
        for (g, gpu) in sk.gpus.iter().enumerate() {
            let gx = px + 10.0 + (gpu_w + gap) * g as f64;
            pen.outline(
                gx,
                gy,
                gx + gpu_w,
                gy + 4.0 * layer_h + 48.0,
                theme.muted,
                1.0,
            )?;
            pen.text(
                &format!("GPU {g}"),
                gx + gpu_w / 2.0,
                gy + 2.0,
                10.0,
                theme.muted,
                HPos::Center,
                VPos::Top,
            )?;
            let color = pal(g);
            for layer in 1..=4u32 {
                let ly = gy + 16.0 + layer_h * f64::from(layer - 1);
                let (x0, x1) = (gx + 4.0, gx + gpu_w - 4.0);
                let held = layer >= gpu.layers[0] && layer <= gpu.layers[1];
                if !held {
                    pen.outline(x0, ly + 1.0, x1, ly + layer_h - 1.0, theme.grid, 1.0)?;
                    continue;
                }
                let of = f64::from(gpu.weight_share.of.max(1));
                let part = f64::from(gpu.weight_share.part);
                let w = x1 - x0;
                match gpu.weights {
                    WeightSplit::Whole => pen.fill(x0, ly + 1.0, x1, ly + layer_h - 1.0, color)?,
                    WeightSplit::Shard | WeightSplit::Slice => {
                        // Shard: a flat piece of the layer, gathered when needed (dashed);
                        // slice: a column block of every matrix, never gathered.
                        let outline = if gpu.weights == WeightSplit::Shard {
                            theme.muted
                        } else {
                            theme.grid
                        };
                        pen.outline(x0, ly + 1.0, x1, ly + layer_h - 1.0, outline, 1.0)?;
                        pen.fill(
                            x0 + w * part / of,
                            ly + 1.0,
                            x0 + w * (part + 1.0) / of,
                            ly + layer_h - 1.0,
                            color,
                        )?;
                    }
                }
                if g == 0 {
                    pen.text(
                        &format!("L{layer}"),
                        gx - 1.0,
                        ly + layer_h / 2.0,
                        8.5,
                        theme.muted,
                        HPos::Right,
                        VPos::Center,
                    )?;
                }
            }
            let mut lines = Vec::new();
            lines.push(if gpu.batch.of > 1 {
                format!("batch {}/{}", gpu.batch.part + 1, gpu.batch.of)
            } else {
                "same batch".to_string()
            });
            if gpu.sequence.of > 1 {
                lines.push(format!(
                    "tokens {}/{}",
                    gpu.sequence.part + 1,
                    gpu.sequence.of
                ));
            }
            if let Some(e) = gpu.expert {
                lines.push(format!("expert {e}"));
            } else if gpu.weights == WeightSplit::Slice {
                lines.push(format!(
                    "slice {}/{}",
                    gpu.weight_share.part + 1,
                    gpu.weight_share.of
                ));
            } else if gpu.weights == WeightSplit::Shard {
                lines.push(format!(
                    "shard {}/{}",
                    gpu.weight_share.part + 1,
                    gpu.weight_share.of
                ));
            }
            for (k, l) in lines.iter().enumerate() {
                pen.text(
                    l,
                    gx + gpu_w / 2.0,
                    gy + 4.0 * layer_h + 20.0 + 12.0 * k as f64,
                    9.5,
                    theme.fg,
                    HPos::Center,
                    VPos::Top,
                )?;
            }
            boxes.push(HitBox {
                x0: gx,
                y0: gy,
                x1: gx + gpu_w,
                y1: gy + 4.0 * layer_h + 48.0,
                tip: tip(
                    format!("{}: GPU {g}", sk.label),
                    format!(
                        "layers {}–{}{}",
                        gpu.layers[0],
                        gpu.layers[1],
                        match gpu.weights {
                            WeightSplit::Whole => ", whole".to_string(),
                            WeightSplit::Shard => format!(
                                ", shard {}/{} of each (all-gathered to compute)",
                                gpu.weight_share.part + 1,
                                gpu.weight_share.of
                            ),
                            WeightSplit::Slice => format!(
                                ", slice {}/{} of every matrix",
                                gpu.weight_share.part + 1,
                                gpu.weight_share.of
                            ),
                        }
                    ),
                    lines,
                ),
            });
        }
    }
    pen.present()?;
    Ok(boxes)
}

// ---------------------------------------------------------------------------
// Time axes shared by the DDP and FSDP figures
// ---------------------------------------------------------------------------

/// A tick step (1, 2, 5 × 10^k) giving about `n` ticks over `span`.
fn tick_step(span: f64, n: f64) -> f64 {
    let raw = (span / n.max(1.0)).max(1e-12);
    let mag = 10f64.powf(raw.log10().floor());
    [1.0, 2.0, 5.0, 10.0]
        .into_iter()
        .map(|k| k * mag)
        .find(|s| *s >= raw)
        .unwrap_or(10.0 * mag)
}

fn time_axis(pen: &Pen, x0: f64, x1: f64, y: f64, bottom: f64, span: f64) -> Result<(), String> {
    let step = tick_step(span, ((x1 - x0) / 80.0).max(2.0));
    let mut t = 0.0;
    while t <= span * 1.0001 {
        let x = x0 + (x1 - x0) * t / span;
        pen.line(&[(x, y), (x, bottom)], pen.theme.grid, 1.0)?;
        pen.text(
            &seconds(t),
            x,
            y - 3.0,
            10.0,
            pen.theme.muted,
            HPos::Center,
            VPos::Bottom,
        )?;
        t += step;
    }
    Ok(())
}

// ---------------------------------------------------------------------------
// DDP overlap
// ---------------------------------------------------------------------------

/// Height of the DDP figure.
pub const DDP_HEIGHT: f64 = 232.0;

fn link_name(link: LinkDomain) -> &'static str {
    match link {
        LinkDomain::IntraNode => "fast link (in node)",
        LinkDomain::InterNode => "slow link (network)",
    }
}

/// Backward blocks and their bucketed all-reduces on the fast and slow link.
pub fn draw_ddp(
    canvas: &HtmlCanvasElement,
    css_width: f64,
    demo: &DdpOverlapDemo,
    theme: &Theme,
) -> Result<Vec<HitBox>, String> {
    let Some(pen) = Pen::new(canvas, css_width, DDP_HEIGHT, theme)? else {
        return Ok(Vec::new());
    };
    let left = 92.0;
    let right = pen.width - 14.0;
    let span = demo
        .fast
        .all_reduce_end_s
        .max(demo.slow.all_reduce_end_s)
        .max(1e-9)
        * 1.04;
    let xs = |t: f64| left + (right - left) * t / span;
    let top = 22.0;
    time_axis(&pen, left, right, top, DDP_HEIGHT - 6.0, span)?;
    let mut boxes = Vec::new();
    let lane = 26.0;
    for (k, tl) in [&demo.fast, &demo.slow].into_iter().enumerate() {
        let y0 = top + 8.0 + k as f64 * (2.0 * lane + 48.0);
        draw_ddp_timeline(&pen, tl, y0, lane, left, &xs, &mut boxes)?;
    }
    pen.present()?;
    Ok(boxes)
}

fn draw_ddp_timeline(
    pen: &Pen,
    tl: &DdpTimeline,
    y0: f64,
    lane: f64,
    left: f64,
    xs: &dyn Fn(f64) -> f64,
    boxes: &mut Vec<HitBox>,
) -> Result<(), String> {
    let th = pen.theme;
    pen.text(
        &format!(
            "{} · {}/s",
            link_name(tl.link),
            format::bytes(tl.busbw_bytes_per_s)
        ),
        left,
        y0,
        11.5,
        th.fg,
        HPos::Left,
        VPos::Top,
    )?;
    let yb = y0 + 16.0;
    let ya = yb + lane;
    for (label, y) in [("backward", yb), ("all-reduce", ya)] {
        pen.text(
            label,
            left - 6.0,
            y + lane / 2.0,
            10.5,
            th.muted,
            HPos::Right,
            VPos::Center,
        )?;
    }
    for (i, b) in tl.blocks.iter().enumerate() {
        let c = pal(i);
        let (bx0, bx1) = (xs(b.backward_start_s), xs(b.backward_end_s));
        pen.fill(bx0, yb + 2.0, bx1.max(bx0 + 1.0), yb + lane - 2.0, c)?;
        pen.outline(
            bx0,
            yb + 2.0,
            bx1.max(bx0 + 1.0),
            yb + lane - 2.0,
            th.bg,
            1.0,
        )?;
        let label = format!("L{}–{}", b.layers[1], b.layers[0]);
        if bx1 - bx0 > 44.0 {
            pen.text(
                &label,
                (bx0 + bx1) / 2.0,
                yb + lane / 2.0,
                10.0,
                on(i),
                HPos::Center,
                VPos::Center,
            )?;
        }
        boxes.push(HitBox {
            x0: bx0,
            y0: yb,
            x1: bx1,
            y1: yb + lane,
            tip: tip(
                format!("backward of layers {}–{}", b.layers[1], b.layers[0]),
                format!(
                    "{} to {}",
                    seconds(b.backward_start_s),
                    seconds(b.backward_end_s)
                ),
                vec![format!(
                    "{} of gradients in {} buckets",
                    format::bytes(b.grad_bytes),
                    b.buckets
                )],
            ),
        });
        let (ax0, ax1) = (xs(b.all_reduce_start_s), xs(b.all_reduce_end_s));
        if b.buckets > 0.0 {
            pen.fill(ax0, ya + 2.0, ax1.max(ax0 + 1.0), ya + lane - 2.0, c)?;
            pen.outline(
                ax0,
                ya + 2.0,
                ax1.max(ax0 + 1.0),
                ya + lane - 2.0,
                th.bg,
                1.0,
            )?;
            if ax1 - ax0 > 44.0 {
                pen.text(
                    &label,
                    (ax0 + ax1) / 2.0,
                    ya + lane / 2.0,
                    10.0,
                    on(i),
                    HPos::Center,
                    VPos::Center,
                )?;
            }
            boxes.push(HitBox {
                x0: ax0,
                y0: ya,
                x1: ax1,
                y1: ya + lane,
                tip: tip(
                    format!("all-reduce of layers {}–{}", b.layers[1], b.layers[0]),
                    format!(
                        "{} to {}",
                        seconds(b.all_reduce_start_s),
                        seconds(b.all_reduce_end_s)
                    ),
                    vec![format!(
                        "{} in {} buckets",
                        format::bytes(b.grad_bytes),
                        b.buckets
                    )],
                ),
            });
        }
    }
    // Backward done: everything after it on the all-reduce lane is the GPU waiting.
    let xe = xs(tl.backward_end_s);
    pen.dashed((xe, yb - 2.0), (xe, ya + lane + 2.0), th.fg, 1.0)?;
    if tl.exposed_wait_s > 0.0 {
        let xw = xs(tl.all_reduce_end_s);
        pen.line(
            &[(xe, ya + lane + 5.0), (xw, ya + lane + 5.0)],
            th.limit,
            2.0,
        )?;
        pen.text(
            &format!("GPU waits {}", seconds(tl.exposed_wait_s)),
            xw.min(pen.width - 8.0),
            ya + lane + 8.0,
            10.5,
            th.limit,
            HPos::Right,
            VPos::Top,
        )?;
    } else {
        pen.text(
            "all-reduce hidden behind backward",
            xe,
            ya + lane + 8.0,
            10.5,
            th.muted,
            HPos::Right,
            VPos::Top,
        )?;
    }
    Ok(())
}

// ---------------------------------------------------------------------------
// FSDP lanes
// ---------------------------------------------------------------------------

/// Height of the FSDP figure.
pub const FSDP_HEIGHT: f64 = 262.0;

/// Name of an FSDP lane.
pub fn lane_label(lane: FsdpLane) -> &'static str {
    match lane {
        FsdpLane::AllGatherForward => "all-gather",
        FsdpLane::Forward => "forward",
        FsdpLane::AllGatherBackward => "all-gather",
        FsdpLane::Backward => "backward",
        FsdpLane::ReduceScatter => "reduce-scatter",
    }
}

/// One FSDP layer: communication and compute lanes, and the memory held below.
pub fn draw_fsdp(
    canvas: &HtmlCanvasElement,
    css_width: f64,
    f: &FsdpLanes,
    theme: &Theme,
) -> Result<Vec<HitBox>, String> {
    let Some(pen) = Pen::new(canvas, css_width, FSDP_HEIGHT, theme)? else {
        return Ok(Vec::new());
    };
    let left = 104.0;
    let right = pen.width - 14.0;
    let span = f.bars.iter().map(|b| b.end_s).fold(1e-12, f64::max) * 1.02;
    let xs = |t: f64| left + (right - left) * t / span;
    let top = 22.0;
    time_axis(&pen, left, right, top, FSDP_HEIGHT - 6.0, span)?;
    let lane = 24.0;
    let lanes = [("communication", 0usize), ("compute", 1usize)];
    let mut boxes = Vec::new();
    for (label, k) in lanes {
        pen.text(
            label,
            left - 6.0,
            top + 6.0 + lane * (k as f64 + 0.5),
            10.5,
            theme.muted,
            HPos::Right,
            VPos::Center,
        )?;
    }
    for b in &f.bars {
        let (k, color) = match b.lane {
            FsdpLane::AllGatherForward | FsdpLane::AllGatherBackward => (0, 0),
            FsdpLane::ReduceScatter => (0, 5),
            FsdpLane::Forward => (1, 2),
            FsdpLane::Backward => (1, 8),
        };
        let y = top + 6.0 + lane * k as f64;
        let (x0, x1) = (xs(b.start_s), xs(b.end_s).max(xs(b.start_s) + 1.0));
        pen.fill(x0, y + 2.0, x1, y + lane - 2.0, pal(color))?;
        if x1 - x0 > 70.0 {
            pen.text(
                lane_label(b.lane),
                (x0 + x1) / 2.0,
                y + lane / 2.0,
                10.0,
                on(color),
                HPos::Center,
                VPos::Center,
            )?;
        }
        let mut lines = vec![format!("{} to {}", seconds(b.start_s), seconds(b.end_s))];
        if b.message_bytes > 0.0 {
            lines.push(format!("message {}", format::bytes(b.message_bytes)));
        }
        boxes.push(HitBox {
            x0,
            y0: y,
            x1,
            y1: y + lane,
            tip: tip(
                lane_label(b.lane).to_string(),
                seconds(b.duration_s()),
                lines,
            ),
        });
    }
    // Memory held for the layer: stacked step chart.
    let mem_top = top + 6.0 + 2.0 * lane + 26.0;
    let mem_bottom = FSDP_HEIGHT - 22.0;
    let max_mem = f.max_held_bytes().max(1.0);
    let ys = |b: f64| mem_bottom - (mem_bottom - mem_top) * b / max_mem;
    pen.text(
        &format!("held: up to {}", format::bytes(max_mem)),
        left - 6.0,
        mem_top,
        10.5,
        theme.muted,
        HPos::Right,
        VPos::Top,
    )?;
    pen.text(
        "memory",
        left - 6.0,
        (mem_top + mem_bottom) / 2.0 + 8.0,
        10.5,
        theme.muted,
        HPos::Right,
        VPos::Center,
    )?;
    for m in &f.memory {
        let (x0, x1) = (xs(m.start_s), xs(m.end_s).max(xs(m.start_s) + 1.0));
        let mut base = 0.0;
        for (bytes, c) in [
            (m.shard_bytes, 7usize),
            (m.gathered_weight_bytes, 0),
            (m.full_grad_bytes, 1),
        ] {
            if bytes > 0.0 {
                pen.fill(x0, ys(base + bytes), x1, ys(base), pal(c))?;
            }
            base += bytes;
        }
        boxes.push(HitBox {
            x0,
            y0: ys(base),
            x1,
            y1: mem_bottom,
            tip: tip(
                "memory held for this layer".into(),
                format::bytes(m.held_bytes()),
                vec![
                    format!("own shards {}", format::bytes(m.shard_bytes)),
                    format!(
                        "gathered weights {}",
                        format::bytes(m.gathered_weight_bytes)
                    ),
                    format!("full gradients {}", format::bytes(m.full_grad_bytes)),
                ],
            ),
        });
    }
    pen.line(&[(left, mem_bottom), (right, mem_bottom)], theme.muted, 1.0)?;
    let mut x = left;
    for (label, c) in [
        ("own shards (weights, grads, optimizer)", 7usize),
        ("gathered weights", 0),
        ("full gradients", 1),
    ] {
        pen.fill(x, mem_bottom + 7.0, x + 10.0, mem_bottom + 17.0, pal(c))?;
        pen.text(
            label,
            x + 14.0,
            mem_bottom + 12.0,
            10.0,
            theme.fg,
            HPos::Left,
            VPos::Center,
        )?;
        x += 24.0 + 6.2 * label.len() as f64;
    }
    pen.present()?;
    Ok(boxes)
}

// ---------------------------------------------------------------------------
// Megatron MLP
// ---------------------------------------------------------------------------

/// Ranks the MLP figure draws (the rest are summarised).
pub const MLP_DRAWN_RANKS: u32 = 4;

/// Height of the MLP figure for `tp` ranks.
pub fn mlp_height(tp: u32) -> f64 {
    30.0 + 58.0 * f64::from(tp.clamp(1, MLP_DRAWN_RANKS)) + 26.0
}

fn dims(rows: u64, cols: u64) -> String {
    format!("{}×{}", format::thousands(rows), format::thousands(cols))
}

/// X · A_i = Y_i (column-parallel), Y_i · B_i = Z_i (row-parallel), Σ Z_i by one all-reduce.
pub fn draw_mlp(
    canvas: &HtmlCanvasElement,
    css_width: f64,
    m: &MlpSplit,
    theme: &Theme,
) -> Result<Vec<HitBox>, String> {
    let height = mlp_height(m.tp);
    let Some(pen) = Pen::new(canvas, css_width, height, theme)? else {
        return Ok(Vec::new());
    };
    let drawn = m.tp.clamp(1, MLP_DRAWN_RANKS);
    // Columns: X, A_i, Y_i, B_i, Z_i, (all-reduce), Z.
    let s = (pen.width / 900.0).min(1.0);
    let widths = [96.0, 84.0, 84.0, 96.0, 96.0];
    let op_gap = 30.0 * s;
    let mut xs = Vec::new();
    let mut x = 60.0 * s;
    for w in widths {
        xs.push((x, x + w * s));
        x += w * s + op_gap;
    }
    let ar_x = x;
    let z_x = ar_x + 90.0 * s;
    let top = 30.0;
    let row_h = 58.0;
    let heads = ["X", "A_i (columns)", "Y_i", "B_i (rows)", "Z_i (partial)"];
    for (k, h) in heads.iter().enumerate() {
        pen.text(
            h,
            (xs[k].0 + xs[k].1) / 2.0,
            top - 8.0,
            11.0,
            theme.muted,
            HPos::Center,
            VPos::Bottom,
        )?;
    }
    let shapes = [m.x, m.a, m.y, m.b, m.z_partial];
    let mut boxes = Vec::new();
    for r in 0..drawn {
        let y = top + row_h * f64::from(r);
        let (y0, y1) = (y + 4.0, y + row_h - 14.0);
        pen.text(
            &format!("rank {r}"),
            xs[0].0 - 6.0,
            (y0 + y1) / 2.0,
            10.5,
            theme.muted,
            HPos::Right,
            VPos::Center,
        )?;
        for (k, sh) in shapes.iter().enumerate() {
            let (x0, x1) = xs[k];
            let c = if k == 0 { 7 } else { r as usize };
            pen.fill(x0, y0, x1, y1, pal(c))?;
            pen.text(
                &dims(sh.rows, sh.cols),
                (x0 + x1) / 2.0,
                (y0 + y1) / 2.0,
                9.5 * s.max(0.85),
                on(c),
                HPos::Center,
                VPos::Center,
            )?;
            boxes.push(HitBox {
                x0,
                y0,
                x1,
                y1,
                tip: tip(
                    format!("{} on rank {r}", heads[k]),
                    format::bytes(sh.bytes),
                    vec![format!("{} rows × {} columns", sh.rows, sh.cols)],
                ),
            });
        }
        let ops = ["·", "=", "·", "="];
        for (k, o) in ops.iter().enumerate() {
            pen.text(
                o,
                (xs[k].1 + xs[k + 1].0) / 2.0,
                (y0 + y1) / 2.0,
                16.0,
                theme.fg,
                HPos::Center,
                VPos::Center,
            )?;
        }
        pen.arrow(
            (xs[4].1 + 4.0, (y0 + y1) / 2.0),
            (ar_x + 10.0, (y0 + y1) / 2.0),
            theme.muted,
            1.2,
        )?;
    }
    let (ry0, ry1) = (top + 4.0, top + row_h * f64::from(drawn) - 14.0);
    pen.fill(ar_x + 10.0, ry0, ar_x + 16.0, ry1, theme.limit)?;
    pen.text(
        "all-reduce",
        ar_x + 20.0,
        (ry0 + ry1) / 2.0 - 8.0,
        10.5,
        theme.limit,
        HPos::Left,
        VPos::Center,
    )?;
    pen.text(
        "Σ Z_i",
        ar_x + 20.0,
        (ry0 + ry1) / 2.0 + 8.0,
        10.5,
        theme.limit,
        HPos::Left,
        VPos::Center,
    )?;
    let zw = (pen.width - z_x - 8.0).clamp(30.0, 82.0 * s);
    let zm = (ry0 + ry1) / 2.0;
    pen.fill(z_x, zm - 18.0, z_x + zw, zm + 18.0, theme.fg)?;
    pen.text(
        &dims(m.z_partial.rows, m.z_partial.cols),
        z_x + zw / 2.0,
        zm,
        9.5 * s.max(0.85),
        theme.bg,
        HPos::Center,
        VPos::Center,
    )?;
    pen.text(
        "Z on every rank",
        z_x + zw / 2.0,
        zm - 22.0,
        10.0,
        theme.muted,
        HPos::Center,
        VPos::Bottom,
    )?;
    let note = if m.tp > drawn {
        format!(
            "ranks {}–{} not drawn; f/tp = {} columns each",
            drawn,
            m.tp - 1,
            format::thousands(m.y.cols)
        )
    } else {
        format!("tp = {}: each rank holds 1/{} of A and B", m.tp, m.tp)
    };
    pen.text(
        &note,
        xs[0].0,
        height - 8.0,
        10.5,
        theme.muted,
        HPos::Left,
        VPos::Bottom,
    )?;
    pen.present()?;
    Ok(boxes)
}

// ---------------------------------------------------------------------------
// Context parallelism
// ---------------------------------------------------------------------------

/// Height of the CP figure.
pub fn cp_height(css_width: f64) -> f64 {
    let side = ((css_width - 60.0) / 3.0).clamp(120.0, 260.0);
    side + 60.0
}

/// The causal grid under both assignments and the ring.
pub fn draw_cp(
    canvas: &HtmlCanvasElement,
    css_width: f64,
    cp: &CpAttention,
    theme: &Theme,
) -> Result<Vec<HitBox>, String> {
    let height = cp_height(css_width);
    let Some(pen) = Pen::new(canvas, css_width, height, theme)? else {
        return Ok(Vec::new());
    };
    let side = height - 60.0;
    let gap = (pen.width - 3.0 * side - 20.0).max(20.0) / 3.0;
    let mut boxes = Vec::new();
    let top = 34.0;
    for (k, (grid, name)) in [(&cp.plain, "contiguous"), (&cp.zigzag, "zig-zag")]
        .into_iter()
        .enumerate()
    {
        let x0 = 20.0 + k as f64 * (side + gap);
        draw_cp_grid(&pen, grid, cp, name, x0, top, side, &mut boxes)?;
    }
    // The ring: cp ranks, each passing its K/V block to the next.
    let cx = 20.0 + 2.0 * (side + gap) + side / 2.0;
    let cy = top + side / 2.0;
    let rad = side * 0.36;
    let n = cp.cp.max(1);
    let pos = |i: u32| {
        let a = std::f64::consts::TAU * f64::from(i) / f64::from(n) - std::f64::consts::FRAC_PI_2;
        (cx + rad * a.cos(), cy + rad * a.sin())
    };
    let node = (rad * std::f64::consts::PI / f64::from(n) * 0.55).clamp(3.0, 14.0);
    for i in 0..n {
        let (a, b) = (pos(i), pos((i + 1) % n));
        let (dx, dy) = (b.0 - a.0, b.1 - a.1);
        let len = (dx * dx + dy * dy).sqrt().max(1e-9);
        let (ux, uy) = (dx / len, dy / len);
        pen.arrow(
            (a.0 + ux * (node + 2.0), a.1 + uy * (node + 2.0)),
            (b.0 - ux * (node + 2.0), b.1 - uy * (node + 2.0)),
            theme.muted,
            1.5,
        )?;
    }
    for i in 0..n {
        let (x, y) = pos(i);
        pen.dot(x, y, node, pal(i as usize))?;
        if node >= 9.0 {
            pen.text(
                &i.to_string(),
                x,
                y,
                10.0,
                on(i as usize),
                HPos::Center,
                VPos::Center,
            )?;
        }
    }
    pen.text(
        &format!("ring of {n} ranks"),
        cx,
        top - 10.0,
        12.0,
        theme.fg,
        HPos::Center,
        VPos::Bottom,
    )?;
    pen.text(
        &format!("K/V {} per step", format::bytes(cp.kv_bytes_per_step)),
        cx,
        cy - 7.0,
        10.5,
        theme.fg,
        HPos::Center,
        VPos::Center,
    )?;
    pen.text(
        &format!("{} steps per layer", cp.ring_steps),
        cx,
        cy + 8.0,
        10.5,
        theme.muted,
        HPos::Center,
        VPos::Center,
    )?;
    pen.present()?;
    Ok(boxes)
}

#[allow(clippy::too_many_arguments)]
fn draw_cp_grid(
    pen: &Pen,
    grid: &CpGrid,
    cp: &CpAttention,
    name: &str,
    x0: f64,
    y0: f64,
    side: f64,
    boxes: &mut Vec<HitBox>,
) -> Result<(), String> {
    let th = pen.theme;
    let n = f64::from(cp.chunks.max(1));
    let c = side / n;
    pen.text(
        &format!("{name}: busiest rank ×{:.2} the mean", grid.imbalance),
        x0 + side / 2.0,
        y0 - 10.0,
        12.0,
        th.fg,
        HPos::Center,
        VPos::Bottom,
    )?;
    pen.text(
        "keys →",
        x0,
        y0 - 1.0,
        9.5,
        th.muted,
        HPos::Left,
        VPos::Bottom,
    )?;
    for b in &grid.blocks {
        let x = x0 + c * f64::from(b.k);
        let y = y0 + c * f64::from(b.q);
        let color = pal(b.rank as usize);
        let inset = if c > 6.0 { 0.5 } else { 0.0 };
        if !b.computed {
            pen.fill(x + inset, y + inset, x + c - inset, y + c - inset, th.idle)?;
            continue;
        }
        if b.diagonal {
            pen.fill(x + inset, y + inset, x + c - inset, y + c - inset, th.idle)?;
            pen.poly(
                &[
                    (x + inset, y + inset),
                    (x + inset, y + c - inset),
                    (x + c - inset, y + c - inset),
                ],
                color,
            )?;
        } else {
            pen.fill(x + inset, y + inset, x + c - inset, y + c - inset, color)?;
        }
        if c >= 22.0 && !b.diagonal {
            pen.text(
                &b.ring_step.to_string(),
                x + c / 2.0,
                y + c / 2.0,
                10.0,
                on(b.rank as usize),
                HPos::Center,
                VPos::Center,
            )?;
        }
        boxes.push(HitBox {
            x0: x,
            y0: y,
            x1: x + c,
            y1: y + c,
            tip: tip(
                format!("queries {} × keys {}", b.q, b.k),
                format!("rank {}", b.rank),
                vec![
                    format!("keys arrive at ring step {}", b.ring_step),
                    if b.diagonal {
                        "diagonal: half masked".into()
                    } else {
                        String::new()
                    },
                ],
            ),
        });
    }
    pen.outline(x0, y0, x0 + side, y0 + side, th.muted, 1.0)?;
    // Work per rank under the grid.
    let work = grid
        .work_per_rank
        .iter()
        .map(|w| format!("{w:.1}"))
        .collect::<Vec<_>>();
    let shown = if work.len() <= 8 {
        format!("blocks per rank: {}", work.join(" · "))
    } else {
        let max = grid.work_per_rank.iter().copied().fold(0.0, f64::max);
        let min = grid
            .work_per_rank
            .iter()
            .copied()
            .fold(f64::INFINITY, f64::min);
        format!("blocks per rank: {min:.1} to {max:.1}")
    };
    pen.text(
        &shown,
        x0 + side / 2.0,
        y0 + side + 6.0,
        10.0,
        th.muted,
        HPos::Center,
        VPos::Top,
    )?;
    Ok(())
}

// ---------------------------------------------------------------------------
// Expert routing
// ---------------------------------------------------------------------------

/// Most experts drawn with a line per routed token.
const MAX_LINED_EXPERTS: u32 = 16;

/// Height of the routing figure.
pub fn ep_height(ep: &EpRouting) -> f64 {
    let slots = ep
        .loads
        .iter()
        .map(|l| l.routed.max(ep.capacity))
        .max()
        .unwrap_or(1);
    let slot_h = if slots > 24 { 4.0 } else { 10.0 };
    150.0 + slot_h * f64::from(slots)
}

/// Tokens on their ranks, lines to the experts they chose, experts' slots
/// (kept, padding, dropped beyond capacity).
pub fn draw_ep(
    canvas: &HtmlCanvasElement,
    css_width: f64,
    ep: &EpRouting,
    theme: &Theme,
) -> Result<Vec<HitBox>, String> {
    let height = ep_height(ep);
    let Some(pen) = Pen::new(canvas, css_width, height, theme)? else {
        return Ok(Vec::new());
    };
    let left = 70.0;
    let right = pen.width - 12.0;
    let t = f64::from(ep.tokens.max(1));
    let tok_w = ((right - left) / t).min(40.0);
    let tok_x = |i: u32| left + tok_w * f64::from(i);
    let ty = 26.0;
    let mut boxes = Vec::new();
    pen.text(
        "tokens",
        left - 6.0,
        ty + 8.0,
        10.5,
        theme.muted,
        HPos::Right,
        VPos::Center,
    )?;
    for rt in &ep.routes {
        let x = tok_x(rt.token);
        let c = rt.rank as usize;
        pen.fill(x + 1.0, ty, x + tok_w - 1.0, ty + 16.0, pal(c))?;
        if tok_w >= 16.0 {
            pen.text(
                &rt.token.to_string(),
                x + tok_w / 2.0,
                ty + 8.0,
                9.0,
                on(c),
                HPos::Center,
                VPos::Center,
            )?;
        }
        boxes.push(HitBox {
            x0: x,
            y0: ty,
            x1: x + tok_w,
            y1: ty + 16.0,
            tip: tip(
                format!("token {} on rank {}", rt.token, rt.rank),
                format!(
                    "experts {}",
                    rt.experts
                        .iter()
                        .zip(&rt.dropped)
                        .map(|(e, d)| if *d {
                            format!("{e} (dropped)")
                        } else {
                            e.to_string()
                        })
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
                Vec::new(),
            ),
        });
    }
    // Rank brackets over the tokens.
    let per_rank = ep.tokens / ep.ep.max(1);
    for r in 0..ep.ep {
        let (a, b) = (tok_x(r * per_rank), tok_x((r + 1) * per_rank));
        if b - a >= 30.0 {
            pen.text(
                &format!("rank {r}"),
                (a + b) / 2.0,
                ty - 4.0,
                10.0,
                theme.muted,
                HPos::Center,
                VPos::Bottom,
            )?;
        }
    }
    let e = f64::from(ep.experts.max(1));
    let ex_w = ((right - left) / e).min(100.0);
    let ex_x = |i: u32| left + ex_w * f64::from(i);
    let ey = 110.0;
    let slots = ep
        .loads
        .iter()
        .map(|l| l.routed.max(ep.capacity))
        .max()
        .unwrap_or(1);
    let slot_h = if slots > 24 { 4.0 } else { 10.0 };
    if ep.experts <= MAX_LINED_EXPERTS && ep.tokens * ep.top_k <= 128 {
        for rt in &ep.routes {
            for (ex, dropped) in rt.experts.iter().zip(&rt.dropped) {
                let a = (tok_x(rt.token) + tok_w / 2.0, ty + 17.0);
                let b = (ex_x(*ex) + ex_w / 2.0, ey - 16.0);
                if *dropped {
                    pen.dashed(a, b, theme.limit, 1.2)?;
                } else {
                    pen.line(&[a, b], pal(rt.rank as usize), 1.0)?;
                }
            }
        }
    }
    pen.text(
        "experts",
        left - 6.0,
        ey - 8.0,
        10.5,
        theme.muted,
        HPos::Right,
        VPos::Center,
    )?;
    pen.text(
        "slots",
        left - 6.0,
        ey + slot_h * f64::from(ep.capacity) / 2.0,
        10.5,
        theme.muted,
        HPos::Right,
        VPos::Center,
    )?;
    for l in &ep.loads {
        let x = ex_x(l.expert);
        let (x0, x1) = (x + 1.0, x + ex_w - 1.0);
        if ex_w >= 18.0 {
            pen.text(
                &format!("E{}", l.expert),
                x + ex_w / 2.0,
                ey - 8.0,
                10.0,
                theme.fg,
                HPos::Center,
                VPos::Center,
            )?;
        }
        // Slot i from the top; kept slots carry the colour of the rank that holds the expert.
        for i in 0..l.routed.max(ep.capacity) {
            let y = ey + slot_h * f64::from(i);
            let (y0, y1) = (y + 0.5, y + slot_h - 0.5);
            if i < l.kept {
                pen.fill(x0, y0, x1, y1, pal(l.rank as usize))?;
            } else if i < ep.capacity {
                pen.outline(x0, y0, x1, y1, theme.muted, 1.0)?;
            } else {
                pen.fill(x0, y0, x1, y1, theme.limit)?;
            }
        }
        boxes.push(HitBox {
            x0,
            y0: ey - 16.0,
            x1,
            y1: ey + slot_h * f64::from(slots),
            tip: tip(
                format!("expert {} on rank {}", l.expert, l.rank),
                format!("{} routed, capacity {}", l.routed, ep.capacity),
                vec![
                    format!("kept {}", l.kept),
                    format!("dropped {}", l.dropped),
                    format!("padding {}", l.padded),
                ],
            ),
        });
    }
    let cap_y = ey + slot_h * f64::from(ep.capacity);
    let cap_end = ex_x(ep.experts) + 70.0;
    pen.dashed((left, cap_y), (cap_end, cap_y), theme.fg, 1.0)?;
    pen.text(
        &format!("capacity {}", ep.capacity),
        cap_end,
        cap_y - 3.0,
        10.0,
        theme.fg,
        HPos::Right,
        VPos::Bottom,
    )?;
    let ly = height - 14.0;
    let mut x = left;
    for (label, color, filled) in [
        ("kept (colour = expert's rank)", pal(0), true),
        ("padding", theme.muted, false),
        ("dropped: over capacity", theme.limit, true),
    ] {
        if filled {
            pen.fill(x, ly - 5.0, x + 10.0, ly + 5.0, color)?;
        } else {
            pen.outline(x, ly - 5.0, x + 10.0, ly + 5.0, color, 1.0)?;
        }
        pen.text(
            label,
            x + 14.0,
            ly,
            10.0,
            theme.fg,
            HPos::Left,
            VPos::Center,
        )?;
        x += 30.0 + 6.0 * label.len() as f64;
    }
    pen.present()?;
    Ok(boxes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use wasm_bindgen_test::wasm_bindgen_test;

    #[wasm_bindgen_test]
    fn ticks_are_round_numbers() {
        assert_eq!(tick_step(1.0, 5.0), 0.2);
        assert_eq!(tick_step(0.037, 4.0), 0.01);
        assert_eq!(seconds(0.0123), "12.3 ms");
        assert_eq!(seconds(2.5e-5), "25.0 µs");
        assert_eq!(seconds(0.0), "0");
        assert_eq!(letter(0), 'A');
    }
}
