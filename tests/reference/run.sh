#!/usr/bin/env bash
# run.sh EXPORTER OUT_DIR [ARGS...]: writes the reference cases with hkt (EXPORTER is
# hkt-reference-export) and checks them with tests/reference/check.py under a
# python3 that has NumPy (python.sh).
# ARGS go to the exporter (--device cuda). Exits 77 (CTest: Skipped), saying why,
# when no python3 with NumPy is found, or when the exporter does (no GPU).
set -euo pipefail
exporter=$1 out=$2
shift 2
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source "$here/python.sh"
rm -rf "$out"
mkdir -p "$out"
"$exporter" "$out" "$@"
"$py" "$here/check.py" "$out"
