//! Harness for the end-to-end tests: a loopback static server for `dist/`,
//! a chromedriver process, and a minimal W3C WebDriver client over HTTP/1.1.
//!
//! Hand-written on `std::net` so the tests build in seconds with no async
//! runtime; chromedriver speaks plain JSON over loopback, which is all we need.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Component, Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

pub mod page;
pub mod prerender;

/// Errors carry a message saying what was being done.
pub type Result<T> = std::result::Result<T, String>;

/// Serves a folder over HTTP on 127.0.0.1 (the release build, as a static host would).
pub struct StaticServer {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
}

/// How a [`StaticServer`] answers.
#[derive(Clone, Copy, Debug, Default)]
pub struct ServeOptions {
    /// Let the browser cache what it fetched (`Cache-Control: max-age=3600`, HTML
    /// `no-cache`), as a static host serving trunk's hashed file names would; off,
    /// every response is `no-store`.
    pub cache: bool,
    /// Holds every `.wasm` response this long before sending it: a slow network,
    /// to look at the page before its wasm is ready.
    pub wasm_delay: Duration,
}

fn content_type(path: &Path) -> &'static str {
    match path.extension().and_then(|e| e.to_str()).unwrap_or("") {
        "html" => "text/html; charset=utf-8",
        "js" => "text/javascript",
        // instantiateStreaming refuses any other type.
        "wasm" => "application/wasm",
        "css" => "text/css",
        "json" => "application/json",
        "svg" => "image/svg+xml",
        "png" => "image/png",
        _ => "application/octet-stream",
    }
}

fn serve_one(root: &Path, options: ServeOptions, mut stream: TcpStream) -> std::io::Result<()> {
    stream.set_read_timeout(Some(Duration::from_secs(5)))?;
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut request_line = String::new();
    reader.read_line(&mut request_line)?;
    loop {
        let mut header = String::new();
        if reader.read_line(&mut header)? == 0 || header == "\r\n" || header == "\n" {
            break;
        }
    }
    let target = request_line.split_whitespace().nth(1).unwrap_or("/");
    let path_part = target.split(['?', '#']).next().unwrap_or("/");
    let relative = PathBuf::from(path_part.trim_start_matches('/'));
    let safe = relative
        .components()
        .all(|c| matches!(c, Component::Normal(_)));
    let mut file = root.join(&relative);
    if safe && file.is_dir() {
        file = file.join("index.html");
    }
    let (status, body, ctype) = match std::fs::read(&file) {
        Ok(body) if safe => ("200 OK", body, content_type(&file)),
        _ => ("404 Not Found", b"not found".to_vec(), "text/plain"),
    };
    let cache = match (options.cache, ctype) {
        (false, _) => "no-store",
        (true, "text/html; charset=utf-8") => "no-cache",
        (true, _) => "max-age=3600",
    };
    if ctype == "application/wasm" {
        thread::sleep(options.wasm_delay);
    }
    write!(
        stream,
        "HTTP/1.1 {status}\r\nContent-Type: {ctype}\r\nContent-Length: {}\r\nCache-Control: {cache}\r\nConnection: close\r\n\r\n",
        body.len()
    )?;
    stream.write_all(&body)?;
    stream.flush()
}

impl StaticServer {
    /// Starts serving `root` on a free loopback port, nothing cached.
    pub fn start(root: &Path) -> Result<Self> {
        Self::start_with(root, ServeOptions::default())
    }

    /// Starts serving `root` on a free loopback port, answering as `options` say.
    pub fn start_with(root: &Path, options: ServeOptions) -> Result<Self> {
        let listener = TcpListener::bind("127.0.0.1:0").map_err(|e| format!("bind: {e}"))?;
        let addr = listener.local_addr().map_err(|e| e.to_string())?;
        listener
            .set_nonblocking(true)
            .map_err(|e| format!("nonblocking: {e}"))?;
        let stop = Arc::new(AtomicBool::new(false));
        let stop_flag = Arc::clone(&stop);
        let root = root.to_path_buf();
        thread::spawn(move || {
            while !stop_flag.load(Ordering::Relaxed) {
                match listener.accept() {
                    Ok((stream, _)) => {
                        let root = root.clone();
                        let _ = stream.set_nonblocking(false);
                        thread::spawn(move || {
                            let _ = serve_one(&root, options, stream);
                        });
                    }
                    Err(_) => thread::sleep(Duration::from_millis(5)),
                }
            }
        });
        Ok(StaticServer { addr, stop })
    }

    /// `http://127.0.0.1:PORT/`.
    pub fn url(&self) -> String {
        format!("http://{}/", self.addr)
    }
}

impl Drop for StaticServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// One HTTP/1.1 exchange with a JSON body; returns the parsed JSON response.
fn http_json(addr: SocketAddr, method: &str, path: &str, body: Option<&Value>) -> Result<Value> {
    http_json_within(addr, method, path, body, READ_TIMEOUT)
}

/// How long a reply may take unless the session allows its scripts longer.
const READ_TIMEOUT: Duration = Duration::from_secs(120);

/// [`http_json`] with the time a reply may take.
fn http_json_within(
    addr: SocketAddr,
    method: &str,
    path: &str,
    body: Option<&Value>,
    read_timeout: Duration,
) -> Result<Value> {
    let mut stream =
        TcpStream::connect(addr).map_err(|e| format!("connect to chromedriver: {e}"))?;
    stream
        .set_read_timeout(Some(read_timeout))
        .map_err(|e| e.to_string())?;
    let payload = body.map(Value::to_string).unwrap_or_default();
    let request = format!(
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{payload}",
        payload.len()
    );
    stream
        .write_all(request.as_bytes())
        .map_err(|e| format!("send {method} {path}: {e}"))?;
    // Read by Content-Length (or chunks): chromedriver keeps the socket open.
    let mut reader = BufReader::new(stream);
    let mut status_line = String::new();
    reader
        .read_line(&mut status_line)
        .map_err(|e| format!("read {method} {path}: {e}"))?;
    let mut length = None;
    let mut chunked = false;
    loop {
        let mut line = String::new();
        reader
            .read_line(&mut line)
            .map_err(|e| format!("read {method} {path}: {e}"))?;
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        if let Some((name, value)) = line.split_once(':') {
            let name = name.trim().to_ascii_lowercase();
            let value = value.trim();
            if name == "content-length" {
                length = value.parse::<usize>().ok();
            } else if name == "transfer-encoding" && value.eq_ignore_ascii_case("chunked") {
                chunked = true;
            }
        }
    }
    let mut raw = Vec::new();
    if chunked {
        loop {
            let mut size_line = String::new();
            reader
                .read_line(&mut size_line)
                .map_err(|e| format!("read {method} {path}: {e}"))?;
            let size = usize::from_str_radix(size_line.trim(), 16).unwrap_or(0);
            if size == 0 {
                break;
            }
            let mut chunk = vec![0u8; size + 2];
            reader
                .read_exact(&mut chunk)
                .map_err(|e| format!("read {method} {path}: {e}"))?;
            raw.extend_from_slice(&chunk[..size]);
        }
    } else if let Some(n) = length {
        raw.resize(n, 0);
        reader
            .read_exact(&mut raw)
            .map_err(|e| format!("read {method} {path}: {e}"))?;
    } else {
        reader
            .read_to_end(&mut raw)
            .map_err(|e| format!("read {method} {path}: {e}"))?;
    }
    let body = String::from_utf8_lossy(&raw).into_owned();
    let value: Value = serde_json::from_str(&body)
        .map_err(|e| format!("{method} {path}: bad JSON ({e}): {body:.200}"))?;
    if let Some(err) = value.get("value").and_then(|v| v.get("error")) {
        let message = value["value"]["message"].as_str().unwrap_or("");
        return Err(format!("{method} {path}: {err}: {message:.400}"));
    }
    Ok(value)
}

