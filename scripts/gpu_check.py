#!/usr/bin/env python3
"""Run gpu-bench on a GPU machine and compare its figures with PyTorch's.

Needs: an NVIDIA GPU and driver, Python 3 with PyTorch (CUDA build). No Rust.

  python3 gpu_check.py [all] [--full] [--gpus N] [--out DIR] [--warmup W] [--iters I]
      run `gpu-bench all --quick` (the full suite with --full) under a time
      limit, then compare (the manual path; gpu-check.sh `run` does the same
      step by step, each under its own limit)
  python3 gpu_check.py libs --link-dir DIR
      find NCCL and cuBLASLt in PyTorch's pip wheels (the ones PyTorch itself
      uses; NCCL from the loader cache if no wheel has it), link them in DIR
      under the names gpu-bench loads (both ship libnccl.so.2 only), and print
      the LD_LIBRARY_PATH to run gpu-bench with
  python3 gpu_check.py compare --report report.json [--warmup W] [--iters I] [--json OUT]
      time the report's GEMM shapes and device copy with PyTorch, the same way
      gpu-bench does, and print gpu-bench's figure over PyTorch's for each
  python3 gpu_check.py selftest
      check this script's own logic (no GPU, no PyTorch needed)

How the two sides are made comparable (gpu-bench/src/gemm.rs does the same):
  - the same shapes, in the same order, with the same warm-up and timed
    iteration counts (pass the same --warmup/--iters to both);
  - CUDA events around the timed loop on one stream, mean time per call;
  - the same layout: Y[m,n] = X[m,k] @ W[n,k].T ("TN" for cuBLAS), the
    layout FP8 requires; FP8 is E4M3 in, BF16 out, unit scales;
  - standard-normal operands (tensor cores clock higher on zeros or small
    integers, so the data must match too), FP32 without TF32;
  - 300 ms of untimed 4096^3 GEMMs first, so neither starts at idle clocks.
"""
import argparse
import glob
import importlib.util
import json
import os
import signal
import site
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
STARTED = time.monotonic()  # --deadline counts from here, `import torch` included

# gpu-bench's exit statuses (gpu-bench/src/lib.rs).
EXIT_SUCCESS, EXIT_FAILURE, EXIT_USAGE, EXIT_PARTIAL = 0, 1, 2, 3
# This script's status when some comparison is outside the tolerance.
EXIT_OUTSIDE_TOLERANCE = 5
SPIN_UP_SIZE = 4096  # gpu-bench/src/gemm.rs SPIN_UP_SIZE
SPIN_UP_MS = 300  # gpu-bench/src/suite.rs GEMM_SPIN_UP_MS


def log(msg):
    print(msg, file=sys.stderr, flush=True)


# ---------------------------------------------------------------- libraries

def search_roots():
    """Folders that may hold pip's nvidia-* wheels: torch's own site-packages first."""
    roots = []
    try:
        spec = importlib.util.find_spec("torch")
    except (ImportError, ValueError):  # ValueError: a torch module without a spec is loaded
        spec = None
    if spec is not None and spec.origin:
        roots.append(os.path.dirname(os.path.dirname(spec.origin)))
    roots += list(site.getsitepackages()) + [site.getusersitepackages()] + sys.path
    seen, out = set(), []
    for r in roots:
        if r and os.path.isdir(r) and os.path.realpath(r) not in seen:
            seen.add(os.path.realpath(r))
            out.append(r)
    return out


def find_wheel_libs(roots):
    """{'nccl': path of libnccl.so.N, 'cublasLt': path of libcublasLt.so.N} from nvidia/* wheels."""
    found = {}
    for root in roots:
        for pattern, key in (("libnccl.so.*", "nccl"), ("libcublasLt.so.*", "cublasLt")):
            if key in found:
                continue
            hits = sorted(glob.glob(os.path.join(root, "nvidia", "**", pattern), recursive=True))
            # The shortest name is the SONAME link (libnccl.so.2, libcublasLt.so.13).
            hits = [h for h in hits if os.path.isfile(h)]
            if hits:
                found[key] = min(hits, key=len)
    return found


