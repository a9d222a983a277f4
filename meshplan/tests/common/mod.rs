//! The one helper every `meshplan` CLI test uses: run the built binary from the
//! repository root (so `examples/…` paths resolve) and read what it printed.

// Each test binary compiles this module and uses part of it.
#![allow(dead_code)]

use std::path::PathBuf;
use std::process::{Command, Output};

/// Runs `meshplan ARGS…` from the repository root.
pub fn meshplan(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_meshplan"))
        .args(args)
        .current_dir(repo_root())
        .output()
        .expect("run meshplan")
}

/// Its stdout, after asserting it exited 0 (stderr shown otherwise).
pub fn ok(out: &Output) -> String {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// What it wrote to stderr.
pub fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// The repository root (examples/, validation/, planner-core/tests/golden/ are below it).
pub fn repo_root() -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
}

/// A path of this test process's own in the temp dir (`meshplan-NAME-PID`), not created.
pub fn scratch_path(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("meshplan-{name}-{}", std::process::id()))
}
