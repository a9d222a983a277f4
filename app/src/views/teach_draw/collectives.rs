//! Draws the four collectives on a few ranks: who sends which chunk, and their time on the
//! current cluster (`planner_core::figures::teaching::collectives`).

use super::*;

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
