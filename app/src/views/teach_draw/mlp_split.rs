//! Draws the Megatron MLP split: column- then row-parallel matrices and their collectives
//! (`planner_core::figures::teaching::mlp_split`).

use super::*;

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
    let c = Columns::of(pen.width);
    for (k, h) in HEADS.iter().enumerate() {
        pen.text(
            h,
            (c.xs[k].0 + c.xs[k].1) / 2.0,
            TOP - 8.0,
            11.0,
            theme.muted,
            HPos::Center,
            VPos::Bottom,
        )?;
    }
    let mut boxes = Vec::new();
    for r in 0..drawn {
        let y = TOP + ROW_H * f64::from(r);
        boxes.extend(draw_rank(&pen, m, r, &c, (y + 4.0, y + ROW_H - 14.0))?);
    }
    draw_sum(&pen, m, drawn, &c, height)?;
    pen.present()?;
    Ok(boxes)
}

/// The matrices' column heads.
const HEADS: [&str; 5] = ["X", "A_i (columns)", "Y_i", "B_i (rows)", "Z_i (partial)"];
/// The top of the first rank's row, and a row's height.
const TOP: f64 = 30.0;
const ROW_H: f64 = 58.0;

/// Where the columns go: X, A_i, Y_i, B_i, Z_i, the all-reduce, Z; `s` scales them to the width.
struct Columns {
    xs: Vec<(f64, f64)>,
    ar_x: f64,
    z_x: f64,
    s: f64,
}

impl Columns {
    fn of(width: f64) -> Self {
        let s = (width / 900.0).min(1.0);
        let widths = [96.0, 84.0, 84.0, 96.0, 96.0];
        let op_gap = 30.0 * s;
        let mut xs = Vec::new();
        let mut x = 60.0 * s;
        for w in widths {
            xs.push((x, x + w * s));
            x += w * s + op_gap;
        }
        Columns {
            xs,
            ar_x: x,
            z_x: x + 90.0 * s,
            s,
        }
    }
}

/// One rank's row between `y0` and `y1`: X · A_i = Y_i, Y_i · B_i = Z_i, and the arrow to the
/// all-reduce.
fn draw_rank(
    pen: &Pen,
    m: &MlpSplit,
    r: u32,
    c: &Columns,
    (y0, y1): (f64, f64),
) -> Result<Vec<HitBox>, String> {
    let theme = &pen.theme;
    let shapes = [m.x, m.a, m.y, m.b, m.z_partial];
    let mut boxes = Vec::new();
    pen.text(
        &format!("rank {r}"),
        c.xs[0].0 - 6.0,
        (y0 + y1) / 2.0,
        10.5,
        theme.muted,
        HPos::Right,
        VPos::Center,
    )?;
    for (k, sh) in shapes.iter().enumerate() {
        let (x0, x1) = c.xs[k];
        let colour = if k == 0 { 7 } else { r as usize };
        pen.fill(x0, y0, x1, y1, pal(colour))?;
        pen.text(
            &dims(sh.rows, sh.cols),
            (x0 + x1) / 2.0,
            (y0 + y1) / 2.0,
            9.5 * c.s.max(0.85),
            on(colour),
            HPos::Center,
            VPos::Center,
        )?;
        boxes.push(HitBox {
            x0,
            y0,
            x1,
            y1,
            tip: tip(
                format!("{} on rank {r}", HEADS[k]),
                format::bytes(sh.bytes),
                vec![format!("{} rows × {} columns", sh.rows, sh.cols)],
            ),
        });
    }
    let ops = ["·", "=", "·", "="];
    for (k, o) in ops.iter().enumerate() {
        pen.text(
            o,
            (c.xs[k].1 + c.xs[k + 1].0) / 2.0,
            (y0 + y1) / 2.0,
            16.0,
            theme.fg,
            HPos::Center,
            VPos::Center,
        )?;
    }
    pen.arrow(
        (c.xs[4].1 + 4.0, (y0 + y1) / 2.0),
        (c.ar_x + 10.0, (y0 + y1) / 2.0),
        theme.muted,
        1.2,
    )?;
    Ok(boxes)
}

/// The all-reduce that sums the ranks' partial Z, the Z every rank ends with, and a note on
/// the ranks not drawn.
fn draw_sum(pen: &Pen, m: &MlpSplit, drawn: u32, c: &Columns, height: f64) -> Result<(), String> {
    let theme = &pen.theme;
    let (ry0, ry1) = (TOP + 4.0, TOP + ROW_H * f64::from(drawn) - 14.0);
    pen.fill(c.ar_x + 10.0, ry0, c.ar_x + 16.0, ry1, theme.limit)?;
    pen.text(
        "all-reduce",
        c.ar_x + 20.0,
        (ry0 + ry1) / 2.0 - 8.0,
        10.5,
        theme.limit,
        HPos::Left,
        VPos::Center,
    )?;
    pen.text(
        "Σ Z_i",
        c.ar_x + 20.0,
        (ry0 + ry1) / 2.0 + 8.0,
        10.5,
        theme.limit,
        HPos::Left,
        VPos::Center,
    )?;
    let zw = (pen.width - c.z_x - 8.0).clamp(30.0, 82.0 * c.s);
    let zm = (ry0 + ry1) / 2.0;
    pen.fill(c.z_x, zm - 18.0, c.z_x + zw, zm + 18.0, theme.fg)?;
    pen.text(
        &dims(m.z_partial.rows, m.z_partial.cols),
        c.z_x + zw / 2.0,
        zm,
        9.5 * c.s.max(0.85),
        theme.bg,
        HPos::Center,
        VPos::Center,
    )?;
    pen.text(
        "Z on every rank",
        c.z_x + zw / 2.0,
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
        c.xs[0].0,
        height - 8.0,
        10.5,
        theme.muted,
        HPos::Left,
        VPos::Bottom,
    )?;
    Ok(())
}
