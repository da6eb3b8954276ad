#!/usr/bin/env bash
# hkt-train and hkt-experiment --device cuda: train where a GPU is usable
# (exit 0), and otherwise refuse with a clear message and exit status 2
# (usage error). HKT_EXPECT_GPU=1: a refusal fails (the emulated backend's
# entry, tests/cuda_emu/CMakeLists.txt, whose device is always there).
#   tests/apps_device_test.sh BIN_DIR
set -uo pipefail
bin="$1"
tmp="$(mktemp -d "${TMPDIR:-/tmp}/hkt-device.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT
check() {  # check WHAT: the last command's status and output ($tmp/out)
  local rc=$1 what=$2
  cat "$tmp/out"
  if [[ $rc -eq 0 ]]; then
    echo "device_test: $what trained on the GPU"
    return 0
  fi
  if [[ $rc -eq 2 && "${HKT_EXPECT_GPU:-0}" != 1 ]] && grep -q -- "--device cuda: CUDA is not available" "$tmp/out"; then
    echo "device_test: no GPU here; $what --device cuda was refused with exit status 2, as it should be"
    return 0
  fi
  echo "device_test: $what: unexpected exit status $rc" >&2
  return 1
}
"$bin/hkt-train" --device cuda --task synthetic --model hkt-tiny --steps 2 --batch-size 4 --train-size 16 \
  --val-size 8 --test-size 8 --eval-batches 1 --quiet --run-dir "$tmp/run" >"$tmp/out" 2>&1
check $? hkt-train || exit 1
# hkt-eval --device cuda on the run reproduces the run's test loss bit for bit.
if [[ -x "$bin/hkt-eval" && -e "$tmp/run/summary.json" ]]; then
  "$bin/hkt-eval" "$tmp/run" --device cuda --json "$tmp/eval.json" >"$tmp/out" 2>&1 || { cat "$tmp/out"; exit 1; }
  want=$(sed -n 's/^ *"test_loss": \(.*\),$/\1/p' "$tmp/run/summary.json")
  got=$(sed -n 's/^ *"loss": \(.*\),$/\1/p' "$tmp/eval.json")
  if [[ -z "$want" || "$want" != "$got" ]]; then
    cat "$tmp/out"
    echo "device_test: hkt-eval --device cuda: test loss $got, the run's $want" >&2
    exit 1
  fi
  echo "device_test: hkt-eval --device cuda gave the run's test loss, $got"
fi
# hkt-experiment --device cuda: the same, for every run of a grid (nothing is trained without a GPU).
cat >"$tmp/exp.json" <<JSON
{"name": "dev", "out_dir": "$tmp/grid",
 "base": {"steps": 2, "batch_size": 4, "eval_batches": 1, "log_every": 0,
          "data": {"train_size": 16, "val_size": 8, "test_size": 8}},
 "tasks": {"synthetic": {}}, "models": {"hkt": {"model": "hkt-tiny"}}, "seeds": [1]}
JSON
"$bin/hkt-experiment" "$tmp/exp.json" --device cuda --quiet >"$tmp/out" 2>&1
rc=$?
check $rc hkt-experiment || exit 1
if [[ $rc -eq 2 && -e "$tmp/grid/synthetic/hkt/seed1/config.json" ]]; then
  echo "device_test: hkt-experiment started a run although it refused --device cuda" >&2
  exit 1
fi
exit 0
