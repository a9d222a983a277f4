//! The binary on a machine without CUDA: a clear message naming the missing
//! library and exit status 1, never a panic.

use std::process::Command;

use gpu_bench::libs::Lib;

fn gpu_bench() -> Command {
    Command::new(env!("CARGO_BIN_EXE_gpu-bench"))
}

#[test]
fn missing_cuda_is_a_clear_error_not_a_panic() {
    if Lib::Driver.present() && Lib::Nccl.present() && Lib::CublasLt.present() {
        eprintln!("CUDA libraries present: this test only applies without them");
        return;
    }
    let dir = std::env::temp_dir().join(format!("gpu-bench-cli-{}", std::process::id()));
    let out_path = dir.join("report.json");
    let out = gpu_bench()
        .args(["all", "--quick", "-o"])
        .arg(&out_path)
        .output()
        .expect("run gpu-bench");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(gpu_bench::EXIT_FAILURE), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    for lib in [Lib::Driver, Lib::Nccl, Lib::CublasLt] {
        if !lib.present() {
            let name = format!("lib{}.so", lib.stem());
            assert!(
                stderr.contains(&name),
                "message should name {name}: {stderr}"
            );
        }
    }
    if !Lib::Nccl.present() {
        assert!(
            stderr.contains("ln -s"),
            "the NCCL symlink fix is explained: {stderr}"
        );
    }
    assert!(!out_path.exists(), "no report is written when nothing ran");
}

#[test]
fn bad_arguments_exit_2_and_help_documents_exit_codes() {
    let out = gpu_bench()
        .args(["all", "--no-such-flag"])
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(gpu_bench::EXIT_USAGE));
    let help = gpu_bench().arg("--help").output().expect("run");
    let text = String::from_utf8_lossy(&help.stdout);
    assert!(text.contains("Exit status: 0 complete; 3"), "{text}");
}