def parse_ldconfig(text, soname):
    """Path of `soname` (e.g. libnccl.so.2) in `ldconfig -p` output, x86-64 entries first."""
    hits = []
    for line in text.splitlines():
        line = line.strip()
        if line.startswith(soname + " ") and "=>" in line:
            hits.append((0 if "x86-64" in line else 1, line.split("=>", 1)[1].strip()))
    return min(hits)[1] if hits else None


def find_system_nccl():
    """The system's libnccl.so.2 (e.g. the libnccl2 package), which gpu-bench
    cannot load under that name either."""
    try:
        text = subprocess.run(["ldconfig", "-p"], capture_output=True, text=True, timeout=10).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    return parse_ldconfig(text, "libnccl.so.2")


def link_libs(found, link_dir):
    """Links each found library in link_dir under the unversioned name gpu-bench
    (cudarc) tries first. Only these links go on LD_LIBRARY_PATH, not the wheel
    folders: a folder holding a libcuda.so stub would shadow the driver."""
    os.makedirs(link_dir, exist_ok=True)
    names = {"nccl": "libnccl.so", "cublasLt": "libcublasLt.so"}
    made = {}
    for key, path in found.items():
        link = os.path.join(link_dir, names[key])
        if os.path.lexists(link):
            os.remove(link)
        os.symlink(os.path.realpath(path), link)
        made[key] = link
    return made


def library_path(link_dir, existing):
    return ":".join([link_dir] + [p for p in (existing or "").split(":") if p and p != link_dir])


def prepare_env(link_dir=None):
    """The environment to run gpu-bench in, and a description of what was linked."""
    link_dir = link_dir or tempfile.mkdtemp(prefix="gpu-bench-libs-")
    found = find_wheel_libs(search_roots())
    if "nccl" not in found:
        system = find_system_nccl()
        if system:
            found["nccl"] = system
    link_libs(found, link_dir)
    for key in ("nccl", "cublasLt"):
        if key in found:
            log(f"# {key}: {found[key]} (linked in {link_dir})")
        else:
            log(f"# {key}: not found in pip wheels; gpu-bench will look for the system's")
    env = dict(os.environ)
    env["LD_LIBRARY_PATH"] = library_path(link_dir, env.get("LD_LIBRARY_PATH"))
    return env


# ---------------------------------------------------------------- gpu-bench

def bench_command(bench, output, full, gpus, warmup, iters):
    cmd = [bench, "all"]
    if not full:
        cmd.append("--quick")
    cmd += ["-o", output, "--warmup", str(warmup), "--iters", str(iters)]
    if gpus:
        cmd += ["--gpus", str(gpus)]
    return cmd


def run_bench(cmd, env, timeout_s, grace_s=30):
    """Runs gpu-bench; at the time limit sends SIGTERM (gpu-bench then stops
    after the current measurement and writes a partial report, status 3) and
    kills it grace_s later. Returns the exit status (124 if it had to be killed)."""
    log("# running: " + " ".join(cmd))
    proc = subprocess.Popen(cmd, env=env)
    try:
        return proc.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        log(f"# gpu-bench still running after {timeout_s} s: SIGTERM (a partial report follows)")
        proc.send_signal(signal.SIGTERM)
        try:
            return proc.wait(timeout=grace_s)
        except subprocess.TimeoutExpired:
            log(f"# gpu-bench did not stop within {grace_s} s: killed, no report")
            proc.kill()
            proc.wait()
            return 124


# ---------------------------------------------------------------- comparison

def ratio_row(what, unit, bench_value, torch_value, tolerance, note=None):
    """One comparison: gpu-bench's figure over PyTorch's and whether it is within tolerance."""
    row = {"what": what, "unit": unit, "gpu_bench": bench_value, "torch": torch_value,
           "ratio": None, "within_tolerance": None, "note": note}
    if torch_value and torch_value > 0 and bench_value is not None:
        row["ratio"] = bench_value / torch_value
        # The epsilon keeps a ratio of exactly 1 ± tolerance inside despite rounding.
        row["within_tolerance"] = abs(row["ratio"] - 1.0) <= tolerance + 1e-9
    return row


def format_row(row):
    torch_text = "n/a" if row["torch"] is None else f"{row['torch']:10.1f}"
    ratio_text = "" if row["ratio"] is None else f"{row['ratio']:6.3f}"
    flag = {True: "ok", False: "OUTSIDE", None: ""}[row["within_tolerance"]]
    note = f"  ({row['note']})" if row["note"] else ""
    return f"{row['what']:60} {row['gpu_bench']:10.1f} {torch_text:>10} {ratio_text:>6} {flag:7} {row['unit']}{note}"


