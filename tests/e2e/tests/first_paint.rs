//! How soon the release page shows something, cold (a fresh browser profile) and warm
//! (the same browser again, its HTTP cache filled by a server that lets it cache as a
//! static host would): first contentful paint and the live memory chart, measured as the
//! side-by-side page benchmark measures them (docs/measurement-log.md, issue 45): the live
//! chart is drawn when the page records its first `chart-*` canvas draw in
//! `window.__meshplanRuns` (`app/src/perf.rs`), and on screen at the animation frame after
//! it. Also the largest contentful paint, the pre-rendered chart image's paint (the first
//! chart a visitor sees, which is not the live one), when the wasm arrived and the app's
//! own marks. Printed, not asserted. Also screenshots of the page while its wasm is held
//! back, and once it is live.

use std::time::Duration;

use e2e::{assert_no_console_errors, percentile, screenshot_path, Page, ServeOptions, Session};
use serde_json::{json, Value};

/// Runs before any of the page's scripts: records the first live chart draw as the
/// side-by-side benchmark does (a `Proxy` on `window.__meshplanRuns` sees the first key
/// starting `chart-` written, i.e. a chart canvas drawn, then the next animation frame),
/// the largest contentful paint, and the paint of the pre-rendered chart image (its
/// largest-contentful-paint entry, or the first animation frame with it decoded, if not
/// before the first paint).
const WATCH: &str = r#"
window.__mp = {};
(function () {
  const hit = (name) => {
    if (window.__mp.chart !== undefined) return;
    window.__mp.chart = performance.now(); window.__mp.chartName = name;
    requestAnimationFrame(() => { window.__mp.chartFrame = performance.now(); });
  };
  window.__meshplanRuns = new Proxy({}, { set(t, k, v) {
    t[k] = v; if (typeof k === 'string' && k.startsWith('chart-')) hit(k); return true; } });
})();
try {
  new PerformanceObserver(list => {
    for (const e of list.getEntries()) {
      window.__mp.lcp = e.startTime;
      // Only the pre-rendered charts are data-URL images (the element may be gone already).
      const chart = (e.element && e.element.matches('img.prerender-chart')) || (e.url || '').startsWith('data:image/');
      if (chart && window.__mp.chartPaint === undefined) window.__mp.chartPaint = e.startTime;
      window.__mp.lcpWhat = e.element ? (e.element.tagName.toLowerCase() + (e.element.className ? '.' + e.element.className : '')) : '';
    }
  }).observe({type: 'largest-contentful-paint', buffered: true});
} catch (e) {}
(function poll() {
  const img = document.querySelector('img.prerender-chart');
  if (img && img.complete && img.naturalWidth > 0 && window.__mp.chartReady === undefined) window.__mp.chartReady = performance.now();
  if (window.__mp.chart !== undefined) return;
  requestAnimationFrame(poll);
})();
"#;

/// Waits until the live chart is drawn and the pre-rendered copy (if any) is gone, two
/// more frames for the paint entries, then returns the timings (ms since navigation).
const COLLECT: &str = r#"
const done = arguments[arguments.length - 1];
(function wait() {
  if (window.__mp && window.__mp.chartFrame !== undefined && !document.getElementById('meshplan-prerender')) {
    requestAnimationFrame(() => requestAnimationFrame(() => setTimeout(() => {
      const paint = n => (performance.getEntriesByName(n)[0] || {}).startTime;
      const wasm = performance.getEntriesByType('resource').find(r => r.name.endsWith('.wasm') && !r.name.includes('worker'));
      done({
        fcp: paint('first-contentful-paint'),
        lcp: window.__mp.lcp, lcpWhat: window.__mp.lcpWhat || '',
        chart: window.__mp.chart, chartName: window.__mp.chartName || '', chartFrame: window.__mp.chartFrame,
        chartPaint: window.__mp.chartPaint, chartReady: window.__mp.chartReady,
        mounted: paint('meshplan:mounted'), live: paint('meshplan:live'),
        wasmEnd: wasm ? wasm.responseEnd : undefined,
        wasmBytes: wasm ? wasm.transferSize : undefined,
        html: performance.getEntriesByType('navigation')[0].responseEnd,
      });
    }, 0)));
  } else { setTimeout(wait, 10); }
})();
"#;

