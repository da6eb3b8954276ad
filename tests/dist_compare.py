#!/usr/bin/env python3
"""Compares the tensors of two safetensors files (tests/distributed_test.sh).

  dist_compare.py A B --exact        every tensor equal, byte for byte
  dist_compare.py A B --rtol R       per tensor, |a - b|_2 <= R * |a|_2 (F32 / F64)

Prints the largest relative difference; exits 0 when within, 1 otherwise,
2 for unreadable files or tensors that do not correspond.
"""
import array
import json
import math
import struct
import sys


def read(path):
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n])
    header.pop("__metadata__", None)
    body = data[8 + n:]
    out = {}
    for name, h in header.items():
        lo, hi = h["data_offsets"]
        out[name] = (h["dtype"], h["shape"], body[lo:hi])
    return out


def main():
    args = sys.argv[1:]
    if len(args) < 3 or args[2] not in ("--exact", "--rtol") or (args[2] == "--rtol" and len(args) != 4):
        print(__doc__, file=sys.stderr)
        return 2
    try:
        a, b = read(args[0]), read(args[1])
    except (OSError, ValueError, KeyError, struct.error) as e:
        print(f"dist_compare: cannot read: {e}", file=sys.stderr)
        return 2
    if a.keys() != b.keys():
        print(f"dist_compare: different tensors: {sorted(a.keys() ^ b.keys())}", file=sys.stderr)
        return 2
    worst, where = 0.0, ""
    for name in sorted(a):
        da, sa, xa = a[name]
        db, sb, xb = b[name]
        if da != db or sa != sb:
            print(f"dist_compare: {name}: {da}{sa} against {db}{sb}", file=sys.stderr)
            return 2
        if args[2] == "--exact":
            if xa != xb:
                print(f"dist_compare: {name} differs")
                return 1
            continue
        code = {"F32": "f", "F64": "d"}.get(da)
        if code is None:
            if xa != xb:
                print(f"dist_compare: {name} ({da}) differs")
                return 1
            continue
        va, vb = array.array(code, xa), array.array(code, xb)
        num = math.sqrt(sum((p - q) ** 2 for p, q in zip(va, vb)))
        den = math.sqrt(sum(p * p for p in va))
        rel = num / den if den > 0 else num
        if rel > worst or not math.isfinite(rel):
            worst, where = rel, name
    if args[2] == "--exact":
        print("dist_compare: identical")
        return 0
    rtol = float(args[3])
    print(f"dist_compare: largest relative difference {worst:.3g} ({where}), tolerance {rtol:g}")
    return 0 if worst <= rtol else 1


if __name__ == "__main__":
    sys.exit(main())
