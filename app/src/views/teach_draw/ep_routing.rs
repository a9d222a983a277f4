//! Draws expert parallelism's token routing with capacity, and the all-to-all it costs
//! (`planner_core::figures::teaching::ep_routing`).

use super::*;

/// Most experts drawn with a line per routed token.
const MAX_LINED_EXPERTS: u32 = 16;

/// The most slots any expert shows (routed tokens, or its capacity), and a slot's height.
fn slot_rows(ep: &EpRouting) -> (u32, f64) {
    let slots = ep
        .loads
        .iter()
        .map(|l| l.routed.max(ep.capacity))
        .max()
        .unwrap_or(1);
    let slot_h = if slots > 24 { 4.0 } else { 10.0 };
    (slots, slot_h)
}

/// Height of the routing figure.
pub fn ep_height(ep: &EpRouting) -> f64 {
    let (slots, slot_h) = slot_rows(ep);
    150.0 + slot_h * f64::from(slots)
}

/// Where the figure's rows and columns go, in CSS pixels.
struct Geometry {
    left: f64,
    /// A token's width, and the top of the token row.
    tok_w: f64,
    ty: f64,
    /// An expert's width, and the top of its slots.
    ex_w: f64,
    ey: f64,
    slots: u32,
    slot_h: f64,
}

impl Geometry {
    fn of(ep: &EpRouting, width: f64) -> Self {
        let left = 70.0;
        let right = width - 12.0;
        let (slots, slot_h) = slot_rows(ep);
        Geometry {
            left,
            tok_w: ((right - left) / f64::from(ep.tokens.max(1))).min(40.0),
            ty: 26.0,
            ex_w: ((right - left) / f64::from(ep.experts.max(1))).min(100.0),
            ey: 110.0,
            slots,
            slot_h,
        }
    }

    fn tok_x(&self, i: u32) -> f64 {
        self.left + self.tok_w * f64::from(i)
    }

    fn ex_x(&self, i: u32) -> f64 {
        self.left + self.ex_w * f64::from(i)
    }
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
    let g = Geometry::of(ep, pen.width);
    let mut boxes = draw_tokens(&pen, ep, &g)?;
    draw_routes(&pen, ep, &g)?;
    boxes.extend(draw_experts(&pen, ep, &g)?);
    draw_legend(&pen, g.left, height - 14.0)?;
    pen.present()?;
    Ok(boxes)
}

/// The token row, each token in its rank's colour, with the ranks named over it.
fn draw_tokens(pen: &Pen, ep: &EpRouting, g: &Geometry) -> Result<Vec<HitBox>, String> {
    let theme = &pen.theme;
    let mut boxes = Vec::new();
    pen.text(
        "tokens",
        g.left - 6.0,
        g.ty + 8.0,
        10.5,
        theme.muted,
        HPos::Right,
        VPos::Center,
    )?;
    for rt in &ep.routes {
        let x = g.tok_x(rt.token);
        let c = rt.rank as usize;
        pen.fill(x + 1.0, g.ty, x + g.tok_w - 1.0, g.ty + 16.0, pal(c))?;
        if g.tok_w >= 16.0 {
            pen.text(
                &rt.token.to_string(),
                x + g.tok_w / 2.0,
                g.ty + 8.0,
                9.0,
                on(c),
                HPos::Center,
                VPos::Center,
            )?;
        }
        boxes.push(HitBox {
            x0: x,
            y0: g.ty,
            x1: x + g.tok_w,
            y1: g.ty + 16.0,
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
        let (a, b) = (g.tok_x(r * per_rank), g.tok_x((r + 1) * per_rank));
        if b - a >= 30.0 {
            pen.text(
                &format!("rank {r}"),
                (a + b) / 2.0,
                g.ty - 4.0,
                10.0,
                theme.muted,
                HPos::Center,
                VPos::Bottom,
            )?;
        }
    }
    Ok(boxes)
}

/// A line from each token to each expert it chose (dashed when dropped), while few enough.
fn draw_routes(pen: &Pen, ep: &EpRouting, g: &Geometry) -> Result<(), String> {
    let theme = &pen.theme;
    if ep.experts <= MAX_LINED_EXPERTS && ep.tokens * ep.top_k <= 128 {
        for rt in &ep.routes {
            for (ex, dropped) in rt.experts.iter().zip(&rt.dropped) {
                let a = (g.tok_x(rt.token) + g.tok_w / 2.0, g.ty + 17.0);
                let b = (g.ex_x(*ex) + g.ex_w / 2.0, g.ey - 16.0);
                if *dropped {
                    pen.dashed(a, b, theme.limit, 1.2)?;
                } else {
                    pen.line(&[a, b], pal(rt.rank as usize), 1.0)?;
                }
            }
        }
    }
    Ok(())
}

/// Each expert's slots (kept, padding, dropped) and the capacity line.
fn draw_experts(pen: &Pen, ep: &EpRouting, g: &Geometry) -> Result<Vec<HitBox>, String> {
    let theme = &pen.theme;
    let mut boxes = Vec::new();
    pen.text(
        "experts",
        g.left - 6.0,
        g.ey - 8.0,
        10.5,
        theme.muted,
        HPos::Right,
        VPos::Center,
    )?;
    pen.text(
        "slots",
        g.left - 6.0,
        g.ey + g.slot_h * f64::from(ep.capacity) / 2.0,
        10.5,
        theme.muted,
        HPos::Right,
        VPos::Center,
    )?;
    for l in &ep.loads {
        let x = g.ex_x(l.expert);
        let (x0, x1) = (x + 1.0, x + g.ex_w - 1.0);
        if g.ex_w >= 18.0 {
            pen.text(
                &format!("E{}", l.expert),
                x + g.ex_w / 2.0,
                g.ey - 8.0,
                10.0,
                theme.fg,
                HPos::Center,
                VPos::Center,
            )?;
        }
        // Slot i from the top; kept slots carry the colour of the rank that holds the expert.
        for i in 0..l.routed.max(ep.capacity) {
            let y = g.ey + g.slot_h * f64::from(i);
            let (y0, y1) = (y + 0.5, y + g.slot_h - 0.5);
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
            y0: g.ey - 16.0,
            x1,
            y1: g.ey + g.slot_h * f64::from(g.slots),
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
    let cap_y = g.ey + g.slot_h * f64::from(ep.capacity);
    let cap_end = g.ex_x(ep.experts) + 70.0;
    pen.dashed((g.left, cap_y), (cap_end, cap_y), theme.fg, 1.0)?;
    pen.text(
        &format!("capacity {}", ep.capacity),
        cap_end,
        cap_y - 3.0,
        10.0,
        theme.fg,
        HPos::Right,
        VPos::Bottom,
    )?;
    Ok(boxes)
}

/// What the slots' fills mean, on the line at `ly`.
fn draw_legend(pen: &Pen, left: f64, ly: f64) -> Result<(), String> {
    let theme = &pen.theme;
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
    Ok(())
}
