#!/usr/bin/env bash
# Builds gpu-bench (x86_64 Linux, release) and bundles it with gpu_check.py,
# then prints the commands to run on a GPU machine that has no Rust toolchain.
#
# On the GPU machine the bundle runs `gpu-bench all --quick` and times the
# same GEMM shapes and device copy with PyTorch, printing gpu-bench's figure
# over PyTorch's for each. With one GPU, collectives run at world size 1 only.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
target=x86_64-unknown-linux-gnu
bundle="$root/target/gpu-check"

cd "$root"
echo "building gpu-bench (release, $target)..." >&2
cargo build --release -p gpu-bench --target "$target"

rm -rf "$bundle"
mkdir -p "$bundle"
cp "target/$target/release/gpu-bench" "$bundle/"
cp scripts/gpu_check.py "$bundle/"
tar -C "$root/target" -czf "$root/target/gpu-check.tar.gz" gpu-check

# The newest glibc symbol version the binary uses (falls back to this machine's glibc).
glibc=""
if command -v objdump >/dev/null 2>&1; then
  glibc="$(objdump -T "$bundle/gpu-bench" | grep -oE 'GLIBC_[0-9.]+' | sed 's/GLIBC_//' | sort -V | tail -n1 || true)"
fi
if [ -z "$glibc" ]; then
  glibc="$(getconf GNU_LIBC_VERSION 2>/dev/null | awk '{print $2}' || true)"
fi
glibc="${glibc:-unknown}"
cat <<MSG

Bundle: $root/target/gpu-check.tar.gz  (gpu-bench + gpu_check.py)
The binary links glibc dynamically: the GPU machine needs glibc $glibc or newer.
It loads libcuda, libnccl and libcublasLt at run time; gpu_check.py finds the
ones in PyTorch's pip wheels and makes the libnccl.so link gpu-bench needs.

On the GPU machine (needs the NVIDIA driver and Python 3 with PyTorch, no Rust):

  scp $root/target/gpu-check.tar.gz <gpu-host>:
  ssh <gpu-host> 'tar xzf gpu-check.tar.gz && cd gpu-check && python3 gpu_check.py'

Add --full for the full suite (a few minutes). With one GPU, collectives run
at world size 1 only and measure no links; use a multi-GPU node for those.
MSG
