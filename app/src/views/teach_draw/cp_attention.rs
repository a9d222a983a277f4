//! Draws context parallelism's causal attention grid and the ring's steps
//! (`planner_core::figures::teaching::cp_attention`).

use super::*;

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
