#!/usr/bin/env python3
"""Run gpu-bench on a GPU machine and compare its figures with PyTorch's.

Needs: an NVIDIA GPU and driver, Python 3 with PyTorch (CUDA build). No Rust.
Usage (from the bundle gpu-check.sh made):  python3 gpu_check.py [--full] [--gpus N]

1. Makes NCCL and cuBLASLt from PyTorch's pip wheels visible to gpu-bench
   (pip ships libnccl.so.2 only; gpu-bench loads libnccl.so, so a link is made
   in a temporary folder put on LD_LIBRARY_PATH).
2. Runs `gpu-bench all --quick -o report.json` (or the full suite with --full).
3. Times the same GEMM shapes and the same device copy with PyTorch and prints
   gpu-bench's figure over PyTorch's for each.
"""
import argparse
import glob
import json
import os
import site
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))


def library_dirs():
    """Folders of pip's nvidia-* wheels holding libnccl.so.2 and libcublasLt.so.*."""
    roots = list(site.getsitepackages()) + [site.getusersitepackages()] + sys.path
    found = {}
    for root in roots:
        if not root or not os.path.isdir(root):
            continue
        for pattern, key in (("libnccl.so*", "nccl"), ("libcublasLt.so*", "cublasLt")):
            for path in glob.glob(os.path.join(root, "nvidia", "**", pattern), recursive=True):
                found.setdefault(key, path)
    return found


def prepare_env():
    env = dict(os.environ)
    libs = library_dirs()
    link_dir = tempfile.mkdtemp(prefix="gpu-bench-libs-")
    dirs = [link_dir]
    if "nccl" in libs:
        nccl = libs["nccl"]
        os.symlink(nccl, os.path.join(link_dir, "libnccl.so"))
        dirs.append(os.path.dirname(nccl))
        print(f"# NCCL: {nccl} (linked as libnccl.so in {link_dir})")
    else:
        print("# NCCL: no pip wheel found; relying on the system's libnccl.so")
    if "cublasLt" in libs:
        dirs.append(os.path.dirname(libs["cublasLt"]))
        print(f"# cuBLASLt: {libs['cublasLt']}")
    env["LD_LIBRARY_PATH"] = ":".join(dirs + [p for p in env.get("LD_LIBRARY_PATH", "").split(":") if p])
    return env


def time_cuda(torch, fn, warmup, iters):
    for _ in range(warmup):
        fn()
    start = torch.cuda.Event(enable_timing=True)
    end = torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(iters):
        fn()
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end) * 1e3 / iters  # microseconds


def torch_gemm_tflops(torch, m, n, k, dtype, warmup=5, iters=20):
    dev = "cuda"
    if dtype == "fp8_e4m3":
        if not hasattr(torch, "_scaled_mm"):
            return None, "this PyTorch has no torch._scaled_mm"
        a = torch.randn(m, k, device=dev).to(torch.float8_e4m3fn)
        # _scaled_mm wants B column-major: the transpose of a contiguous n×k matrix.
        b = torch.randn(n, k, device=dev).to(torch.float8_e4m3fn).t()
        one = torch.tensor(1.0, device=dev)

        def fn():
            r = torch._scaled_mm(a, b, scale_a=one, scale_b=one, out_dtype=torch.bfloat16)
            return r[0] if isinstance(r, tuple) else r
    else:
        t = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}[dtype]
        a = torch.randn(m, k, device=dev, dtype=t)
        b = torch.randn(k, n, device=dev, dtype=t)

        def fn():
            return a @ b
    try:
        us = time_cuda(torch, fn, warmup, iters)
    except RuntimeError as e:  # unsupported type on this GPU, out of memory
        return None, str(e).splitlines()[0]
    return 2.0 * m * n * k / (us * 1e-6) / 1e12, None


