//! A plotters drawing backend on an HTML canvas that sets the context's fill,
//! stroke, font and text anchor only when they change, and strokes a run of
//! straight lines of one style as one path.
//!
//! plotters-canvas sets all of them (each a formatted string handed to the
//! browser, which parses it) for every rectangle and every label: the pipeline
//! grid of a 16-stage layout has ~500 cells with a label each, and those
//! redundant sets were a third of a slider move's canvas time. Drawing is
//! otherwise the same as plotters-canvas 0.3.1 (MIT), including its half-pixel
//! shift of horizontal and vertical lines. plotters hands a dashed line over as one
//! `draw_path` per dash and a mesh as one `draw_line` per grid line and tick: the memory view's
//! two charts made 169 stroked paths a DP move (counted in headless Chromium, issue
//! 16); consecutive lines and polylines of one style now share a path, stroked before
//! any other drawing (so the painter's order stays) and when the backend is presented
//! or dropped. (Overlapping translucent lines of one style would blend once, not twice;
//! the page's lines of one style do not overlap, and a pixel test says the charts are
//! unchanged.)

use plotters_backend::text_anchor::{HPos, VPos};
use plotters_backend::{
    BackendColor, BackendCoord, BackendStyle, BackendTextStyle, DrawingBackend, DrawingErrorKind,
    FontTransform,
};
use wasm_bindgen::{JsCast, JsValue};
use web_sys::{CanvasRenderingContext2d, HtmlCanvasElement};

/// A drawing error from the canvas context.
#[derive(Debug)]
pub struct CanvasError(String);

impl std::fmt::Display for CanvasError {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        write!(f, "canvas error: {}", self.0)
    }
}

impl std::error::Error for CanvasError {}

fn error_cast(e: JsValue) -> DrawingErrorKind<CanvasError> {
    DrawingErrorKind::DrawingError(CanvasError(
        e.as_string().unwrap_or_else(|| format!("{e:?}")),
    ))
}

/// A colour as the cache compares it (alpha by its bits: equal means identical).
type ColorKey = (u8, u8, u8, u64);

fn key(c: BackendColor) -> ColorKey {
    (c.rgb.0, c.rgb.1, c.rgb.2, c.alpha.to_bits())
}

/// The CSS colour the backend sets for `c` (also what `charts::draw_schedule` sets when it
/// fills a path of cells itself).
pub(crate) fn css(c: BackendColor) -> String {
    let (r, g, b) = c.rgb;
    format!("rgba({r},{g},{b},{})", c.alpha)
}

/// What was last set on the context; `None` = unknown (set it next time).
#[derive(Clone, Default)]
struct ContextState {
    fill: Option<ColorKey>,
    stroke: Option<(ColorKey, u32)>,
    /// (style, size bits, family) of the last font set: compared before formatting.
    font: Option<(String, u64, String)>,
    align: &'static str,
    baseline: &'static str,
}

/// The canvas backend with a state cache.
pub struct Canvas2d {
    canvas: HtmlCanvasElement,
    context: CanvasRenderingContext2d,
    state: ContextState,
    /// A path of lines not stroked yet is open; its style is `state.stroke` (a call that
    /// sets another stroke style strokes it first).
    lines_open: bool,
    /// Whether lines of one style share a path (off: a stroke per line, the pixel test's
    /// reference).
    batch_lines: bool,
}

impl Canvas2d {
    /// The backend for `canvas`, or `None` when it has no 2D context.
    pub fn new(canvas: HtmlCanvasElement) -> Option<Self> {
        let context: CanvasRenderingContext2d = canvas.get_context("2d").ok()??.dyn_into().ok()?;
        Some(Canvas2d {
            canvas,
            context,
            state: ContextState::default(),
            lines_open: false,
            batch_lines: true,
        })
    }

