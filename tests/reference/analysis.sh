#!/usr/bin/env bash
# analysis.sh BIN_DIR: trains a tiny HKT run and a tiny MHA run (two layers each) for a
# few steps, analyses each with hkt-analyze, and checks the reports'
# weight-only parts (bilinear spectra, reciprocal/directional split, level weights and
# gates) against NumPy (check_analysis.py). Exits 77 (Skipped) without NumPy.
set -euo pipefail
bin=$1
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source "$here/python.sh"
tmp="$(mktemp -d "${TMPDIR:-/tmp}/hkt-reference-analysis.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT
for m in hkt mha; do
  "$bin/hkt-train" --task synthetic --seq-len 16 --train-size 64 --val-size 32 --test-size 32 --model $m-tiny \
    --layers 2 --batch-size 16 --steps 6 --eval-every 3 --lr 0.01 --run-dir "$tmp/$m" --quiet --threads 1
  "$bin/hkt-analyze" "$tmp/$m" --samples 8 --no-cost --threads 1 >/dev/null
  echo "$m-tiny, 2 layers:"
  "$py" "$here/check_analysis.py" "$tmp/$m/best.safetensors" "$tmp/$m/analysis/report.json"
done