/// A running chromedriver on a free loopback port; killed on drop.
pub struct Driver {
    child: Child,
    addr: SocketAddr,
}

fn free_port() -> Result<u16> {
    let l = TcpListener::bind("127.0.0.1:0").map_err(|e| e.to_string())?;
    Ok(l.local_addr().map_err(|e| e.to_string())?.port())
}

impl Driver {
    /// Starts `$CHROMEDRIVER` (default `chromedriver`) and waits until it is ready.
    pub fn start() -> Result<Self> {
        let program = std::env::var("CHROMEDRIVER").unwrap_or_else(|_| "chromedriver".into());
        let port = free_port()?;
        let child = Command::new(&program)
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| format!("start {program}: {e}"))?;
        let addr = SocketAddr::from(([127, 0, 0, 1], port));
        let driver = Driver { child, addr };
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if let Ok(status) = http_json(addr, "GET", "/status", None) {
                if status["value"]["ready"].as_bool() == Some(true) {
                    return Ok(driver);
                }
            }
            if Instant::now() > deadline {
                return Err(format!("{program} did not become ready in 30 s"));
            }
            thread::sleep(Duration::from_millis(100));
        }
    }

    /// A new browser session with a fresh profile (headless flags from toolchain.md),
    /// traced as `MESHPLAN_E2E_TRACE` says (not at all without it).
    pub fn session(&self) -> Result<Session> {
        let categories = std::env::var_os("MESHPLAN_E2E_TRACE").map(|_| {
            if std::env::var("MESHPLAN_E2E_TRACE").is_ok_and(|v| v == "invalidations") {
                format!(
                    "{TRACE_CATEGORIES},disabled-by-default-devtools.timeline.invalidationTracking"
                )
            } else {
                TRACE_CATEGORIES.to_string()
            }
        });
        self.session_traced(categories.as_deref())
    }

    /// A new browser session with a fresh profile, recording a Chromium trace of
    /// `categories` from its start when given (read with `Session::trace_events`).
    pub fn session_traced(&self, categories: Option<&str>) -> Result<Session> {
        let profile = std::env::temp_dir().join(format!(
            "meshplan-e2e-{}-{}",
            std::process::id(),
            Instant::now().elapsed().as_nanos() ^ u128::from(free_port()?)
        ));
        let mut options = json!({
            "args": [
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-quic",
                "--no-first-run",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--disable-dev-shm-usage",
                "--window-size=1400,1000",
                format!("--user-data-dir={}", profile.display()),
            ]
        });
        if let Ok(binary) = std::env::var("CHROMIUM") {
            options["binary"] = json!(binary);
        }
        let mut logging = json!({ "browser": "ALL" });
        // chromedriver records a Chromium trace through its performance log, read with
        // `Session::trace_events` (what a long frame did, how Chrome counted the frames).
        if let Some(categories) = categories {
            logging["performance"] = json!("ALL");
            options["perfLoggingPrefs"] = json!({
                "enableNetwork": false,
                "enablePage": false,
                "traceCategories": categories,
            });
        }
        let caps = json!({
            "capabilities": {
                "alwaysMatch": {
                    "browserName": "chrome",
                    "goog:chromeOptions": options,
                    "goog:loggingPrefs": logging
                }
            }
        });
        let created = http_json(self.addr, "POST", "/session", Some(&caps))?;
        let id = created["value"]["sessionId"]
            .as_str()
            .ok_or("no sessionId in the new-session reply")?
            .to_string();
        Ok(Session {
            addr: self.addr,
            id,
            profile,
            script_timeout: std::cell::Cell::new(Duration::ZERO),
            traced: categories.is_some(),
        })
    }
}

impl Drop for Driver {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// What `MESHPLAN_E2E_TRACE` records: the renderer's tasks, script, style, layout, paint,
/// garbage collection and `performance.mark`s (`MESHPLAN_E2E_TRACE=invalidations` adds
/// which nodes each style and paint invalidation named, at a cost to every frame).
const TRACE_CATEGORIES: &str =
    "devtools.timeline,v8,blink.user_timing,disabled-by-default-devtools.timeline,toplevel";

/// A WebDriver call slower than this is printed with its command.
const SLOW_CALL: Duration = Duration::from_secs(10);

/// One browser session; closed on drop.
pub struct Session {
    addr: SocketAddr,
    id: String,
    profile: PathBuf,
    /// The script timeout set on the session: a script may run that long, so its reply may too.
    script_timeout: std::cell::Cell<Duration>,
    /// Whether chromedriver records a trace for it (`Driver::session_traced`).
    traced: bool,
}

/// One browser console entry.
#[derive(Debug, Clone)]
pub struct LogEntry {
    /// "SEVERE", "WARNING", "INFO", ...
    pub level: String,
    /// The text Chromium logged.
    pub message: String,
}

impl Session {
    fn cmd(&self, method: &str, path: &str, body: Option<Value>) -> Result<Value> {
        let full = format!("/session/{}{}", self.id, path);
        let started = Instant::now();
        // A reply waits at least as long as a script may run (the 16k-GPU search test allows
        // 300 s; a 120 s read timeout under it read as a stall on a loaded machine).
        let read_timeout = READ_TIMEOUT.max(self.script_timeout.get() + Duration::from_secs(10));
        let reply = http_json_within(self.addr, method, &full, body.as_ref(), read_timeout);
        // Every slow call is printed, so a stall (one of 120 s was seen) names its command.
        let took = started.elapsed();
        if took > SLOW_CALL {
            eprintln!(
                "e2e: slow WebDriver call {method} {path}: {:.1} s ({})",
                took.as_secs_f64(),
                if reply.is_ok() { "answered" } else { "failed" }
            );
        }
        Ok(reply?["value"].clone())
    }

    /// Navigates and waits for the load event.
    pub fn goto(&self, url: &str) -> Result<()> {
        self.cmd("POST", "/url", Some(json!({ "url": url })))?;
        Ok(())
    }

