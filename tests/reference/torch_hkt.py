#!/usr/bin/env python3
"""hkt's models in PyTorch, for comparison only (hkt itself uses no other
framework): the HKT attention, the MHA baseline and the sequence classifier of
docs/hkt.md, written the way a PyTorch user would (composite ops:
the T x T score matrices are formed), with hkt's parameter names and
conventions (docs/hkt.md), so that hkt's safetensors files load as they are.

    torch_hkt.py --check DIR       compare with the cases hkt-reference-export
                                   wrote into DIR (tests/reference): outputs,
                                   every gradient through torch.autograd, and
                                   the training steps through torch.optim.AdamW,
                                   torch.nn.utils.clip_grad_norm_ and
                                   F.cross_entropy
    torch_hkt.py --write-golden DIR
                                   write PyTorch's outputs, gradients and
                                   AdamW steps for two layers and a classifier
                                   (float64) as safetensors files: the ones in
                                   tests/reference/torch/, which
                                   test_reference_torch checks hkt against in
                                   every build (no PyTorch needed there)
    torch_hkt.py --bench [--threads N] [--reps R] [--shapes T:B,...] [--device cuda]
                 [--torch-config default|best|both] [--hkt BENCH] [--rounds N]
                                   one training step of hkt-small and
                                   mha-small (vocab 256, 10 classes, dropout
                                   on), as `hkt-bench-attention --step` times
                                   it in hkt; prints a markdown table.
                                   best: PyTorch with jemalloc and OpenBLAS's
                                   OpenMP build (Debian: libjemalloc2,
                                   libopenblas0-openmp); --hkt times hkt's
                                   step too, alternating with PyTorch's

Needs PyTorch (Debian: apt-get install python3-torch). Exit status 0 on
success, 1 when a check fails, 2 for a usage error.
"""
import argparse
import json
import math
import os
import sys
import time

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # check.py lies beside this file


# --- the model, functional: p maps hkt's parameter names to tensors -------------------


def linear(x, p, name):
    b = p.get(name + ".bias")
    return F.linear(x, p[name + ".weight"], b)


def layer_norm(x, p, name):
    return F.layer_norm(x, (x.shape[-1],), p[name + ".weight"], p[name + ".bias"], 1e-5)