/// One load's figures, milliseconds since navigation start.
struct Load {
    fcp: f64,
    lcp: f64,
    lcp_what: String,
    /// The pre-rendered chart image on screen (its paint), else the live chart's frame,
    /// whichever is first: what a visitor sees first, not the live chart.
    first_chart: f64,
    /// The first live chart canvas drawn (`chart-*` recorded), which one, and the
    /// animation frame after it: the benchmark's "first chart drawn" and "next rAF".
    live_chart: f64,
    live_chart_name: String,
    live_chart_frame: f64,
    /// The app's marks: mounted, and the pre-rendered copy removed.
    mounted: f64,
    live: f64,
    wasm_end: f64,
    wasm_transfer_bytes: f64,
}

fn load(session: &Session, url: &str) -> Load {
    session
        .cdp(
            "Page.addScriptToEvaluateOnNewDocument",
            json!({ "source": WATCH }),
        )
        .expect("install the paint watcher");
    session.goto(url).expect("navigate");
    session.set_script_timeout(60_000).unwrap();
    let v: Value = session.execute_async(COLLECT, vec![]).expect("timings");
    let n = |k: &str| v[k].as_f64().unwrap_or(f64::NAN);
    Load {
        fcp: n("fcp"),
        lcp: n("lcp"),
        lcp_what: v["lcpWhat"].as_str().unwrap_or("").to_string(),
        first_chart: {
            // f64::min and max skip NaN: a build without the copy has no image times.
            // Nothing is on screen before the first paint.
            let after_fcp = |t: f64| if t.is_nan() { t } else { t.max(n("fcp")) };
            n("chartPaint")
                .min(after_fcp(n("chartReady")))
                .min(after_fcp(n("chartFrame")))
        },
        live_chart: n("chart"),
        live_chart_name: v["chartName"].as_str().unwrap_or("").to_string(),
        live_chart_frame: n("chartFrame"),
        mounted: n("mounted"),
        live: n("live"),
        wasm_end: n("wasmEnd"),
        wasm_transfer_bytes: n("wasmBytes"),
    }
}

fn print_table(name: &str, loads: &[Load]) {
    let med = |f: fn(&Load) -> f64| {
        let mut v: Vec<f64> = loads.iter().map(f).collect();
        v.sort_by(f64::total_cmp);
        percentile(&v, 0.5)
    };
    println!(
        "FIRST PAINT, {name} ({} loads; ms since navigation):",
        loads.len()
    );
    for (i, l) in loads.iter().enumerate() {
        println!(
            "  load {}: FCP {:.0}, live chart ({}) drawn {:.0}, next frame {:.0}; LCP {:.0} ({}), pre-rendered chart on screen {:.0}, wasm arrived {:.0} ({:.0} B over the wire), app mounted {:.0}, copy removed {:.0}",
            i + 1,
            l.fcp,
            l.live_chart_name,
            l.live_chart,
            l.live_chart_frame,
            l.lcp,
            l.lcp_what,
            l.first_chart,
            l.wasm_end,
            l.wasm_transfer_bytes,
            l.mounted,
            l.live
        );
    }
    println!(
        "  median: FCP {:.0} ms, live chart drawn {:.0} ms, next frame {:.0} ms; pre-rendered chart on screen {:.0} ms, wasm arrived {:.0} ms, app mounted {:.0} ms",
        med(|l| l.fcp),
        med(|l| l.live_chart),
        med(|l| l.live_chart_frame),
        med(|l| l.first_chart),
        med(|l| l.wasm_end),
        med(|l| l.mounted)
    );
}

/// Navigates to `url` from script, so the WebDriver call returns before the page has
/// loaded, and waits 1.2 s: what a visitor sees while the wasm is held back.
fn navigate_and_wait_1200_ms(session: &Session, url: &str) {
    session
        .execute(
            "setTimeout(() => { location.href = arguments[0]; }, 0); return 0;",
            vec![json!(url)],
        )
        .unwrap();
    std::thread::sleep(Duration::from_millis(1200));
}