def time_cuda(torch, fn, warmup, iters):
    """Mean µs per call: warm-up calls, then CUDA events around `iters` calls on the current stream."""
    for _ in range(warmup):
        fn()
    start = torch.cuda.Event(enable_timing=True)
    end = torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(max(iters, 1)):
        fn()
    end.record()
    end.synchronize()
    return start.elapsed_time(end) * 1e3 / max(iters, 1)


def gemm_fn(torch, m, n, k, dtype):
    """A callable computing X[m,k] @ W[n,k].T on standard-normal data, as gpu-bench does."""
    dev = "cuda"
    if dtype == "fp8_e4m3":
        if not hasattr(torch, "_scaled_mm"):
            raise RuntimeError("this PyTorch has no torch._scaled_mm")
        x = torch.randn(m, k, device=dev).to(torch.float8_e4m3fn)
        w = torch.randn(n, k, device=dev).to(torch.float8_e4m3fn)
        one = torch.tensor(1.0, device=dev)
        wt = w.t()  # column-major k×n, as _scaled_mm wants its second operand

        def fn():
            r = torch._scaled_mm(x, wt, scale_a=one, scale_b=one, out_dtype=torch.bfloat16)
            return r[0] if isinstance(r, tuple) else r
        return fn
    t = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}[dtype]
    x = torch.randn(m, k, device=dev, dtype=t)
    w = torch.randn(n, k, device=dev, dtype=t)
    wt = w.t()
    return lambda: torch.mm(x, wt)


def copy_fn(torch, n):
    """A device-to-device copy of n bytes (gpu-bench: cuMemcpyDtoDAsync of n bytes)."""
    src = torch.ones(n, dtype=torch.uint8, device="cuda")
    dst = torch.empty_like(src)
    return lambda: dst.copy_(src)


def spin_up(torch, millis=SPIN_UP_MS):
    fn = gemm_fn(torch, SPIN_UP_SIZE, SPIN_UP_SIZE, SPIN_UP_SIZE, "bf16")
    t0 = time.monotonic()
    while (time.monotonic() - t0) * 1e3 < millis:
        for _ in range(8):
            fn()
        torch.cuda.synchronize()


