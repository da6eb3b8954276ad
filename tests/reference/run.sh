#!/usr/bin/env bash
# run.sh EXPORTER OUT_DIR [ARGS...]: writes the reference cases with hkt (EXPORTER is
# hkt-reference-export) and checks them with tests/reference/check.py under a
# python3 that has NumPy (the first of python3 on PATH, then /usr/bin/python3,
# where Debian's python3-numpy installs it; tools/setup.sh --test installs that).
# ARGS go to the exporter (--device cuda). Exits 77 (CTest: Skipped), saying why,
# when no python3 with NumPy is found, or when the exporter does (no GPU).
set -euo pipefail
exporter=$1 out=$2
shift 2
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
py=""
for c in python3 /usr/bin/python3; do
  if command -v "$c" >/dev/null 2>&1 && "$c" -c 'import numpy' 2>/dev/null; then
    py=$c
    break
  fi
done
if [[ -z "$py" ]]; then
  echo "SKIPPED: no python3 with NumPy (apt-get install python3-numpy, or tools/setup.sh --test)"
  exit 77
fi
rm -rf "$out"
mkdir -p "$out"
"$exporter" "$out" "$@"
"$py" "$here/check.py" "$out"
