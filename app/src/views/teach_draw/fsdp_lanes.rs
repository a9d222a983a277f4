//! Draws one FSDP layer's lanes (gather, compute, reduce-scatter) and the memory held
//! (`planner_core::figures::teaching::fsdp_lanes`).

use super::*;

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
