//! The GPU check scripts, without a GPU: gpu_check.py's own logic (library
//! links, argument handling, the PyTorch side against a stand-in module) and
//! gpu-check.sh's `run` flow up to where it needs CUDA. Skipped where python3
//! or bash is missing.

use std::path::{Path, PathBuf};
use std::process::Command;

use gpu_bench::libs::Lib;

fn scripts() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../scripts")
}

fn have(tool: &str) -> bool {
    Command::new(tool).arg("--version").output().is_ok()
}

#[test]
fn gpu_check_py_selftest_passes() {
    if !have("python3") {
        eprintln!("python3 not found: skipped");
        return;
    }
    let out = Command::new("python3")
        .arg(scripts().join("gpu_check.py"))
        .arg("selftest")
        .output()
        .expect("run python3");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{text}");
    assert!(text.contains("selftest: ok"), "{text}");
}

#[test]
fn gpu_check_sh_parses_and_rejects_unknown_modes() {
    if !have("bash") {
        eprintln!("bash not found: skipped");
        return;
    }
    let script = scripts().join("gpu-check.sh");
    let syntax = Command::new("bash")
        .arg("-n")
        .arg(&script)
        .output()
        .unwrap();
    assert!(syntax.status.success(), "{syntax:?}");
    let bad = Command::new("bash")
        .arg(&script)
        .arg("flash")
        .output()
        .unwrap();
    assert_eq!(bad.status.code(), Some(2));
    let help = Command::new("bash")
        .arg(&script)
        .arg("--help")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&help.stdout);
    assert!(
        text.contains("timeout_s >= 420") && text.contains("$OUT"),
        "{text}"
    );
}

/// `run` from an unpacked bundle on a machine without CUDA: every step is
/// reached, each leaves its log under $OUT, and the status is gpu-bench's 1.
#[test]
fn gpu_check_sh_run_writes_its_logs_under_out() {
    if !have("bash") || !have("python3") || !have("timeout") {
        eprintln!("bash, python3 or timeout not found: skipped");
        return;
    }
    if Lib::Driver.present() && Lib::Nccl.present() {
        eprintln!("CUDA libraries present: this test is for machines without them");
        return;
    }
    let dir = std::env::temp_dir().join(format!("gpu-check-run-{}", std::process::id()));
    let bundle = dir.join("gpu-check");
    std::fs::create_dir_all(&bundle).unwrap();
    std::fs::copy(env!("CARGO_BIN_EXE_gpu-bench"), bundle.join("gpu-bench")).unwrap();
    for f in ["gpu-check.sh", "gpu_check.py"] {
        std::fs::copy(scripts().join(f), bundle.join(f)).unwrap();
    }
    let out_dir = dir.join("out");
    let run = Command::new("bash")
        .arg(bundle.join("gpu-check.sh"))
        .arg("run")
        .current_dir(&dir)
        .env("OUT", &out_dir)
        .env("GPU_CHECK_BENCH_TIMEOUT", "60")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&run.stdout);
    assert_eq!(run.status.code(), Some(1), "{stdout}");
    for f in ["env.txt", "gpu-bench.log", "gpu-bench-gemm.log"] {
        assert!(out_dir.join(f).exists(), "{f} missing: {stdout}");
    }
    let log = std::fs::read_to_string(out_dir.join("gpu-bench.log")).unwrap();
    assert!(log.contains("libcuda.so"), "{log}");
    let env = std::fs::read_to_string(out_dir.join("env.txt")).unwrap();
    assert!(env.contains("gpu-bench 0.1.0"), "the binary ran: {env}");
    assert!(!out_dir.join("compare.txt").exists(), "nothing to compare");
    let _ = std::fs::remove_dir_all(&dir);
}
