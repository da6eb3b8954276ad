#!/usr/bin/env python3
"""An independent reference for hkt: NumPy only, written from
docs/hkt.md and the documented conventions of hkt's public headers,
sharing no code with the C++ library.

    check.py DIR      DIR holds cases.txt and the .safetensors files that
                      hkt-reference-export wrote (tests/reference/export_cases.cpp)

For every case it parses the file by the safetensors format's own layout (its
own parser, not hkt's), recomputes the output from the parameters and the
input, and compares: float64 cases to 1e-10 relative to the output's largest
value, the float32 case to 2e-5 (1e-4 when computed on a GPU). For float64 cases it also checks every
gradient hkt exported, grad.<name> = d sum(output * R) / d<name>: along a
random direction U, <grad, U> must match the central difference
(f(p + hU) - f(p - hU)) / 2h of this file's forward (h = 1e-5), to 1e-6.

Conventions taken from the headers (the spec leaves them open):
  Linear           y = x W^T + b, W [out, in]            (models/layers.hpp)
  LayerNorm        biased variance, eps = 1e-5; GELU the exact erf form
  causal conv      y[t] = b + sum_j w[c, j] x[s t + s - 1 - j], zeros outside
                   [0, T), T_out = ceil(T / s)           (ops/conv.hpp)
  heads            head h owns the columns h*dh .. (h+1)*dh - 1
  masks            a level-l block is real when either block below it is;
                   padded positions are zeroed before each downsampling and in
                   V; outputs at padded positions are 0 (models/attention.hpp)
Exit status: 0 when every case matches, 1 otherwise (each mismatch named).
"""
import json
import math
import os
import struct
import sys

import numpy as np

DTYPES = {"F64": np.float64, "F32": np.float32, "I64": np.int64, "BOOL": np.bool_}


def read_safetensors(path):
    """(tensors, metadata) by the official layout: u64 LE header length N,
    N bytes of JSON, then the data buffer; offsets relative to the buffer."""
    with open(path, "rb") as f:
        raw = f.read()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + n].decode("utf-8"))
    buf = raw[8 + n:]
    meta = header.pop("__metadata__", {})
    tensors = {}
    for name, info in header.items():
        lo, hi = info["data_offsets"]
        dt = np.dtype(DTYPES[info["dtype"]]).newbyteorder("<")
        a = np.frombuffer(buf[lo:hi], dtype=dt).reshape(info["shape"])
        tensors[name] = a.astype(a.dtype.newbyteorder("="))
    return tensors, meta