    /// Runs a synchronous script (`return ...`) and returns its value.
    pub fn execute(&self, script: &str, args: Vec<Value>) -> Result<Value> {
        self.cmd(
            "POST",
            "/execute/sync",
            Some(json!({ "script": script, "args": args })),
        )
    }

    /// The `value` property of the element `css` selects (an input's current value), as JSON.
    pub fn value(&self, css: &str) -> Result<Value> {
        self.execute(
            "return document.querySelector(arguments[0]).value;",
            vec![json!(css)],
        )
    }

    /// Runs an async script; it must call `arguments[arguments.length - 1](result)`.
    pub fn execute_async(&self, script: &str, args: Vec<Value>) -> Result<Value> {
        self.cmd(
            "POST",
            "/execute/async",
            Some(json!({ "script": script, "args": args })),
        )
    }

    /// Sets the script timeout (for long `execute_async` measurements).
    pub fn set_script_timeout(&self, ms: u64) -> Result<()> {
        self.cmd("POST", "/timeouts", Some(json!({ "script": ms })))?;
        self.script_timeout.set(Duration::from_millis(ms));
        Ok(())
    }

    /// The element matching a CSS selector (WebDriver element id).
    pub fn find(&self, css: &str) -> Result<String> {
        let v = self.cmd(
            "POST",
            "/element",
            Some(json!({ "using": "css selector", "value": css })),
        )?;
        v.as_object()
            .and_then(|o| o.values().next())
            .and_then(Value::as_str)
            .map(str::to_string)
            .ok_or_else(|| format!("no element for {css}"))
    }

    /// Clicks an element. WebDriver clicks at the element's centre after scrolling it into
    /// view; when a layout shift (a deferred section mounting above it) puts another element
    /// there first, it refuses with "element click intercepted". Then the element is brought to
    /// the middle of the screen, the layout gets two frames to settle, and the click is tried
    /// again, as a person would click again, up to four times.
    pub fn click(&self, css: &str) -> Result<()> {
        let mut refused = String::new();
        for attempt in 0..5 {
            if attempt > 0 {
                self.execute_async(
                    "const done = arguments[arguments.length - 1];
                     const e = document.querySelector(arguments[0]);
                     if (e) { e.scrollIntoView({block: 'center'}); }
                     requestAnimationFrame(() => requestAnimationFrame(() => setTimeout(done, 0)));",
                    vec![json!(css)],
                )?;
            }
            let id = self.find(css)?;
            match self.cmd("POST", &format!("/element/{id}/click"), Some(json!({}))) {
                Ok(_) => return Ok(()),
                Err(e) if e.contains("element click intercepted") => refused = e,
                Err(e) => return Err(e),
            }
        }
        Err(refused)
    }

    /// Types keys into an element (WebDriver key codes such as `\u{E014}` = ArrowRight).
    pub fn send_keys(&self, css: &str, text: &str) -> Result<()> {
        let id = self.find(css)?;
        self.cmd(
            "POST",
            &format!("/element/{id}/value"),
            Some(json!({ "text": text })),
        )?;
        Ok(())
    }

    /// Scrolls the element matching `css` into view, as a person would to read it,
    /// and waits two frames: the page recomputes a view only near the screen, and
    /// its IntersectionObserver reports after the next frame. Nothing if absent.
    pub fn reveal(&self, css: &str) -> Result<()> {
        self.execute_async(
            "const done = arguments[arguments.length - 1];
             const e = document.querySelector(arguments[0]);
             if (e) { e.scrollIntoView({block: 'nearest'}); }
             requestAnimationFrame(() => requestAnimationFrame(() => setTimeout(done, 0)));",
            vec![json!(css)],
        )?;
        Ok(())
    }

    /// `textContent` of the element matching `css`, trimmed (revealed first).
    pub fn text(&self, css: &str) -> Result<String> {
        self.reveal(css)?;
        let v = self.execute(
            "const e = document.querySelector(arguments[0]); return e ? e.textContent : null;",
            vec![json!(css)],
        )?;
        v.as_str()
            .map(|s| s.trim().to_string())
            .ok_or_else(|| format!("no element for {css}"))
    }

    /// An attribute of the element matching `css` (revealed first).
    pub fn attr(&self, css: &str, name: &str) -> Result<Option<String>> {
        self.reveal(css)?;
        let v = self.execute(
            "const e = document.querySelector(arguments[0]); if (!e) throw new Error('no element ' + arguments[0]); return e.getAttribute(arguments[1]);",
            vec![json!(css), json!(name)],
        )?;
        Ok(v.as_str().map(str::to_string))
    }

    /// Polls `text(css)` until `pred` holds or `timeout` passes; returns the last text.
    pub fn wait_text(
        &self,
        css: &str,
        timeout: Duration,
        pred: impl Fn(&str) -> bool,
    ) -> Result<String> {
        let deadline = Instant::now() + timeout;
        let mut last = Err(format!("{css} never appeared"));
        while Instant::now() < deadline {
            last = self.text(css);
            if let Ok(t) = &last {
                if pred(t) {
                    return Ok(t.clone());
                }
            }
            thread::sleep(Duration::from_millis(50));
        }
        last.and_then(|t| Err(format!("{css}: condition not met; last text {t:?}")))
    }

    /// Waits until the page's idle warm-up (app/src/warm_up.rs) has visited every state one
    /// control away (`data-warm-up="done"` on the root element); returns when it finished, in
    /// ms since navigation (`window.__meshplanWarmUpMs`).
    pub fn wait_for_warm_up(&self, within: Duration) -> Result<f64> {
        let deadline = Instant::now() + within;
        loop {
            let done = self.execute(
                "return document.documentElement.dataset.warmUp === 'done' ? window.__meshplanWarmUpMs : null;",
                vec![],
            )?;
            if let Some(ms) = done.as_f64() {
                return Ok(ms);
            }
            if Instant::now() >= deadline {
                return Err(format!("the warm-up had not finished after {within:?}"));
            }
            thread::sleep(Duration::from_millis(50));
        }
    }

    /// The current URL.
    pub fn current_url(&self) -> Result<String> {
        self.cmd("GET", "/url", None)?
            .as_str()
            .map(str::to_string)
            .ok_or_else(|| "no URL".into())
    }

    /// The current URL once it contains `part`, polled for up to `within`.
    pub fn wait_for_url(&self, part: &str, within: Duration) -> Result<String> {
        let deadline = Instant::now() + within;
        loop {
            let url = self.current_url()?;
            if url.contains(part) {
                return Ok(url);
            }
            if Instant::now() >= deadline {
                return Err(format!("the URL never contained {part:?}: {url}"));
            }
            thread::sleep(Duration::from_millis(50));
        }
    }

    /// Saves a PNG screenshot of the viewport.
    pub fn screenshot(&self, path: &Path) -> Result<()> {
        let b64 = self.cmd("GET", "/screenshot", None)?;
        let png = base64_decode(b64.as_str().ok_or("screenshot: not a string")?)?;
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(|e| e.to_string())?;
        }
        std::fs::write(path, png).map_err(|e| format!("write {}: {e}", path.display()))
    }

