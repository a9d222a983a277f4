//! The serving latency view's markup, drawn in the worker from planner-core's numbers
//! (`planner_core::edges::serving_page::ServingPage`): the figures at the scenario's concurrency,
//! TTFT/TPOT against concurrency, tokens/s per GPU against TPOT with the Pareto front, and
//! the deployment table. Drawing here keeps the charts' code out of the page's first-load
//! wasm; the page only places the text ([`planner_core::edges::serving_page::ViewReply`]). Every
//! text from the model (labels, errors) is HTML-escaped ([`html`]).

use std::fmt::Write;

use planner_core::edges::serving_page::{
    ConcurrencyPoint, SearchPage, ServingPage, MARKUP_PIECE, POINTS_TESTID,
};

const W: f64 = 360.0;
const H: f64 = 180.0;
const PAD: f64 = 34.0;
/// Points of the tradeoff chart per markup piece (one animation frame each on the page):
/// small enough that a piece's parse, style and paint leave the frame room.
const POINTS_PER_PIECE: usize = 250;

/// `text` escaped for HTML text and attribute values.
pub fn html(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

fn ms(s: f64) -> String {
    if s < 1.0 {
        format!("{:.1} ms", s * 1e3)
    } else {
        format!("{s:.2} s")
    }
}

/// Maps `v` in [lo, hi] to [out_lo, out_hi].
fn scale(v: f64, lo: f64, hi: f64, out_lo: f64, out_hi: f64) -> f64 {
    let span = (hi - lo).max(1e-12);
    out_lo + (v - lo) / span * (out_hi - out_lo)
}

fn polyline(points: &[(f64, f64)], class: &str) -> String {
    let pts = points
        .iter()
        .map(|(x, y)| format!("{x:.1},{y:.1}"))
        .collect::<Vec<_>>()
        .join(" ");
    format!(r#"<polyline points="{pts}" class="{class}" fill="none"/>"#)
}

fn frame(testid: &str, label: &str, body: &str) -> String {
    let (b, r) = (H - PAD, W - 8.0);
    format!(
        r#"<svg class="serve-chart" viewBox="0 0 {W} {H}" role="img" data-testid="{testid}" aria-label="{label}"><line x1="{PAD}" y1="{b}" x2="{r}" y2="{b}" class="axis"/><line x1="{PAD}" y1="8" x2="{PAD}" y2="{b}" class="axis"/>{body}</svg>"#
    )
}

/// A dashed vertical line at `x` (the current concurrency, or the TPOT target).
fn marker(x: f64) -> String {
    format!(
        r#"<line x1="{x:.1}" y1="8" x2="{x:.1}" y2="{}" class="current"/>"#,
        H - PAD
    )
}

fn error(testid: &str, e: &str) -> String {
    format!(
        r#"<p class="issue error" data-testid="{testid}">{}</p>"#,
        html(e)
    )
}

/// TTFT and TPOT on a shared log axis (a TTFT climbing near saturation does not flatten
/// the TPOT line) against log₂ concurrency.
fn latency_svg(curve: &[ConcurrencyPoint], current: u32) -> String {
    let xs: Vec<f64> = curve
        .iter()
        .map(|p| f64::from(p.concurrency).log2())
        .collect();
    let (x0, x1) = (
        xs.first().copied().unwrap_or(0.0),
        xs.last().copied().unwrap_or(1.0),
    );
    let positive = |v: f64| v.max(1e-6);
    let y_hi = curve
        .iter()
        .map(|p| positive(p.ttft_s.max(p.tpot_s)))
        .fold(1e-6, f64::max);
    let y_lo = curve
        .iter()
        .map(|p| positive(p.ttft_s.min(p.tpot_s)))
        .fold(y_hi, f64::min);
    // A fifth of a decade below the smallest value, one decade at least in all.
    let (l0, l1) = (y_lo.log10() - 0.2, y_hi.log10().max(y_lo.log10() + 1.0));
    let px = |x: f64| scale(x, x0, x1.max(x0 + 1.0), PAD, W - 8.0);
    let py = |y: f64| scale(positive(y).log10(), l0, l1, H - PAD, 8.0);
    let line = |f: fn(&ConcurrencyPoint) -> f64, class: &str| {
        polyline(
            &curve
                .iter()
                .zip(&xs)
                .map(|(p, &x)| (px(x), py(f(p))))
                .collect::<Vec<_>>(),
            class,
        )
    };
    let mut body = String::new();
    let first = curve.first().map_or(1, |p| p.concurrency);
    let last = curve.last().map_or(1, |p| p.concurrency);
    let _ = write!(
        body,
        r#"<text x="{PAD}" y="{}" class="tick">c = {first}</text><text x="{}" y="{}" class="tick">c = {last}</text><text x="2" y="14" class="tick">{}</text><text x="2" y="{}" class="tick">{}</text>"#,
        H - 10.0,
        W - 60.0,
        H - 10.0,
        ms(10f64.powf(l1)),
        H - PAD - 2.0,
        ms(10f64.powf(l0)),
    );
    body.push_str(&line(|p| p.ttft_s, "ttft"));
    body.push_str(&line(|p| p.tpot_s, "tpot"));
    if let Some((_, &x)) = curve
        .iter()
        .zip(&xs)
        .find(|(p, _)| p.concurrency == current)
    {
        body.push_str(&marker(px(x)));
    }
    let _ = write!(
        body,
        r#"<text x="{0}" y="18" class="ttft-label">TTFT (percentile)</text><text x="{0}" y="32" class="tpot-label">TPOT (log axis)</text>"#,
        W - 150.0
    );
    frame(
        "latency-chart",
        "TTFT and TPOT against concurrency, logarithmic time axis",
        &body,
    )
}

/// The figures at the scenario's concurrency and the latency chart.
pub fn curve(p: &ServingPage) -> String {
    if let Some(e) = &p.curve_error {
        return error("serve-latency-error", e);
    }
    let mut out = String::from(r#"<dl class="figures-inline">"#);
    if let Some(q) = p.curve.iter().find(|q| q.concurrency == p.concurrency) {
        let _ = write!(
            out,
            r#"<div><dt>TTFT p99</dt><dd data-testid="serve-ttft" data-seconds="{}">{}</dd></div><div><dt>TPOT</dt><dd data-testid="serve-tpot" data-seconds="{}">{}</dd></div><div><dt>Output tokens/s per GPU</dt><dd data-testid="serve-throughput">{:.0}</dd></div>"#,
            q.ttft_s,
            ms(q.ttft_s),
            q.tpot_s,
            ms(q.tpot_s),
            q.throughput_per_gpu
        );
        if q.running < q.concurrency {
            let share = if q.ttft_mean_s > 0.0 {
                q.slot_wait_s / q.ttft_mean_s * 100.0
            } else {
                0.0
            };
            let _ = write!(
                out,
                r#"<div><dt>Running at once</dt><dd data-testid="serve-running">{} of {}</dd></div><div><dt>Wait for a slot</dt><dd data-testid="serve-slot-wait" data-seconds="{}">{} ({share:.0}% of mean TTFT)</dd></div>"#,
                q.running,
                q.concurrency,
                q.slot_wait_s,
                ms(q.slot_wait_s)
            );
        }
    }
    out.push_str("</dl>");
    out.push_str(&latency_svg(&p.curve, p.concurrency));
    out
}

/// Tokens/s per GPU against TPOT for every (deployment, concurrency), Pareto front joined.
/// The TPOT axis ends at twice the target (or the slowest point, if sooner), so one slow
/// deployment does not squeeze the rest; points beyond it are counted under the chart.
/// Returns the chart with an empty points group, and the points in pieces for that group.
fn tradeoff_svg(r: &SearchPage, tpot_target_s: f64) -> (String, Vec<String>) {
    let slowest = r.points.iter().map(|p| p.tpot_s).fold(1e-6, f64::max);
    let x1 = if tpot_target_s > 0.0 {
        slowest.min(2.0 * tpot_target_s)
    } else {
        slowest
    };
    let shown: Vec<_> = r.points.iter().filter(|p| p.tpot_s <= x1).collect();
    let beyond = r.points.len() - shown.len();
    let y1 = shown
        .iter()
        .map(|p| p.throughput_per_gpu)
        .fold(1e-6, f64::max);
    let px = |x: f64| scale(x, 0.0, x1, PAD, W - 8.0);
    let py = |y: f64| scale(y, 0.0, y1, H - PAD, 8.0);
    let mut body = String::new();
    if tpot_target_s > 0.0 && tpot_target_s <= x1 {
        body.push_str(&marker(px(tpot_target_s)));
    }
    let _ = write!(
        body,
        r#"<text x="{}" y="{}" class="tick">TPOT {}</text><text x="2" y="14" class="tick">{y1:.0} tok/s/GPU</text>"#,
        W - 90.0,
        H - 10.0,
        ms(x1)
    );
    let _ = write!(body, r#"<g data-testid="{POINTS_TESTID}"></g>"#);
    let mut pieces = Vec::new();
    for chunk in shown.chunks(POINTS_PER_PIECE) {
        let mut piece = String::new();
        for p in chunk {
            let class = match (p.pareto, p.aggregated) {
                (true, _) => "dot front",
                (false, true) => "dot agg",
                (false, false) => "dot disagg",
            };
            let _ = write!(
                piece,
                r#"<circle cx="{:.1}" cy="{:.1}" r="2.5" class="{class}"><title>{} at c = {}: TPOT {}, {:.0} tok/s/GPU</title></circle>"#,
                px(p.tpot_s),
                py(p.throughput_per_gpu),
                html(&p.label),
                p.concurrency,
                ms(p.tpot_s),
                p.throughput_per_gpu
            );
        }
        pieces.push(piece);
    }
    let mut front: Vec<(f64, f64)> = shown
        .iter()
        .filter(|p| p.pareto)
        .map(|p| (px(p.tpot_s), py(p.throughput_per_gpu)))
        .collect();
    front.sort_by(|a, b| a.0.total_cmp(&b.0));
    body.push_str(&polyline(&front, "front"));
    let mut out = frame(
        "tradeoff-chart",
        "Output tokens per second per GPU against TPOT, Pareto front joined",
        &body,
    );
    if beyond > 0 {
        let _ = write!(
            out,
            r#"<p class="hint" data-testid="tradeoff-beyond">{beyond} point(s) slower than TPOT {} are off the chart.</p>"#,
            ms(x1)
        );
    }
    (out, pieces)
}

/// The tradeoff chart, the search's summary and the deployment table; each row carries
/// the shape and concurrency that clicking it applies (`data-tp`, `data-pp`, `data-c`).
pub fn search(p: &ServingPage) -> Option<String> {
    if let Some(e) = &p.search_error {
        return Some(error("serve-search-error", e));
    }
    let r = p.search.as_ref()?;
    let (mut out, pieces) = tradeoff_svg(r, p.tpot_target_s);
    let _ = write!(
        out,
        r#"<p class="hint" data-testid="serve-search-summary">{} deployments of {} GPUs, {} meet the target. Rejected: {}</p><div class="table-scroll"><table class="deployments" data-testid="deployment-table"><caption>Deployments meeting the target, most output tokens/s per GPU first (click a row to apply it)</caption><thead><tr><th>Deployment</th><th>Concurrency</th><th>TTFT p99</th><th>TPOT</th><th>tok/s/GPU</th></tr></thead><tbody>"#,
        r.candidates,
        r.gpus,
        r.feasible_count,
        html(&r.rejections.join("; "))
    );
    for (i, d) in r.rows.iter().enumerate() {
        let _ = write!(
            out,
            r#"<tr data-testid="deploy-row-{i}" data-tp="{}" data-pp="{}" data-c="{}" tabindex="0" title="Apply this replica shape and concurrency to the scenario"><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{:.0}</td></tr>"#,
            d.tp,
            d.pp,
            d.concurrency,
            html(&d.label),
            d.concurrency,
            ms(d.ttft_s),
            ms(d.tpot_s),
            d.throughput_per_gpu
        );
    }
    out.push_str("</tbody></table></div>");
    for piece in pieces {
        out.push_str(MARKUP_PIECE);
        out.push_str(&piece);
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn html_escapes_what_a_label_could_carry() {
        assert_eq!(
            html(r#"<b a="x">&'"#),
            "&lt;b a=&quot;x&quot;&gt;&amp;&#39;"
        );
    }
}
