//! Build-time pre-rendering: the release page, run once in headless Chromium on the
//! default scenario, copied as static markup into `dist/index.html`, so a visitor sees
//! the controls and the memory chart before the wasm has loaded.
//!
//! Every number in the copy was drawn by the page itself from planner-core; nothing
//! is typed in. The charts near the first screen become `<img>`s of their canvases,
//! the rest keep an empty frame of their size. The page is copied twice, in the light
//! and in the dark colour scheme (Chromium's emulated `prefers-color-scheme`): the
//! markup is the light copy's (its colours come from the stylesheet's variables, which
//! follow the visitor's scheme), and each chart image is a `<picture>` whose dark
//! source is the dark copy's drawing of the same canvas, so a dark-theme visitor sees
//! dark charts, not a light flash. The copy is `inert` (clicks and focus
//! go to the live page beneath it) and carries no `data-testid` or `id`, so nothing
//! can mistake it for the live page; the app removes it once its first chart is drawn
//! (`app/src/prerender.rs`).

use std::path::Path;
use std::time::Duration;

use serde_json::Value;

use crate::{Driver, Result, Session, StaticServer};

/// Marks the copy's start and end in `index.html`: a rerun replaces the copy.
const BEGIN: &str = "<!-- meshplan:prerender:begin -->";
const END: &str = "<!-- meshplan:prerender:end -->";

/// Window the copy is laid out in (CSS pixels): the e2e tests' window.
const WIDTH_PX: u32 = 1440;
const HEIGHT_PX: u32 = 1100;

/// What one pre-rendering produced.
#[derive(Clone, Debug, PartialEq)]
pub struct Snapshot {
    /// The page's markup, without scripts, ids or test ids.
    pub html: String,
    /// Canvases copied as images.
    pub charts_as_images: u32,
    /// Of those, how many carry a dark-scheme drawing too (all of them, unless the
    /// dark copy laid out another set of charts near the first screen).
    pub dark_images: u32,
    /// Canvases left as empty frames (near the first screen, not on it).
    pub empty_frames: u32,
    /// Sections, control groups and footers left out: they start below the first screen.
    pub left_out: u32,
    /// The copied page's query (`?v=1&…`, the default scenario's link): a visitor
    /// arriving with another query sees the copy dimmed, as not yet their scenario.
    pub query: String,
}

/// Copies the live page's DOM once its views show numbers and its first charts have
/// drawn (see the module doc).
/// `arguments[0]`: the dark copy's chart images in document order (or null), laid
/// under the light ones as `<picture>` sources; the script returns its own images too.
const SNAPSHOT_SCRIPT: &str = r#"
const done = arguments[arguments.length - 1];
const dark = arguments[0];
requestAnimationFrame(() => requestAnimationFrame(() => {
  const limit = window.innerHeight;
  // The smaller of a PNG and a high-quality WebP: the copy's bytes come before anything else.
  const encode = c => [c.toDataURL('image/png'), c.toDataURL('image/webp', 0.92)]
    .filter(u => u.startsWith('data:image/')).sort((a, b) => a.length - b.length)[0];
  const parts = [], charts = [];
  let images = 0, frames = 0, darkImages = 0, dropped = 0;
  // The first screen only: sections, control groups and the footer that start below it are
  // left out (the live page brings them a moment later), so the copy parses, lays out and
  // paints no more than a visitor sees.
  const DROP = 'data-prerender-drop';
  for (const el of document.querySelectorAll('.views > *, .controls fieldset, .foot')) {
    if (el.getBoundingClientRect().top >= limit) { el.setAttribute(DROP, ''); dropped++; }
  }
  for (const root of document.body.children) {
    if (['SCRIPT', 'NOSCRIPT', 'TEMPLATE'].includes(root.tagName)) continue;
    if (root.id === 'meshplan-prerender') continue;
    const copy = root.cloneNode(true);
    const live = root.querySelectorAll('canvas, input, select, textarea');
    const copied = copy.querySelectorAll('canvas, input, select, textarea');
    live.forEach((el, i) => {
      const c = copied[i];
      if (el.closest('[' + DROP + ']')) return;
      if (el.tagName === 'CANVAS') {
        const r = el.getBoundingClientRect();
        if (r.top < limit && r.bottom > 0 && el.width > 0 && r.width > 0) {
          const img = document.createElement('img');
          img.src = encode(el);
          img.alt = el.getAttribute('aria-label') || '';
          img.width = Math.round(r.width);
          img.height = Math.round(r.height);
          img.className = 'prerender-chart';
          // In the first paint, not a later one.
          img.decoding = 'sync';
          charts.push(img.src);
          if (dark && dark[images]) {
            const picture = document.createElement('picture');
            const source = document.createElement('source');
            source.media = '(prefers-color-scheme: dark)';
            source.srcset = dark[images];
            picture.append(source, img);
            c.replaceWith(picture);
            darkImages++;
          } else {
            // No dark drawing: hidden in the dark scheme (public/prerender.css), only its frame shows.
            img.classList.add('prerender-light-only');
            c.replaceWith(img);
          }
          images++;
        } else {
          c.setAttribute('style', `width:${r.width}px;height:${r.height}px`);
          frames++;
        }
      } else if (el.tagName === 'SELECT') {
        c.querySelectorAll('option').forEach((o, k) => {
          if (k === el.selectedIndex) o.setAttribute('selected', ''); else o.removeAttribute('selected');
        });
      } else if (el.type === 'checkbox' || el.type === 'radio') {
        if (el.checked) c.setAttribute('checked', ''); else c.removeAttribute('checked');
      } else if (el.tagName === 'TEXTAREA') {
        c.textContent = el.value;
      } else if (el.type !== 'file') {
        // The share link would name the pre-rendering server's port: left empty.
        c.setAttribute('value', el.value.startsWith(location.origin) ? '' : el.value);
      }
    });
    // The deferred sections (app/src/deferred.rs) are below the first screens and come with
    // their own module: the copy keeps their empty container, whenever they loaded.
    copy.querySelectorAll('.deferred-views').forEach(d => d.replaceChildren());
    copy.querySelectorAll('[' + DROP + '], script, .tooltip').forEach(s => s.remove());
    for (const e of [copy, ...copy.querySelectorAll('*')]) {
      e.removeAttribute('data-testid');
      e.removeAttribute('id');
      for (const a of [...e.attributes]) if (a.name.startsWith('on')) e.removeAttribute(a.name);
    }
    parts.push(copy.outerHTML);
  }
  document.querySelectorAll('[' + DROP + ']').forEach(e => e.removeAttribute(DROP));
  done({html: parts.join('\n'), images, frames, darkImages, dropped, charts, query: location.search});
}));
"#;

