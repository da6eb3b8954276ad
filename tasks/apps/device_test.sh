#!/usr/bin/env bash
# hkt-train --device cuda: trains where a GPU is usable (exit 0), and
# otherwise refuses with a clear message and exit status 2 (usage error).
#   tasks/apps/device_test.sh BIN_DIR
set -uo pipefail
bin="$1"
tmp="$(mktemp -d "${TMPDIR:-/tmp}/hkt-device.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT
"$bin/hkt-train" --device cuda --task synthetic --model hkt-tiny --steps 2 --batch-size 4 --train-size 16 \
  --val-size 8 --test-size 8 --eval-batches 1 --quiet --run-dir "$tmp/run" >"$tmp/out" 2>&1
rc=$?
cat "$tmp/out"
if [[ $rc -eq 0 ]]; then
  echo "device_test: trained on the GPU"
  exit 0
fi
if [[ $rc -eq 2 ]] && grep -q -- "--device cuda: CUDA is not available" "$tmp/out"; then
  echo "device_test: no GPU here; --device cuda was refused with exit status 2, as it should be"
  exit 0
fi
echo "device_test: unexpected exit status $rc" >&2
exit 1