def causal_conv(x, w, b, stride):
    """hkt's causal depthwise conv (ops/conv.hpp): y[t] = b + sum_j w[:, j] x[s t + s - 1 - j]."""
    B, T, C = x.shape
    k = w.shape[1]
    assert k >= stride
    t_out = -(-T // stride)
    xp = F.pad(x.transpose(1, 2), (k - stride, stride * t_out - T))
    return F.conv1d(xp, w.flip(1).unsqueeze(1), b, stride=stride, groups=C).transpose(1, 2)


def heads(x, H):
    B, T, D = x.shape
    return x.view(B, T, H, D // H).transpose(1, 2)


def merge(x):
    B, H, T, dh = x.shape
    return x.transpose(1, 2).reshape(B, T, H * dh)


def zero_pad(x, valid):
    return x if valid is None else x * valid.unsqueeze(-1).to(x.dtype)


def pool_valid(valid):
    if valid.shape[1] % 2:
        valid = F.pad(valid, (0, 1))
    return valid.view(valid.shape[0], -1, 2).any(-1)


def attend(s, valid, causal, v):
    """softmax(S + mask) V; rows without any key give 0 (not NaN)."""
    T = s.shape[-1]
    if valid is None and not causal:
        return torch.softmax(s, -1) @ v
    allowed = torch.ones(T, T, dtype=torch.bool, device=s.device)
    if causal:
        allowed = torch.tril(allowed)
    allowed = allowed.expand(s.shape[0], 1, T, T)
    if valid is not None:
        allowed = allowed & valid[:, None, None, :]
    z = s.masked_fill(~allowed, float("-inf"))
    m = torch.where(allowed.any(-1, keepdim=True), z.amax(-1, keepdim=True), torch.zeros((), dtype=s.dtype))
    e = torch.exp(z - m)
    return (e / e.sum(-1, keepdim=True).clamp_min(torch.finfo(s.dtype).tiny)) @ v


def upsample(s, l, T, causal):
    """Up_l(S_l) [B, H, T, T]: S_l[i >> l, j >> l], or in causal mode S_l[c(i), c(j)] with
    c(i) = (i + 1) // 2^l - 1 and 0 where c < 0. Block expansion by a view (its backward
    sums the blocks), not an index gather: on the CPU index_select and its index_add_
    backward took 70% of a training step."""
    f = 1 << l
    B, H, n, _ = s.shape
    e = s[:, :, :, None, :, None].expand(B, H, n, f, n, f).reshape(B, H, n * f, n * f)
    if causal:  # c(i) = (i + 1 - f) // f: row i of the expansion shifted down by f - 1, zeros above
        e = F.pad(e, (f - 1, 0, f - 1, 0))
    return e[:, :, :T, :T]


def hkt_attention(x, valid, p, cfg):
    H, L, causal = cfg["heads"], cfg["levels"], cfg["causal"]
    B, T, D = x.shape
    scale = 1.0 / math.sqrt(D // H)
    xs, vs = [x], [valid]
    for l in range(1, L):
        d = "down.%d." % (l - 1)
        h = causal_conv(zero_pad(xs[-1], vs[-1]), p[d + "conv.weight"], p[d + "conv.bias"], 2)
        if cfg["pointwise"]:
            h = linear(h, p, d + "pw")
        xs.append(F.gelu(layer_norm(h, p, d + "ln")))
        vs.append(None if valid is None else pool_valid(vs[-1]))
    lam = torch.softmax(p["theta"], -1) if cfg["learn_lambda"] else torch.full((H, L), 1.0 / L, dtype=x.dtype)
    # Coarse to fine, as hkt's kernel builds it: the running sum of the levels above is
    # upsampled 2x onto level l's grid and S_l added there, so each expansion works on
    # T_l x T_l, not T x T (Up_l = Up_1 applied l times, causal index map included).
    s_hier = None
    for l in reversed(range(L)):
        w = "0" if cfg["share_qk"] else str(l)
        # lambda_l / sqrt(dh) folded into Q_l ([T_l, dh]) rather than applied to the T x T scores
        q = heads(linear(xs[l], p, "wq." + w), H) * (lam[:, l] * scale).view(1, H, 1, 1)
        s = q @ heads(linear(xs[l], p, "wk." + w), H).transpose(-1, -2)
        if s_hier is not None:
            s = s + upsample(s_hier, 1, s.shape[-1], causal)
        s_hier = s
    v = zero_pad(linear(x, p, "wv"), valid)
    a = attend(s_hier, valid, causal, heads(v, H))
    if cfg["hybrid"]:
        beta = torch.sigmoid(p["gate"]).view(1, H, 1, 1)
        a = beta * a + (1 - beta) * heads(causal_conv(v, p["conv.weight"], None, 1), H)
    return zero_pad(linear(merge(a), p, "wo"), valid)


def mha(x, valid, p, cfg):
    H = cfg["heads"]
    scale = 1.0 / math.sqrt(x.shape[-1] // H)
    s = (heads(linear(x, p, "wq"), H) * scale) @ heads(linear(x, p, "wk"), H).transpose(-1, -2)
    v = zero_pad(linear(x, p, "wv"), valid)
    return zero_pad(linear(merge(attend(s, valid, cfg["causal"], heads(v, H))), p, "wo"), valid)


def sub(p, prefix):
    return {k[len(prefix):]: v for k, v in p.items() if k.startswith(prefix)}


def classifier(inp, valid, p, cfg, train=False):
    h = F.embedding(inp, p["embed.weight"]) if cfg["vocab"] > 0 else linear(inp, p, "input_map")
    h = h + p["pos"][: h.shape[1]]
    att = hkt_attention if cfg["attention"] == "hkt" else mha
    for i in range(cfg["layers"]):
        b = "blocks.%d." % i
        h = h + att(layer_norm(h, p, b + "ln1"), valid, sub(p, b + "attn."), cfg)
        f = linear(F.gelu(linear(layer_norm(h, p, b + "ln2"), p, b + "ffn.fc1")), p, b + "ffn.fc2")
        h = h + F.dropout(f, cfg["dropout"], train)
    h = layer_norm(h, p, "ln_f")
    if valid is None:
        pooled = h.mean(1)
    else:
        m = valid.unsqueeze(-1).to(h.dtype)
        pooled = (h * m).sum(1) / m.sum(1).clamp_min(1.0)
    return linear(pooled, p, "head")


def new_params(cfg, dtype=torch.float32, seed=1):
    """A classifier's parameters with hkt's names and initial distributions."""
    g = torch.Generator().manual_seed(seed)
    D, H, L, N = cfg["dim"], cfg["heads"], cfg["levels"], cfg["layers"]
    p = {}

    def uni(shape, fan_in):
        bound = 1 / math.sqrt(fan_in)
        return (torch.rand(shape, generator=g, dtype=dtype) * 2 - 1) * bound

    def lin(name, i, o, bias=True):
        p[name + ".weight"] = uni((o, i), i)
        if bias:
            p[name + ".bias"] = uni((o,), i)

    def ln(name):
        p[name + ".weight"], p[name + ".bias"] = torch.ones(D, dtype=dtype), torch.zeros(D, dtype=dtype)

    p["pos"] = torch.randn(cfg["max_len"], D, generator=g, dtype=dtype) * 0.02
    p["embed.weight"] = torch.randn(cfg["vocab"], D, generator=g, dtype=dtype) * 0.02
    for i in range(N):
        b = "blocks.%d." % i
        ln(b + "ln1")
        if cfg["attention"] == "hkt":
            for l in range(1 if cfg["share_qk"] else L):
                lin(b + "attn.wq.%d" % l, D, D, cfg["bias"])
                lin(b + "attn.wk.%d" % l, D, D, cfg["bias"])
            for l in range(1, L):
                d = b + "attn.down.%d." % (l - 1)
                p[d + "conv.weight"], p[d + "conv.bias"] = uni((D, 3), 3), uni((D,), 3)
                if cfg["pointwise"]:
                    lin(d + "pw", D, D)
                ln(d + "ln")
            p[b + "attn.theta"] = torch.zeros(H, L, dtype=dtype)
            p[b + "attn.gate"] = torch.zeros(H, dtype=dtype)
            p[b + "attn.conv.weight"] = uni((D, 3), 3)
        else:
            for n in ("wq", "wk"):
                lin(b + "attn." + n, D, D, cfg["bias"])
        for n in ("wv", "wo"):
            lin(b + "attn." + n, D, D, cfg["bias"])
        ln(b + "ln2")
        lin(b + "ffn.fc1", D, cfg["ffn_mult"] * D)
        lin(b + "ffn.fc2", cfg["ffn_mult"] * D, D)
    ln("ln_f")
    lin("head", D, cfg["classes"])
    return {k: v.requires_grad_() for k, v in p.items()}


def adamw_groups(p, lr, wd):
    """hkt's decay_groups: weight decay on tensors of dim >= 2 only."""
    decay = [v for v in p.values() if v.dim() >= 2]
    rest = [v for v in p.values() if v.dim() < 2]
    return [g for g in ({"params": decay, "lr": lr, "weight_decay": wd},
                        {"params": rest, "lr": lr, "weight_decay": 0.0}) if g["params"]]


# --- --check ------------------------------------------------------------------------


def check(dir_):
    from check import read_safetensors  # tests/reference/check.py's own safetensors reader
    from check import lr_factor

    with open(os.path.join(dir_, "cases.txt")) as f:
        names = [ln.strip() for ln in f if ln.strip()]
    failed = 0
    for name in names:
        t, meta = read_safetensors(os.path.join(dir_, name + ".safetensors"))
        t = {k: torch.from_numpy(v.copy()) for k, v in t.items()}
        kind, cfg = meta["kind"], json.loads(meta["config"])
        if kind in ("local", "performer") or cfg.get("attention", "hkt") not in ("hkt", "mha"):
            # Local and Performer attention have the NumPy reference (check.py) only.
            print("%-52s %s" % (name, "not compared (no PyTorch version of this attention kind)"))
            continue
        p = {k[6:]: v.double().requires_grad_() for k, v in t.items() if k.startswith("param.")}
        valid = t.get("input.valid")
        errors = []

        def close(what, got, ref, tol, floor=1e-30):
            # relative to the larger of ref's largest value and `floor` (for gradients: the largest
            # gradient of the case, since some are 0 up to rounding, such as a key bias's)
            e = (got.double() - ref.double()).abs().max().item() / max(ref.double().abs().max().item(), floor)
            if not e <= tol:
                errors.append("%s differs from PyTorch by %.3g (relative to its largest value)" % (what, e))
            return e

        if kind == "train":
            tr = json.loads(meta["train"])
            opt = torch.optim.AdamW(adamw_groups(p, tr["lr"], tr["weight_decay"]), betas=(tr["beta1"], tr["beta2"]),
                                    eps=tr["eps"])
            for k in range(tr["steps"]):
                s = "step%d." % k
                opt.zero_grad()
                loss = F.cross_entropy(classifier(t["input.ids"], valid, p, cfg), t["input.labels"], ignore_index=-100)
                loss.backward()
                close(s + "loss", t[s + "loss"], loss.detach(), 1e-10)
                gmax = max(v.grad.abs().max().item() for v in p.values())
                for n, v in p.items():
                    close(s + "grad." + n, t[s + "grad." + n], v.grad, 1e-9, gmax)
                gn = torch.nn.utils.clip_grad_norm_(list(p.values()), tr["clip"])
                close(s + "grad_norm", t[s + "grad_norm"], gn, 1e-12)
                for g in opt.param_groups:
                    g["lr"] = tr["lr"] * lr_factor(k, tr)
                opt.step()
            err = max(close("after." + n, t["after." + n], v.detach(), 1e-10) for n, v in p.items())
            summary = "%d AdamW steps, parameters agree to %.1e" % (tr["steps"], err)
        else:
            if "input.ids" in t:
                x = t["input.ids"]
            else:
                x = t["input.x"].double().requires_grad_(t["output"].dtype == torch.float64)
            f = {"hkt": hkt_attention, "mha": mha}.get(kind)
            out = f(x, valid, p, cfg) if f else classifier(x, valid, p, cfg)
            tol = 1e-10 if t["output"].dtype == torch.float64 else (2e-5 if meta.get("device", "cpu") == "cpu" else 1e-4)
            err = close("output", t["output"], out.detach(), tol)
            ngrad, gerr = 0, 0.0
            if "input.r" in t:
                (out * t["input.r"]).sum().backward()
                gmax = max(g.abs().max().item() for n, g in t.items() if n.startswith("grad."))
                for n, g in t.items():
                    if not n.startswith("grad."):
                        continue
                    ref = x.grad if n == "grad.input.x" else p[n[5:]].grad
                    gerr = max(gerr, close(n, g, ref, 1e-9, gmax))
                    ngrad += 1
            summary = "output %.1e, %d gradients %.1e" % (err, ngrad, gerr)
        print("%-52s %s" % (name, ("ok (%s)" % summary) if not errors else "FAILED"))
        for e in errors:
            print("    " + e)
        failed += bool(errors)
    print("%d of %d cases match PyTorch %s" % (len(names) - failed, len(names), torch.__version__))
    return 1 if failed else 0


# --- --write-golden -----------------------------------------------------------------


def perturbed(p, g):
    """As hkt-reference-export does: theta and gate + N(0, 1), the rest + N(0, 0.1^2)."""
    out = {}
    for k, v in p.items():
        s = 1.0 if k.endswith("theta") or k.endswith("gate") else 0.1
        out[k] = (v.detach().double() + s * torch.randn(v.shape, generator=g, dtype=torch.float64)).requires_grad_()
    return out


def lengths_mask(lengths, T):
    return torch.arange(T)[None, :] < torch.tensor(lengths)[:, None]


def write_golden(dir_):
    """Files for tests/test_reference_torch.cpp: PyTorch's numbers, which hkt must reproduce."""
    from check import write_safetensors, lr_factor

    os.makedirs(dir_, exist_ok=True)
    g = torch.Generator().manual_seed(2026)
    meta_common = {"writer": "tests/reference/torch_hkt.py --write-golden (PyTorch %s)" % torch.__version__}
    base = dict(attention="hkt", vocab=9, input_features=0, max_len=40, dim=16, heads=2, layers=1, ffn_mult=4,
                dropout=0.0, classes=4, causal=False, bias=False, levels=3, share_qk=False, pointwise=True,
                learn_lambda=True, hybrid=True, dtype="float64")

    def np_(t):  # a copy: .numpy() shares memory, and AdamW and zero_grad() write in place
        return t.detach().numpy().copy()

    # Layers: output and every gradient of sum(output * R).
    layers = [("hkt_layer_causal_L3_T37", dict(base, causal=True), "hkt", 37, [37, 20]),
              ("mha_layer_bidir_bias_T29", dict(base, attention="mha", heads=4, bias=True), "mha", 29, [29, 11]),
              ("hkt_layer_bidir_L4_T45_shared", dict(base, dim=8, levels=4, share_qk=True), "hkt", 45, [45, 30])]
    for name, cfg, kind, T, lengths in layers:
        p = perturbed(sub(new_params(cfg, torch.float64, seed=7), "blocks.0.attn."), g)
        x = torch.randn(len(lengths), T, cfg["dim"], generator=g, dtype=torch.float64).requires_grad_()
        valid = lengths_mask(lengths, T)
        out = (hkt_attention if kind == "hkt" else mha)(x, valid, p, cfg)
        r = torch.randn(out.shape, generator=g, dtype=torch.float64)
        (out * r).sum().backward()
        t = {"input.x": np_(x), "input.valid": valid.numpy(), "input.r": np_(r), "output": np_(out),
             "grad.input.x": np_(x.grad)}
        t.update({"param." + k: np_(v) for k, v in p.items()})
        t.update({"grad." + k: np_(v.grad) for k, v in p.items()})
        layer_cfg = {k: cfg[k] for k in ("dim", "heads", "causal", "bias")}
        if kind == "hkt":
            layer_cfg.update({k: cfg[k] for k in ("levels", "share_qk", "pointwise", "learn_lambda", "hybrid")})
            layer_cfg["conv_kernel"] = 3
        write_safetensors(os.path.join(dir_, name + ".safetensors"), t,
                          dict(meta_common, kind=kind, config=json.dumps(layer_cfg)))

    # Training steps of a classifier: F.cross_entropy, autograd, clip_grad_norm_, AdamW.
    cfg = dict(base, max_len=20)
    tr = dict(steps=3, lr=0.02, weight_decay=0.1, clip=0.5, beta1=0.9, beta2=0.99, eps=1e-8, warmup=1, total=3,
              min_factor=0.1)
    p = perturbed(new_params(cfg, torch.float64, seed=8), g)
    ids = torch.randint(0, cfg["vocab"], (3, 18), generator=g)
    valid = lengths_mask([18, 13, 6], 18)
    labels = torch.tensor([1, -100, 3])
    t = {"input.ids": ids.numpy(), "input.valid": valid.numpy(), "input.labels": labels.numpy()}
    t.update({"param." + k: np_(v) for k, v in p.items()})
    opt = torch.optim.AdamW(adamw_groups(p, tr["lr"], tr["weight_decay"]), betas=(tr["beta1"], tr["beta2"]),
                            eps=tr["eps"])
    for k in range(tr["steps"]):
        s = "step%d." % k
        opt.zero_grad()
        logits = classifier(ids, valid, p, cfg)
        loss = F.cross_entropy(logits, labels, ignore_index=-100)
        loss.backward()
        t[s + "logits"], t[s + "loss"] = np_(logits), np_(loss)
        t.update({s + "grad." + n: np_(v.grad) for n, v in p.items()})
        t[s + "grad_norm"] = np_(torch.nn.utils.clip_grad_norm_(list(p.values()), tr["clip"]))
        for grp in opt.param_groups:
            grp["lr"] = tr["lr"] * lr_factor(k, tr)
        opt.step()
    t.update({"after." + n: np_(v) for n, v in p.items()})
    write_safetensors(os.path.join(dir_, "classifier_train.safetensors"), t,
                      dict(meta_common, kind="train", config=json.dumps(cfg), train=json.dumps(tr)))
    print("wrote %s: 3 layers and a 3-step training run, from PyTorch %s" % (dir_, torch.__version__))
    return 0


# --- --bench ------------------------------------------------------------------------


def preset(name):
    # ClassifierConfig::preset (models/src/classifier.cpp) for the small presets.
    return dict(attention=name[:3], vocab=256, input_features=0, dim=128, heads=4, layers=2, ffn_mult=4,
                dropout=0.1, classes=10, causal=False, bias=False, levels=3, share_qk=False, pointwise=True,
                learn_lambda=True, hybrid=True)


def bench_step(name, T, B, reps, device="cpu"):
    cfg = preset(name)
    cfg["max_len"] = T
    torch.manual_seed(1)
    p = {k: v.detach().to(device).requires_grad_() for k, v in new_params(cfg).items()}
    opt = torch.optim.AdamW(list(p.values()), lr=1e-3, weight_decay=0.01)
    x = (torch.arange(B * T, dtype=torch.int64) * 2654435761 % 256).view(B, T).to(device)
    y = (torch.arange(B, dtype=torch.int64) % 10).to(device)
    sync = torch.cuda.synchronize if device != "cpu" else (lambda: None)

    def step():
        opt.zero_grad()
        F.cross_entropy(classifier(x, None, p, cfg, train=True), y).backward()
        torch.nn.utils.clip_grad_norm_(list(p.values()), 1.0)
        opt.step()

    step()  # warm-up
    sync()
    best = float("inf")
    for _ in range(reps):
        t0 = time.perf_counter()
        step()
        sync()
        best = min(best, time.perf_counter() - t0)
    return best


TORCH_CONFIGS = ("default", "best")
# jemalloc keeps freed pages (dirty and muzzy decay off): the setting of PyTorch's CPU
# performance guides for training loops that free and reallocate the same large buffers.
BEST_MALLOC_CONF = "dirty_decay_ms:-1,muzzy_decay_ms:-1"


def torch_env(config, threads):
    """The environment of a PyTorch child process. "default": as installed. "best": the
    configuration a PyTorch user tunes a CPU machine with: jemalloc as the allocator
    (LD_PRELOAD) with freed pages kept (MALLOC_CONF, as PyTorch's CPU tuning guides set it:
    without it jemalloc hands freed pages back to the kernel and every step page-faults its
    large score maps again) and OpenBLAS's OpenMP build instead of its pthread build
    (Debian: libjemalloc2, libopenblas0-openmp), OMP_NUM_THREADS = threads. A MALLOC_CONF
    already in the environment is kept."""
    env = dict(os.environ)
    if config == "default":
        return env
    import sysconfig
    lib = os.path.join("/usr/lib", sysconfig.get_config_var("MULTIARCH") or "x86_64-linux-gnu")
    jemalloc, omp_blas = os.path.join(lib, "libjemalloc.so.2"), os.path.join(lib, "openblas-openmp")
    for path in (jemalloc, os.path.join(omp_blas, "libblas.so.3")):
        if not os.path.exists(path):
            sys.exit("torch_hkt.py: --torch-config best needs %s (Debian: apt-get install libjemalloc2 "
                     "libopenblas0-openmp)" % path)
    env["LD_PRELOAD"] = jemalloc + (":" + env["LD_PRELOAD"] if env.get("LD_PRELOAD") else "")
    env["LD_LIBRARY_PATH"] = omp_blas + (":" + env["LD_LIBRARY_PATH"] if env.get("LD_LIBRARY_PATH") else "")
    env["OMP_NUM_THREADS"] = str(threads)
    env.setdefault("MALLOC_CONF", BEST_MALLOC_CONF)
    return env


def loaded_libs():
    """What this process runs on: the allocator and the BLAS build found in its maps."""
    maps = open("/proc/self/maps").read()
    alloc = "jemalloc" if "libjemalloc" in maps else "glibc-malloc"
    if alloc == "jemalloc":
        alloc += "[MALLOC_CONF=%s]" % os.environ.get("MALLOC_CONF", "")
    blas = "blas-?"
    for build in ("openblas-openmp", "openblas-pthread", "openblas-serial", "libmkl"):
        if build in maps:
            blas = build
            break
    return alloc + "," + blas


def run_child(cmd, env):
    import subprocess
    out = subprocess.run(cmd, check=True, capture_output=True, text=True, env=env).stdout.split()
    return float(out[0]), float(out[1]), (out[2] if len(out) > 2 else "")


def bench_one(name, T, B, reps, threads, device, config="default"):
    """One preset in a fresh process, so that its peak RSS is its own: (seconds, MiB, libs)."""
    return run_child([sys.executable, os.path.abspath(__file__), "--bench-one", name, str(T), str(B), "--reps",
                      str(reps), "--threads", str(threads), "--device", device], torch_env(config, threads))


def median(xs):
    xs = sorted(xs)
    n = len(xs)
    return xs[n // 2] if n % 2 else 0.5 * (xs[n // 2 - 1] + xs[n // 2])


def bench(threads, reps, shapes, device, configs=("default",), hkt=None, rounds=1):
    """Each configuration of each (shape, preset) in its own process, alternating: round r runs
    hkt (when given: hkt-bench-attention --step), then PyTorch in every configuration, for every
    shape and preset, before round r + 1 starts. The table gives medians over the rounds of each
    process's best step of `reps`."""
    where = "CPU, %d threads" % threads if device == "cpu" else torch.cuda.get_device_name(device)
    print("## PyTorch %s (%s): one training step, forward + cross-entropy + backward + clip + AdamW"
          % (torch.__version__, where))
    print("(composite attention: the T x T scores are formed, HKT's coarse to fine; each run in its own "
          "process, best of %d after a warm-up; median of %d alternating round(s))\n" % (reps, rounds))
    res = {}  # (T, B, preset, who) -> list of (s, MiB)
    libs = {}
    presets = ("hkt-small", "mha-small")
    for _ in range(rounds):
        for T, B in shapes:
            for name in presets:
                if hkt:
                    # hkt at the same thread count as PyTorch (oneTBB and OpenBLAS both).
                    env = dict(os.environ, HKT_NUM_THREADS=str(threads), OPENBLAS_NUM_THREADS=str(threads))
                    s, mib, _ = run_child([hkt, "--step", name, str(T), str(B), str(reps)], env)
                    res.setdefault((T, B, name, "hkt"), []).append((s, mib))
                for c in configs:
                    s, mib, lib = bench_one(name, T, B, reps, threads, device, c)
                    res.setdefault((T, B, name, c), []).append((s, mib))
                    libs[c] = lib
    if device == "cpu":
        for c in configs:
            print("PyTorch %s: %s" % (c, libs.get(c, "?")))
        print()
    mem = "peak RSS MiB" if device == "cpu" else "peak allocated GPU MiB"
    who = (["hkt"] if hkt else []) + list(configs)
    head = ["T", "B", "preset"] + ["%s ms" % ("hkt" if w == "hkt" else "PyTorch " + w) for w in who]
    if hkt:
        head += ["PyTorch %s / hkt" % c for c in configs]
    head += ["%s %s" % (w if w == "hkt" else "PyTorch " + w, mem) for w in who]
    print("| " + " | ".join(head) + " |")
    print("|" + "|".join(["--:"] * 2 + ["---"] + ["--:"] * (len(head) - 3)) + "|")
    for T, B in shapes:
        for name in presets:
            ms = {w: 1e3 * median([r[0] for r in res[(T, B, name, w)]]) for w in who}
            mib = {w: median([r[1] for r in res[(T, B, name, w)]]) for w in who}
            row = [str(T), str(B), name] + ["%.1f" % ms[w] for w in who]
            if hkt:
                row += ["**%.2f**" % (ms[c] / ms["hkt"]) for c in configs]
            row += ["%.0f" % mib[w] for w in who]
            print("| " + " | ".join(row) + " |", flush=True)
    return 0


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--check", metavar="DIR")
    ap.add_argument("--bench", action="store_true")
    ap.add_argument("--write-golden", metavar="DIR")
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--shapes", default="1024:8,1024:1,2048:1,4096:1")
    ap.add_argument("--device", default="cpu", help="cpu or cuda (float32 either way)")
    ap.add_argument("--torch-config", default="default", choices=TORCH_CONFIGS + ("both",),
                    help="--bench: PyTorch as installed (default), with jemalloc and OpenMP OpenBLAS (best), or both")
    ap.add_argument("--hkt", metavar="BENCH", help="--bench: also time hkt's step with this hkt-bench-attention, "
                    "alternating with PyTorch's")
    ap.add_argument("--rounds", type=int, default=1, help="--bench: alternating rounds; the table gives medians")
    ap.add_argument("--bench-one", nargs=3, metavar=("PRESET", "T", "B"), help=argparse.SUPPRESS)
    a = ap.parse_args(argv[1:])
    if a.bench_one:
        import resource
        torch.set_num_threads(a.threads)
        t = bench_step(a.bench_one[0], int(a.bench_one[1]), int(a.bench_one[2]), a.reps, a.device)
        mib = (torch.cuda.max_memory_allocated() / 2**20 if a.device != "cpu"
               else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
        print("%.6f %.1f %s" % (t, mib, loaded_libs()))
        return 0
    if bool(a.check) + a.bench + bool(a.write_golden) != 1:
        ap.error("give exactly one of --check DIR, --bench and --write-golden DIR")
    if a.threads < 1 or a.reps < 1 or a.rounds < 1:
        ap.error("--threads, --reps and --rounds must be >= 1")
    if a.hkt and not (os.path.isfile(a.hkt) and os.access(a.hkt, os.X_OK)):
        ap.error("--hkt %s: not an executable (build/tools/hkt-bench-attention)" % a.hkt)
    if a.device != "cpu" and a.torch_config != "default":
        ap.error("--torch-config %s: a CPU configuration; with --device cuda use default" % a.torch_config)
    if a.check:
        torch.set_num_threads(1)
        return check(a.check)
    if a.write_golden:
        torch.set_num_threads(1)
        return write_golden(a.write_golden)
    try:
        shapes = [tuple(int(v) for v in s.split(":")) for s in a.shapes.split(",")]
        assert all(len(s) == 2 and s[0] >= 1 and s[1] >= 1 for s in shapes)
    except (ValueError, AssertionError):
        ap.error("--shapes: T:B pairs separated by commas, e.g. 1024:8,2048:1")
    if a.device != "cpu" and not (a.device.startswith("cuda") and torch.cuda.is_available()):
        ap.error("--device %s: not available in this PyTorch (CUDA: %s)" % (a.device, torch.cuda.is_available()))
    configs = TORCH_CONFIGS if a.torch_config == "both" else (a.torch_config,)
    return bench(a.threads, a.reps, shapes, a.device, configs, a.hkt, a.rounds)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