/// Opens `url` in `session` in the colour `scheme` (`light` or `dark`), waits until
/// the page is live, and runs [`SNAPSHOT_SCRIPT`] with `dark_charts` (JSON array or null).
fn capture(session: &Session, url: &str, scheme: &str, dark_charts: Value) -> Result<Value> {
    session.cdp(
        "Emulation.setEmulatedMedia",
        serde_json::json!({ "features": [{ "name": "prefers-color-scheme", "value": scheme }] }),
    )?;
    session.set_window_size(WIDTH_PX, HEIGHT_PX)?;
    session.goto(url)?;
    session.wait_text(
        "[data-testid=state-total-3]",
        Duration::from_secs(60),
        |t| t.ends_with('B'),
    )?;
    session.execute_async(SNAPSHOT_SCRIPT, vec![dark_charts])
}

/// Copies the page at `url` in the dark scheme (its chart images only), then in the
/// light scheme with the dark images as `<picture>` sources (see the module doc).
pub fn snapshot(session: &Session, url: &str) -> Result<Snapshot> {
    let dark = capture(session, url, "dark", Value::Null)?;
    let v = capture(session, url, "light", dark["charts"].clone())?;
    let html = v["html"]
        .as_str()
        .ok_or("the snapshot script returned no markup")?
        .to_string();
    if !html.contains("<main") {
        return Err("the snapshot has no <main>: the page did not mount".into());
    }
    Ok(Snapshot {
        html,
        charts_as_images: v["images"].as_u64().unwrap_or(0) as u32,
        dark_images: v["darkImages"].as_u64().unwrap_or(0) as u32,
        empty_frames: v["frames"].as_u64().unwrap_or(0) as u32,
        left_out: v["dropped"].as_u64().unwrap_or(0) as u32,
        query: v["query"].as_str().unwrap_or("").to_string(),
    })
}

