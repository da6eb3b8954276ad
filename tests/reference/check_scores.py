#!/usr/bin/env python3
"""Recomputes the data-dependent parts of hkt-analyze's reports with NumPy.

    check_scores.py analysis MODEL.safetensors REPORT_DIR
    check_scores.py approx APPROX_DIR

Both read the sampled inputs the report was computed on (REPORT_DIR/
sample.safetensors: "inputs", "valid") and run the models from their weights
with check.py's float64 forward (its own code, not hkt's), collecting per
layer what HKTAttention::inspect returns (the levels S_l and the combined
S_hier; for MHA S_0 = Q K^T / sqrt(dh)), then recompute by the definitions of
docs/analysis.md:

  analysis  kurtosis_entries (m4 / m2^2 of every valid S_l[i, j]),
            kurtosis_dims (Mardia's b2 / (r (r + 2)) of the score rows
            S_l[i, 0:p] at each window, p and the contributing examples),
            the combined spectra's range per layer and head, and the psd
            section's rows for the symmetrised combined scores;
  approx    each run's rel_error and rel_error_fitted per layer and pooled
            (row-centred scores over the keys each query attends to, heads
            matched by the best permutation), and the log-linear fit's slope,
            standard error and (for 1 or 2 degrees of freedom, where
            Student's t has a closed form) its 95% interval.

The models are float32, so hkt's scores carry float32 rounding while these
are float64: values are compared to 1e-4 relative (1e-3 for Mardia's b2,
whose covariance inverse amplifies it), integers exactly.
Exit status 0 when everything agrees, 1 otherwise.
"""
import itertools
import json
import math
import os
import sys

import numpy as np

from check import (gelu, heads, hkt_attention, layer_norm, linear, mha, read_safetensors, sub)


def layer_scores(inp, valid, p, cfg):
    """Per layer: (levels, combined), float64."""
    h = p["embed.weight"][inp] if cfg["vocab"] > 0 else linear(inp, p, "input_map")
    h = h + p["pos"][:h.shape[1]]
    att = dict(dim=cfg["dim"], heads=cfg["heads"], causal=cfg["causal"], levels=cfg["levels"],
               share_qk=cfg["share_qk"], pointwise=cfg["pointwise"], learn_lambda=cfg["learn_lambda"],
               hybrid=cfg["hybrid"])
    out = []
    for i in range(cfg["layers"]):
        b = "blocks.%d." % i
        a = layer_norm(h, p, b + "ln1")
        sp = sub(p, b + "attn.")
        if cfg["attention"] == "hkt":
            parts = {}
            y = hkt_attention(a, valid, sp, att, parts)
            out.append((parts["levels"], parts["combined"]))
        else:
            dh = cfg["dim"] // cfg["heads"]
            q, k = heads(linear(a, sp, "wq"), cfg["heads"]), heads(linear(a, sp, "wk"), cfg["heads"])
            s = q @ k.transpose(0, 1, 3, 2) / math.sqrt(dh)
            y = mha(a, valid, sp, att)
            out.append(([s], s))
        h = h + y
        h = h + linear(gelu(linear(layer_norm(h, p, b + "ln2"), p, b + "ffn.fc1")), p, b + "ffn.fc2")
    return out


def load_model(path):
    t, meta = read_safetensors(path)
    return {k: v.astype(np.float64) for k, v in t.items()}, json.loads(meta["hkt.model_config"])


def load_sample(d):
    t, _ = read_safetensors(os.path.join(d, "sample.safetensors"))
    inp = t["inputs"]
    return (inp if inp.dtype == np.int64 else inp.astype(np.float64)), t["valid"].astype(bool)


def close(a, b, rel):
    return abs(a - b) <= rel * max(abs(a), abs(b), 1e-300)


def mardia(x):
    """kappa, rank, b2 of the rows of x, as docs/analysis.md defines them."""
    n, p = x.shape
    c = x - x.mean(0)
    w, v = np.linalg.eigh(c.T @ c / n)
    keep = w > 1e-10 * w[-1]
    y = c @ v[:, keep]
    d = (y * y / w[keep]).sum(1)
    r = int(keep.sum())
    b2 = float((d * d).mean())
    return b2 / (r * (r + 2)), r, b2