    /// Saves a PNG screenshot of one element (scrolled into view).
    pub fn element_screenshot(&self, css: &str, path: &Path) -> Result<()> {
        let id = self.find(css)?;
        // Scrolled to the top of the viewport, then two frames for off-screen views to draw.
        self.execute_async(
            "const done = arguments[arguments.length - 1];
             document.querySelector(arguments[0]).scrollIntoView({block: 'start'});
             requestAnimationFrame(() => requestAnimationFrame(() => setTimeout(done, 0)));",
            vec![json!(css)],
        )?;
        let b64 = self.cmd("GET", &format!("/element/{id}/screenshot"), None)?;
        let png = base64_decode(b64.as_str().ok_or("screenshot: not a string")?)?;
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(|e| e.to_string())?;
        }
        std::fs::write(path, png).map_err(|e| format!("write {}: {e}", path.display()))
    }

    /// Sets an `<input>`/`<select>` value from script and fires `input` and `change`,
    /// as a user edit would.
    pub fn set_value(&self, css: &str, value: &str) -> Result<()> {
        self.execute(
            "const e = document.querySelector(arguments[0]); if (!e) throw new Error('no element ' + arguments[0]); e.value = arguments[1]; e.dispatchEvent(new Event('input', {bubbles: true})); e.dispatchEvent(new Event('change', {bubbles: true}));",
            vec![json!(css), json!(value)],
        )?;
        Ok(())
    }

    /// Runs a Chrome DevTools Protocol command (chromedriver's `goog/cdp/execute`).
    pub fn cdp(&self, cmd: &str, params: Value) -> Result<Value> {
        self.cmd(
            "POST",
            "/goog/cdp/execute",
            Some(json!({ "cmd": cmd, "params": params })),
        )
    }

    /// Resizes the window (CSS pixels).
    pub fn set_window_size(&self, width: u32, height: u32) -> Result<()> {
        self.cmd(
            "POST",
            "/window/rect",
            Some(json!({ "width": width, "height": height })),
        )?;
        Ok(())
    }

    /// The Chromium trace events recorded since the session began (chromedriver's
    /// performance log, `Tracing.dataCollected`; read once: chromedriver ends the trace),
    /// when the session was made traced (`MESHPLAN_E2E_TRACE`, `Page::open_traced`); empty
    /// otherwise.
    pub fn trace_events(&self) -> Result<Vec<Value>> {
        if !self.traced {
            return Ok(Vec::new());
        }
        let v = self.cmd("POST", "/se/log", Some(json!({ "type": "performance" })))?;
        let mut events = Vec::new();
        for entry in v.as_array().into_iter().flatten() {
            let Some(text) = entry["message"].as_str() else {
                continue;
            };
            let Ok(m) = serde_json::from_str::<Value>(text) else {
                continue;
            };
            if m["message"]["method"] == "Tracing.dataCollected" {
                // chromedriver logs one event per entry (`params` is the event).
                let params = &m["message"]["params"];
                match params["value"].as_array() {
                    Some(a) => events.extend(a.iter().cloned()),
                    None => events.push(params.clone()),
                }
            }
        }
        Ok(events)
    }

    /// Browser console entries since the last call (chromedriver's log endpoint).
    pub fn console_logs(&self) -> Result<Vec<LogEntry>> {
        let v = self.cmd("POST", "/se/log", Some(json!({ "type": "browser" })))?;
        Ok(v.as_array()
            .map(|entries| {
                entries
                    .iter()
                    .map(|e| LogEntry {
                        level: e["level"].as_str().unwrap_or("").to_string(),
                        message: e["message"].as_str().unwrap_or("").to_string(),
                    })
                    .collect()
            })
            .unwrap_or_default())
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        let _ = http_json(self.addr, "DELETE", &format!("/session/{}", self.id), None);
        let _ = std::fs::remove_dir_all(&self.profile);
    }
}

/// Standard base64 (with padding), enough for WebDriver screenshots.
pub fn base64_decode(text: &str) -> Result<Vec<u8>> {
    fn val(c: u8) -> Option<u32> {
        match c {
            b'A'..=b'Z' => Some(u32::from(c - b'A')),
            b'a'..=b'z' => Some(u32::from(c - b'a') + 26),
            b'0'..=b'9' => Some(u32::from(c - b'0') + 52),
            b'+' => Some(62),
            b'/' => Some(63),
            _ => None,
        }
    }
    let clean: Vec<u8> = text
        .bytes()
        .filter(|c| !c.is_ascii_whitespace() && *c != b'=')
        .collect();
    let mut out = Vec::with_capacity(clean.len() * 3 / 4);
    for chunk in clean.chunks(4) {
        let mut acc = 0u32;
        for (i, &c) in chunk.iter().enumerate() {
            acc |= val(c).ok_or("base64: bad character")? << (18 - 6 * i);
        }
        let bytes = acc.to_be_bytes();
        out.extend_from_slice(&bytes[1..chunk.len()]);
    }
    Ok(out)
}

/// `$MESHPLAN_DIST`, or `<workspace>/dist`.
pub fn dist_dir() -> PathBuf {
    std::env::var_os("MESHPLAN_DIST")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace_root().join("dist"))
}

/// The workspace root (this crate lives in `tests/e2e`).
pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// `<workspace>/target/screenshots/NAME.png`.
pub fn screenshot_path(name: &str) -> PathBuf {
    workspace_root()
        .join("target")
        .join("screenshots")
        .join(format!("{name}.png"))
}

/// How long a fresh page may take before its views show numbers.
const PAGE_LOAD: Duration = Duration::from_secs(30);

/// The release build served on a loopback port, and a chromedriver to open it in.
pub struct Page {
    server: StaticServer,
    driver: Driver,
}

impl Page {
    /// Serves `dist_dir()` and starts chromedriver.
    pub fn start() -> Result<Self> {
        Self::start_with(ServeOptions::default())
    }

    /// Serves `dist_dir()` as `options` say and starts chromedriver.
    pub fn start_with(options: ServeOptions) -> Result<Self> {
        let dist = dist_dir();
        if !dist.join("index.html").exists() {
            return Err(format!(
                "{} has no index.html: run `trunk build --release --offline` first (cargo xtask test does)",
                dist.display()
            ));
        }
        Ok(Page {
            server: StaticServer::start_with(&dist, options)?,
            driver: Driver::start()?,
        })
    }

    /// Serves `root` (not the release build: a comparison page) as `options` say,
    /// and starts chromedriver.
    pub fn serve_dir_with(root: &Path, options: ServeOptions) -> Result<Self> {
        if !root.join("index.html").exists() {
            return Err(format!("{} has no index.html", root.display()));
        }
        Ok(Page {
            server: StaticServer::start_with(root, options)?,
            driver: Driver::start()?,
        })
    }

    /// The page's address on the loopback server.
    pub fn url(&self) -> String {
        self.server.url()
    }

