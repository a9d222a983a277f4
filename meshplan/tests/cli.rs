//! The `meshplan` binary: outputs and exit codes.

use std::process::{Command, Output};

use planner_core::presets::article_mesh_scenario;
use planner_core::scenario::Scenario;

fn meshplan(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_meshplan"))
        .args(args)
        .current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
        .output()
        .expect("run meshplan")
}

const MESH_LINK: &str = "v=1&model=llama-3.1-70b&gpus=512&seq=32768&gbs=64&pp=4&cp=4&dp=4";

#[test]
fn link_prints_the_query() {
    let out = meshplan(&["link", "examples/article-70b-mesh.json"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), MESH_LINK);
}

#[test]
fn decode_link_prints_the_scenario() {
    let url = format!("https://example.org/meshplan/?{MESH_LINK}");
    let out = meshplan(&["decode-link", &url]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let s: Scenario = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(s, article_mesh_scenario());
}

#[test]
fn bad_link_exits_2_naming_the_field() {
    let out = meshplan(&["decode-link", "v=1&tp=eight"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("tp: 'eight' is not a valid number"), "{err}");
}

#[test]
fn lenient_decode_warns_and_succeeds() {
    let out = meshplan(&["decode-link", "--lenient", "v=1&tp=eight&seq=8192"]);
    assert!(out.status.success());
    let s: Scenario = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(s.training.seq_len, 8192);
    assert!(String::from_utf8_lossy(&out.stderr).contains("warning: tp:"));
}

#[test]
fn bad_files_exit_2() {
    let out = meshplan(&["link", "does/not/exist.json"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("does/not/exist.json"));

    let out = meshplan(&["link", "planner-core/tests/fixtures/hf/llama-3.1-8b.json"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("not a scenario"));
}