def torch_copy_gb_per_s(torch, traffic_bytes, warmup=5, iters=20):
    n = traffic_bytes // 2
    src = torch.ones(n, dtype=torch.uint8, device="cuda")
    dst = torch.empty_like(src)
    us = time_cuda(torch, lambda: dst.copy_(src), warmup, iters)
    return traffic_bytes / (us * 1e-6) / 1e9


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--full", action="store_true", help="full suite instead of --quick")
    ap.add_argument("--gpus", type=int, default=None, help="GPUs gpu-bench drives (default: all visible)")
    ap.add_argument("--bench", default=os.path.join(HERE, "gpu-bench"), help="path of the gpu-bench binary")
    ap.add_argument("-o", "--output", default="report.json")
    args = ap.parse_args()

    try:
        import torch
    except ImportError:
        sys.exit("gpu_check.py needs PyTorch with CUDA: pip install torch")
    if not torch.cuda.is_available():
        sys.exit("PyTorch sees no CUDA GPU (check nvidia-smi and CUDA_VISIBLE_DEVICES)")

    visible = torch.cuda.device_count()
    gpus = args.gpus or visible
    env = prepare_env()
    cmd = [args.bench, "all", "-o", args.output, "--gpus", str(gpus)]
    if not args.full:
        cmd.insert(2, "--quick")
    print("# running:", " ".join(cmd))
    rc = subprocess.call(cmd, env=env)
    print(f"# gpu-bench exit status {rc} (0 complete, 3 partial, 1 failure)")
    if rc not in (0, 3) or not os.path.exists(args.output):
        sys.exit(rc or 1)
    with open(args.output) as f:
        report = json.load(f)

    print()
    if report["environment"]["ranks"] == 1:
        print("# One GPU: collectives ran at world size 1 only; they move no data between GPUs,")
        print("# so busbw is 0 and nothing about NVLink/InfiniBand was measured.")
    else:
        print(f"# Collectives over {report['environment']['ranks']} GPUs (best busbw per op, GB/s;"
              " compare with nccl-tests, PyTorch is not used for these):")
        best = {}
        for row in report["collectives"]:
            key = (row["group"], row["op"], row["dtype"])
            best[key] = max(best.get(key, 0.0), row["busbw_gb_per_s"])
        for (group, op, dtype), bw in sorted(best.items()):
            print(f"  {group:6} {op:15} {dtype:5} {bw:9.1f}")
        wrong = sum(r["wrong"] for r in report["collectives"])
        print(f"# wrong elements in all collectives: {wrong}")

    print()
    print(f"{'what':58} {'gpu-bench':>10} {'PyTorch':>10} {'ratio':>6}")
    torch.cuda.set_device(0)
    for g in report["gemms"]:
        what = f"gemm {g['dtype']} {g['m']}x{g['n']}x{g['k']} {g['label']}"
        tf, err = torch_gemm_tflops(torch, g["m"], g["n"], g["k"], g["dtype"])
        if tf is None:
            print(f"{what:58} {g['tflops']:10.1f} {'n/a':>10}        ({err})")
        else:
            print(f"{what:58} {g['tflops']:10.1f} {tf:10.1f} {g['tflops'] / tf:6.2f}  TFLOP/s")
    for mb in report["memory_bandwidth"]:
        bw = torch_copy_gb_per_s(torch, mb["bytes"])
        print(f"{mb['label']:58} {mb['gb_per_s']:10.1f} {bw:10.1f} {mb['gb_per_s'] / bw:6.2f}  GB/s")
    for s in report["layer_steps"]:
        print(f"# {s['kind']} {s['label']}: sequential {s['sequential_us']:.0f} us, overlapped "
              f"{s['overlapped_us']:.0f} us, exposed comm {s['exposed_comm_us']:.0f} us, "
              f"peak {s['peak_memory_bytes'] / 1e9:.1f} GB")
    for n in report["notes"]:
        print(f"# note [{n['level']}] {n['section']}: {n['subject']}: {n['message']}")
    print(f"# report: {os.path.abspath(args.output)} (complete: {report['complete']})")
    sys.exit(rc)


if __name__ == "__main__":
    main()
