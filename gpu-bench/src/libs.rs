//! Finding the CUDA libraries before using them. cudarc loads each library on
//! first use and panics when it is missing; these checks turn that into an
//! error that names the library and how to install it.

use std::path::PathBuf;

/// A shared library gpu-bench loads at run time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Lib {
    /// The CUDA driver, `libcuda.so` (installed with the NVIDIA driver).
    Driver,
    /// NCCL, `libnccl.so`.
    Nccl,
    /// cuBLASLt, `libcublasLt.so`.
    CublasLt,
}

impl Lib {
    /// Library stem as cudarc searches for it.
    pub fn stem(self) -> &'static str {
        match self {
            Lib::Driver => "cuda",
            Lib::Nccl => "nccl",
            Lib::CublasLt => "cublasLt",
        }
    }

    /// Whether the dynamic loader finds it under one of cudarc's names.
    pub fn present(self) -> bool {
        // SAFETY: these only try dlopen on candidate names; nothing is called.
        unsafe {
            match self {
                Lib::Driver => cudarc::driver::sys::is_culib_present(),
                Lib::Nccl => cudarc::nccl::sys::is_culib_present(),
                Lib::CublasLt => cudarc::cublaslt::sys::is_culib_present(),
            }
        }
    }

    /// Names cudarc tries, in order.
    pub fn candidates(self) -> Vec<String> {
        cudarc::get_lib_name_candidates(self.stem())
    }

    /// What to tell a user when it is missing.
    pub fn missing_message(self) -> String {
        let tried = self.candidates().join(", ");
        match self {
            Lib::Driver => format!(
                "the CUDA driver library libcuda.so was not found (tried: {tried}). gpu-bench needs an NVIDIA GPU \
                 with its driver installed: check that `nvidia-smi` works; in a container, start it with \
                 `--gpus all` (NVIDIA Container Toolkit)."
            ),
            Lib::Nccl => {
                let mut msg = format!(
                    "the NCCL library libnccl.so was not found (tried: {tried}). Install NCCL \
                     (`pip install nvidia-nccl-cu13` or `-cu12`, or the libnccl2 package from NVIDIA's repository). \
                     pip's wheel ships only libnccl.so.2, which gpu-bench does not look for: make the unversioned link \
                     `ln -s <dir>/libnccl.so.2 <dir>/libnccl.so` and add <dir> to LD_LIBRARY_PATH. With pip, <dir> is \
                     `python -c \"import nvidia.nccl, os; print(os.path.join(list(nvidia.nccl.__path__)[0], 'lib'))\"`."
                );
                if let Some(found) = find_in_library_path("libnccl.so.2") {
                    let dir = found.parent().map(|p| p.display().to_string()).unwrap_or_default();
                    msg.push_str(&format!(
                        " Found {}: run `ln -s {} {dir}/libnccl.so` (or link it into a writable directory on LD_LIBRARY_PATH).",
                        found.display(),
                        found.display()
                    ));
                }
                msg
            }
            Lib::CublasLt => format!(
                "the cuBLASLt library libcublasLt.so was not found (tried: {tried}). Install the CUDA toolkit's \
                 libraries (`pip install nvidia-cublas` for CUDA 13, `nvidia-cublas-cu12` for 12, or the \
                 cuda-libraries package) and add the directory holding libcublasLt.so.13 or .12 (pip: \
                 nvidia/cu13/lib or nvidia/cublas/lib) to LD_LIBRARY_PATH. scripts/gpu_check.py does this for PyTorch's wheels."
            ),
        }
    }
}

/// Looks for `file` in LD_LIBRARY_PATH and the usual library folders.
pub fn find_in_library_path(file: &str) -> Option<PathBuf> {
    let mut dirs: Vec<PathBuf> = std::env::var("LD_LIBRARY_PATH")
        .unwrap_or_default()
        .split(':')
        .filter(|d| !d.is_empty())
        .map(PathBuf::from)
        .collect();
    for d in [
        "/usr/lib/x86_64-linux-gnu",
        "/usr/local/lib",
        "/usr/lib64",
        "/usr/local/cuda/lib64",
    ] {
        dirs.push(PathBuf::from(d));
    }
    dirs.into_iter().map(|d| d.join(file)).find(|p| p.exists())
}

