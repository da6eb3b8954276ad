#!/usr/bin/env python3
"""Recomputes the weight-only parts of an hkt-analyze report with NumPy.

    check_analysis.py MODEL.safetensors REPORT.json

From the model's weights alone (read by the safetensors layout, see check.py)
and the definitions of docs/analysis.md, it recomputes for every layer, level
and head (-1 = the whole layer):

  spectra.bilinear  the eigenvalues of Ms = (M + M^T) / 2 for
                    M = Wq_{l,h} Wk_{l,h}^T / sqrt(dh) (Wq as it acts on row
                    vectors: the Linear weight transposed; head h its dh
                    columns), and their sign counts (|v| <= 1e-9 max|v| is 0)
  split             ||M||_F, ||Ms||_F, ||Ma||_F and ||Ma|| / ||M||
  gates             lambda = softmax(theta), beta = sigmoid(gate)
  psd               per layer and head, each level's Ms_{l,h} smallest and largest
                    eigenvalue and whether it is PSD (min >= -1e-9 max|v|), and
                    Proposition 3.1's condition (every level PSD)

and requires the report's values to agree (1e-9 relative to the largest
eigenvalue, 1e-12 relative for norms, 1e-6 absolute for the gates, which the
report prints from float32). Every row the weights define must be in the
report, and nothing else. The score statistics (kurtosis, combined spectra)
depend on the sampled data: check_scores.py checks them.
Exit status 0 when everything agrees, 1 otherwise.
"""
import json
import math
import sys

import numpy as np

from check import read_safetensors, softmax


def main(argv):
    if len(argv) != 3:
        print("usage: check_analysis.py MODEL.safetensors REPORT.json", file=sys.stderr)
        return 2
    t, meta = read_safetensors(argv[1])
    cfg = json.loads(meta["hkt.model_config"])
    with open(argv[2]) as f:
        report = json.load(f)
    w = {k: v.astype(np.float64) for k, v in t.items()}
    D, H, L = cfg["dim"], cfg["heads"], cfg["levels"] if cfg["attention"] == "hkt" else 1
    dh = D // H
    errors = []

    bil = {(r["layer"], r["level"], r["head"]): r for r in report["spectra"]["bilinear"]}
    psd = {(r["layer"], r["head"]): r for r in report["psd"]["heads"]}
    condition = {}
    split = {(r["layer"], r["level"], r["head"]): r for r in report["split"]}
    expected = set()
    for layer in range(cfg["layers"]):
        a = "blocks.%d.attn." % layer
        for level in range(L):
            if cfg["attention"] == "hkt":
                i = "0" if cfg["share_qk"] else str(level)
                wq, wk = w[a + "wq.%s.weight" % i].T, w[a + "wk.%s.weight" % i].T
            else:
                wq, wk = w[a + "wq.weight"].T, w[a + "wk.weight"].T
            for head in [-1] + list(range(H)):
                key = (layer, level, head)
                expected.add(key)
                cols = slice(None) if head < 0 else slice(head * dh, (head + 1) * dh)
                m = wq[:, cols] @ wk[:, cols].T / math.sqrt(dh)
                ms, ma = (m + m.T) / 2, (m - m.T) / 2
                ev = np.linalg.eigvalsh(ms)
                tol0 = 1e-9 * np.abs(ev).max()
                neg, pos = int((ev < -tol0).sum()), int((ev > tol0).sum())
                if head >= 0:
                    ok = bool(ev[0] >= -tol0)
                    condition[(layer, head)] = condition.get((layer, head), True) and ok
                    p = psd.get((layer, head))
                    row = None if p is None else next((x for x in p["levels"] if x["level"] == level), None)
                    if row is None:
                        errors.append("psd: no row for layer %d, level %d, head %d" % key)
                    elif (abs(row["min"] - ev[0]) > 1e-9 * np.abs(ev).max()
                          or abs(row["max"] - ev[-1]) > 1e-9 * np.abs(ev).max() or row["psd"] != ok):
                        errors.append("psd: Ms range or PSD flag at layer %d, level %d, head %d differ" % key)
                r = bil.get(key)
                if r is None:
                    errors.append("spectra.bilinear: no row for layer %d, level %d, head %d" % key)
                else:
                    got = np.array(r["eigenvalues"])
                    if got.shape != ev.shape or np.abs(got - ev).max() > 1e-9 * np.abs(ev).max():
                        errors.append("eigenvalues of Ms at layer %d, level %d, head %d differ" % key)
                    if (r["negative"], r["zero"], r["positive"]) != (neg, D - neg - pos, pos):
                        errors.append("sign counts at layer %d, level %d, head %d: report %s, reference %s" % (
                            *key, (r["negative"], r["zero"], r["positive"]), (neg, D - neg - pos, pos)))
                    frac = neg / (neg + pos) if neg + pos else 0.0
                    if abs(r["frac_negative"] - frac) > 1e-12:
                        errors.append("frac_negative at layer %d, level %d, head %d" % key)
                norms = [np.linalg.norm(x) for x in (m, ms, ma)]
                share = norms[2] / norms[0] if norms[0] else 0.0
                r = split.get(key)
                if r is None:
                    errors.append("split: no row for layer %d, level %d, head %d" % key)
                else:
                    got = [r["norm_m"], r["norm_ms"], r["norm_ma"], r["directional_share"]]
                    for name, g, ref in zip(["norm_m", "norm_ms", "norm_ma", "directional_share"], got,
                                            norms + [share]):
                        if abs(g - ref) > 1e-12 * max(abs(ref), 1e-300):
                            errors.append("%s at layer %d, level %d, head %d: report %.17g, reference %.17g"
                                          % (name, *key, g, ref))
    for key, ok in condition.items():
        if key in psd and psd[key]["condition_3_1"] != ok:
            errors.append("psd: condition_3_1 at layer %d, head %d: report %s, reference %s"
                          % (*key, psd[key]["condition_3_1"], ok))
    if set(psd) != set(condition):
        errors.append("psd: (layer, head) rows %s, expected %s" % (sorted(psd), sorted(condition)))
    for what, rows in (("spectra.bilinear", bil), ("split", split)):
        extra = sorted(set(rows) - expected)
        if extra:
            errors.append("%s: rows the model does not have: %s" % (what, extra[:5]))

    if cfg["attention"] == "hkt":
        gates = {g["layer"]: g for g in report["gates"] or []}
        for layer in range(cfg["layers"]):
            a = "blocks.%d.attn." % layer
            g = gates.get(layer)
            if g is None:
                errors.append("gates: no row for layer %d" % layer)
                continue
            lam = softmax(w[a + "theta"], -1) if cfg["learn_lambda"] else np.full((H, L), 1.0 / L)
            beta = 1 / (1 + np.exp(-w[a + "gate"])) if cfg["hybrid"] else np.ones(H)
            if np.abs(np.array(g["lambda"]) - lam).max() > 1e-6 or np.abs(np.array(g["beta"]) - beta).max() > 1e-6:
                errors.append("gates of layer %d differ from softmax(theta), sigmoid(gate)" % layer)

    rows = len(expected)
    for e in errors:
        print("    " + e)
    print("analysis report: %d bilinear and split rows, %d psd rows, %s"
          % (rows, len(condition), "ok" if not errors else "FAILED"))
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
