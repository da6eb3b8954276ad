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
# --cuda-autotune: refused without --device cuda (exit 2, nothing trained); with it,
# trains and names the attention kernels it chose.
"$bin/hkt-train" --cuda-autotune --task synthetic --model hkt-tiny --steps 2 --batch-size 4 --train-size 16 \
  --val-size 8 --test-size 8 --eval-batches 1 --quiet --run-dir "$tmp/run-cpu" >"$tmp/out" 2>&1
rc=$?
if [[ $rc -ne 2 || -e "$tmp/run-cpu/config.json" ]] || ! grep -q -- "--cuda-autotune: only with --device cuda" "$tmp/out"; then
  cat "$tmp/out"
  echo "device_test: --cuda-autotune without --device cuda: exit status $rc, not a refusal" >&2
  exit 1
fi
"$bin/hkt-train" --device cuda --cuda-autotune --task synthetic --model hkt-tiny --steps 2 --batch-size 4 \
  --train-size 16 --val-size 8 --test-size 8 --eval-batches 1 --log-every 0 --run-dir "$tmp/run-tuned" >"$tmp/out" 2>&1
rc=$?
check $rc "hkt-train --cuda-autotune" || exit 1
if [[ $rc -eq 0 ]]; then
  if ! grep -q "^attention kernel (autotuned): backward B=4 .* L=" "$tmp/out" ||
    ! grep -q '"format": "hkt-attention-kernels"' "$tmp/run-tuned/attention_kernels.json"; then
    echo "device_test: hkt-train --cuda-autotune named no kernel it chose, or kept none in the run folder" >&2
    exit 1
  fi
  # --resume (without the flag) runs the kernels the run folder names, tuning none.
  "$bin/hkt-train" --resume "$tmp/run-tuned" --device cuda >"$tmp/out" 2>&1 || { cat "$tmp/out"; exit 1; }
  if grep "^attention kernel" "$tmp/out" | grep -v -q "(saved in the run folder)$" ||
    [[ $(grep -c "^attention kernel (autotuned): .* (saved in the run folder)$" "$tmp/out") -lt 2 ]]; then
    cat "$tmp/out"
    echo "device_test: hkt-train --resume did not run the kernels saved in the run folder" >&2
    exit 1
  fi
  echo "device_test: --resume ran the $(grep -c '"kernel"' "$tmp/run-tuned/attention_kernels.json") kernels saved by --cuda-autotune"
  # hkt-eval --device cuda runs them too (the test split's forward shapes were tuned by
  # the run's final evaluation), reproduces the run's test loss bit for bit, and leaves
  # the run folder's file as it was.
  if [[ -x "$bin/hkt-eval" ]]; then
    cp "$tmp/run-tuned/attention_kernels.json" "$tmp/kernels.before"
    "$bin/hkt-eval" "$tmp/run-tuned" --device cuda --json "$tmp/eval.json" >"$tmp/out" 2>&1 || { cat "$tmp/out"; exit 1; }
    want=$(sed -n 's/^ *"test_loss": \(.*\),$/\1/p' "$tmp/run-tuned/summary.json")
    got=$(sed -n 's/^ *"loss": \(.*\),$/\1/p' "$tmp/eval.json")
    if ! grep -q "^attention kernel (autotuned): forward .* (saved in the run folder)$" "$tmp/out" ||
      grep "^attention kernel" "$tmp/out" | grep -v -q "(saved in the run folder)$" ||
      [[ -z "$want" || "$want" != "$got" ]] || ! cmp -s "$tmp/kernels.before" "$tmp/run-tuned/attention_kernels.json"; then
      cat "$tmp/out"
      echo "device_test: hkt-eval --device cuda: test loss $got, the run's $want; the run's kernels not run, or its file changed" >&2
      exit 1
    fi
    echo "device_test: hkt-eval --device cuda ran the run's kernels and gave its test loss, $got"
    # A file that is not a decisions file: exit 2, naming it, and no result written.
    echo '{"format": "something else"}' >"$tmp/run-tuned/attention_kernels.json"
    "$bin/hkt-eval" "$tmp/run-tuned" --device cuda --json "$tmp/eval-bad.json" >"$tmp/out" 2>&1
    rc=$?
    if [[ $rc -ne 2 || -e "$tmp/eval-bad.json" ]] ||
      ! grep -q "attention_kernels.json: attention kernel decisions: not an \"hkt-attention-kernels\" file" "$tmp/out"; then
      cat "$tmp/out"
      echo "device_test: hkt-eval with a malformed attention_kernels.json: exit status $rc, not a clear refusal" >&2
      exit 1
    fi
  fi
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
# --cuda-autotune reaches every run, those in child processes (--jobs) too.
"$bin/hkt-experiment" "$tmp/exp.json" --out-dir "$tmp/grid-tuned" --device cuda --cuda-autotune --jobs 2 \
  --quiet >"$tmp/out" 2>&1
rc=$?
check $rc "hkt-experiment --cuda-autotune" || exit 1
if [[ $rc -eq 0 ]] && ! grep -q '"kernel"' "$tmp/grid-tuned/synthetic/hkt/seed1/attention_kernels.json"; then
  echo "device_test: hkt-experiment --cuda-autotune --jobs 2: the run kept no attention kernels" >&2
  exit 1
fi
exit 0