    /// A fresh browser (fresh profile) on nothing yet.
    pub fn session(&self) -> Result<Session> {
        self.driver.session()
    }

    /// A fresh browser (fresh profile) on `query` (without `?`), waited until the views
    /// show numbers, the pre-rendered copy of the page (`#meshplan-prerender`, which
    /// covers the live page until its first chart is drawn) is gone and the deferred
    /// sections have mounted.
    pub fn open(&self, query: &str) -> Result<Session> {
        self.open_with(query, None)
    }

    /// [`Page::open`], in a session that records a Chromium trace of `categories` from its
    /// start (e.g. [`FRAME_CATEGORIES`], read with [`Session::trace_events`]).
    pub fn open_traced(&self, query: &str, categories: &str) -> Result<Session> {
        self.open_in(self.driver.session_traced(Some(categories))?, query, None)
    }

    /// [`Page::open`], with `script` run in the page before its own scripts
    /// (`Page.addScriptToEvaluateOnNewDocument`), e.g. to watch what its workers post.
    pub fn open_with(&self, query: &str, script: Option<&str>) -> Result<Session> {
        self.open_in(self.driver.session()?, query, script)
    }

    fn open_in(&self, session: Session, query: &str, script: Option<&str>) -> Result<Session> {
        session.set_window_size(1440, 1100)?;
        if let Some(source) = script {
            session.cdp(
                "Page.addScriptToEvaluateOnNewDocument",
                json!({ "source": source }),
            )?;
        }
        let url = if query.is_empty() {
            self.server.url()
        } else {
            format!("{}?{query}", self.server.url())
        };
        session.goto(&url)?;
        session.wait_text(page::STATE_TOTAL_3, PAGE_LOAD, |t| t.ends_with("B"))?;
        let deadline = Instant::now() + PAGE_LOAD;
        while session.execute(
            "return document.getElementById('meshplan-prerender') !== null;",
            vec![],
        )? == json!(true)
        {
            if Instant::now() > deadline {
                return Err("the pre-rendered page was never replaced by the live one".into());
            }
            thread::sleep(Duration::from_millis(20));
        }
        // The sections at the page's end come with the deferred module, loaded after the
        // first chart (app/src/deferred.rs): mounted before any test reaches for them.
        while session.execute(
            "const d = document.querySelector(arguments[0]); return d ? d.dataset.ready : null;",
            vec![json!(page::DEFERRED_VIEWS)],
        )? != json!("1")
        {
            if Instant::now() > deadline {
                return Err("the deferred sections never mounted".into());
            }
            thread::sleep(Duration::from_millis(20));
        }
        Ok(session)
    }
}

/// The numbers of a JSON array a script returned, in order (none when it is not an array).
pub fn numbers(value: &Value) -> Vec<f64> {
    value
        .as_array()
        .map(|a| a.iter().filter_map(Value::as_f64).collect())
        .unwrap_or_default()
}

/// The strings of a JSON array a script returned (none when it is not an array).
pub fn strings(value: &Value) -> Vec<String> {
    value
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|v| v.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

/// Fails on any console error (SEVERE) since the last call.
pub fn assert_no_console_errors(session: &Session, when: &str) {
    let logs = session.console_logs().expect("read the browser console");
    let errors: Vec<_> = logs.iter().filter(|l| l.level == "SEVERE").collect();
    assert!(errors.is_empty(), "console errors {when}: {errors:#?}");
}

/// The value at fraction `p` (0..=1) of an ascending series (nearest rank).
pub fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let rank = (p * (sorted.len() - 1) as f64).round() as usize;
    sorted[rank.min(sorted.len() - 1)]
}

/// A control a latency measurement moves: its selector, a JS expression of `el`
/// for its next value, and what to call the moves.
pub struct Control {
    pub css: &'static str,
    pub next_value: &'static str,
    pub name: &'static str,
}

/// The DP slider, one step up per move (wrapping).
pub const DP_SLIDER: Control = Control {
    css: page::INPUT_DP,
    next_value: "String((Number(el.value) + 1) % (Number(el.max) + 1))",
    name: "DP slider moves",
};

/// Milliseconds per move, each series ascending.
pub struct Latency {
    /// Input event → every view recomputed and redrawn and layout done: Leptos runs effects
    /// as microtasks, so they are done by the next task or frame, whichever comes first;
    /// layout is forced there ([`measure_latency`]).
    pub work_ms: Vec<f64>,
    /// Input event → the frame showing it painted: the next animation frame, then a
    /// message posted from it (includes waiting for the vsync, up to 16.7 ms).
    pub frame_ms: Vec<f64>,
}

impl Latency {
    /// "median, p95, max" lines for both series.
    pub fn summary(&self) -> String {
        let line = |v: &[f64]| {
            format!(
                "median {:.2} ms, p95 {:.2} ms, max {:.2} ms",
                percentile(v, 0.5),
                percentile(v, 0.95),
                v.last().copied().unwrap_or(f64::NAN)
            )
        };
        format!(
            "  input → all views recomputed and redrawn: {}\n  input → frame painted (rAF + task):    {}",
            line(&self.work_ms),
            line(&self.frame_ms)
        )
    }
}

/// Moves `control` `moves` times, each dispatched at the start of a frame, inside a
/// `requestAnimationFrame` callback, as Chromium dispatches a drag's continuous input
/// (pointer and mouse moves are rAF-aligned: blink's MainThreadEventQueue holds them until
/// the next frame begins), and returns, per move, the time from that dispatch to the end of
/// the same frame's rendering on the main thread (effects, style, layout, paint, commit):
/// a message posted from the callback runs once the frame's task is done. Unlike
/// [`measure_latency`]'s frame series, it holds no wait for the next frame.
pub fn measure_frame_aligned(session: &Session, control: &Control, moves: u32) -> Result<Vec<f64>> {
    let body = r#"
        const frame = [];
        const afterFrame = new MessageChannel();
        afterFrame.port1.onmessage = () => {
            frame.push(performance.now() - t0);
            next(frame);
        };
        function step() {
            requestAnimationFrame(() => {
                move();
                afterFrame.port2.postMessage(0);
            });
        }
        step();
    "#;
    let result = run_moves(session, control, moves, body)?;
    Ok(sorted(&result))
}

/// The start of every move script: the control `el`, its `nextValue`, the move count,
/// `move()` (the next value set and its events dispatched, `t0` stamped) and `next(result)`
/// (the next move after a random wait up to a frame, or the result once all are done).
const MOVES_PRELUDE: &str = r#"
    const done = arguments[arguments.length - 1];
    const el = document.querySelector(arguments[1]);
    const nextValue = new Function('el', 'return ' + arguments[2]);
    const moves = arguments[0];
    let i = 0, t0 = 0;
    function move() {
        el.value = nextValue(el);
        t0 = performance.now();
        // Sliders and number fields listen to `input`, selects to `change`.
        el.dispatchEvent(new Event('input', {bubbles: true}));
        el.dispatchEvent(new Event('change', {bubbles: true}));
    }
    function next(result) {
        if (++i < moves) { setTimeout(step, Math.random() * 17); } else { done(result); }
    }