/// `text` as an HTML attribute value (inside double quotes).
fn attribute(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('"', "&quot;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// Dims the copy when the visitor's link is another scenario than the copied one.
const STALE_SCRIPT: &str = "<script>(function(){var p=document.getElementById('meshplan-prerender');if(p&&location.search&&location.search!==p.dataset.query){p.classList.add('stale');}})();</script>";

/// Trunk's loader runs the wasm as soon as it is compiled, which can hold the first
/// paint (of the copy) until the live page has mounted; one frame first lets it paint.
const INIT_CALL: &str = "const wasm = await init(";
const INIT_AFTER_A_FRAME: &str = "await new Promise(r => requestAnimationFrame(() => setTimeout(r, 0)));\nconst wasm = await init(";

/// `index` with `snapshot` of the page at `query` placed right after `<body>`
/// (replacing an earlier copy), wrapped in the inert `#meshplan-prerender` container;
/// trunk's loader waits one frame before it starts the wasm.
pub fn insert(index: &str, snapshot: &str, query: &str) -> Result<String> {
    let without = strip(index);
    let body = without
        .find("<body")
        .and_then(|b| without[b..].find('>').map(|e| b + e + 1))
        .ok_or("index.html has no <body>")?;
    let block = format!(
        "{BEGIN}<div id=\"meshplan-prerender\" class=\"prerender\" inert aria-hidden=\"true\" data-query=\"{}\"><p class=\"prerender-note\">Loading the interactive page…</p>{snapshot}</div>{STALE_SCRIPT}{END}",
        attribute(query)
    );
    let head = &without[..body];
    let head = if head.contains(INIT_AFTER_A_FRAME) {
        head.to_string()
    } else {
        head.replacen(INIT_CALL, INIT_AFTER_A_FRAME, 1)
    };
    Ok(format!("{head}{block}{}", &without[body..]))
}

/// `index` without its pre-rendered copy, if it has one.
pub fn strip(index: &str) -> String {
    match (index.find(BEGIN), index.find(END)) {
        (Some(b), Some(e)) if b < e => format!("{}{}", &index[..b], &index[e + END.len()..]),
        _ => index.to_string(),
    }
}

/// Pre-renders `dist/`: serves it, opens it in headless Chromium (`$CHROMEDRIVER`,
/// `$CHROMIUM`), copies the default page and writes the copy into `dist/index.html`.
/// The copy is taken from the page without an earlier copy in it.
pub fn prerender(dist: &Path) -> Result<Snapshot> {
    let index_path = dist.join("index.html");
    let index = std::fs::read_to_string(&index_path)
        .map_err(|e| format!("reading {}: {e}", index_path.display()))?;
    let clean = strip(&index);
    std::fs::write(&index_path, &clean)
        .map_err(|e| format!("writing {}: {e}", index_path.display()))?;
    let server = StaticServer::start(dist)?;
    let driver = Driver::start()?;
    let session = driver.session()?;
    let shot = snapshot(&session, &server.url())?;
    let out = insert(&clean, &shot.html, &shot.query)?;
    std::fs::write(&index_path, out)
        .map_err(|e| format!("writing {}: {e}", index_path.display()))?;
    Ok(shot)
}

/// A one-line summary for the build log.
pub fn summary(shot: &Snapshot, index: &Path) -> String {
    let bytes = std::fs::metadata(index).map(|m| m.len()).unwrap_or(0);
    format!(
        "pre-rendered the default page's first screen into {}: {} charts as images ({} with a dark-scheme drawing), {} empty chart frames, {} parts below the first screen left out, index.html now {:.1} KB raw",
        index.display(),
        shot.charts_as_images,
        shot.dark_images,
        shot.empty_frames,
        shot.left_out,
        bytes as f64 / 1000.0
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn insert_places_the_copy_after_body_and_replaces_an_earlier_one() {
        let index = "<html><head><script type=\"module\">const wasm = await init({});</script></head><body class=\"x\">\n<noscript>n</noscript></body></html>";
        let once = insert(index, "<main>A</main>", "?v=1&model=m\"").unwrap();
        assert!(once.contains(
            "<body class=\"x\"><!-- meshplan:prerender:begin --><div id=\"meshplan-prerender\""
        ));
        // The query is escaped for the attribute it lands in.
        assert!(once.contains("data-query=\"?v=1&amp;model=m&quot;\">"));
        assert!(once.contains("<main>A</main></div><script>"));
        assert!(once.contains("</script><!-- meshplan:prerender:end -->\n<noscript>"));
        assert!(once.contains("setTimeout(r, 0)));\nconst wasm = await init({});"));
        let twice = insert(&once, "<main>B</main>", "?v=1&model=m\"").unwrap();
        assert!(!twice.contains("<main>A</main>"));
        assert_eq!(twice.matches(BEGIN).count(), 1);
        // The loader waits one frame, not two.
        assert_eq!(twice.matches("requestAnimationFrame").count(), 1);
        assert_eq!(twice.replace("<main>B</main>", "<main>A</main>"), once);
        assert!(!strip(&twice).contains("meshplan-prerender"));
        assert!(insert("<html></html>", "x", "").is_err());
    }
}
