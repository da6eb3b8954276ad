#!/usr/bin/env bash
# h1d_selftest.sh: the self-test of tests/reference/h1d_published.py, the NumPy reference of
# H-Transformer-1D as its authors built it (partition, coverage, the two forms, causal no-leak,
# padding, score counts, the authors' worked example), under a python3 that has NumPy
# (python.sh; exits 77, CTest: Skipped, without one).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source "$here/python.sh"
"$py" "$here/h1d_published.py" --self-test