"#;

/// Runs [`MOVES_PRELUDE`] then `body` (which defines and calls `step`) on `control`.
fn run_moves(session: &Session, control: &Control, moves: u32, body: &str) -> Result<Value> {
    session.execute_async(
        &format!("{MOVES_PRELUDE}{body}"),
        vec![json!(moves), json!(control.css), json!(control.next_value)],
    )
}

/// The numbers of a JSON array, sorted.
fn sorted(v: &Value) -> Vec<f64> {
    let mut out = numbers(v);
    out.sort_by(f64::total_cmp);
    out
}

/// Moves `control` `moves` times, each at a random phase of the frame (so the
/// painted time is not aligned to vsync), and times each move.
pub fn measure_latency(session: &Session, control: &Control, moves: u32) -> Result<Latency> {
    // The work ends at whichever comes first after the input's task: the next task (a
    // message) or the next frame (its animation-frame callback, when a frame was due), and
    // there layout is forced, so the figure always holds the layout and never a frame's
    // paint. (Ending at the message alone, as this did until 2026-12-04, held a whole frame,
    // paint included, in about one move in five, and no layout in the others.) The painted-frame series goes on from there to the end of
    // the frame that shows the move.
    let body = r#"
        const work = [], frame = [];
        let pending = false;
        const afterWork = new MessageChannel();
        const afterPaint = new MessageChannel();
        function finish(inFrame) {
            if (!pending) return;
            pending = false;
            document.body.getBoundingClientRect();
            work.push(performance.now() - t0);
            if (inFrame) {
                afterPaint.port2.postMessage(0);
            } else {
                requestAnimationFrame(() => afterPaint.port2.postMessage(0));
            }
        }
        afterWork.port1.onmessage = () => finish(false);
        afterPaint.port1.onmessage = () => {
            frame.push(performance.now() - t0);
            next({work, frame});
        };
        function step() {
            pending = true;
            move();
            requestAnimationFrame(() => finish(true));
            afterWork.port2.postMessage(0);
        }
        step();
    "#;
    let result = run_moves(session, control, moves, body)?;
    let series = |key: &str| sorted(&result[key]);
    Ok(Latency {
        work_ms: series("work"),
        frame_ms: series("frame"),
    })
}

/// The trace's complete events of at least `min_ms` within `window_ms` after the
/// `performance.mark(mark)`, one line per thread: `name@start+duration` in ms from the
/// mark (nested events follow the event they lie in). Empty without the mark.
pub fn trace_summary(events: &[Value], mark: &str, window_ms: f64, min_ms: f64) -> String {
    let Some(t0) = events
        .iter()
        .find(|e| e["name"] == mark)
        .and_then(|e| e["ts"].as_f64())
    else {
        return String::new();
    };
    let key = |e: &Value| {
        (
            e["pid"].as_u64().unwrap_or(0),
            e["tid"].as_u64().unwrap_or(0),
        )
    };
    let names: std::collections::HashMap<(u64, u64), String> = events
        .iter()
        .filter(|e| e["ph"] == "M" && e["name"] == "thread_name")
        .map(|e| {
            (
                key(e),
                e["args"]["name"].as_str().unwrap_or("?").to_string(),
            )
        })
        .collect();
    let mut per_thread: std::collections::BTreeMap<String, Vec<(f64, f64, String)>> =
        Default::default();
    for e in events {
        let (Some(ts), Some(dur)) = (e["ts"].as_f64(), e["dur"].as_f64()) else {
            continue;
        };
        let start_ms = (ts - t0) / 1000.0;
        let dur_ms = dur / 1000.0;
        if e["ph"] != "X" || dur_ms < min_ms || start_ms + dur_ms < 0.0 || start_ms > window_ms {
            continue;
        }
        let thread = names
            .get(&key(e))
            .cloned()
            .unwrap_or_else(|| format!("{:?}", key(e)));
        let mut name = e["name"].as_str().unwrap_or("?").to_string();
        let a = &e["args"];
        if let Some(n) = a["elementCount"].as_u64() {
            name = format!("{name}({n} elements)");
        }
        if let Some(n) = a["beginData"]["dirtyObjects"].as_u64() {
            name = format!("{name}({n} of {} objects)", a["beginData"]["totalObjects"]);
        }
        if let Some(n) = a["data"]["nodeName"].as_str() {
            name = format!("{name}[{n}]");
        }
        if let Some(c) = a["data"]["clip"].as_array() {
            let xs: Vec<f64> = c.iter().filter_map(Value::as_f64).collect();
            if xs.len() == 8 {
                name = format!("{name}[{:.0}×{:.0}]", xs[2] - xs[0], xs[5] - xs[1]);
            }
        }
        if let Some(f) = e["args"]["data"]["functionName"]
            .as_str()
            .filter(|f| !f.is_empty())
        {
            name = format!("{name}:{f}");
        } else if let Some(t) = e["args"]["data"]["type"].as_str() {
            name = format!("{name}:{t}");
        }
        // The thread's own CPU time where the trace has it: under load it is less than the
        // wall time, the rest being time the thread waited for a core.
        if let Some(cpu) = e["tdur"].as_f64() {
            name = format!("{name}(cpu {:.1})", cpu / 1000.0);
        }
        per_thread
            .entry(thread)
            .or_default()
            .push((start_ms, dur_ms, name));
    }
    let mut out = String::new();
    // What style and paint invalidations named, per 20 ms after the mark: node, reason, count.
    let mut invalidated: std::collections::BTreeMap<(i64, String), u32> = Default::default();
    for e in events {
        let name = e["name"].as_str().unwrap_or("");
        let Some(ts) = e["ts"].as_f64() else { continue };
        let start_ms = (ts - t0) / 1000.0;
        if !name.contains("InvalidationTracking") || !(0.0..=window_ms).contains(&start_ms) {
            continue;
        }
        let d = &e["args"]["data"];
        let what = format!(
            "{} {} {} {}",
            name.trim_end_matches("InvalidationTracking"),
            d["nodeName"].as_str().unwrap_or(""),
            d["reason"].as_str().unwrap_or(""),
            d["changedClass"]
                .as_str()
                .or(d["changedAttribute"].as_str())
                .unwrap_or(""),
        );
        *invalidated
            .entry(((start_ms / 20.0) as i64, what))
            .or_default() += 1;
    }
    let mut last_bin = -1;
    for ((bin, what), n) in &invalidated {
        if *bin != last_bin {
            out.push_str(&format!(
                "\n    invalidations {}–{} ms:",
                bin * 20,
                bin * 20 + 20
            ));
            last_bin = *bin;
        }
        out.push_str(&format!(" [{what}]×{n}"));
    }
    for (thread, mut list) in per_thread {
        list.sort_by(|a, b| a.0.total_cmp(&b.0).then(b.1.total_cmp(&a.1)));
        let items: Vec<String> = list
            .iter()
            .map(|(s, d, n)| format!("{n}@{s:.1}+{d:.1}"))
            .collect();
        out.push_str(&format!("\n    {thread}: {}", items.join(" ")));
    }
    out
}

