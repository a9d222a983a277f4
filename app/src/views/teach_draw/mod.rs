//! Canvas drawings of the teaching figures. Everything drawn comes from
//! `planner_core::figures::teaching`; lengths are CSS pixels, scaled by the device
//! pixel ratio when drawn (as in `charts.rs`). One module per figure, as planner-core's
//! `figures::teaching` has; this one holds the pen and the axes they share.

mod collectives;
mod cp_attention;
mod ddp_overlap;
mod ep_routing;
mod fsdp_lanes;
mod mlp_split;
mod strategy_sketches;

pub use collectives::{draw_collective, op_label};
pub use cp_attention::draw_cp;
pub use ddp_overlap::draw_ddp;
pub use ep_routing::draw_ep;
pub use fsdp_lanes::draw_fsdp;
pub use mlp_split::draw_mlp;
pub use strategy_sketches::draw_sketches;

use crate::canvas_backend::Canvas2d;
use planner_core::figures::teaching::{
    ChunkCell, CollectiveDemo, CpAttention, CpGrid, DdpOverlapDemo, DdpTimeline, EpRouting,
    FsdpLane, FsdpLanes, MlpSplit, SketchGpu, StrategySketch, WeightSplit,
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