    /// The backend stroking each line on its own, as before the batching.
    #[cfg(all(test, target_arch = "wasm32"))]
    pub fn unbatched(canvas: HtmlCanvasElement) -> Option<Self> {
        let mut backend = Canvas2d::new(canvas)?;
        backend.batch_lines = false;
        Some(backend)
    }

    /// Strokes the open path of lines, if any: before every other drawing call.
    fn flush_lines(&mut self) {
        if std::mem::take(&mut self.lines_open) {
            self.context.stroke();
        }
    }

    fn fill_style(&mut self, c: BackendColor) {
        if replaced(&mut self.state.fill, Some(key(c))) {
            self.context.set_fill_style_str(&css(c));
        }
    }

    fn line_style(&mut self, style: &impl BackendStyle) {
        let k = (key(style.color()), style.stroke_width());
        if replaced(&mut self.state.stroke, Some(k)) {
            self.context.set_stroke_style_str(&css(style.color()));
            self.context.set_line_width(f64::from(style.stroke_width()));
        }
    }

    fn text_anchor(&mut self, h: HPos, v: VPos) {
        let align = match h {
            HPos::Left => "start",
            HPos::Right => "end",
            HPos::Center => "center",
        };
        if replaced(&mut self.state.align, align) {
            self.context.set_text_align(align);
        }
        let baseline = match v {
            VPos::Top => "top",
            VPos::Center => "middle",
            VPos::Bottom => "bottom",
        };
        if replaced(&mut self.state.baseline, baseline) {
            self.context.set_text_baseline(baseline);
        }
    }

    fn font(&mut self, style: &impl BackendTextStyle) {
        let (kind, size, family) = (style.style(), style.size(), style.family());
        let same = self.state.font.as_ref().is_some_and(|(k, s, f)| {
            k == kind.as_str() && *s == size.to_bits() && f == family.as_str()
        });
        if !same {
            self.context
                .set_font(&format!("{} {}px {}", kind.as_str(), size, family.as_str()));
            self.state.font = Some((
                kind.as_str().to_string(),
                size.to_bits(),
                family.as_str().to_string(),
            ));
        }
    }
}

/// Puts `value` in the state cache's `cached`; true when it was not there already (the
/// context's style then needs setting).
fn replaced<T: PartialEq>(cached: &mut T, value: T) -> bool {
    if *cached == value {
        return false;
    }
    *cached = value;
    true
}

/// Lines still open when the chart is done are stroked (plotters does not always present).
impl Drop for Canvas2d {
    fn drop(&mut self) {
        self.flush_lines();
    }
}

impl Canvas2d {
    /// Makes the open path one of `style`'s lines: strokes the open path first if its
    /// style is another, and starts one.
    fn open_stroke(&mut self, style: &impl BackendStyle) {
        let k = (key(style.color()), style.stroke_width());
        if !(self.lines_open && self.state.stroke == Some(k)) {
            self.flush_lines();
            self.line_style(style);
            self.context.begin_path();
            self.lines_open = true;
        }
    }

    /// Starts a new path through `points` (closed when `close`).
    fn trace(&mut self, points: impl IntoIterator<Item = BackendCoord>, close: bool) {
        self.context.begin_path();
        self.polyline(points, close);
    }

    /// Adds a subpath through `points` to the current path (closed when `close`).
    fn polyline(&mut self, points: impl IntoIterator<Item = BackendCoord>, close: bool) {
        let mut points = points.into_iter();
        if let Some(start) = points.next() {
            self.context.move_to(f64::from(start.0), f64::from(start.1));
            for next in points {
                self.context.line_to(f64::from(next.0), f64::from(next.1));
            }
            if close {
                self.context.close_path();
            }
        }
    }
}

