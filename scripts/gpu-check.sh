#!/usr/bin/env bash
# Checks gpu-bench on a GPU machine against PyTorch, in two steps.
#
#   scripts/gpu-check.sh build   (here; the default) builds a release gpu-bench
#       for x86_64 Linux into target/gpu-check/ with gpu_check.py and this
#       script, and packs them as target/gpu-check.tar.gz.
#   scripts/gpu-check.sh run     (on the GPU machine, from the repository root
#       with target/gpu-check carried along, or from an unpacked bundle) runs
#       each step under its own hard time limit and writes everything to $OUT
#       (default ./gpu-check-out):
#         env.txt          nvidia-smi, glibc, libraries, Python/PyTorch versions
#         gpu-bench.log    `gpu-bench all --quick` output (the nccl-tests-style tables)
#         report.json      its report (report.invalid.json if it failed its own check)
#         compare.txt/json the same GEMM shapes and copy timed with PyTorch, ratios
#       If `all` leaves no report, `gpu-bench gemm` runs alone (gpu-bench-gemm.log,
#       report-gemm.json) so the PyTorch comparison still happens.
#
# Worst case under 6 minutes (the limits below add up to ~350 s; override them with
# the GPU_CHECK_* variables), typically 1-2: give a device lease timeout_s >= 420 for `run`.
# Exit status of `run`: gpu-bench's (0 complete, 3 partial, 1 failure, 124 killed at its limit),
# or 5 when gpu-bench completed but a comparison is outside the tolerance (±3%).
set -uo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
mode="${1:-build}"

# Timed calls and warm-up for both gpu-bench and PyTorch: the comparison needs the same.
WARMUP="${GPU_CHECK_WARMUP:-5}"
ITERS="${GPU_CHECK_ITERS:-20}"
T_ENV="${GPU_CHECK_ENV_TIMEOUT:-15}"          # each probe in env.txt
T_LIBS="${GPU_CHECK_LIBS_TIMEOUT:-20}"        # finding pip's NCCL/cuBLASLt
T_BENCH="${GPU_CHECK_BENCH_TIMEOUT:-120}"     # gpu-bench all --quick (~30 s expected): SIGTERM (partial report) ...
T_GRACE="${GPU_CHECK_GRACE:-20}"              # ... then SIGKILL this much later
T_FALLBACK="${GPU_CHECK_FALLBACK_TIMEOUT:-40}" # gpu-bench gemm, only when `all` left no report
T_COMPARE="${GPU_CHECK_COMPARE_TIMEOUT:-90}"  # PyTorch side, ~20 s expected (no new shape in its last 10 s)

build() {
  local root target bundle glibc
  root="$(cd "$here/.." && pwd)"
  target=x86_64-unknown-linux-gnu
  bundle="$root/target/gpu-check"
  cd "$root" || exit 1
  echo "building gpu-bench (release, $target)..." >&2
  # No target-cpu: the baseline x86-64 binary runs on any x86-64 host.
  cargo build --release -p gpu-bench --target "$target" || exit 1
  rm -rf "$bundle"
  mkdir -p "$bundle"
  cp "target/$target/release/gpu-bench" scripts/gpu_check.py scripts/gpu-check.sh "$bundle/"
  tar -C "$root/target" -czf "$root/target/gpu-check.tar.gz" gpu-check

  # The newest glibc symbol version the binary needs (it links glibc
  # dynamically: dlopen of libcuda/libnccl/libcublasLt rules out a static build).
  glibc=""
  if command -v objdump >/dev/null 2>&1; then
    glibc="$(objdump -T "$bundle/gpu-bench" | grep -oE 'GLIBC_[0-9.]+' | sed 's/GLIBC_//' | sort -V | tail -n1 || true)"
  fi
  glibc="${glibc:-unknown}"
  cat <<MSG

Bundle: $bundle ($(du -sh "$bundle" | cut -f1)), also packed as $root/target/gpu-check.tar.gz
The binary needs glibc $glibc or newer on the GPU machine (this machine: $(getconf GNU_LIBC_VERSION 2>/dev/null || echo unknown)).
It loads libcuda, libnccl and libcublasLt at run time; gpu_check.py links the
ones in PyTorch's pip wheels under the names gpu-bench looks for.

On a device lease (run tool), from the repository root:
  command:   bash scripts/gpu-check.sh run
  carry:     ["target/gpu-check"]
  timeout_s: 420
Elsewhere (Python 3 with PyTorch, no Rust):
  scp $root/target/gpu-check.tar.gz <gpu-host>:
  ssh <gpu-host> 'tar xzf gpu-check.tar.gz && OUT=\$PWD/out bash gpu-check/gpu-check.sh run'
MSG
}