/// Paths of the CUDA driver, NCCL and cuBLASLt libraries mapped into this
/// process, read from `/proc/self/maps` text: which copies were actually
/// loaded (a pip wheel's or the system's), for the report's notes.
pub fn loaded_from_maps(maps: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for line in maps.lines() {
        let Some(path) = line.split_whitespace().nth(5) else {
            continue;
        };
        let file = path.rsplit('/').next().unwrap_or(path);
        let ours = ["libcuda.so", "libnccl.so", "libcublasLt.so"]
            .iter()
            .any(|stem| file.starts_with(stem));
        if ours && !out.iter().any(|p| p == path) {
            out.push(path.to_string());
        }
    }
    out
}

/// [`loaded_from_maps`] for this process (empty where `/proc` cannot be read).
pub fn loaded() -> Vec<String> {
    std::fs::read_to_string("/proc/self/maps")
        .map(|t| loaded_from_maps(&t))
        .unwrap_or_default()
}

/// Checks that every library in `needed` can be loaded; the error names each missing one.
pub fn check(needed: &[Lib]) -> Result<(), String> {
    let missing: Vec<String> = needed
        .iter()
        .filter(|l| !l.present())
        .map(|l| l.missing_message())
        .collect();
    if missing.is_empty() {
        Ok(())
    } else {
        Err(missing.join("\n"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_name_the_library_and_the_fix() {
        assert!(Lib::Driver.missing_message().contains("libcuda.so"));
        let nccl = Lib::Nccl.missing_message();
        assert!(nccl.contains("libnccl.so.2") && nccl.contains("ln -s"));
        assert!(Lib::CublasLt.missing_message().contains("libcublasLt"));
        assert!(Lib::Nccl.candidates().iter().any(|c| c == "libnccl.so"));
    }

    #[test]
    fn loaded_libraries_are_read_from_proc_maps() {
        let maps = "\
7f00-7f01 r--p 00000000 08:01 1 /usr/lib/x86_64-linux-gnu/libcuda.so.580.159.04
7f01-7f02 r-xp 00001000 08:01 1 /usr/lib/x86_64-linux-gnu/libcuda.so.580.159.04
7f02-7f03 r-xp 00000000 08:01 2 /opt/venv/lib/python3.12/site-packages/nvidia/nccl/lib/libnccl.so.2
7f03-7f04 r-xp 00000000 08:01 3 /opt/venv/lib/python3.12/site-packages/nvidia/cu13/lib/libcublasLt.so.13
7f04-7f05 r-xp 00000000 08:01 4 /usr/lib/x86_64-linux-gnu/libc.so.6
7f05-7f06 rw-p 00000000 00:00 0
7f06-7f07 rw-p 00000000 00:00 0 [heap]
";
        assert_eq!(
            loaded_from_maps(maps),
            vec![
                "/usr/lib/x86_64-linux-gnu/libcuda.so.580.159.04",
                "/opt/venv/lib/python3.12/site-packages/nvidia/nccl/lib/libnccl.so.2",
                "/opt/venv/lib/python3.12/site-packages/nvidia/cu13/lib/libcublasLt.so.13",
            ]
        );
    }

    #[test]
    fn check_reports_every_missing_library() {
        let needed = [Lib::Driver, Lib::Nccl, Lib::CublasLt];
        match check(&needed) {
            Ok(()) => assert!(needed.iter().all(|l| l.present())),
            Err(e) => {
                for l in needed.iter().filter(|l| !l.present()) {
                    let stem = format!("lib{}.so", l.stem());
                    assert!(e.contains(&stem), "{e}");
                }
            }
        }
    }
}