def write_safetensors(path, tensors, metadata):
    """The official layout: u64 LE header length, the JSON header (with
    "__metadata__", string values), padded with spaces to a multiple of 8, then
    the tensors' little-endian bytes back to back in header order."""
    names = {np.dtype(v).name: k for k, v in DTYPES.items()}
    header, blobs, off = {"__metadata__": metadata}, [], 0
    for name, a in tensors.items():
        a = np.array(a, order="C")  # (np.ascontiguousarray would make a 0-d array 1-d)
        b = a.astype(a.dtype.newbyteorder("<")).tobytes()
        header[name] = {"dtype": names[a.dtype.name], "shape": list(a.shape), "data_offsets": [off, off + len(b)]}
        blobs.append(b)
        off += len(b)
    h = json.dumps(header, separators=(",", ":")).encode("utf-8")
    h += b" " * (-len(h) % 8)
    with open(path + ".tmp", "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))
    os.replace(path + ".tmp", path)


_erf = np.vectorize(math.erf, otypes=[np.float64])


def gelu(x):
    return 0.5 * x * (1.0 + _erf(x / math.sqrt(2.0)))


def linear(x, p, name):
    y = x @ p[name + ".weight"].T
    b = p.get(name + ".bias")
    return y if b is None else y + b


def layer_norm(x, p, name, eps=1e-5):
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * p[name + ".weight"] + p[name + ".bias"]


def causal_conv(x, w, b, stride):
    """x [B, T, C], w [C, k]: y[:, t] = b + sum_j w[:, j] * x[:, s t + s - 1 - j]."""
    B, T, C = x.shape
    k = w.shape[1]
    T_out = -(-T // stride)
    y = np.zeros((B, T_out, C))
    for t in range(T_out):
        for j in range(k):
            i = stride * t + stride - 1 - j
            if 0 <= i < T:
                y[:, t] += w[:, j] * x[:, i]
    return y if b is None else y + b


def softmax(z, axis=-1):
    z = z - z.max(axis, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis, keepdims=True)


def heads(x, H):
    """[B, T, D] -> [B, H, T, dh]"""
    B, T, D = x.shape
    return x.reshape(B, T, H, D // H).transpose(0, 2, 1, 3)


def merge(x):
    B, H, T, dh = x.shape
    return x.transpose(0, 2, 1, 3).reshape(B, T, H * dh)


def masked_softmax_av(s, valid, causal, v, window=None):
    """softmax(S + mask) V; a row whose keys are all masked gives 0. window:
    only keys with |i - j| <= window are seen (local attention)."""
    B, H, T, _ = s.shape
    allowed = np.ones((B, 1, T, T), dtype=bool)
    if window is not None:
        i = np.arange(T)
        allowed &= (np.abs(i[:, None] - i[None, :]) <= window)[None, None]
    if valid is not None:
        allowed &= valid[:, None, None, :]
    if causal:
        allowed &= np.tril(np.ones((T, T), dtype=bool))[None, None]
    allowed = np.broadcast_to(allowed, s.shape)
    z = np.where(allowed, s, -np.inf)
    m = np.where(allowed.any(-1, keepdims=True), z.max(-1, keepdims=True), 0.0)
    e = np.where(allowed, np.exp(z - m), 0.0)
    den = e.sum(-1, keepdims=True)
    a = np.divide(e, den, out=np.zeros_like(e), where=den > 0)
    return a @ v


def zero_pad(x, valid):
    return x if valid is None else x * valid[..., None]


def pool_valid(valid):
    B, T = valid.shape
    if T % 2:
        valid = np.concatenate([valid, np.zeros((B, 1), dtype=bool)], 1)
    return valid.reshape(B, -1, 2).any(-1)


def upsample_index(T, l, causal):
    """Level l's row for each full-resolution position, and whether it exists."""
    i = np.arange(T)
    c = (i + 1) // (1 << l) - 1 if causal else i >> l
    return np.maximum(c, 0), c >= 0


def hkt_attention(x, valid, p, cfg, parts=None):
    """The layer's output; `parts`, when a dict, receives what
    HKTAttention::inspect returns: levels (S_l), combined (S_hier), lambda, beta."""
    D, H, L, causal = cfg["dim"], cfg["heads"], cfg["levels"], cfg["causal"]
    B, T, _ = x.shape
    dh = D // H
    # 1. levels: X_l = GELU(LN(Pointwise(Conv(X_{l-1})))), padded positions zeroed first
    xs, vs = [x], [valid]
    for l in range(1, L):
        d = "down.%d." % (l - 1)
        h = causal_conv(zero_pad(xs[-1], vs[-1]), p[d + "conv.weight"], p[d + "conv.bias"], 2)
        if cfg["pointwise"]:
            h = linear(h, p, d + "pw")
        xs.append(gelu(layer_norm(h, p, d + "ln")))
        vs.append(None if valid is None else pool_valid(vs[-1]))
    # 4. lambda = softmax(theta) per head
    lam = softmax(p["theta"], -1) if cfg["learn_lambda"] else np.full((H, L), 1.0 / L)
    # 2-3. per-level scores, upsampled, combined
    s_hier = np.zeros((B, H, T, T))
    levels = []
    for l in range(L):
        w = "0" if cfg["share_qk"] else str(l)
        q = heads(linear(xs[l], p, "wq." + w), H)
        k = heads(linear(xs[l], p, "wk." + w), H)
        s = q @ k.transpose(0, 1, 3, 2) / math.sqrt(dh)
        levels.append(s)
        idx, ok = upsample_index(T, l, causal)
        up = s[:, :, idx][:, :, :, idx] * (ok[:, None] & ok[None, :])
        s_hier += lam[:, l][None, :, None, None] * up
    # 5. attention over full-resolution values
    v = zero_pad(linear(x, p, "wv"), valid)
    a = masked_softmax_av(s_hier, valid, causal, heads(v, H))
    # 6. hybrid head
    beta = 1.0 / (1.0 + np.exp(-p["gate"])) if cfg["hybrid"] else np.ones(H)
    if parts is not None:
        parts.update(levels=levels, combined=s_hier, lam=lam, beta=beta)
    if cfg["hybrid"]:
        cv = heads(causal_conv(v, p["conv.weight"], None, 1), H)
        a = beta[None, :, None, None] * a + (1.0 - beta)[None, :, None, None] * cv
    return zero_pad(linear(merge(a), p, "wo"), valid)


def mha(x, valid, p, cfg):
    H, causal = cfg["heads"], cfg["causal"]
    dh = cfg["dim"] // H
    q, k = heads(linear(x, p, "wq"), H), heads(linear(x, p, "wk"), H)
    v = zero_pad(linear(x, p, "wv"), valid)
    s = q @ k.transpose(0, 1, 3, 2) / math.sqrt(dh)
    return zero_pad(linear(merge(masked_softmax_av(s, valid, causal, heads(v, H))), p, "wo"), valid)


def local(x, valid, p, cfg):
    """Sliding-window attention: MHA with the keys |i - j| <= window (causal: and j <= i)."""
    H, causal = cfg["heads"], cfg["causal"]
    dh = cfg["dim"] // H
    q, k = heads(linear(x, p, "wq"), H), heads(linear(x, p, "wk"), H)
    v = zero_pad(linear(x, p, "wv"), valid)
    s = q @ k.transpose(0, 1, 3, 2) / math.sqrt(dh)
    return zero_pad(linear(merge(masked_softmax_av(s, valid, causal, heads(v, H), cfg["window"])), p, "wo"), valid)


def performer(x, valid, p, cfg):
    """Linear attention phi(Q) phi(K)^T V / phi(Q) phi(K)^T 1 through the T x T matrix.
    FAVOR+: phi(x) = (exp(x' W^T - |x'|^2 / 2 - c) + eps) / sqrt(m), x' = x dh^(-1/4), W the
    exported features (cfg["_features"]); elu+1: phi(x) = elu(x) + 1."""
    H, causal = cfg["heads"], cfg["causal"]
    dh = cfg["dim"] // H
    q = heads(linear(x, p, "wq"), H)
    k = heads(zero_pad(linear(x, p, "wk"), valid), H)
    v = heads(zero_pad(linear(x, p, "wv"), valid), H)
    if cfg["feature_map"] == "elu+1":
        def phi(z):
            return np.where(z > 0, z + 1.0, np.exp(np.minimum(z, 0.0)))
        pq, pk = phi(q), phi(k)
    else:
        # FAVOR+ as google-research/performer's softmax_kernel_transformation (the code LRA ran):
        # ratio (exp(arg - c) + eps), eps = 1e-6, c the row's max for queries and the max over
        # (T, m) for keys; hkt takes the keys' max over valid keys only, and in causal mode adds
        # eps before the shift (docs/models.md), both stated deviations.
        w, eps = cfg["_features"], cfg.get("epsilon", 1e-6)
        ratio = 1.0 / math.sqrt(w.shape[0])

        def arg(z):
            zs = z * dh ** -0.25
            return zs @ w.T - 0.5 * (zs * zs).sum(-1, keepdims=True)
        aq, ak = arg(q), arg(k)
        pq = ratio * (np.exp(aq - aq.max(-1, keepdims=True)) + eps)
        keep = np.ones(ak.shape[:3] + (1,), bool) if valid is None else valid[:, None, :, None].astype(bool)
        c = np.where(keep, ak, -np.inf).max(axis=(2, 3), keepdims=True)
        c = np.where(np.isfinite(c), c, 0.0)
        if causal:
            c = np.maximum(c, math.log(eps)) if eps > 0 else c
            pk = ratio * (np.exp(ak - c) + eps * np.exp(-c))
        else:
            pk = ratio * (np.exp(ak - c) + eps)
    if valid is not None:
        pk = pk * valid[:, None, :, None]
    a = pq @ pk.transpose(0, 1, 3, 2)
    if causal:
        a = a * np.tril(np.ones(a.shape[-2:]))
    den = a.sum(-1, keepdims=True)
    out = np.divide(a @ v, den, out=np.zeros(v.shape), where=den > 0)
    return zero_pad(linear(merge(out), p, "wo"), valid)


def sub(p, prefix):
    return {k[len(prefix):]: v for k, v in p.items() if k.startswith(prefix)}


def classifier(inp, valid, p, cfg):
    if cfg["vocab"] > 0:
        h = p["embed.weight"][inp]
    else:
        h = linear(inp, p, "input_map")
    T = h.shape[1]
    h = h + p["pos"][:T]
    att = dict(dim=cfg["dim"], heads=cfg["heads"], causal=cfg["causal"], levels=cfg["levels"],
               share_qk=cfg["share_qk"], pointwise=cfg["pointwise"], learn_lambda=cfg["learn_lambda"],
               hybrid=cfg["hybrid"], window=cfg.get("window"), features=cfg.get("features"),
               feature_map=cfg.get("feature_map"))
    for i in range(cfg["layers"]):
        b = "blocks.%d." % i
        a = layer_norm(h, p, b + "ln1")
        fn = {"hkt": hkt_attention, "mha": mha, "local": local, "performer": performer}[cfg["attention"]]
        att["_features"] = cfg.get("_features", {}).get(b + "attn.features")
        h = h + fn(a, valid, sub(p, b + "attn."), att)
        h = h + linear(gelu(linear(layer_norm(h, p, b + "ln2"), p, b + "ffn.fc1")), p, b + "ffn.fc2")
    h = layer_norm(h, p, "ln_f")
    if valid is None:
        pooled = h.mean(1)
    else:
        m = valid[..., None].astype(h.dtype)
        pooled = (h * m).sum(1) / np.maximum(m.sum(1), 1.0)
    return linear(pooled, p, "head")


def forward(kind, cfg, inp, valid, p):
    if kind == "hkt":
        return hkt_attention(inp, valid, p, cfg)
    if kind == "mha":
        return mha(inp, valid, p, cfg)
    if kind == "local":
        return local(inp, valid, p, cfg)
    if kind == "performer":
        return performer(inp, valid, p, cfg)
    return classifier(inp, valid, p, cfg)


def cross_entropy(logits, labels):
    """Mean over the rows whose label is not -100 (torch.nn.functional.cross_entropy)."""
    keep = labels != -100
    z = logits[keep]
    lse = z.max(-1) + np.log(np.exp(z - z.max(-1, keepdims=True)).sum(-1))
    return float((lse - z[np.arange(len(z)), labels[keep]]).mean())


def lr_factor(step, tr):
    """Linear warm-up, then cosine to min_factor (models/schedule.hpp)."""
    w, n, m = tr["warmup"], tr["total"], tr["min_factor"]
    if step < w:
        return (step + 1) / w
    if step >= n:
        return m
    return m + (1 - m) * (1 + math.cos(math.pi * (step - w) / (n - w))) / 2


def check_train(t, cfg, tr):
    """Replays the training steps: loss, gradient (one random direction over
    every parameter), clip_grad_norm_ (torch.nn.utils), the schedule, and
    AdamW as torch.optim.AdamW documents it (decoupled decay, bias correction;
    weight decay only on parameters with dim >= 2)."""
    p = {k[6:]: v for k, v in t.items() if k.startswith("param.")}
    ids, valid, labels = t["input.ids"], t["input.valid"], t["input.labels"]
    m = {n: np.zeros_like(v) for n, v in p.items()}
    v2 = {n: np.zeros_like(v) for n, v in p.items()}
    rng = np.random.default_rng(1)
    errors, worst = [], 0.0

    def close(what, got, ref, tol):
        nonlocal worst
        rel = abs(got - ref) / max(abs(ref), 1e-30)
        worst = max(worst, rel)
        if not rel <= tol:
            errors.append("%s: hkt %.15g, reference %.15g" % (what, got, ref))

    def loss(q):
        return cross_entropy(classifier(ids, valid, q, cfg), labels)

    for k in range(tr["steps"]):
        s = "step%d." % k
        close(s + "loss", float(t[s + "loss"]), loss(p), 1e-10)
        g = {n: t[s + "grad." + n] for n in p}
        u = {n: rng.standard_normal(x.shape) for n, x in p.items()}
        h = 1e-5
        fd = (loss({n: p[n] + h * u[n] for n in p}) - loss({n: p[n] - h * u[n] for n in p})) / (2 * h)
        an = sum(float((g[n] * u[n]).sum()) for n in p)
        if not abs(fd - an) <= 1e-6 * max(abs(fd), abs(an), 1.0):
            errors.append("%sgradient along U: %.12g, central difference %.12g" % (s, an, fd))
        norm = math.sqrt(sum(float((x * x).sum()) for x in g.values()))
        close(s + "grad_norm", float(t[s + "grad_norm"]), norm, 1e-12)
        if norm > tr["clip"]:
            g = {n: x * (tr["clip"] / (norm + 1e-6)) for n, x in g.items()}
        lr = tr["lr"] * lr_factor(k, tr)
        close(s + "lr", float(t[s + "lr"]), lr, 1e-15)
        b1, b2 = tr["beta1"], tr["beta2"]
        for n in p:
            wd = tr["weight_decay"] if p[n].ndim >= 2 else 0.0
            q = p[n] * (1 - lr * wd)
            m[n] = b1 * m[n] + (1 - b1) * g[n]
            v2[n] = b2 * v2[n] + (1 - b2) * g[n] ** 2
            mhat = m[n] / (1 - b1 ** (k + 1))
            vhat = v2[n] / (1 - b2 ** (k + 1))
            p[n] = q - lr * mhat / (np.sqrt(vhat) + tr["eps"])
    for n in p:
        got = t["after." + n]
        err = np.abs(got - p[n]).max() / max(np.abs(p[n]).max(), 1e-30)
        worst = max(worst, err)
        if not err <= 1e-10:
            errors.append("parameter %s after %d steps differs by %.3g (relative)" % (n, tr["steps"], err))
    return errors, "%d steps, %d parameters, worst %.1e" % (tr["steps"], len(p), worst)


def check_case(path):
    t, meta = read_safetensors(path)
    kind, cfg = meta["kind"], json.loads(meta["config"])
    if kind == "train":
        return check_train(t, cfg, json.loads(meta["train"]))
    p = {k[6:]: v.astype(np.float64) for k, v in t.items() if k.startswith("param.")}
    buffers = {k[7:]: v.astype(np.float64) for k, v in t.items() if k.startswith("buffer.")}
    if kind == "performer":
        cfg["_features"] = buffers.get("features")
    elif kind == "classifier":
        cfg["_features"] = buffers
    valid = t.get("input.valid")
    inp = t["input.ids"] if "input.ids" in t else t["input.x"].astype(np.float64)
    got = t["output"]
    errors = []

    ref = forward(kind, cfg, inp, valid, p)
    if ref.shape != got.shape:
        return ["output shape %s, the reference's %s" % (got.shape, ref.shape)], ""
    scale = max(np.abs(ref).max(), 1e-30)
    # float32: 2e-5 on the CPU; 1e-4 on a GPU, the CUDA issue's bar (its TF32 kernels)
    tol = 1e-10 if got.dtype == np.float64 else 2e-5 if meta.get("device", "cpu") == "cpu" else 1e-4
    err = np.abs(got.astype(np.float64) - ref).max() / scale
    if not err <= tol:
        errors.append("output differs from the reference by %.3g of its largest value (tolerance %g)" % (err, tol))
    if kind != "classifier" and valid is not None and np.abs(got[~valid]).max(initial=0.0) != 0.0:
        errors.append("output is not 0 at padded positions")

    if kind == "hkt":  # what HKTAttention::inspect returned (the analysis tools' input)
        parts = {}
        hkt_attention(inp, valid, p, cfg, parts)
        want = [("inspect.level.%d" % l, s) for l, s in enumerate(parts["levels"])]
        want += [("inspect.combined", parts["combined"]), ("inspect.lambda", parts["lam"]),
                 ("inspect.beta", parts["beta"])]
        for name, ref_part in want:
            if name not in t:
                errors.append("no %s exported" % name)
                continue
            e = np.abs(t[name].astype(np.float64) - ref_part).max() / max(np.abs(ref_part).max(), 1e-30)
            if not e <= tol:
                errors.append("%s differs from the reference by %.3g of its largest value" % (name, e))

    grads = {k[5:]: v for k, v in t.items() if k.startswith("grad.")}
    if got.dtype == np.float64:
        expected = set(p) | ({"input.x"} if "input.x" in t else set())
        missing = sorted(expected - set(grads))
        if missing:
            errors.append("no exported gradient for %s" % ", ".join(missing))
    r = t.get("input.r")
    rng = np.random.default_rng(0)
    h = 1e-5
    worst_grad = []
    for name, g in sorted(grads.items()):
        u = rng.standard_normal(g.shape)

        def f(sign):
            x, q = inp, dict(p)
            if name == "input.x":
                x = inp + sign * h * u
            else:
                q[name] = p[name] + sign * h * u
            return float((forward(kind, cfg, x, valid, q) * r).sum())

        fd = (f(1) - f(-1)) / (2 * h)
        an = float((g * u).sum())
        rel = abs(fd - an) / max(abs(fd), abs(an), 1.0)
        worst_grad.append(rel)
        if not rel <= 1e-6:
            errors.append("gradient of %s: <grad, U> = %.12g, central difference %.12g" % (name, an, fd))
    worst = max(worst_grad, default=0.0)
    return errors, "output %.1e, %d gradients %.1e" % (err, len(grads), worst)


def main(argv):
    if len(argv) != 2:
        print("usage: check.py DIR", file=sys.stderr)
        return 2
    d = argv[1]
    with open(os.path.join(d, "cases.txt")) as f:
        names = [ln.strip() for ln in f if ln.strip()]
    if not names:
        print("check.py: %s/cases.txt lists no cases" % d, file=sys.stderr)
        return 1
    failed = 0
    for n in names:
        try:
            errors, summary = check_case(os.path.join(d, n + ".safetensors"))
        except Exception as e:  # a missing file or tensor is a failure, named
            errors, summary = ["%s: %s" % (type(e).__name__, e)], ""
        print("%-52s %s" % (n, ("ok (%s)" % summary) if not errors else "FAILED"))
        for e in errors:
            print("    " + e)
        failed += bool(errors)
    print("%d of %d cases match the NumPy reference" % (len(names) - failed, len(names)))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