probe() { # probe TITLE CMD... : append the command's output to env.txt, never hang
  echo "## $1" >>"$OUT/env.txt"
  shift
  timeout -k 5 "$T_ENV" "$@" >>"$OUT/env.txt" 2>&1 || echo "(exit status $?)" >>"$OUT/env.txt"
}

run() {
  local bundle bin py ld rc crc report log
  if [ -x "$here/gpu-bench" ]; then
    bundle="$here"                         # an unpacked bundle
  else
    bundle="$(cd "$here/.." && pwd)/target/gpu-check"
  fi
  bin="$bundle/gpu-bench"
  py="$here/gpu_check.py"
  [ -f "$py" ] || py="$bundle/gpu_check.py"
  OUT="${OUT:-$PWD/gpu-check-out}"
  mkdir -p "$OUT"
  export PYTHONUNBUFFERED=1
  local started=$SECONDS

  : >"$OUT/env.txt"
  probe "nvidia-smi" nvidia-smi
  probe "gpu" nvidia-smi --query-gpu=name,driver_version,memory.total,memory.used,clocks.sm,clocks.max.sm,power.draw --format=csv
  probe "glibc" ldd --version
  probe "kernel" uname -a
  probe "libraries in the loader cache" sh -c "ldconfig -p | grep -E 'libcuda\\.|libnccl|libcublasLt' || true"
  probe "python" sh -c "python3 --version; python3 -m pip list 2>/dev/null | grep -iE '^(torch|nvidia-(nccl|cublas))' || true"
  if [ ! -x "$bin" ]; then
    echo "gpu-check: no gpu-bench binary at $bin: run 'scripts/gpu-check.sh build' first and carry target/gpu-check" | tee -a "$OUT/env.txt" >&2
    return 1
  fi
  probe "gpu-bench binary" sh -c "ls -l '$bin'; ldd '$bin'; '$bin' --version"

  echo "# linking pip's NCCL and cuBLASLt (limit ${T_LIBS} s)"
  ld="$(timeout -k 5 "$T_LIBS" python3 "$py" libs --link-dir /tmp/gpu-bench-libs 2>>"$OUT/env.txt")"
  ld="${ld:-${LD_LIBRARY_PATH:-}}"
  echo "## LD_LIBRARY_PATH for gpu-bench: $ld" >>"$OUT/env.txt"

  echo "# gpu-bench all --quick --warmup $WARMUP --iters $ITERS (limit ${T_BENCH} s, then SIGTERM)"
  report="$OUT/report.json"
  log="$OUT/gpu-bench.log"
  timeout -s TERM -k "$T_GRACE" "$T_BENCH" env LD_LIBRARY_PATH="$ld" NCCL_DEBUG="${NCCL_DEBUG:-WARN}" \
    "$bin" all --quick --warmup "$WARMUP" --iters "$ITERS" -o "$report" >"$log" 2>&1
  rc=$?
  echo "# gpu-bench exit status $rc (0 complete, 3 partial, 1 failure, 124/137 killed at the limit)"
  tail -n 25 "$log"

  if [ ! -s "$report" ]; then
    echo "# no report from 'all': GEMMs alone (limit ${T_FALLBACK} s), so PyTorch still has something to compare"
    report="$OUT/report-gemm.json"
    timeout -s TERM -k 10 "$T_FALLBACK" env LD_LIBRARY_PATH="$ld" \
      "$bin" gemm --quick --warmup "$WARMUP" --iters "$ITERS" -o "$report" >"$OUT/gpu-bench-gemm.log" 2>&1
    echo "# gpu-bench gemm exit status $?"
    tail -n 15 "$OUT/gpu-bench-gemm.log"
  fi

  crc=1
  if [ -s "$report" ]; then
    echo "# PyTorch comparison (limit ${T_COMPARE} s)"
    timeout -k 10 "$T_COMPARE" python3 "$py" compare --report "$report" --warmup "$WARMUP" --iters "$ITERS" \
      --deadline "$((T_COMPARE - 10))" --json "$OUT/compare.json" 2>&1 | tee "$OUT/compare.txt"
    crc=${PIPESTATUS[0]}
    echo "# comparison exit status $crc (0 all within tolerance, 5 some outside, 124 killed at the limit)"
  fi
  echo "# gpu-check run took $((SECONDS - started)) s; files in $OUT:"
  ls -l "$OUT"
  if [ "$rc" -eq 0 ] && [ "$crc" -ne 0 ]; then
    return "$crc"
  fi
  return "$rc"
}

case "$mode" in
  build) build ;;
  run) run ;;
  -h | --help | help) sed -n '2,21p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' ;;
  *) echo "usage: $0 [build|run]" >&2; exit 2 ;;
esac