/// Shifts horizontal and vertical lines half a pixel left/up so a 1-px line is
/// not blurred over two (as plotters-canvas does).
fn crisp(from: BackendCoord, to: BackendCoord) -> ((f64, f64), (f64, f64)) {
    let mut a = (f64::from(from.0), f64::from(from.1));
    let mut b = (f64::from(to.0), f64::from(to.1));
    if from.0 == to.0 {
        a.0 -= 0.5;
        b.0 -= 0.5;
    }
    if from.1 == to.1 {
        a.1 -= 0.5;
        b.1 -= 0.5;
    }
    (a, b)
}

impl DrawingBackend for Canvas2d {
    type ErrorType = CanvasError;

    fn get_size(&self) -> (u32, u32) {
        (self.canvas.width(), self.canvas.height())
    }

    fn ensure_prepared(&mut self) -> Result<(), DrawingErrorKind<CanvasError>> {
        Ok(())
    }

    fn present(&mut self) -> Result<(), DrawingErrorKind<CanvasError>> {
        self.flush_lines();
        Ok(())
    }

    fn draw_pixel(
        &mut self,
        point: BackendCoord,
        color: BackendColor,
    ) -> Result<(), DrawingErrorKind<CanvasError>> {
        self.flush_lines();
        if color.alpha == 0.0 {
            return Ok(());
        }
        self.fill_style(color);
        self.context
            .fill_rect(f64::from(point.0), f64::from(point.1), 1.0, 1.0);
        Ok(())
    }

    fn draw_line<S: BackendStyle>(
        &mut self,
        from: BackendCoord,
        to: BackendCoord,
        style: &S,
    ) -> Result<(), DrawingErrorKind<CanvasError>> {
        if style.color().alpha == 0.0 {
            return Ok(());
        }
        let (a, b) = crisp(from, to);
        self.open_stroke(style);
        self.context.move_to(a.0, a.1);
        self.context.line_to(b.0, b.1);
        if !self.batch_lines {
            self.flush_lines();
        }
        Ok(())
    }

    fn draw_rect<S: BackendStyle>(
        &mut self,
        upper_left: BackendCoord,
        bottom_right: BackendCoord,
        style: &S,
        fill: bool,
    ) -> Result<(), DrawingErrorKind<CanvasError>> {
        self.flush_lines();
        if style.color().alpha == 0.0 {
            return Ok(());
        }
        let (x, y) = (f64::from(upper_left.0), f64::from(upper_left.1));
        let w = f64::from(bottom_right.0 - upper_left.0);
        let h = f64::from(bottom_right.1 - upper_left.1);
        if fill {
            self.fill_style(style.color());
            self.context.fill_rect(x, y, w, h);
        } else {
            self.line_style(style);
            self.context.stroke_rect(x, y, w, h);
        }
        Ok(())
    }

    fn draw_path<S: BackendStyle, I: IntoIterator<Item = BackendCoord>>(
        &mut self,
        path: I,
        style: &S,
    ) -> Result<(), DrawingErrorKind<CanvasError>> {
        if style.color().alpha == 0.0 {
            return Ok(());
        }
        self.open_stroke(style);
        self.polyline(path, false);
        if !self.batch_lines {
            self.flush_lines();
        }
        Ok(())
    }

    fn fill_polygon<S: BackendStyle, I: IntoIterator<Item = BackendCoord>>(
        &mut self,
        path: I,
        style: &S,
    ) -> Result<(), DrawingErrorKind<CanvasError>> {
        self.flush_lines();
        if style.color().alpha == 0.0 {
            return Ok(());
        }
        self.fill_style(style.color());
        self.trace(path, true);
        self.context.fill();
        Ok(())
    }

    fn draw_circle<S: BackendStyle>(
        &mut self,
        center: BackendCoord,
        radius: u32,
        style: &S,
        fill: bool,
    ) -> Result<(), DrawingErrorKind<CanvasError>> {
        self.flush_lines();
        if style.color().alpha == 0.0 {
            return Ok(());
        }
        if fill {
            self.fill_style(style.color());
        } else {
            self.line_style(style);
        }
        self.context.begin_path();
        self.context
            .arc(
                f64::from(center.0),
                f64::from(center.1),
                f64::from(radius),
                0.0,
                std::f64::consts::TAU,
            )
            .map_err(error_cast)?;
        if fill {
            self.context.fill();
        } else {
            self.context.stroke();
        }
        Ok(())
    }

