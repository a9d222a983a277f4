//! Draws DDP's bucketed all-reduce overlapping the backward pass, as a timeline on the fast
//! and the slow link (`planner_core::figures::teaching::ddp_overlap`).

use super::*;

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
        let label = format!("L{}–{}", b.layers[1], b.layers[0]);
        let backward = (xs(b.backward_start_s), xs(b.backward_end_s));
        boxes.push(lane_block(
            pen,
            backward,
            (yb, lane),
            i,
            &label,
            tip(
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
        )?);
        if b.buckets > 0.0 {
            let all_reduce = (xs(b.all_reduce_start_s), xs(b.all_reduce_end_s));
            boxes.push(lane_block(
                pen,
                all_reduce,
                (ya, lane),
                i,
                &label,
                tip(
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
            )?);
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

/// Block `i` from `x0` to `x1` on the lane at `y`, `lane` high, in its colour, named `label`
/// where it is wide enough; its hit box carries `tip`.
fn lane_block(
    pen: &Pen,
    (x0, x1): (f64, f64),
    (y, lane): (f64, f64),
    i: usize,
    label: &str,
    tip: Tip,
) -> Result<HitBox, String> {
    pen.fill(x0, y + 2.0, x1.max(x0 + 1.0), y + lane - 2.0, pal(i))?;
    pen.outline(
        x0,
        y + 2.0,
        x1.max(x0 + 1.0),
        y + lane - 2.0,
        pen.theme.bg,
        1.0,
    )?;
    if x1 - x0 > 44.0 {
        pen.text(
            label,
            (x0 + x1) / 2.0,
            y + lane / 2.0,
            10.0,
            on(i),
            HPos::Center,
            VPos::Center,
        )?;
    }
    Ok(HitBox {
        x0,
        y0: y,
        x1,
        y1: y + lane,
        tip,
    })
}
