//! `cargo xtask serve` and `cargo xtask test`: the README's two commands.
//!
//! Both install what is missing first (wasm target, trunk, wasm-bindgen-cli,
//! wasm-opt, and for `test` Chromium with its driver), say what they do, and
//! skip what is already there. Versions are pinned where the toolchain notes
//! (`shared/reference/toolchain.md`) found that only those work here.

use std::env;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

/// trunk 0.22 needs a newer rustc than the project's 1.95.
const TRUNK_VERSION: &str = "0.21.14";
/// Must equal the `wasm-bindgen` pinned in the workspace Cargo.toml.
const WASM_BINDGEN_VERSION: &str = "0.2.130";
/// Debian's binaryen 108 emits modules Chromium rejects; 132 from npm works.
const BINARYEN_VERSION: u32 = 132;
/// Oldest wasm-opt accepted when already installed.
const MIN_WASM_OPT_VERSION: u32 = 116;
const WASM_TARGET: &str = "wasm32-unknown-unknown";
const SERVE_ADDRESS: &str = "127.0.0.1";
const SERVE_PORT: &str = "8080";
/// Where `serve` builds, relative to the root: trunk's serve build injects a live-reload
/// script that opens a WebSocket to this server, so it must never land in `dist/` (what
/// `build` ships): a copied `dist/` would log WebSocket errors on every load.
const SERVE_DIST: &str = "target/serve-dist";
/// Where `build` writes the release site (Trunk.toml's `dist`).
const BUILD_DIST: &str = "dist";

fn main() -> ExitCode {
    let args: Vec<String> = env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("serve") => serve(&args[1..]),
        Some("test") => test(),
        Some("build") => build(),
        _ => {
            eprintln!(
                "usage: cargo xtask serve [trunk serve args]   build into {SERVE_DIST}/ and serve the app on http://{SERVE_ADDRESS}:{SERVE_PORT}\n       cargo xtask build                        release build into dist/, with the pre-rendered page\n       cargo xtask test                         run every check and test"
            );
            return ExitCode::from(2);
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("xtask: {message}");
            ExitCode::FAILURE
        }
    }
}

/// The workspace root (this crate lives in `xtask/`).
fn root() -> PathBuf {
    let manifest = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    manifest.parent().map(Path::to_path_buf).unwrap_or(manifest)
}

fn say(message: &str) {
    println!("\x1b[1mxtask:\x1b[0m {message}");
}

/// PATH with cargo's bin folder and npm's global bin folder in front, so the
/// tools installed here win over older system copies (Debian's wasm-opt 108).
fn tool_path() -> OsString {
    let mut dirs: Vec<PathBuf> = Vec::new();
    if let Some(npm_prefix) = capture("npm", &["prefix", "-g"]) {
        dirs.push(PathBuf::from(npm_prefix.trim()).join("bin"));
    }
    let cargo_home = env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .or_else(|| env::var_os("HOME").map(|h| PathBuf::from(h).join(".cargo")));
    if let Some(home) = cargo_home {
        dirs.push(home.join("bin"));
    }
    if let Some(path) = env::var_os("PATH") {
        dirs.extend(env::split_paths(&path));
    }
    env::join_paths(dirs).unwrap_or_else(|_| env::var_os("PATH").unwrap_or_default())
}

/// Stdout+stderr of a command that succeeded, or None (missing or failed).
fn capture(program: &str, args: &[&str]) -> Option<String> {
    let output = Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .ok()?;
    if !output.status.success() {
        return None;
    }
    let mut text = String::from_utf8_lossy(&output.stdout).into_owned();
    text.push_str(&String::from_utf8_lossy(&output.stderr));
    Some(text)
}

/// A command with the tool PATH and the root as working directory.
fn command(program: &str, args: &[&str]) -> Command {
    let mut cmd = Command::new(program);
    cmd.args(args).current_dir(root()).env("PATH", tool_path());
    cmd
}

