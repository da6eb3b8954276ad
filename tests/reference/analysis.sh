#!/usr/bin/env bash
# analysis.sh BIN_DIR: trains a tiny HKT run and a tiny MHA run (two layers each) for a
# few steps, analyses each with hkt-analyze, and checks the reports against NumPy: the
# weight-only parts (bilinear spectra, reciprocal/directional split, level weights and
# gates, the psd section's forms; check_analysis.py) and the parts computed from the
# sampled inputs (kurtosis at several dimensions, combined spectra, psd rows;
# check_scores.py). Then two more HKT runs (L = 1, 2) make a level sweep with the first
# (L = 3), and hkt-analyze approx against the MHA run is checked the same way.
# Exits 77 (Skipped) without NumPy.
set -euo pipefail
bin=$1
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source "$here/python.sh"
tmp="$(mktemp -d "${TMPDIR:-/tmp}/hkt-reference-analysis.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT
train() {  # DIR ARGS...
  local dir="$1"
  shift
  "$bin/hkt-train" --task synthetic --seq-len 16 --train-size 64 --val-size 32 --test-size 32 --layers 2 \
    --batch-size 16 --steps 6 --eval-every 3 --lr 0.01 --run-dir "$tmp/$dir" --quiet --threads 1 "$@"
}
for m in hkt mha; do
  train $m --model $m-tiny
  "$bin/hkt-analyze" "$tmp/$m" --samples 8 --no-cost --threads 1 >/dev/null
  echo "$m-tiny, 2 layers:"
  "$py" "$here/check_analysis.py" "$tmp/$m/best.safetensors" "$tmp/$m/analysis/report.json"
  "$py" "$here/check_scores.py" analysis "$tmp/$m/best.safetensors" "$tmp/$m/analysis"
done
train L1 --model hkt-tiny --levels 1
train L2 --model hkt-tiny --levels 2
"$bin/hkt-analyze" approx --target "$tmp/mha" "$tmp/L1" "$tmp/L2" "$tmp/hkt" --out "$tmp/approx" --samples 6 \
  --threads 1 >/dev/null
echo "approx, L = 1, 2, 3 against mha-tiny:"
"$py" "$here/check_scores.py" approx "$tmp/approx"