/// CPU time (the trace's `tdur`) of the top-level tasks (`RunTask`, `ThreadPool_RunTask`)
/// that start between two frames, per frame: `frames_ms` are the frames' times in ms from
/// the `performance.mark(mark)`; threads whose name starts with one of `threads`. Where the
/// machine is loaded, a frame's wall time is mostly waiting for a core, and this is what
/// the page itself asked of the CPU in it. Empty without the mark.
pub fn trace_cpu_per_frame(
    events: &[Value],
    mark: &str,
    frames_ms: &[f64],
    threads: &[&str],
) -> Vec<f64> {
    let Some(t0) = events
        .iter()
        .find(|e| e["name"] == mark)
        .and_then(|e| e["ts"].as_f64())
    else {
        return Vec::new();
    };
    let key = |e: &Value| {
        (
            e["pid"].as_u64().unwrap_or(0),
            e["tid"].as_u64().unwrap_or(0),
        )
    };
    let wanted: std::collections::HashSet<(u64, u64)> = events
        .iter()
        .filter(|e| e["ph"] == "M" && e["name"] == "thread_name")
        .filter(|e| {
            let n = e["args"]["name"].as_str().unwrap_or("");
            threads.iter().any(|t| n.starts_with(t))
        })
        .map(key)
        .collect();
    let mut per_frame = vec![0.0; frames_ms.len().saturating_sub(1)];
    for e in events {
        let name = e["name"].as_str().unwrap_or("");
        if e["ph"] != "X" || !(name == "RunTask" || name == "ThreadPool_RunTask") {
            continue;
        }
        if !wanted.contains(&key(e)) {
            continue;
        }
        let (Some(ts), Some(cpu)) = (e["ts"].as_f64(), e["tdur"].as_f64()) else {
            continue;
        };
        let start_ms = (ts - t0) / 1000.0;
        if let Some(i) = frames_ms
            .windows(2)
            .position(|w| start_ms >= w[0] && start_ms < w[1])
        {
            per_frame[i] += cpu / 1000.0;
        }
    }
    per_frame
}

/// The trace categories for [`frame_states`]: Chrome's own per-frame accounting
/// (`PipelineReporter`, what DevTools' Performance panel draws as dropped and partially
/// presented frames) and the page's `performance.mark`s.
pub const FRAME_CATEGORIES: &str = "disabled-by-default-devtools.timeline.frame,blink.user_timing";

/// How Chrome's compositor accounted for the frames between two `performance.mark`s, from
/// its `PipelineReporter` trace events (one or more per frame; a frame counts once, by its
/// worst state). A late `requestAnimationFrame` callback is not a lost frame; this is.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct FrameStates {
    /// Frames shown with every update they were asked for (`STATE_PRESENTED_ALL`).
    pub presented: usize,
    /// Frames shown without the main thread's update, which came a frame later
    /// (`STATE_PRESENTED_PARTIAL`).
    pub partial: usize,
    /// Frames not shown at all (`STATE_DROPPED`).
    pub dropped: usize,
    /// Frames with nothing to show (`STATE_NO_UPDATE_DESIRED`): the screen was already right.
    pub no_update: usize,
    /// When each partial or dropped frame began, ms from the start mark.
    pub stalled_at_ms: Vec<f64>,
    /// The state of the frame that was in flight at the start mark (began before it): the
    /// frame an input's own work can push past its deadline.
    pub in_flight: Option<String>,
}

impl FrameStates {
    /// Frames that began in the window.
    pub fn frames(&self) -> usize {
        self.presented + self.partial + self.dropped + self.no_update
    }
}

/// Chrome's account of the frames that began from `start_mark` to `end_mark` (see
/// [`FrameStates`]); `None` when either mark is missing from `events`.
pub fn frame_states(events: &[Value], start_mark: &str, end_mark: &str) -> Option<FrameStates> {
    let mark = |name: &str| {
        events
            .iter()
            .find(|e| e["name"] == name)
            .and_then(|e| e["ts"].as_f64())
    };
    let (start, end) = (mark(start_mark)?, mark(end_mark)?);
    // Worst first: a frame's reporters (main and compositor, forked) can disagree.
    const RANK: [&str; 4] = [
        "STATE_DROPPED",
        "STATE_PRESENTED_PARTIAL",
        "STATE_PRESENTED_ALL",
        "STATE_NO_UPDATE_DESIRED",
    ];
    let rank = |state: &str| RANK.iter().position(|r| *r == state).unwrap_or(RANK.len());
    // (source, sequence) → (began, worst state's rank).
    let mut frames: std::collections::BTreeMap<(u64, u64), (f64, usize)> = Default::default();
    for e in events {
        if e["name"] != "PipelineReporter" || e["ph"] != "b" {
            continue;
        }
        let r = &e["args"]["frame_reporter"];
        let (Some(ts), Some(seq), Some(state)) = (
            e["ts"].as_f64(),
            r["frame_sequence"].as_u64(),
            r["state"].as_str(),
        ) else {
            continue;
        };
        let key = (r["frame_source"].as_u64().unwrap_or(0), seq);
        let entry = frames.entry(key).or_insert((ts, usize::MAX));
        entry.0 = entry.0.min(ts);
        entry.1 = entry.1.min(rank(state));
    }
    let mut out = FrameStates::default();
    let mut in_flight: Option<(f64, usize)> = None;
    for &(began, worst) in frames.values() {
        if began < start {
            if in_flight.is_none_or(|(b, _)| began > b) {
                in_flight = Some((began, worst));
            }
            continue;
        }
        if began > end {
            continue;
        }
        match worst {
            0 => out.dropped += 1,
            1 => out.partial += 1,
            2 => out.presented += 1,
            _ => out.no_update += 1,
        }
        if worst <= 1 {
            out.stalled_at_ms.push((began - start) / 1000.0);
        }
    }
    out.stalled_at_ms.sort_by(f64::total_cmp);
    out.in_flight = in_flight.map(|(_, w)| RANK.get(w).map_or("unknown", |s| s).to_string());
    Some(out)
}

impl std::fmt::Display for FrameStates {
    /// `13 frames: 6 presented, 6 with nothing to show, 1 partial, 0 dropped (began at 8.4 ms);
    /// the frame in flight at the input: dropped`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} frames: {} presented, {} with nothing to show, {} partial, {} dropped",
            self.frames(),
            self.presented,
            self.no_update,
            self.partial,
            self.dropped
        )?;
        if !self.stalled_at_ms.is_empty() {
            let at: Vec<String> = self
                .stalled_at_ms
                .iter()
                .map(|t| format!("{t:.1}"))
                .collect();
            write!(f, " (began at {} ms)", at.join(", "))?;
        }
        if let Some(state) = &self.in_flight {
            let short = state
                .trim_start_matches("STATE_")
                .to_lowercase()
                .replace('_', " ");
            write!(f, "; the frame in flight at the input: {short}")?;
        }
        Ok(())
    }
}