#[test]
#[ignore = "needs dist/ and chromedriver: run via `cargo xtask test`"]
fn first_chart_is_timed_cold_and_warm_and_the_loading_page_is_shown() {
    let page = Page::start_with(ServeOptions {
        cache: true,
        wasm_delay: Duration::ZERO,
    })
    .expect("start server and chromedriver");
    let url = page.url();
    let mut cold = Vec::new();
    let mut warm = Vec::new();
    for _ in 0..5 {
        // Cold: a fresh profile, nothing cached and nothing compiled.
        let session = page.session().expect("session");
        session.set_window_size(1440, 1100).unwrap();
        cold.push(load(&session, &url));
        // Warm: the same browser opens the page again.
        warm.push(load(&session, &url));
        warm.push(load(&session, &url));
        assert_no_console_errors(&session, "loading the page");
    }
    print_table("cold (fresh browser profile)", &cold);
    print_table("warm (same browser, cached)", &warm);

    // While the wasm is held back 3 s: what a visitor on a slow link sees first.
    let slow = Page::start_with(ServeOptions {
        cache: false,
        wasm_delay: Duration::from_secs(3),
    })
    .expect("start the slow server");
    let session = slow.session().expect("session");
    session.set_window_size(1440, 1100).unwrap();
    navigate_and_wait_1200_ms(&session, &slow.url());
    let loading = session
        .execute(
            "return {prerender: !!document.getElementById('meshplan-prerender'), live: !!document.querySelector('[data-testid=state-total-3]'), text: (document.body ? document.body.innerText : '').length};",
            vec![],
        )
        .unwrap();
    session
        .screenshot(&screenshot_path("page-loading-before-wasm"))
        .unwrap();
    println!("LOADING (wasm held back 3 s, 1.2 s after navigation): {loading}");
    session
        .wait_text(
            "[data-testid=state-total-3]",
            Duration::from_secs(60),
            |t| t.ends_with('B'),
        )
        .expect("the page goes live after the wasm arrives");
    session.set_script_timeout(60_000).unwrap();
    session
        .execute_async(
            "const done = arguments[arguments.length - 1];
             (function w() { if (document.getElementById('meshplan-prerender')) setTimeout(w, 20); else requestAnimationFrame(() => requestAnimationFrame(() => done(0))); })();",
            vec![],
        )
        .unwrap();
    session
        .screenshot(&screenshot_path("page-loaded-live"))
        .unwrap();
    assert_no_console_errors(&session, "the slow load");

    // The same in the dark colour scheme: the copy's charts are its dark drawings.
    let dark = slow.session().expect("session");
    dark.set_window_size(1440, 1100).unwrap();
    dark.cdp(
        "Emulation.setEmulatedMedia",
        json!({ "features": [{ "name": "prefers-color-scheme", "value": "dark" }] }),
    )
    .expect("emulate the dark scheme");
    navigate_and_wait_1200_ms(&dark, &slow.url());
    let charts = dark
        .execute(
            "return [...document.querySelectorAll('#meshplan-prerender img.prerender-chart')].map(i => i.currentSrc && i.currentSrc !== i.src ? 'dark' : 'light');",
            vec![],
        )
        .unwrap();
    dark.screenshot(&screenshot_path("page-loading-before-wasm-dark"))
        .unwrap();
    println!("LOADING, dark scheme (wasm held back 3 s, 1.2 s after navigation): chart images drawn {charts}");
    dark.wait_text(
        "[data-testid=state-total-3]",
        Duration::from_secs(60),
        |t| t.ends_with('B'),
    )
    .expect("the dark page goes live");
    assert_no_console_errors(&dark, "the slow load, dark scheme");
}

