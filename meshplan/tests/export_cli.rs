//! `meshplan export`: one format prints exactly its golden text (notes on stderr),
//! the link form gives the same output as the file, and bad formats exit 2.

mod common;
use common::{meshplan, repo_root, scratch_path, stderr};

fn golden_text(file: &str) -> String {
    let path = repo_root()
        .join("planner-core/tests/golden/export/article-mesh")
        .join(file);
    let full = std::fs::read_to_string(&path).expect("golden file");
    full.split("\n---- notes ----")
        .next()
        .unwrap_or_default()
        .to_string()
}

#[test]
fn single_format_prints_the_file_and_notes_on_stderr() {
    for (format, file) in [
        ("megatron", "megatron_args.sh"),
        ("deepspeed", "ds_config.json"),
        ("torchtitan", "torchtitan.toml"),
        ("vllm", "vllm_serve.sh"),
    ] {
        let out = meshplan(&[
            "export",
            "examples/article-70b-mesh.json",
            "--format",
            format,
        ]);
        assert!(out.status.success(), "{}", stderr(&out));
        assert_eq!(
            String::from_utf8_lossy(&out.stdout).trim_end(),
            golden_text(file).trim_end(),
            "{format}"
        );
        assert!(stderr(&out).contains("note: "));
    }
}

#[test]
fn link_gives_the_same_exports_as_the_file() {
    let link = meshplan(&["link", "examples/article-70b-mesh.json"]);
    let query = String::from_utf8_lossy(&link.stdout).trim().to_string();
    let from_link = meshplan(&["export", "--link", &query, "--json"]);
    let from_file = meshplan(&["export", "examples/article-70b-mesh.json", "--json"]);
    assert!(from_link.status.success());
    assert_eq!(from_link.stdout, from_file.stdout);
    let v: serde_json::Value = serde_json::from_slice(&from_file.stdout).expect("JSON");
    assert_eq!(v.as_array().map(Vec::len), Some(9));
}

#[test]
fn unknown_format_exits_2_naming_the_choices() {
    let out = meshplan(&[
        "export",
        "examples/article-70b-mesh.json",
        "--format",
        "slurm",
    ]);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(
        err.contains("--format") && err.contains("torchtitan"),
        "{err}"
    );
}

#[test]
fn out_dir_writes_every_file_and_the_notes() {
    let dir = scratch_path("export");
    let dir_arg = dir.to_string_lossy().to_string();
    let out = meshplan(&[
        "export",
        "examples/article-70b-mesh.json",
        "--out-dir",
        &dir_arg,
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    for file in [
        "launch.sh",
        "fsdp2.yaml",
        "ds_config.json",
        "megatron_args.sh",
        "torchtitan.toml",
        "vllm_serve.sh",
        "sglang_serve.sh",
    ] {
        let got = std::fs::read_to_string(dir.join(file)).expect("written");
        assert_eq!(got.trim_end(), golden_text(file).trim_end(), "{file}");
    }
    let notes = std::fs::read_to_string(dir.join("NOTES.md")).expect("notes");
    assert!(notes.contains("## fsdp2.yaml"));
    let _ = std::fs::remove_dir_all(&dir);
}