def compare(report, warmup, iters, tolerance, deadline_s, started):
    """Times the report's GEMMs and copies with PyTorch; returns the rows."""
    import torch
    if not torch.cuda.is_available():
        raise SystemExit("PyTorch sees no CUDA GPU (check nvidia-smi and CUDA_VISIBLE_DEVICES)")
    torch.backends.cuda.matmul.allow_tf32 = False  # gpu-bench's FP32 GEMMs use no TF32
    torch.cuda.set_device(0)
    log(f"# PyTorch {torch.__version__}, CUDA {torch.version.cuda}, {torch.cuda.get_device_name(0)}; "
        f"warm-up {warmup}, timed {iters}, tolerance ±{tolerance:.0%}")
    rows = []
    print(f"{'what':60} {'gpu-bench':>10} {'PyTorch':>10} {'ratio':>6}", flush=True)
    if report.get("gemms"):
        spin_up(torch)
    for g in report.get("gemms", []):
        what = f"gemm {g['dtype']} {g['m']}x{g['n']}x{g['k']} {g['label']}"
        if time.monotonic() - started > deadline_s:
            rows.append(ratio_row(what, "TFLOP/s", g["tflops"], None, tolerance, "not timed: deadline"))
            print(format_row(rows[-1]), flush=True)
            continue
        try:
            fn = gemm_fn(torch, g["m"], g["n"], g["k"], g["dtype"])
            us = time_cuda(torch, fn, warmup, iters)
            tf = 2.0 * g["m"] * g["n"] * g["k"] / (us * 1e-6) / 1e12
            rows.append(ratio_row(what, "TFLOP/s", g["tflops"], tf, tolerance))
        except (RuntimeError, TypeError) as e:  # unsupported type on this GPU, out of memory
            rows.append(ratio_row(what, "TFLOP/s", g["tflops"], None, tolerance, str(e).splitlines()[0]))
        print(format_row(rows[-1]), flush=True)
        fn = None
        torch.cuda.empty_cache()
    for mb in report.get("memory_bandwidth", []):
        # mb["bytes"] counts the read and the write: the buffers are half of it.
        fn = copy_fn(torch, mb["bytes"] // 2)
        us = time_cuda(torch, fn, warmup, iters)
        rows.append(ratio_row(mb["label"], "GB/s", mb["gb_per_s"], mb["bytes"] / (us * 1e-6) / 1e9, tolerance))
        print(format_row(rows[-1]), flush=True)
        fn = None
    return rows


def summarize(report, rows, tolerance):
    lines = []
    env = report["environment"]
    if env["ranks"] == 1:
        lines.append("# One GPU: collectives ran at world size 1 only; they move no data between GPUs,")
        lines.append("# so busbw is 0 and nothing about NVLink/InfiniBand was measured.")
    else:
        lines.append(f"# Collectives over {env['ranks']} GPUs (best busbw per op, GB/s; compare with nccl-tests):")
        best = {}
        for row in report["collectives"]:
            key = (row["group"], row["op"], row["dtype"])
            best[key] = max(best.get(key, 0.0), row["busbw_gb_per_s"])
        for (group, op, dtype), bw in sorted(best.items()):
            lines.append(f"  {group:6} {op:15} {dtype:5} {bw:9.1f}")
    wrong = sum(r["wrong"] for r in report["collectives"])
    lines.append(f"# collective rows: {len(report['collectives'])}, wrong elements: {wrong}")
    for s in report.get("layer_steps", []):
        lines.append(f"# {s['kind']} {s['label']}: compute {s['compute_us']:.0f} us, comm {s['comm_us']:.0f} us, "
                     f"sequential {s['sequential_us']:.0f} us, overlapped {s['overlapped_us']:.0f} us, "
                     f"exposed comm {s['exposed_comm_us']:.0f} us, peak {s['peak_memory_bytes'] / 1e9:.1f} GB")
    for n in report.get("notes", []):
        lines.append(f"# note [{n['level']}] {n['section']}: {n['subject']}: {n['message']}")
    compared = [r for r in rows if r["within_tolerance"] is not None]
    outside = [r for r in compared if not r["within_tolerance"]]
    lines.append(f"# compared {len(compared)} of {len(rows)} figures with PyTorch: "
                 f"{len(compared) - len(outside)} within ±{tolerance:.0%}, {len(outside)} outside")
    return lines, outside


def write_json(path, obj):
    if path:
        with open(path, "w") as f:
            json.dump(obj, f, indent=2)
            f.write("\n")


def do_compare(report_path, warmup, iters, tolerance, deadline_s, json_path, started=None):
    with open(report_path) as f:
        report = json.load(f)
    rows = compare(report, warmup, iters, tolerance, deadline_s, STARTED if started is None else started)
    lines, outside = summarize(report, rows, tolerance)
    print("\n".join(lines), flush=True)
    write_json(json_path, {"report": os.path.abspath(report_path), "complete": report.get("complete"),
                           "warmup": warmup, "iters": iters, "tolerance": tolerance, "rows": rows})
    return EXIT_OUTSIDE_TOLERANCE if outside else 0


# ---------------------------------------------------------------- self-test

def selftest():
    """Checks the logic above that needs neither a GPU nor PyTorch."""
    with tempfile.TemporaryDirectory() as tmp:
        # A fake site-packages laid out like the CUDA 12 and CUDA 13 wheels.
        site_dir = os.path.join(tmp, "site-packages")
        for rel in ("nvidia/nccl/lib/libnccl.so.2", "nvidia/cu13/lib/libcublasLt.so.13",
                    "nvidia/cu13/lib/libcublasLt.so.13.0.2.14", "nvidia/cu13/lib/libcuda.so"):
            path = os.path.join(site_dir, rel)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            open(path, "w").close()
        found = find_wheel_libs([site_dir])
        assert found["nccl"].endswith("nvidia/nccl/lib/libnccl.so.2"), found
        assert found["cublasLt"].endswith("libcublasLt.so.13"), found
        link_dir = os.path.join(tmp, "links")
        made = link_libs(found, link_dir)
        assert sorted(os.listdir(link_dir)) == ["libcublasLt.so", "libnccl.so"], os.listdir(link_dir)
        assert os.path.realpath(made["nccl"]) == os.path.realpath(found["nccl"])
        link_libs(found, link_dir)  # again: links are replaced, not an error
        # Only the link folder goes on the path (never the wheel folder with its libcuda.so stub).
        assert library_path(link_dir, "/a::/b") == f"{link_dir}:/a:/b"
        assert library_path(link_dir, None) == link_dir
        assert find_wheel_libs([os.path.join(tmp, "nothing")]) == {}
    ldconfig = ("\t2 libs found in cache `/etc/ld.so.cache'\n"
                "\tlibnccl.so.2 (libc6) => /usr/lib/i386-linux-gnu/libnccl.so.2\n"
                "\tlibnccl.so.2 (libc6,x86-64) => /usr/lib/x86_64-linux-gnu/libnccl.so.2\n"
                "\tlibnccl-net.so (libc6,x86-64) => /usr/lib/x86_64-linux-gnu/libnccl-net.so\n")
    assert parse_ldconfig(ldconfig, "libnccl.so.2") == "/usr/lib/x86_64-linux-gnu/libnccl.so.2"
    assert parse_ldconfig(ldconfig, "libcublasLt.so.13") is None
    cmd = bench_command("./gpu-bench", "out/report.json", False, None, 5, 20)
    assert cmd == ["./gpu-bench", "all", "--quick", "-o", "out/report.json", "--warmup", "5", "--iters", "20"], cmd
    assert bench_command("b", "r.json", True, 2, 1, 2)[1:3] == ["all", "-o"]
    assert "--gpus" in bench_command("b", "r.json", True, 2, 1, 2)
    r = ratio_row("x", "TFLOP/s", 103.0, 100.0, 0.03)
    assert abs(r["ratio"] - 1.03) < 1e-12 and r["within_tolerance"]
    assert not ratio_row("x", "TFLOP/s", 96.9, 100.0, 0.03)["within_tolerance"]
    assert ratio_row("x", "GB/s", 1.0, None, 0.03)["within_tolerance"] is None
    assert "OUTSIDE" in format_row(ratio_row("x", "TFLOP/s", 50.0, 100.0, 0.03))
    assert "n/a" in format_row(ratio_row("x", "TFLOP/s", 50.0, None, 0.03, "no fp8"))
    report = {"environment": {"ranks": 1}, "collectives": [], "layer_steps": [], "notes": []}
    lines, outside = summarize(report, [r, ratio_row("y", "GB/s", 1.0, 2.0, 0.03)], 0.03)
    assert len(outside) == 1 and "1 within" in lines[-1], lines
    # The PyTorch side against a stand-in module, so a slip in it shows here and not on the GPU.
    with tempfile.TemporaryDirectory() as tmp:
        report = {
            "environment": {"ranks": 1}, "collectives": [], "layer_steps": [], "notes": [],
            "complete": True,
            "gemms": [{"m": 64, "n": 32, "k": 16, "dtype": d, "label": "square", "time_us": 1.0, "tflops": 1.0}
                      for d in ("bf16", "fp16", "fp32", "fp8_e4m3")],
            "memory_bandwidth": [{"label": "d2d copy", "bytes": 2048, "time_us": 1.0, "gb_per_s": 1.0}],
        }
        report_path = os.path.join(tmp, "report.json")
        write_json(report_path, report)
        fake = _FakeTorch()
        saved = sys.modules.get("torch")
        sys.modules["torch"] = fake
        try:
            out_json = os.path.join(tmp, "compare.json")
            rc = do_compare(report_path, 2, 3, 0.03, 60.0, out_json)
        finally:
            if saved is None:
                del sys.modules["torch"]
            else:
                sys.modules["torch"] = saved
        with open(out_json) as f:
            got = json.load(f)
        assert rc in (0, EXIT_OUTSIDE_TOLERANCE)
        assert [r["unit"] for r in got["rows"]] == ["TFLOP/s"] * 4 + ["GB/s"], got
        assert all(r["torch"] and r["torch"] > 0 for r in got["rows"]), got
        # Same shapes, same layout: X[m,k] @ W[n,k].T, FP8 through _scaled_mm with a BF16 output.
        assert ("mm", (64, 16), (16, 32)) in fake.calls, fake.calls
        assert ("_scaled_mm", (64, 16), (16, 32), "bfloat16") in fake.calls, fake.calls
        assert ("copy_", 1024) in fake.calls, fake.calls
        assert fake.calls.count(("mm", (64, 16), (16, 32))) == 3 * (2 + 3), "warm-up + timed, per dtype"
        assert fake.backends.cuda.matmul.allow_tf32 is False
    # The `all` path against a stand-in gpu-bench: once finishing, once stopped
    # at its time limit with SIGTERM (it then writes a partial report, status 3).
    with tempfile.TemporaryDirectory() as tmp:
        fake_bench = os.path.join(tmp, "gpu-bench")
        with open(fake_bench, "w") as f:
            f.write(_FAKE_BENCH.replace("REPORT", json.dumps(json.dumps(report))))
        os.chmod(fake_bench, 0o755)
        saved = sys.modules.get("torch")
        sys.modules["torch"] = _FakeTorch()
        try:
            out = os.path.join(tmp, "done")
            rc = main(["all", "--bench", fake_bench, "--out", out, "--warmup", "1", "--iters", "1"])
            assert rc in (0, EXIT_OUTSIDE_TOLERANCE), rc
            assert os.path.exists(os.path.join(out, "compare.json"))
            out = os.path.join(tmp, "slow")
            os.environ["FAKE_BENCH_SLEEP"] = "30"
            t = time.monotonic()
            rc = main(["all", "--bench", fake_bench, "--out", out, "--bench-timeout", "1"])
            assert rc == EXIT_PARTIAL, rc
            assert time.monotonic() - t < 20, "SIGTERM stopped it"
            with open(os.path.join(out, "report.json")) as f:
                assert json.load(f)["complete"] is False
        finally:
            os.environ.pop("FAKE_BENCH_SLEEP", None)
            if saved is None:
                del sys.modules["torch"]
            else:
                sys.modules["torch"] = saved
    args = parse_args(["compare", "--report", "r.json"])
    assert (args.command, args.warmup, args.iters, args.tolerance) == ("compare", 5, 20, 0.03)
    assert parse_args([]).command == "all"
    assert parse_args(["--full", "--gpus", "2"]).gpus == 2
    assert parse_args(["libs", "--link-dir", "/tmp/x"]).link_dir == "/tmp/x"
    print("gpu_check.py selftest: ok")
    return 0


_FAKE_BENCH = """#!/usr/bin/env python3
import json, os, signal, sys, time
args = sys.argv[1:]
out = args[args.index("-o") + 1]
assert args[0] == "all" and "--warmup" in args and "--iters" in args, args
report = json.loads(REPORT)
def stop(*_):
    report["complete"] = False
    json.dump(report, open(out, "w"))
    sys.exit(3)
signal.signal(signal.SIGTERM, stop)
time.sleep(float(os.environ.get("FAKE_BENCH_SLEEP", "0")))
json.dump(report, open(out, "w"))
"""


class _FakeTorch:
    """Just enough of `torch` for compare() to run without a GPU (selftest only)."""

    class _NS:
        pass

    class _T:
        def __init__(self, torch, shape, dtype):
            self.torch, self.shape, self.dtype = torch, tuple(shape), dtype

        def to(self, dtype):
            return _FakeTorch._T(self.torch, self.shape, dtype)

        def t(self):
            return _FakeTorch._T(self.torch, self.shape[::-1], self.dtype)

        def copy_(self, src):
            self.torch.calls.append(("copy_", src.shape[0]))
            return self

    class _Event:
        def __init__(self, enable_timing=False):
            assert enable_timing
            self.t = None

        def record(self):
            self.t = time.perf_counter()

        def synchronize(self):
            pass

        def elapsed_time(self, end):
            return max((end.t - self.t) * 1e3, 1e-3)

    def __init__(self):
        self.calls = []
        self.__version__ = "fake"
        for name in ("bfloat16", "float16", "float32", "float8_e4m3fn", "uint8"):
            setattr(self, name, name)
        self.version = self._NS()
        self.version.cuda = "fake"
        self.backends = self._NS()
        self.backends.cuda = self._NS()
        self.backends.cuda.matmul = self._NS()
        self.backends.cuda.matmul.allow_tf32 = True
        cuda = self._NS()
        cuda.is_available = lambda: True
        cuda.set_device = lambda i: None
        cuda.get_device_name = lambda i: "fake GPU"
        cuda.synchronize = lambda: None
        cuda.empty_cache = lambda: None
        cuda.Event = self._Event
        self.cuda = cuda

    def randn(self, *shape, device=None, dtype="float32"):
        assert device == "cuda"
        return self._T(self, shape, dtype)

    def tensor(self, value, device=None):
        return self._T(self, (), "float32")

    def ones(self, n, dtype=None, device=None):
        return self._T(self, (n,), dtype)

    def empty_like(self, t):
        return self._T(self, t.shape, t.dtype)

    def mm(self, a, b):
        assert a.shape[1] == b.shape[0] and a.dtype == b.dtype
        self.calls.append(("mm", a.shape, b.shape))
        return self._T(self, (a.shape[0], b.shape[1]), a.dtype)

    def _scaled_mm(self, a, b, scale_a=None, scale_b=None, out_dtype=None):
        assert a.dtype == b.dtype == "float8_e4m3fn" and scale_a is not None and scale_b is not None
        self.calls.append(("_scaled_mm", a.shape, b.shape, out_dtype))
        return self._T(self, (a.shape[0], b.shape[1]), out_dtype)


# ---------------------------------------------------------------- main

def parse_args(argv):
    commands = ("all", "libs", "compare", "selftest")
    if not argv or argv[0] not in commands + ("-h", "--help"):
        argv = ["all"] + list(argv)
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="command", required=True)

    def timing(p):
        p.add_argument("--warmup", type=int, default=5, help="warm-up calls per measurement, both sides (default 5)")
        p.add_argument("--iters", type=int, default=20, help="timed calls per measurement, both sides (default 20)")
        p.add_argument("--tolerance", type=float, default=0.03, help="accepted |ratio - 1| (default 0.03)")
        p.add_argument("--deadline", type=float, default=90.0,
                       help="seconds after this script started past which no further PyTorch "
                            "measurement starts (default 90)")

    a = sub.add_parser("all", help="run gpu-bench, then compare (default)")
    a.add_argument("--full", action="store_true", help="full suite instead of --quick")
    a.add_argument("--gpus", type=int, default=None, help="GPUs gpu-bench drives (default: all visible)")
    a.add_argument("--bench", default=os.path.join(HERE, "gpu-bench"), help="path of the gpu-bench binary")
    a.add_argument("--out", default=os.environ.get("OUT") or ".", help="folder for report.json and compare.json")
    a.add_argument("--bench-timeout", type=float, default=240.0,
                   help="seconds before gpu-bench is asked to stop (SIGTERM; default 240)")
    timing(a)
    li = sub.add_parser("libs", help="link pip's NCCL/cuBLASLt and print LD_LIBRARY_PATH")
    li.add_argument("--link-dir", required=True)
    c = sub.add_parser("compare", help="time a report's GEMMs and copies with PyTorch")
    c.add_argument("--report", required=True)
    c.add_argument("--json", default=None, help="also write the comparison here")
    timing(c)
    sub.add_parser("selftest", help="check this script's logic (no GPU needed)")
    return ap.parse_args(argv)


def main(argv):
    args = parse_args(argv)
    if args.command == "selftest":
        return selftest()
    if args.command == "libs":
        env = prepare_env(args.link_dir)
        print(env["LD_LIBRARY_PATH"])
        return 0
    if args.command == "compare":
        return do_compare(args.report, args.warmup, args.iters, args.tolerance, args.deadline, args.json)
    os.makedirs(args.out, exist_ok=True)
    report_path = os.path.join(args.out, "report.json")
    env = prepare_env()
    cmd = bench_command(args.bench, report_path, args.full, args.gpus, args.warmup, args.iters)
    rc = run_bench(cmd, env, args.bench_timeout)
    log(f"# gpu-bench exit status {rc} (0 complete, 3 partial, 1 failure, 124 killed)")
    if rc not in (EXIT_SUCCESS, EXIT_PARTIAL) or not os.path.exists(report_path):
        return rc or EXIT_FAILURE
    crc = do_compare(report_path, args.warmup, args.iters, args.tolerance, args.deadline,
                     os.path.join(args.out, "compare.json"), started=time.monotonic())
    log(f"# report: {os.path.abspath(report_path)}")
    return rc or crc


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