/// The browser's own floor: a heading and one small inline PNG, served by the same
/// server with the same caching, in the same Chromium, window and cold/warm pattern as
/// the release page above. What is left of the release page's first paint above this
/// is the page's own; this is what the browser costs on the machine.
const MINIMAL_PAGE: &str = r#"<!doctype html>
<html lang="en"><head><meta charset="utf-8" /><title>floor</title><link rel="icon" href="data:," /></head>
<body><h1>meshplan</h1><img alt="chart" width="240" height="120" src="data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="></body></html>
"#;

/// Waits for the load event and two frames, then returns FCP and LCP (ms since navigation).
const COLLECT_PAINT: &str = r#"
const done = arguments[arguments.length - 1];
(function wait() {
  if (document.readyState === 'complete') {
    requestAnimationFrame(() => requestAnimationFrame(() => setTimeout(() => {
      const fcp = (performance.getEntriesByName('first-contentful-paint')[0] || {}).startTime;
      done({ fcp: fcp, lcp: window.__mp ? window.__mp.lcp : undefined });
    }, 0)));
  } else { setTimeout(wait, 10); }
})();
"#;

/// FCP and LCP medians, cold (fresh profile, 5) and warm (cached, 10), of the page in
/// `root`, measured as the release page's are.
fn paint_medians(root: &std::path::Path) -> ((f64, f64), (f64, f64)) {
    let page = Page::serve_dir_with(
        root,
        ServeOptions {
            cache: true,
            wasm_delay: Duration::ZERO,
        },
    )
    .expect("start server and chromedriver");
    let url = page.url();
    let (mut cold, mut warm) = (Vec::new(), Vec::new());
    let once = |session: &Session| -> (f64, f64) {
        session
            .cdp(
                "Page.addScriptToEvaluateOnNewDocument",
                json!({ "source": WATCH }),
            )
            .expect("install the paint watcher");
        session.goto(&url).expect("navigate");
        session.set_script_timeout(60_000).expect("script timeout");
        let v: Value = session
            .execute_async(COLLECT_PAINT, vec![])
            .expect("timings");
        let n = |k: &str| v[k].as_f64().unwrap_or(f64::NAN);
        (n("fcp"), n("lcp"))
    };
    for _ in 0..5 {
        let session = page.session().expect("session");
        session.set_window_size(1440, 1100).expect("window size");
        cold.push(once(&session));
        warm.push(once(&session));
        warm.push(once(&session));
    }
    let med = |v: &[(f64, f64)], f: fn(&(f64, f64)) -> f64| {
        let mut x: Vec<f64> = v.iter().map(f).collect();
        x.sort_by(f64::total_cmp);
        percentile(&x, 0.5)
    };
    (
        (med(&cold, |p| p.0), med(&cold, |p| p.1)),
        (med(&warm, |p| p.0), med(&warm, |p| p.1)),
    )
}

#[test]
#[ignore = "needs chromedriver: run via `cargo xtask test`"]
fn the_browsers_own_first_paint_floor_is_timed() {
    let root = e2e::workspace_root()
        .join("target")
        .join("first-paint-floor");
    std::fs::create_dir_all(&root).expect("create the floor page's folder");
    std::fs::write(root.join("index.html"), MINIMAL_PAGE).expect("write the floor page");
    let ((cold_fcp, cold_lcp), (warm_fcp, warm_lcp)) = paint_medians(&root);
    println!(
        "FIRST PAINT FLOOR (a heading and one inline PNG, same server and browser): cold FCP {cold_fcp:.0} ms, LCP {cold_lcp:.0} ms; warm FCP {warm_fcp:.0} ms, LCP {warm_lcp:.0} ms (medians of 5 and 10)"
    );
    // A variant of the release page to compare (a folder with its own index.html).
    if let Some(dir) = std::env::var_os("MESHPLAN_FCP_DIR") {
        let ((cold_fcp, cold_lcp), (warm_fcp, warm_lcp)) =
            paint_medians(std::path::Path::new(&dir));
        println!(
            "FIRST PAINT of {}: cold FCP {cold_fcp:.0} ms, LCP {cold_lcp:.0} ms; warm FCP {warm_fcp:.0} ms, LCP {warm_lcp:.0} ms",
            std::path::Path::new(&dir).display()
        );
    }
}