/// One timed rerun for [`frame_states`]: `performance.mark("meshplan-rerun-{k}")`, sets
/// `input` to `value` as an edit would, then checks `finished` (the body of a function of
/// `before`, the value of the script expression `before` read ahead of the edit, and
/// `state`, an object kept between frames) once a frame; `extra_frames` frames after it first holds,
/// marks `meshplan-rerun-{k}-end`. False when it never held within 60 s.
pub fn rerun_marked(
    session: &Session,
    k: usize,
    input: &str,
    value: &str,
    before: &str,
    finished: &str,
    extra_frames: u32,
) -> Result<bool> {
    // The two pieces of script are pasted in (not `new Function`: a page's CSP may forbid it).
    let script = format!(
        r#"
        const done = arguments[arguments.length - 1];
        const [input, value, k, extra] = [arguments[0], arguments[1], arguments[2], arguments[3]];
        const before = ({before});
        const finished = (before, state) => {{ {finished} }};
        const el = document.querySelector(input);
        const state = {{}};
        performance.mark('meshplan-rerun-' + k);
        el.value = value;
        el.dispatchEvent(new Event('input', {{bubbles: true}}));
        el.dispatchEvent(new Event('change', {{bubbles: true}}));
        const t0 = performance.now();
        let more = -1;
        function tick() {{
            if (more < 0 && finished(before, state)) {{ more = extra; }}
            const timedOut = performance.now() - t0 > 60000;
            if (more === 0 || timedOut) {{
                performance.mark('meshplan-rerun-' + k + '-end');
                done(!timedOut);
                return;
            }}
            if (more > 0) {{ more -= 1; }}
            requestAnimationFrame(tick);
        }}
        requestAnimationFrame(tick);
        "#
    );
    let v = session.execute_async(
        &script,
        vec![json!(input), json!(value), json!(k), json!(extra_frames)],
    )?;
    Ok(v == json!(true))
}

/// Chrome's frame states of each of the `reruns` [`rerun_marked`] recorded in `session`'s
/// trace (read here: the trace can be read once), and the lines that print them: one per
/// rerun and the total, with `what` naming the window ("from the input to the last row
/// drawn").
pub fn frame_states_of_reruns(
    session: &Session,
    reruns: usize,
    what: &str,
) -> Result<(Vec<FrameStates>, String)> {
    let events = session.trace_events()?;
    let counts = (0..reruns)
        .map(|k| {
            frame_states(
                &events,
                &format!("meshplan-rerun-{k}"),
                &format!("meshplan-rerun-{k}-end"),
            )
            .ok_or_else(|| format!("rerun {k}'s marks are not in the trace"))
        })
        .collect::<Result<Vec<_>>>()?;
    let mut lines: Vec<String> = counts
        .iter()
        .enumerate()
        .map(|(k, c)| format!("  rerun {}: {c}", k + 1))
        .collect();
    let stalled: usize = counts.iter().map(|c| c.partial + c.dropped).sum();
    let frames: usize = counts.iter().map(FrameStates::frames).sum();
    let in_flight = counts
        .iter()
        .filter(|c| {
            c.in_flight
                .as_deref()
                .is_some_and(|s| s != "STATE_PRESENTED_ALL" && s != "STATE_NO_UPDATE_DESIRED")
        })
        .count();
    lines.push(format!(
        "  in all: {stalled} of {frames} frames dropped or partial {what}; the frame already in flight when the script dispatched the edit: dropped or partial in {in_flight} of {reruns} (not counted above)"
    ));
    Ok((counts, lines.join("\n")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frame_states_count_each_frame_once_by_its_worst_state() {
        let mark = |name: &str, ts: f64| json!({"name": name, "ph": "R", "ts": ts});
        let frame = |seq: u64, ts: f64, state: &str| {
            json!({"name": "PipelineReporter", "ph": "b", "ts": ts,
                   "args": {"frame_reporter": {"frame_sequence": seq, "frame_source": 7, "state": state}}})
        };
        let events = vec![
            frame(1, 500.0, "STATE_PRESENTED_ALL"),
            // In flight at the mark: the latest frame to begin before it.
            frame(2, 900.0, "STATE_DROPPED"),
            mark("start", 1_000.0),
            // Forked: the main thread's reporter and the compositor's disagree.
            frame(3, 17_000.0, "STATE_PRESENTED_ALL"),
            frame(3, 17_000.0, "STATE_NO_UPDATE_DESIRED"),
            frame(4, 34_000.0, "STATE_NO_UPDATE_DESIRED"),
            frame(5, 50_000.0, "STATE_PRESENTED_PARTIAL"),
            frame(6, 67_000.0, "STATE_PRESENTED_ALL"),
            frame(6, 67_000.0, "STATE_DROPPED"),
            // An end event and a frame after the end mark count for nothing.
            json!({"name": "PipelineReporter", "ph": "e", "ts": 80_000.0, "args": {}}),
            mark("end", 100_000.0),
            frame(7, 117_000.0, "STATE_DROPPED"),
        ];
        let f = frame_states(&events, "start", "end").expect("both marks");
        assert_eq!(
            (f.presented, f.partial, f.dropped, f.no_update),
            (1, 1, 1, 1)
        );
        assert_eq!(f.frames(), 4);
        assert_eq!(f.stalled_at_ms, vec![49.0, 66.0]);
        assert_eq!(f.in_flight.as_deref(), Some("STATE_DROPPED"));
        assert_eq!(frame_states(&events, "start", "missing"), None);
    }

    #[test]
    fn base64_round_trips_known_vectors() {
        assert_eq!(base64_decode("TWFu").unwrap(), b"Man");
        assert_eq!(base64_decode("TWE=").unwrap(), b"Ma");
        assert_eq!(base64_decode("TQ==").unwrap(), b"M");
        assert!(base64_decode("T!==").is_err());
    }

    #[test]
    fn static_server_serves_files_and_refuses_traversal() {
        let dir = std::env::temp_dir().join(format!("meshplan-static-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("index.html"), "<p>hi</p>").unwrap();
        let server = StaticServer::start(&dir).unwrap();
        let get = |path: &str| {
            let mut s = TcpStream::connect(server.addr).unwrap();
            write!(s, "GET {path} HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
            let mut out = String::new();
            s.read_to_string(&mut out).unwrap();
            out
        };
        let page = get("/?dp=8");
        assert!(page.starts_with("HTTP/1.1 200"), "{page}");
        assert!(page.contains("text/html") && page.ends_with("<p>hi</p>"));
        assert!(get("/../etc/passwd").starts_with("HTTP/1.1 404"));
        let _ = std::fs::remove_dir_all(&dir);
    }
}