    fn draw_text<S: BackendTextStyle>(
        &mut self,
        text: &str,
        style: &S,
        pos: BackendCoord,
    ) -> Result<(), DrawingErrorKind<CanvasError>> {
        self.flush_lines();
        let color = style.color();
        if color.alpha == 0.0 {
            return Ok(());
        }
        let degrees = match style.transform() {
            FontTransform::None => 0.0,
            FontTransform::Rotate90 => 90.0,
            FontTransform::Rotate180 => 180.0,
            FontTransform::Rotate270 => 270.0,
        };
        let (mut x, mut y) = (f64::from(pos.0), f64::from(pos.1));
        let rotated = degrees != 0.0;
        // save/restore puts back what was set before: so does the cache.
        let saved = rotated.then(|| self.state.clone());
        if rotated {
            self.context.save();
            self.context.translate(x, y).map_err(error_cast)?;
            self.context
                .rotate(f64::to_radians(degrees))
                .map_err(error_cast)?;
            (x, y) = (0.0, 0.0);
        }
        let anchor = style.anchor();
        self.text_anchor(anchor.h_pos, anchor.v_pos);
        self.fill_style(color);
        self.font(style);
        let drawn = self.context.fill_text(text, x, y).map_err(error_cast);
        if let Some(state) = saved {
            self.context.restore();
            self.state = state;
        }
        drawn
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_axis_aligned_lines_move_half_a_pixel() {
        assert_eq!(crisp((3, 0), (3, 10)), ((2.5, 0.0), (2.5, 10.0)));
        assert_eq!(crisp((0, 4), (9, 4)), ((0.0, 3.5), (9.0, 3.5)));
        assert_eq!(crisp((0, 0), (5, 7)), ((0.0, 0.0), (5.0, 7.0)));
    }

    #[test]
    fn colours_are_css_rgba_and_alpha_is_part_of_the_key() {
        let c = BackendColor {
            alpha: 0.5,
            rgb: (1, 2, 3),
        };
        assert_eq!(css(c), "rgba(1,2,3,0.5)");
        let opaque = BackendColor { alpha: 1.0, ..c };
        assert_ne!(key(c), key(opaque));
    }

    /// A canvas of `width` × `height` device pixels and its 2D context.
    #[cfg(target_arch = "wasm32")]
    fn test_canvas(width: u32, height: u32) -> (HtmlCanvasElement, CanvasRenderingContext2d) {
        let canvas: HtmlCanvasElement = web_sys::window()
            .and_then(|w| w.document())
            .and_then(|d| d.create_element("canvas").ok())
            .and_then(|e| e.dyn_into().ok())
            .expect("a canvas");
        canvas.set_width(width);
        canvas.set_height(height);
        let context: CanvasRenderingContext2d = canvas
            .get_context("2d")
            .ok()
            .flatten()
            .and_then(|c| c.dyn_into().ok())
            .expect("2d context");
        (canvas, context)
    }

    /// In the browser: the cache follows the context through a rotated label,
    /// whose save/restore puts the context's font and fill back.
    #[cfg(target_arch = "wasm32")]
    #[wasm_bindgen_test::wasm_bindgen_test]
    fn cache_matches_the_context_after_rotated_text() {
        use plotters::prelude::*;
        use plotters::style::text_anchor::{HPos, Pos, VPos};

        let (canvas, context) = test_canvas(200, 100);
        let root = Canvas2d::new(canvas).expect("backend").into_drawing_area();
        let small = ("sans-serif", 11.0).into_font().color(&RED);
        let big = ("serif", 20.0).into_font().color(&BLUE);
        let rotated = big
            .clone()
            .transform(FontTransform::Rotate90)
            .pos(Pos::new(HPos::Center, VPos::Center));
        root.draw(&Text::new("a", (10, 10), small)).unwrap();
        let small_font = context.font();
        root.draw(&Text::new("b", (50, 50), rotated)).unwrap();
        // save/restore put the small font back on the context...
        assert_eq!(context.font(), small_font);
        // ...so the same big font, unrotated, must be set again, not skipped.
        root.draw(&Text::new("c", (90, 10), big)).unwrap();
        let big_font = context.font();
        assert!(small_font.contains("11px"), "{small_font}");
        assert!(big_font.contains("20px"), "{big_font}");
        assert_eq!(context.fill_style().as_string().as_deref(), Some("#0000ff"));
        assert_eq!(context.text_baseline(), "top");
    }

    /// In the browser: a chart whose lines share paths (a y mesh with ticks, an axis, three
    /// dashed lines in three styles, one translucent, a bar over one of them and a label) has
    /// the pixels of the same chart stroked a line at a time, light and dark.
    #[cfg(target_arch = "wasm32")]
    #[wasm_bindgen_test::wasm_bindgen_test]
    fn lines_in_one_path_leave_the_pixels_of_a_stroke_per_line() {
        use plotters::prelude::*;

        fn line(c: impl Color, width: u32) -> ShapeStyle {
            Color::stroke_width(&c, width)
        }

        let draw = |backend: Canvas2d, bg: RGBColor, fg: RGBColor| {
            let root = backend.into_drawing_area();
            root.fill(&bg).unwrap();
            let mut chart = ChartBuilder::on(&root)
                .margin(12)
                .x_label_area_size(30)
                .y_label_area_size(54)
                .build_cartesian_2d(0.0..3.0, 0.0..100.0)
                .unwrap();
            chart
                .configure_mesh()
                .disable_x_mesh()
                .y_labels(6)
                .y_desc("GB per GPU")
                .axis_style(line(fg, 1))
                .light_line_style(TRANSPARENT)
                .bold_line_style(line(fg.mix(0.2), 1))
                .draw()
                .unwrap();
            for (y, style) in [
                (80.0, line(RED, 2)),
                (64.5, line(fg, 1)),
                (30.0, line(GREEN.mix(0.5), 1)),
            ] {
                chart
                    .draw_series(DashedLineSeries::new(vec![(0.0, y), (3.0, y)], 7, 5, style))
                    .unwrap();
            }
            // Over the dash at 30: the open path is stroked before the fill.
            chart
                .draw_series(std::iter::once(Rectangle::new(
                    [(0.4, 0.0), (1.6, 73.0)],
                    BLUE.filled(),
                )))
                .unwrap();
            chart
                .draw_series(std::iter::once(Text::new(
                    "label",
                    (2.0, 50.0),
                    ("sans-serif", 11.0).into_font().color(&fg),
                )))
                .unwrap();
        };
        let pixels = |context: &CanvasRenderingContext2d| {
            context
                .get_image_data(0.0, 0.0, 480.0, 300.0)
                .expect("image data")
                .data()
                .0
        };
        for (bg, fg) in [(WHITE, BLACK), (RGBColor(0x1b, 0x1b, 0x1b), WHITE)] {
            let ((a, a_context), (b, b_context)) = (test_canvas(480, 300), test_canvas(480, 300));
            draw(Canvas2d::new(a).expect("backend"), bg, fg);
            draw(Canvas2d::unbatched(b).expect("backend"), bg, fg);
            let (pa, pb) = (pixels(&a_context), pixels(&b_context));
            let differ = pa.iter().zip(&pb).filter(|(x, y)| x != y).count();
            assert_eq!(differ, 0, "background {bg:?}");
            // The lines are there: the dashes' red is on the canvas.
            assert!(pa.chunks(4).any(|p| p[0] > 200 && p[1] < 60 && p[2] < 60));
        }
    }
}
