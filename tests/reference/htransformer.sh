#!/usr/bin/env bash
# htransformer.sh EXPORTER OUT_DIR: writes htransformer_attention's cases with hkt
# (EXPORTER is hkt-reference-htransformer) and checks them with
# tests/reference/check_htransformer.py under a python3 that has NumPy (python.sh).
# Exits 77 (CTest: Skipped), saying why, when no such python3 is found.
set -euo pipefail
exporter=$1 out=$2
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source "$here/python.sh"
rm -rf "$out"
mkdir -p "$out"
"$exporter" "$out"
"$py" "$here/check_htransformer.py" "$out"
