//! Bus bandwidth against message size (log scale): measured points, the fitted
//! α–β curve and the preset's assumption, one colour per collective. The
//! curves are planner-core's predictions at each drawn size, computed in the import
//! worker (`app-worker/src/bench_import.rs`); the page only draws them.

use crate::canvas_backend::Canvas2d;
use planner_core::edges::import_page::BusbwSeries;
use plotters::prelude::*;
use web_sys::HtmlCanvasElement;

use crate::charts::{prepare, HitBox, Theme, Tip, PALETTE};
use crate::format;

/// Chart height in CSS pixels.
pub const HEIGHT: f64 = 260.0;

fn err<E: std::fmt::Debug>(e: E) -> String {
    format!("chart: {e:?}")
}

/// Draws the series; returns hit boxes around measured points.
pub fn draw_busbw(
    canvas: &HtmlCanvasElement,
    css_width: f64,
    series: &[BusbwSeries],
    theme: &Theme,
) -> Result<Vec<HitBox>, String> {
    let Some((r, _)) = prepare(canvas, css_width, HEIGHT) else {
        return Ok(Vec::new());
    };
    let root = Canvas2d::new(canvas.clone())
        .map(IntoDrawingArea::into_drawing_area)
        .ok_or_else(|| "chart: no 2d context".to_string())?;
    root.fill(&theme.bg).map_err(err)?;
    let all = || {
        series
            .iter()
            .flat_map(|s| s.measured.iter().chain(&s.fitted).chain(&s.preset))
            .filter(|p| p.0 > 0.0 && p.1.is_finite())
    };
    let x_lo = all().map(|p| p.0).fold(f64::INFINITY, f64::min);
    let x_hi = all().map(|p| p.0).fold(0.0, f64::max);
    if !(x_lo.is_finite() && x_hi > x_lo) {
        root.present().map_err(err)?;
        return Ok(Vec::new());
    }
    let y_hi = all().map(|p| p.1 / 1e9).fold(1.0, f64::max) * 1.1;
    let muted = ("sans-serif", 11.0 * r).into_font().color(&theme.muted);
    let mut chart = ChartBuilder::on(&root)
        .margin((10.0 * r) as i32)
        .x_label_area_size((34.0 * r) as u32)
        .y_label_area_size((52.0 * r) as u32)
        .build_cartesian_2d((x_lo..x_hi).log_scale(), 0.0..y_hi)
        .map_err(err)?;
    chart
        .configure_mesh()
        .x_desc("message size (nccl-tests size)")
        .y_desc("bus bandwidth, GB/s")
        .x_labels(8)
        .y_labels(6)
        .x_label_formatter(&|v| format::bytes(*v))
        .y_label_formatter(&|v| format::axis(*v))
        .label_style(muted.clone())
        .axis_desc_style(muted)
        .axis_style(theme.muted.stroke_width(r.max(1.0) as u32))
        .light_line_style(crate::charts::LightMesh::Skipped.style(theme))
        .bold_line_style(theme.grid.stroke_width(r.max(1.0) as u32))
        .draw()
        .map_err(err)?;
    let gb = |v: &[(f64, f64)]| -> Vec<(f64, f64)> {
        v.iter()
            .filter(|p| p.0 > 0.0 && p.1.is_finite())
            .map(|&(x, y)| (x, y / 1e9))
            .collect()
    };
    let mut boxes = Vec::new();
    for s in series {
        let color = PALETTE[s.color % PALETTE.len()];
        chart
            .draw_series(LineSeries::new(
                gb(&s.fitted),
                color.stroke_width((2.0 * r) as u32),
            ))
            .map_err(err)?;
        chart
            .draw_series(DashedLineSeries::new(
                gb(&s.preset),
                (6.0 * r) as i32,
                (4.0 * r) as i32,
                color.stroke_width(r.max(1.0) as u32),
            ))
            .map_err(err)?;
        let points = gb(&s.measured);
        chart
            .draw_series(
                points
                    .iter()
                    .map(|&p| Circle::new(p, (4.0 * r) as i32, color.filled())),
            )
            .map_err(err)?;
        for &(x, y) in &points {
            let (px, py) = chart.backend_coord(&(x, y));
            let (cx, cy) = (f64::from(px) / r, f64::from(py) / r);
            boxes.push(HitBox {
                x0: cx - 7.0,
                y0: cy - 7.0,
                x1: cx + 7.0,
                y1: cy + 7.0,
                tip: Tip {
                    title: s.label.clone(),
                    value: format!("{} GB/s measured", format::sig3(y)),
                    lines: vec![format!("at {}", format::bytes(x))],
                },
            });
        }
    }
    root.present().map_err(err)?;
    Ok(boxes)
}