fn run_status(mut cmd: Command, what: &str) -> Result<(), String> {
    let status = cmd
        .status()
        .map_err(|e| format!("could not start {what}: {e}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("{what} failed ({status})"))
    }
}

fn install(what: &str, program: &str, args: &[&str]) -> Result<(), String> {
    say(&format!(
        "installing {what}: {program} {} (this takes a few minutes the first time)",
        args.join(" ")
    ));
    run_status(command(program, args), &format!("installing {what}"))
}

fn with_path(program: &str, args: &[&str]) -> Option<String> {
    let output = command(program, args).stdin(Stdio::null()).output().ok()?;
    if !output.status.success() {
        return None;
    }
    let mut text = String::from_utf8_lossy(&output.stdout).into_owned();
    text.push_str(&String::from_utf8_lossy(&output.stderr));
    Some(text)
}

fn ensure_wasm_target() -> Result<(), String> {
    let installed = with_path("rustup", &["target", "list", "--installed"]).unwrap_or_default();
    if installed.lines().any(|l| l.trim() == WASM_TARGET) {
        say(&format!("{WASM_TARGET} target: present"));
        return Ok(());
    }
    install(
        &format!("the {WASM_TARGET} target"),
        "rustup",
        &["target", "add", WASM_TARGET],
    )
}

fn ensure_trunk() -> Result<(), String> {
    if let Some(v) = with_path("trunk", &["--version"]) {
        if v.contains(TRUNK_VERSION) {
            say(&format!("trunk {TRUNK_VERSION}: present"));
            return Ok(());
        }
        say(&format!("found {}, want trunk {TRUNK_VERSION}", v.trim()));
    }
    install(
        &format!("trunk {TRUNK_VERSION}"),
        "cargo",
        &["install", "trunk", "--version", TRUNK_VERSION, "--locked"],
    )
}

fn ensure_wasm_bindgen() -> Result<(), String> {
    let cli = with_path("wasm-bindgen", &["--version"]).unwrap_or_default();
    let runner = with_path("wasm-bindgen-test-runner", &["--version"]).unwrap_or_default();
    if cli.contains(WASM_BINDGEN_VERSION) && runner.contains(WASM_BINDGEN_VERSION) {
        say(&format!("wasm-bindgen-cli {WASM_BINDGEN_VERSION}: present"));
        return Ok(());
    }
    // `--locked` fails here: the registry index lacks one locked dependency.
    install(
        &format!("wasm-bindgen-cli {WASM_BINDGEN_VERSION}"),
        "cargo",
        &[
            "install",
            "wasm-bindgen-cli",
            "--version",
            WASM_BINDGEN_VERSION,
        ],
    )
}

/// Parses "wasm-opt version 132 (version_132)".
fn wasm_opt_version(text: &str) -> Option<u32> {
    let rest = text.split("version").nth(1)?;
    rest.split_whitespace().next()?.parse().ok()
}

fn ensure_wasm_opt() -> Result<(), String> {
    if let Some(v) = with_path("wasm-opt", &["--version"])
        .as_deref()
        .and_then(wasm_opt_version)
    {
        if v >= MIN_WASM_OPT_VERSION {
            say(&format!("wasm-opt {v}: present"));
            return Ok(());
        }
        say(&format!(
            "wasm-opt {v} found; versions before {MIN_WASM_OPT_VERSION} break the module, installing binaryen {BINARYEN_VERSION} from npm"
        ));
    }
    if with_path("npm", &["--version"]).is_none() {
        return Err(format!(
            "wasm-opt {MIN_WASM_OPT_VERSION}+ is needed and npm is missing: install Node.js, or put binaryen {BINARYEN_VERSION}'s wasm-opt on PATH"
        ));
    }
    install(
        &format!("wasm-opt (binaryen {BINARYEN_VERSION})"),
        "npm",
        &["install", "-g", &format!("binaryen@{BINARYEN_VERSION}")],
    )?;
    match with_path("wasm-opt", &["--version"]).as_deref().and_then(wasm_opt_version) {
        Some(v) if v >= MIN_WASM_OPT_VERSION => Ok(()),
        other => Err(format!(
            "after npm install, wasm-opt on PATH reports {other:?}; remove the older one (apt-get remove binaryen)"
        )),
    }
}

/// Chromium and its driver, for the wasm tests and the end-to-end tests.
fn browser_paths() -> Option<(String, String)> {
    let find = |names: &[&str]| {
        names
            .iter()
            .find(|n| with_path(n, &["--version"]).is_some())
            .map(|n| {
                capture("which", &[n])
                    .map(|p| p.trim().to_string())
                    .filter(|p| !p.is_empty())
                    .unwrap_or_else(|| n.to_string())
            })
    };
    let browser = find(&["chromium", "chromium-browser", "google-chrome"])?;
    let driver = find(&["chromedriver"])?;
    Some((browser, driver))
}

fn ensure_browser() -> Result<(String, String), String> {
    if let Some(paths) = browser_paths() {
        say(&format!("chromium and chromedriver: present ({})", paths.0));
        return Ok(paths);
    }
    if with_path("apt-get", &["--version"]).is_none() {
        return Err(
            "Chromium and chromedriver are missing and apt-get is not available: install them and put them on PATH".into(),
        );
    }
    let is_root = capture("id", &["-u"]).is_some_and(|u| u.trim() == "0");
    let sudo: &[&str] = if is_root { &[] } else { &["sudo"] };
    let apt = |args: &[&str]| {
        let mut all: Vec<&str> = sudo.to_vec();
        all.push("apt-get");
        all.extend_from_slice(args);
        let (program, rest) = all
            .split_first()
            .map(|(p, r)| (*p, r.to_vec()))
            .unwrap_or(("apt-get", Vec::new()));
        install("chromium and chromium-driver", program, &rest)
    };
    apt(&["update"])?;
    apt(&["install", "-y", "chromium", "chromium-driver"])?;
    browser_paths().ok_or_else(|| "chromium was installed but is not on PATH".to_string())
}

fn ensure_web_tools() -> Result<(), String> {
    ensure_wasm_target()?;
    ensure_wasm_bindgen()?;
    ensure_wasm_opt()?;
    ensure_trunk()
}

fn serve(extra: &[String]) -> Result<(), String> {
    ensure_web_tools()?;
    say(&format!(
        "building into {SERVE_DIST}/ and serving on http://{SERVE_ADDRESS}:{SERVE_PORT} (Ctrl-C stops; dist/ is left to `cargo xtask build`)"
    ));
    let args = serve_args(extra);
    let mut cmd = command("trunk", &args);
    cmd.env("TRUNK_OFFLINE", "true")
        .env("TRUNK_SKIP_VERSION_CHECK", "true");
    run_status(cmd, "trunk serve")
}

/// `trunk serve`'s arguments: offline, on the fixed address, into [`SERVE_DIST`], then
/// the caller's own.
fn serve_args(extra: &[String]) -> Vec<&str> {
    let mut args = vec![
        "serve",
        "--offline",
        "--address",
        SERVE_ADDRESS,
        "--port",
        SERVE_PORT,
        "--dist",
        SERVE_DIST,
    ];
    args.extend(extra.iter().map(String::as_str));
    args
}

struct Step {
    name: &'static str,
    outcome: Result<(), String>,
    took: Duration,
}

fn timed(
    name: &'static str,
    steps: &mut Vec<Step>,
    f: impl FnOnce() -> Result<(), String>,
) -> bool {
    say(&format!("── {name}"));
    let start = Instant::now();
    let outcome = f();
    let ok = outcome.is_ok();
    steps.push(Step {
        name,
        outcome,
        took: start.elapsed(),
    });
    ok
}

fn cargo(args: &[&str], envs: &[(&str, &str)]) -> Result<(), String> {
    let mut cmd = command("cargo", args);
    for (k, v) in envs {
        cmd.env(k, v);
    }
    run_status(cmd, &format!("cargo {}", args.join(" ")))
}

/// The end-to-end binary's arguments before any test filter.
const E2E_ARGS: [&str; 9] = [
    "test",
    "-p",
    "e2e",
    "--test",
    "browser",
    "--",
    "--ignored",
    "--test-threads=1",
    "--nocapture",
];

/// Runs the end-to-end tests. A WebDriver call has been seen to stall once in several full
/// runs (a 120 s read timeout): the tests that failed run once more, alone, to tell a flake
/// from a failure (the first run's output stays above for whoever investigates). A run
/// that ends without naming its failures (a crash) reruns whole.
fn end_to_end(envs: &[(&str, &str)]) -> Result<(), String> {
    let (outcome, failed) = cargo_tee(&E2E_ARGS, envs);
    let Err(first) = outcome else {
        return Ok(());
    };
    let mut args = E2E_ARGS.to_vec();
    if !failed.is_empty() {
        args.push("--exact");
        args.extend(failed.iter().map(String::as_str));
    }
    say(&format!(
        "WARNING: end-to-end tests failed ({first}); rerunning {} once to tell a flake from a failure",
        if failed.is_empty() {
            "all of them".to_string()
        } else {
            failed.join(", ")
        }
    ));
    cargo_tee(&args, envs).0
}

/// `cargo` with stdout shown as it comes and also read for libtest's list of failed tests.
fn cargo_tee(args: &[&str], envs: &[(&str, &str)]) -> (Result<(), String>, Vec<String>) {
    use std::io::{BufRead, BufReader};
    let what = format!("cargo {}", args.join(" "));
    let mut cmd = command("cargo", args);
    cmd.envs(envs.iter().copied()).stdout(Stdio::piped());
    let mut child = match cmd.spawn() {
        Ok(child) => child,
        Err(e) => return (Err(format!("could not start {what}: {e}")), Vec::new()),
    };
    let mut lines = Vec::new();
    if let Some(out) = child.stdout.take() {
        for line in BufReader::new(out).lines().map_while(Result::ok) {
            println!("{line}");
            lines.push(line);
        }
    }
    match child.wait() {
        Ok(status) if status.success() => (Ok(()), Vec::new()),
        Ok(status) => (
            Err(format!("{what} failed ({status})")),
            failed_tests(&lines),
        ),
        Err(e) => (Err(format!("{what}: {e}")), Vec::new()),
    }
}

/// The names under libtest's last `failures:` heading (four-space indented, up to a blank).
fn failed_tests(lines: &[String]) -> Vec<String> {
    let Some(start) = lines.iter().rposition(|l| l.trim_end() == "failures:") else {
        return Vec::new();
    };
    lines[start + 1..]
        .iter()
        .skip_while(|l| l.trim().is_empty())
        .take_while(|l| l.starts_with("    ") && !l.trim().is_empty())
        .map(|l| l.trim().to_string())
        .collect()
}

/// Gzipped bytes of a file (`gzip -9`), the size a static host serves.
fn gzipped_bytes(path: &Path) -> Option<u64> {
    let path = path.to_str()?;
    let out = Command::new("gzip")
        .args(["-9", "-c", path])
        .output()
        .ok()?;
    out.status.success().then_some(out.stdout.len() as u64)
}

/// Raw and gzipped bytes of a set of files.
#[derive(Default)]
struct Sizes {
    raw: u64,
    gz: u64,
    files: Vec<String>,
}

impl Sizes {
    fn add(&mut self, path: &Path) -> Result<(), String> {
        self.raw += std::fs::metadata(path).map(|m| m.len()).unwrap_or(0);
        self.gz += gzipped_bytes(path).ok_or("gzip is needed to measure the bundle")?;
        self.files.push(
            path.file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default(),
        );
        Ok(())
    }

    /// "(files): X KB raw, Y KB gzipped".
    fn describe(&self) -> String {
        format!(
            "({}): {:.1} KB raw, {:.1} KB gzipped",
            self.files.join(", "),
            self.raw as f64 / 1000.0,
            self.gz as f64 / 1000.0
        )
    }
}

/// The deferred sections' module (app/src/deferred.rs): its files' common prefix in dist/.
const DEFERRED_MODULE: &str = "app-deferred";

/// Measures dist/'s .wasm and .js: the first-load bundle (the files the built
/// index.html names: the page's wasm and its glue) against the 400 KB target, the
/// deferred sections' module (imported by the page once its first chart is drawn) and
/// the rest (the page's worker, which trunk leaves out of index.html and the page
/// creates when the accuracy section opens, the serving view comes near or a file is
/// imported) separately.
fn report_bundle_size(dist: &Path) -> Result<String, String> {
    let index_path = dist.join("index.html");
    let index = std::fs::read_to_string(&index_path)
        .map_err(|e| format!("reading {}: {e}", index_path.display()))?;
    let entries =
        std::fs::read_dir(dist).map_err(|e| format!("reading {}: {e}", dist.display()))?;
    let mut paths: Vec<_> = entries.flatten().map(|e| e.path()).collect();
    paths.sort();
    let mut first_load = Sizes::default();
    let mut deferred = Sizes::default();
    let mut on_demand = Sizes::default();
    for path in paths {
        let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("");
        if ext != "wasm" && ext != "js" {
            continue;
        }
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        if index.contains(&format!("./{name}")) {
            first_load.add(&path)?;
        } else if name.starts_with(DEFERRED_MODULE) {
            deferred.add(&path)?;
        } else {
            on_demand.add(&path)?;
        }
    }
    if first_load.files.is_empty() {
        return Err(format!(
            "{} names no .wasm or .js file: the first-load bundle was not found",
            index_path.display()
        ));
    }
    let index_gz = gzipped_bytes(&index_path).ok_or("gzip is needed to measure the bundle")?;
    let mut line = format!(
        "first-load wasm+js {} (target ≤ 400 KB); index.html {:.1} KB raw, {:.1} KB gzipped (with the pre-rendered page)",
        first_load.describe(),
        index.len() as f64 / 1000.0,
        index_gz as f64 / 1000.0
    );
    if !deferred.files.is_empty() {
        line.push_str(&format!(
            "\n  deferred sections wasm+js {}, imported once the first chart is on screen",
            deferred.describe()
        ));
    }
    if !on_demand.files.is_empty() {
        line.push_str(&format!(
            "\n  worker wasm+js {}, on demand when the mesh explorer nears the screen, the accuracy section opens, the serving section comes into view or a file is imported",
            on_demand.describe()
        ));
    }
    Ok(line)
}

/// `trunk build --release --offline` into dist/.
fn trunk_release() -> Result<(), String> {
    let mut cmd = command("trunk", &["build", "--release", "--offline"]);
    cmd.env("TRUNK_OFFLINE", "true")
        .env("TRUNK_SKIP_VERSION_CHECK", "true");
    run_status(cmd, "trunk build --release --offline")
}

/// Writes the pre-rendered default page into dist/index.html (the e2e crate's
/// `prerender` binary drives headless Chromium over WebDriver, as the tests do).
fn prerender(dist: &str, chromium: &str, chromedriver: &str) -> Result<(), String> {
    cargo(
        &[
            "run",
            "--quiet",
            "-p",
            "e2e",
            "--bin",
            "prerender",
            "--",
            dist,
        ],
        &[("CHROMEDRIVER", chromedriver), ("CHROMIUM", chromium)],
    )
}

/// `cargo xtask build`: the release build with its pre-rendered page, and its size.
fn build() -> Result<(), String> {
    ensure_web_tools()?;
    let (chromium, chromedriver) = ensure_browser()?;
    let dist = root().join(BUILD_DIST);
    trunk_release()?;
    prerender(&dist.to_string_lossy(), &chromium, &chromedriver)?;
    say(&report_bundle_size(&dist)?);
    Ok(())
}

fn test() -> Result<(), String> {
    let started = Instant::now();
    say("checking tools (installs what is missing)");
    ensure_web_tools()?;
    let (chromium, chromedriver) = ensure_browser()?;
    let tools_took = started.elapsed();
    let root = root();
    let dist = root.join(BUILD_DIST);
    let dist_str = dist.to_string_lossy().into_owned();
    let mut steps = Vec::new();
    let mut size_line = String::from("bundle size not measured");

    timed("rustfmt", &mut steps, || {
        cargo(&["fmt", "--all", "--check"], &[])
    });
    timed("clippy (native)", &mut steps, || {
        cargo(
            &[
                "clippy",
                "--workspace",
                "--all-targets",
                "--",
                "-D",
                "warnings",
            ],
            &[],
        )
    });
    timed("clippy (wasm32, app)", &mut steps, || {
        cargo(
            &[
                "clippy",
                "-p",
                "app",
                "--target",
                WASM_TARGET,
                "--all-targets",
                "--",
                "-D",
                "warnings",
            ],
            &[],
        )
    });
    // planner-core's docs are its map (lib.rs, one doc line per module): a broken
    // intra-doc link is a map that lies, so it fails the run.
    timed("rustdoc (planner-core, links)", &mut steps, || {
        cargo(
            &["doc", "-p", "planner-core", "--no-deps"],
            &[("RUSTDOCFLAGS", "-D warnings")],
        )
    });
    timed("native tests", &mut steps, || {
        cargo(&["test", "--workspace", "--exclude", "app"], &[])
    });
    timed("wasm tests (headless Chromium)", &mut steps, || {
        cargo(
            &["test", "-p", "app", "--target", WASM_TARGET],
            &[("CHROMEDRIVER", chromedriver.as_str())],
        )
    });
    let built = timed("trunk build --release", &mut steps, trunk_release);
    if built {
        timed("pre-render the default page", &mut steps, || {
            prerender(&dist_str, &chromium, &chromedriver)?;
            size_line = report_bundle_size(&dist)?;
            say(&size_line);
            Ok(())
        });
    }
    if built {
        timed("end-to-end tests (headless Chromium)", &mut steps, || {
            let envs = [
                ("MESHPLAN_DIST", dist_str.as_str()),
                ("CHROMEDRIVER", chromedriver.as_str()),
                ("CHROMIUM", chromium.as_str()),
            ];
            end_to_end(&envs)
        });
    } else {
        steps.push(Step {
            name: "end-to-end tests (headless Chromium)",
            outcome: Err("skipped: the release build failed".into()),
            took: Duration::ZERO,
        });
    }

    println!();
    say("summary");
    println!(
        "  ok   {:<40} {:>7.1} s",
        "tools (installs what is missing)",
        tools_took.as_secs_f64()
    );
    for step in &steps {
        let (mark, note) = match &step.outcome {
            Ok(()) => ("ok  ", String::new()),
            Err(e) => ("FAIL", format!("  {e}")),
        };
        println!(
            "  {mark} {:<40} {:>7.1} s{note}",
            step.name,
            step.took.as_secs_f64()
        );
    }
    println!("  {size_line}");
    println!("  total {:.1} min", started.elapsed().as_secs_f64() / 60.0);
    let failed = steps.iter().filter(|s| s.outcome.is_err()).count();
    if failed == 0 {
        say("all checks passed");
        Ok(())
    } else {
        Err(format!("{failed} step(s) failed"))
    }
}

#[cfg(test)]
mod tests {
    use super::{
        failed_tests, report_bundle_size, serve_args, wasm_opt_version, BUILD_DIST, SERVE_DIST,
    };

    /// `serve`'s live-reload build never lands in the folder `build` ships.
    #[test]
    fn serve_builds_into_its_own_folder_not_dist() {
        let extra = vec!["--no-autoreload".to_string()];
        let args = serve_args(&extra);
        let dist_at = args.iter().position(|a| *a == "--dist").expect("--dist");
        assert_eq!(args[dist_at + 1], SERVE_DIST);
        assert_ne!(SERVE_DIST, BUILD_DIST);
        assert!(!std::path::Path::new(SERVE_DIST).starts_with(BUILD_DIST));
        assert_eq!(args.last(), Some(&"--no-autoreload"));
    }

    #[test]
    fn reads_the_failed_tests_from_libtests_summary() {
        let out: Vec<String> = "running 3 tests\ntest a::x ... FAILED\n\nfailures:\n\n---- a::x stdout ----\npanicked\n    at here\n\nfailures:\n    a::x\n    b::y\n\ntest result: FAILED. 1 passed; 2 failed"
            .lines()
            .map(String::from)
            .collect();
        assert_eq!(failed_tests(&out), ["a::x", "b::y"]);
        assert!(failed_tests(&["test result: ok".to_string()]).is_empty());
    }

    #[test]
    fn parses_wasm_opt_versions() {
        assert_eq!(
            wasm_opt_version("wasm-opt version 132 (version_132)\n"),
            Some(132)
        );
        assert_eq!(wasm_opt_version("wasm-opt version 108\n"), Some(108));
        assert_eq!(wasm_opt_version("garbage"), None);
    }

    /// The first-load bundle is what the built index.html names; the worker is counted apart.
    #[test]
    fn bundle_size_separates_the_first_load_from_the_worker() {
        let dir = std::env::temp_dir().join(format!("xtask-bundle-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let write = |name: &str, text: &str| std::fs::write(dir.join(name), text).unwrap();
        write(
            "index.html",
            "<script type=module>import init from './app-1.js'; init({ module_or_path: './app-1_bg.wasm' });</script>",
        );
        write("app-1.js", "export default 1;");
        write("app-1_bg.wasm", "wasm");
        write("app-worker.js", "var wasm_bindgen;");
        write("app-worker_bg.wasm", "worker wasm");
        write("app-worker_loader.js", "importScripts('./app-worker.js');");
        write("style.css", "body {}");
        let line = report_bundle_size(&dir).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
        assert!(
            line.starts_with("first-load wasm+js (app-1.js, app-1_bg.wasm): 0.0 KB raw"),
            "{line}"
        );
        assert!(
            line.contains(
                "worker wasm+js (app-worker.js, app-worker_bg.wasm, app-worker_loader.js)"
            ),
            "{line}"
        );
        assert!(
            line.contains("on demand when the mesh explorer nears the screen"),
            "{line}"
        );
    }
}
