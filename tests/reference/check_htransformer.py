#!/usr/bin/env python3
"""hkt's htransformer_attention against tests/reference/h1d_published.py, the
NumPy reference of H-Transformer-1D written from the authors' code
(google/flaxformer, architectures/h_transformer), which shares no code with hkt.

    check_htransformer.py DIR    DIR holds cases.txt and the .safetensors files
                                 hkt-reference-htransformer wrote

hkt's own contract on top of the published algorithm (ops/include/hkt/ops/
htransformer.hpp) is applied here, written again from that header: the op pads
the sequence with masked tokens to Tp (T <= 2 Nr: T rounded up to even, at
least 2; otherwise Nr 2^ceil(log2(ceil(T / Nr)))) and slices the pad off, and
its bias table [H, 4 Nr - 1] is indexed by the signed coarse distance d as
d + 2 Nr - 1 (so when the published geometry clamps Nr to Nr' = Tp / 2, the
reference gets the middle 4 Nr' - 1 entries).

Compares the output (float64 to 1e-10 of its largest value, float32 to 2e-5)
and, for float64 cases, the gradient of sum(output * r) with respect to q, k,
v and the bias along a random direction U against the central difference of
the reference's forward (h = 1e-5, to 1e-6).  Exit status: 0 when every case
matches, 1 otherwise.
"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from check import read_safetensors  # noqa: E402  (the safetensors parser, NumPy only)
import h1d_published as ref  # noqa: E402


def padded_length(T, Nr):
    if T <= 2 * Nr:
        return max(2, T + (T % 2))
    Tp = 2 * Nr
    while Tp < T:
        Tp *= 2
    return Tp


def attention(q, k, v, valid, bias, causal, scale, Nr):
    """hkt's op, from the published reference: pad, map the bias, slice."""
    B, H, T, _ = q.shape
    Tp = padded_length(T, Nr)
    if Tp != T or valid is not None:
        vm = np.zeros((B, Tp))
        vm[:, :T] = 1.0 if valid is None else valid
        pad = lambda x: np.concatenate([x, np.zeros(x.shape[:2] + (Tp - T, x.shape[3]))], axis=2)  # noqa: E731
        q, k, v = pad(q), pad(k), pad(v)
    else:
        vm = None
    nr, _ = ref.geometry(Tp, Nr)
    table = None
    if bias is not None:
        c = 2 * Nr - 1
        table = bias[:, c - (2 * nr - 1):c + 2 * nr]
    y = ref.h1d_attention(q, k, v, Nr, causal, vm, table, scale)
    return y[:, :, :T]


def check_case(path):
    t, meta = read_safetensors(path)
    Nr, causal, scale = int(meta["block"]), meta["causal"] == "true", float(meta["scale"])
    q, k, v = (t["input." + n].astype(np.float64) for n in "qkv")
    valid = t.get("input.valid")
    bias = t["input.bias"].astype(np.float64) if "input.bias" in t else None
    f = lambda q_, k_, v_, b_: attention(q_, k_, v_, valid, b_, causal, scale, Nr)  # noqa: E731
    y = f(q, k, v, bias)
    got = t["output"].astype(np.float64)
    f64 = t["output"].dtype == np.float64
    tol = 1e-10 if f64 else 2e-5
    errs = []
    err = np.abs(got - y).max() / max(np.abs(y).max(), 1e-300)
    if not err <= tol:
        errs.append(f"output differs by {err:.3g} of its largest value (tolerance {tol})")
    if f64:
        r = t["input.r"]
        rng = np.random.default_rng(0)
        args = [q, k, v, bias]
        for i, n in enumerate(["q", "k", "v", "bias"]):
            x = args[i]
            if x is None:
                continue
            U = rng.standard_normal(x.shape)
            hh = 1e-5
            plus = [a + hh * U if j == i else a for j, a in enumerate(args)]
            minus = [a - hh * U if j == i else a for j, a in enumerate(args)]
            fd = ((f(*plus) * r).sum() - (f(*minus) * r).sum()) / (2 * hh)
            an = (t["grad." + n] * U).sum()
            if not abs(fd - an) <= 1e-6 * (1 + abs(fd)):
                errs.append(f"grad.{n}: <grad, U> = {an:.10g}, central difference {fd:.10g}")
    return errs


def main():
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    d = sys.argv[1]
    with open(os.path.join(d, "cases.txt")) as fh:
        names = [n.strip() for n in fh if n.strip()]
    bad = 0
    for name in names:
        errs = check_case(os.path.join(d, name + ".safetensors"))
        print(f"{name}: {'ok' if not errs else 'FAIL'}")
        for e in errs:
            print("  " + e)
        bad += bool(errs)
    print(f"{len(names) - bad} of {len(names)} cases match")
    return 1 if bad or not names else 0


if __name__ == "__main__":
    sys.exit(main())
