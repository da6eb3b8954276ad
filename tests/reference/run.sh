#!/usr/bin/env bash
# run.sh EXPORTER OUT_DIR [ARGS...]: writes the reference cases with hkt (EXPORTER is
# hkt-reference-export) and checks them with tests/reference/check.py under a
# python3 that has NumPy (python.sh), then, where PyTorch is installed, with
# torch_hkt.py --check.
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
# The same files against PyTorch (autograd, torch.optim.AdamW) where it is installed
# (Debian: python3-torch; not installed by the scripts, it is large).
if "$py" -c 'import torch' 2>/dev/null; then
  "$py" "$here/torch_hkt.py" --check "$out"
else
  echo "(PyTorch not installed: the comparison with torch_hkt.py --check is left out)"
fi
