"""Rows for hkt-bench-gpu's table: the same MHA shapes (D = 512, H = 8,
B = max(1, 16384 // T), float32) through torch.nn.functional.scaled_dot_product_attention.
Run by tools/gpu-check when `import torch` works:  python3 tools/bench_sdpa.py [--max-t T] [--reps N]"""
import argparse
import time

import torch
import torch.nn.functional as F


def best_ms(f, reps):
    f()
    torch.cuda.synchronize()
    best = float("inf")
    for _ in range(reps):
        t0 = time.perf_counter()
        f()
        torch.cuda.synchronize()
        best = min(best, (time.perf_counter() - t0) * 1e3)
    return best


def sdpa_backend(f):
    """Which SDPA kernel PyTorch picked, from the names of the CUDA kernels one call launches.
    For float32 on sm_80 and later that should be the memory-efficient one (CUTLASS,
    3xTF32 mma.sync m16n8k8, as our mma kernels): flash and cuDNN take only 16-bit floats."""
    try:
        from torch.profiler import ProfilerActivity, profile

        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            f()
            torch.cuda.synchronize()
        names = " ".join(e.name for e in prof.events()).lower()
    except Exception as e:  # the table still gets its times
        return f"backend unknown: {type(e).__name__}"
    for key, label in (("flash", "flash"), ("cudnn", "cudnn"), ("fmha", "efficient"), ("efficient", "efficient")):
        if key in names:
            return label
    return "math"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--max-t", type=int, default=16384)
    ap.add_argument("--reps", type=int, default=3)
    a = ap.parse_args()
    H, dh, T = 8, 64, 1024
    while T <= a.max_t:
        B = max(1, 16384 // T)
        q, k, v = (torch.randn(B, H, T, dh, device="cuda", requires_grad=True) for _ in range(3))
        w = torch.randn(B, H, T, dh, device="cuda")

        def fwd():
            with torch.no_grad():
                F.scaled_dot_product_attention(q, k, v)

        def both():
            (F.scaled_dot_product_attention(q, k, v) * w).sum().backward()

        f, fb = best_ms(fwd, a.reps), best_ms(both, a.reps)
        flops = 12.0 * B * H * T * T * dh
        backend = sdpa_backend(fwd)
        print(f"| {T} | {B} | MHA | torch sdpa {torch.__version__} ({backend}) | {f:.2f} | {fb:.2f} | "
              f"{flops / (fb * 1e-3) / 1e12:.1f} TFLOP/s (fwd+bwd, useful) |", flush=True)
        T *= 2


if __name__ == "__main__":
    main()
