#!/usr/bin/env python3
"""experiments/examples/make_arrays.py: writes the small array examples of docs/tasks.md ("Your own
data"), with NumPy, seeded, so the committed files can be made again byte for byte:

    /usr/bin/python3 experiments/examples/make_arrays.py experiments/examples

The tokens task (hkt-train --task tokens):
  tokens-train.npy         uint8 [400, 32] token ids 1-9, each row 12-32 tokens then pad id 0
  tokens-train-labels.npy  int64 [400]: 1 when id 1 occurs more often than id 2 in the row, else 0
                           (never equally often), about half each
  tokens-new.npy           uint8 [20, 32], unlabelled rows made the same way
The series task (hkt-train --task series):
  series-train.npz         inputs float32 [300, 24, 2], labels int64 [300], lengths int64 [300]:
                           16-24 steps of a noisy line through a random offset; feature 0 rises
                           (label 1) or falls (label 0), feature 1 is noise; zeros past the length
  series-new.npz           inputs and lengths of 20 unlabelled rows made the same way
"""
import sys
from pathlib import Path

import numpy as np


def token_rows(rng, n):
    x = np.zeros((n, 32), dtype=np.uint8)
    y = np.zeros(n, dtype=np.int64)
    for i in range(n):
        while True:
            length = rng.integers(12, 33)
            row = rng.integers(1, 10, size=length)
            ones, twos = np.sum(row == 1), np.sum(row == 2)
            if ones != twos:
                break
        x[i, :length] = row
        y[i] = int(ones > twos)
    return x, y


def series_rows(rng, n):
    x = np.zeros((n, 24, 2), dtype=np.float32)
    y = rng.integers(0, 2, size=n).astype(np.int64)
    lengths = rng.integers(16, 25, size=n).astype(np.int64)
    for i in range(n):
        t = np.arange(lengths[i]) / 24.0
        slope = (1.0 if y[i] else -1.0) * rng.uniform(1.0, 3.0)
        x[i, : lengths[i], 0] = rng.normal(0, 2) + slope * t + rng.normal(0, 0.3, size=lengths[i])
        x[i, : lengths[i], 1] = rng.normal(0, 1, size=lengths[i])
    return x, y, lengths


def main():
    out = Path(sys.argv[1] if len(sys.argv) > 1 else ".")
    rng = np.random.default_rng(20261206)
    x, y = token_rows(rng, 400)
    np.save(out / "tokens-train.npy", x)
    np.save(out / "tokens-train-labels.npy", y)
    np.save(out / "tokens-new.npy", token_rows(rng, 20)[0])
    x, y, lengths = series_rows(rng, 300)
    np.savez(out / "series-train.npz", inputs=x, labels=y, lengths=lengths)
    x, _, lengths = series_rows(rng, 20)
    np.savez(out / "series-new.npz", inputs=x, lengths=lengths)


if __name__ == "__main__":
    main()
