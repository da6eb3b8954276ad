#!/usr/bin/env python3
"""experiments/examples/make_motif.py: writes the small DNA-motif example of docs/tasks.md ("Your own
data"), standard library only, seeded, so the committed files can be made again byte for byte:

    python3 experiments/examples/make_motif.py experiments/examples

motif-train.tsv (400 labelled rows) and motif-new.tsv (20 unlabelled rows): DNA strings of 40-96 bases
with a header row "text<TAB>label". The label needs both ends of the string: "same" when its first
and last base are equal, "diff" otherwise (half of each), so a model must relate distant positions.
"""
import random
import sys
from pathlib import Path


def row(rng):
    n = rng.randint(40, 96)
    s = [rng.choice("ACGT") for _ in range(n)]
    same = rng.random() < 0.5
    s[-1] = s[0] if same else rng.choice([b for b in "ACGT" if b != s[0]])
    return "".join(s), "same" if same else "diff"


def main():
    out = Path(sys.argv[1] if len(sys.argv) > 1 else ".")
    rng = random.Random(20261206)
    with open(out / "motif-train.tsv", "w", newline="\n") as f:
        f.write("text\tlabel\n")
        for _ in range(400):
            f.write("%s\t%s\n" % row(rng))
    with open(out / "motif-new.tsv", "w", newline="\n") as f:
        f.write("text\n")
        for _ in range(20):
            f.write("%s\n" % row(rng)[0])


if __name__ == "__main__":
    main()
