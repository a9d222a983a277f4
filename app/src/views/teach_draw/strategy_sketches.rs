//! Draws the six strategy sketches: what each rank holds under DP, ZeRO-1/2/3, TP and PP
//! (`planner_core::figures::teaching::strategy_sketches`).

use super::*;

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
        let gy = py + 28.0;
        for (g, gpu) in sk.gpus.iter().enumerate() {
            let gx = px + 10.0 + (gpu_w + gap) * g as f64;
            boxes.push(draw_gpu(&pen, sk, g, gpu, (gx, gy, gpu_w))?);
        }
    }
    pen.present()?;
    Ok(boxes)
}

/// One GPU of a sketch in the box at `(gx, gy)`, `gpu_w` wide: its layers and what it
/// holds; the hit box carries its tip.
fn draw_gpu(
    pen: &Pen,
    sk: &StrategySketch,
    g: usize,
    gpu: &SketchGpu,
    (gx, gy, gpu_w): (f64, f64, f64),
) -> Result<HitBox, String> {
    let theme = &pen.theme;
    let layer_h = LAYER_H;
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
    draw_layers(pen, g, gpu, (gx, gy, gpu_w))?;
    let lines = gpu_lines(gpu);
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
    Ok(HitBox {
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
    })
}

/// Height of one layer's row in a GPU's box.
const LAYER_H: f64 = 13.0;

/// The four layers in a GPU's box: whole, a shard or a slice where it holds them, empty where not.
fn draw_layers(
    pen: &Pen,
    g: usize,
    gpu: &SketchGpu,
    (gx, gy, gpu_w): (f64, f64, f64),
) -> Result<(), String> {
    let theme = &pen.theme;
    let layer_h = LAYER_H;
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
    Ok(())
}

/// What a GPU's box says under its layers: its batch, tokens, and expert or weight piece.
fn gpu_lines(gpu: &SketchGpu) -> Vec<String> {
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
    lines
}
