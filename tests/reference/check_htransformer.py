#!/usr/bin/env python3
"""An independent NumPy reference for htransformer_attention, written from the
definition in ops/include/hkt/ops/htransformer.hpp (H-Transformer-1D, Zhu and
Soricut 2021), sharing no code with hkt.

    check_htransformer.py DIR    DIR holds cases.txt and the .safetensors files
                                 hkt-reference-htransformer wrote

The hierarchical matrix is formed densely (T x T, fine for these sizes): pair
(i, j) belongs to level 0 when i and j share a block of N tokens, else to the
level l whose blocks of N 2^(l-1) tokens make i's and j's blocks siblings; its
score is scale * <q~, k~> with q~, k~ the means over the valid tokens of the
groups of 2^(l-1) tokens holding i and j (causal: q~ = q_i, and only j < i
blocks). Y = (A V) / (A 1), 0 at padded queries and where A 1 = 0.

Compares the output (float64 to 1e-10 of its largest value, float32 to 2e-5)
and, for float64 cases, each gradient along a random direction U against the
central difference of this file's forward (h = 1e-5, to 1e-6).
Exit status: 0 when every case matches, 1 otherwise.
"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from check import read_safetensors  # noqa: E402  (the safetensors parser, NumPy only)


def levels_used(T, N, levels):
    L = 1
    while N * 2 ** (L - 1) < T:
        L += 1
    return min(L, levels) if levels > 0 else L


def group_means(x, ok, g):
    """x [T, d], ok [T] -> [T, d]: row t holds the mean of x over the valid rows of
    t's group of g (groups [m g, (m + 1) g)); 0 for a group without any."""
    T = x.shape[0]
    G = -(-T // g) * g
    xp = np.zeros((G, x.shape[1]))
    okp = np.zeros(G)
    xp[:T] = x * ok[:, None]
    okp[:T] = ok
    s = xp.reshape(G // g, g, -1).sum(1)
    c = okp.reshape(G // g, g).sum(1)
    m = s / np.maximum(c, 1)[:, None]
    return np.repeat(m, g, axis=0)[:T]


def attention(q, k, v, valid, causal, scale, N, levels):
    B, H, T, dh = q.shape
    L = levels_used(T, N, levels)
    i = np.arange(T)[:, None]
    j = np.arange(T)[None, :]
    level = np.full((T, T), -1)
    level[i // N == j // N] = 0
    for l in range(1, L):
        S = N * 2 ** (l - 1)
        level[((i // S) ^ 1) == (j // S)] = l
    y = np.zeros_like(q, dtype=np.float64)
    for b in range(B):
        ok = valid[b].astype(np.float64) if valid is not None else np.ones(T)
        for h in range(H):
            s = np.zeros((T, T))
            for l in range(L):
                g = 2 ** max(l - 1, 0)
                qc = q[b, h] if (causal or l == 0) else group_means(q[b, h], ok, g)
                kc = k[b, h] if l == 0 else group_means(k[b, h], ok, g)
                sl = scale * qc @ kc.T
                s = np.where(level == l, sl, s)
            allowed = (level >= 0) & (ok[None, :] > 0)
            if causal:
                allowed &= j <= i
            sm = np.where(allowed, s, -np.inf)
            mx = sm.max(axis=1, keepdims=True)
            mx = np.where(np.isfinite(mx), mx, 0.0)
            A = np.where(allowed, np.exp(sm - mx), 0.0)
            z = A.sum(axis=1, keepdims=True)
            out = (A @ v[b, h]) / np.where(z > 0, z, 1.0)
            y[b, h] = out * ok[:, None]
    return y


def check_case(path):
    t, meta = read_safetensors(path)
    N, levels = int(meta["block"]), int(meta["levels"])
    causal, scale = meta["causal"] == "true", float(meta["scale"])
    q, k, v = (t["input." + n].astype(np.float64) for n in "qkv")
    valid = t.get("input.valid")
    f = lambda q_, k_, v_: attention(q_, k_, v_, valid, causal, scale, N, levels)  # noqa: E731
    y = f(q, k, v)
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
        for n, x in zip("qkv", (q, k, v)):
            U = rng.standard_normal(x.shape)
            hh = 1e-5
            args_p = [a + hh * U if a is x else a for a in (q, k, v)]
            args_m = [a - hh * U if a is x else a for a in (q, k, v)]
            fd = ((f(*args_p) * r).sum() - (f(*args_m) * r).sum()) / (2 * hh)
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