def check_analysis(model_path, rdir):
    p, cfg = load_model(model_path)
    with open(os.path.join(rdir, "report.json")) as f:
        rep = json.load(f)
    inp, valid = load_sample(rdir)
    lens = valid.sum(1)
    N, T = valid.shape
    L = cfg["levels"] if cfg["attention"] == "hkt" else 1
    H = cfg["heads"]
    per_layer = layer_scores(inp, valid, p, cfg)
    errors = []
    median = int(np.sort(lens)[(N - 1) // 2])
    opts = rep["options"]
    rows = {(r["layer"], r["head"], r["level"], str(r["window"])): r for r in rep["kurtosis_dims"]["rows"]}
    ents = {(r["layer"], r["head"], r["level"]): r for r in rep["kurtosis_dims"]["entries"]}
    n_rows = 0
    for i, (levels, combined) in enumerate(per_layer):
        for l in range(L):
            s = levels[l]
            Tl = s.shape[2]
            len_l = np.minimum(Tl, -(-lens // (1 << l)))
            full = -(-median // (1 << l))
            for h in range(H):
                e = np.concatenate([s[b, h, :n, :n].ravel() for b, n in enumerate(len_l)])
                m = e - e.mean()
                kurt = (m ** 4).mean() / (m ** 2).mean() ** 2
                r = ents.get((i, h, l))
                if r is None or not close(r["kurtosis"], kurt, 1e-4):
                    errors.append("kurtosis_entries at layer %d, head %d, level %d: report %s, reference %.10g"
                                  % (i, h, l, None if r is None else r["kurtosis"], kurt))
                windows = list(opts["kurtosis_windows"]) + ([0] if opts["full_row"] else [])
                for w in windows:
                    pw = min(w, full) if w > 0 else full
                    if pw > opts["full_row_max"]:
                        pw = 0
                    key = (i, h, l, str(w) if w > 0 else "full")
                    r = rows.get(key)
                    n_rows += 1
                    if r is None or r["p"] != pw:
                        errors.append("kurtosis_dims %s: no row or p %s, reference %d" % (key, r and r["p"], pw))
                        continue
                    if pw == 0:
                        continue
                    x = [s[b, h, :n, :pw] for b, n in enumerate(len_l) if n >= pw]
                    x = np.concatenate(x)
                    if r["examples"] != sum(1 for n in len_l if n >= pw) or r["n"] != x.shape[0]:
                        errors.append("kurtosis_dims %s: examples/n %s/%s, reference %d/%d"
                                      % (key, r["examples"], r["n"], sum(1 for n in len_l if n >= pw), x.shape[0]))
                        continue
                    if x.shape[0] <= pw:
                        if r["kappa"] is not None:
                            errors.append("kurtosis_dims %s: kappa with n <= p" % (key,))
                        continue
                    kappa, rank, b2 = mardia(x)
                    if r["rank"] != rank or not close(r["b2"], b2, 1e-3) or not close(r["kappa"], kappa, 1e-3):
                        errors.append("kurtosis_dims %s: rank, b2, kappa %s, %s, %s; reference %d, %.8g, %.8g"
                                      % (key, r["rank"], r["b2"], r["kappa"], rank, b2, kappa))
        # The symmetrised combined scores of the first eig_samples examples, per head.
        n_eig = min(opts["eig_samples"], N)
        comb = {(c["layer"], c["head"]): c for c in rep["spectra"]["combined"]}
        psd = {(c["layer"], c["head"]): c for c in rep["psd"]["heads"]}
        for h in range(H):
            lo, hi, worst = np.inf, -np.inf, np.inf
            for b in range(n_eig):
                n = int(lens[b])
                ev = np.linalg.eigvalsh((combined[b, h, :n, :n] + combined[b, h, :n, :n].T) / 2)
                lo, hi = min(lo, ev[0]), max(hi, ev[-1])
                worst = min(worst, ev[0] / np.abs(ev).max())
            if n_eig == 0:
                continue
            scale = max(abs(lo), abs(hi))
            c, q = comb.get((i, h)), psd.get((i, h))
            if c is None or abs(c["min"] - lo) > 1e-4 * scale or abs(c["max"] - hi) > 1e-4 * scale:
                errors.append("combined spectrum range at layer %d, head %d" % (i, h))
            if q is None or abs(q["combined"]["min_relative"] - worst) > 1e-4:
                errors.append("psd min_relative at layer %d, head %d: report %s, reference %.8g"
                              % (i, h, q and q["combined"]["min_relative"], worst))
    for e in errors:
        print("    " + e)
    print("analysis scores: %d kurtosis_dims rows, %s" % (n_rows, "ok" if not errors else "FAILED"))
    return 1 if errors else 0


def check_approx(adir):
    with open(os.path.join(adir, "report.json")) as f:
        rep = json.load(f)
    inp, valid = load_sample(adir)
    lens = valid.sum(1)

    def scores(entry):  # the weights file hkt-analyze approx read (paths as it was given them)
        p, cfg = load_model(entry["weights"])
        return [c for _, c in layer_scores(inp, valid, p, cfg)], cfg

    def centred(c, b, h, causal):
        n = int(lens[b])
        m = c[b, h, :n, :n].copy()
        keep = np.tril(np.ones((n, n), bool)) if causal else np.ones((n, n), bool)
        m = np.where(keep, m, 0.0)
        m -= np.where(keep, m.sum(1, keepdims=True) / keep.sum(1, keepdims=True), 0.0)
        return m

    target, tcfg = scores(rep["target"])
    H, causal = tcfg["heads"], tcfg["causal"]
    errors, fit_l, fit_e = [], [], []
    for run in rep["runs"]:
        s, cfg = scores(run)
        num = numf = den = 0.0
        for i, lay in enumerate(run["layers"]):
            dot, ss, tt = np.zeros((H, H)), np.zeros(H), np.zeros(H)
            for b in range(len(lens)):
                sa = [centred(s[i], b, h, causal) for h in range(H)]
                ta = [centred(target[i], b, h, causal) for h in range(H)]
                for a in range(H):
                    ss[a] += (sa[a] ** 2).sum()
                    tt[a] += (ta[a] ** 2).sum()
                    for c in range(H):
                        dot[a, c] += (sa[a] * ta[c]).sum()
            cost = np.maximum(ss[:, None] - 2 * dot + tt[None, :], 0)
            costf = np.maximum(tt[None, :] - dot ** 2 / ss[:, None], 0)
            e = min(sum(cost[a, pi[a]] for a in range(H)) for pi in itertools.permutations(range(H)))
            ef = min(sum(costf[a, pi[a]] for a in range(H)) for pi in itertools.permutations(range(H)))
            num, numf, den = num + e, numf + ef, den + tt.sum()
            for name, got, ref in (("rel_error", lay["rel_error"], math.sqrt(e / tt.sum())),
                                   ("rel_error_fitted", lay["rel_error_fitted"], math.sqrt(ef / tt.sum()))):
                if not close(got, ref, 1e-4) and abs(got - ref) > 1e-6:
                    errors.append("%s of %s, layer %d: report %.8g, reference %.8g" % (name, run["label"], i, got, ref))
        pooled = math.sqrt(num / den)
        if not close(run["rel_error"], pooled, 1e-4) and abs(run["rel_error"] - pooled) > 1e-6:
            errors.append("pooled rel_error of %s: report %.8g, reference %.8g" % (run["label"], run["rel_error"], pooled))
        if run["in_fit"]:
            fit_l.append(cfg["levels"])
            fit_e.append(run["rel_error"])
    f = rep["fit"]
    if len(set(fit_l)) >= 2:
        x, y = np.array(fit_l, float), np.log(fit_e)
        slope, icept = np.polyfit(x, y, 1)
        if abs(f["slope"] - slope) > 1e-9 * max(1.0, abs(slope)):
            errors.append("fit slope: report %.10g, reference %.10g" % (f["slope"], slope))
        df = len(x) - 2
        if df >= 1:
            rss = ((y - icept - slope * x) ** 2).sum()
            se = math.sqrt(rss / df / ((x - x.mean()) ** 2).sum())
            t = {1: math.tan(math.pi * 0.475), 2: 0.95 / math.sqrt(2 * 0.975 * 0.025)}.get(df)
            if not close(f["slope_se"], se, 1e-6):
                errors.append("fit slope_se: report %.10g, reference %.10g" % (f["slope_se"], se))
            if t is not None and not close(f["slope_95"][1], slope + t * se, 1e-6):
                errors.append("fit 95%% upper end: report %.10g, reference %.10g" % (f["slope_95"][1], slope + t * se))
    for e in errors:
        print("    " + e)
    print("approx report: %d runs, fit over %d, %s" % (len(rep["runs"]), len(fit_l), "ok" if not errors else "FAILED"))
    return 1 if errors else 0


def main(argv):
    if len(argv) == 4 and argv[1] == "analysis":
        return check_analysis(argv[2], argv[3])
    if len(argv) == 3 and argv[1] == "approx":
        return check_approx(argv[2])
    print("usage: check_scores.py analysis MODEL.safetensors REPORT_DIR | approx APPROX_DIR", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
