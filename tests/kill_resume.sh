#!/usr/bin/env bash
# Kill -9 test of hkt-train's checkpoints and --resume.
#
#   tests/kill_resume.sh build/bin/hkt-train build/tests/hkt-check-run
#
# Trains a small model on the synthetic task twice: once uninterrupted, and
# once killed with SIGKILL at 10 moments and resumed with --resume after each.
# The moments are seeded-random delays (seed from $RANDOM, or HKT_KILL_SEED to
# replay); kills 3, 6 and 9 instead wait for a checkpoint save to start
# (checkpoint.tmp/ appears; a stale one is removed first) and kill during the
# write. After every kill,
# hkt-check-run checks that each checkpoint on disk (checkpoint/,
# checkpoint.old/, best.safetensors) is readable. At the end, the final
# checkpoint's model and optimizer files and the best model must equal the
# uninterrupted run's byte for byte (their metadata holds no times or paths),
# and the summaries must agree. A kill before config.json exists leaves
# nothing to resume: the run is then started again.
# HKT_KILL_DEVICE=cuda trains, and resumes, with --device cuda; HKT_KILL_ARGS
# (space separated) are training flags appended to the defaults below (the
# last value of a flag wins). The emulated backend's entry
# (tests/cuda_emu/CMakeLists.txt) uses both, and HKT_KILL_DELAY_DIV below: a
# shorter run on its CUDA device, whose start-up is a larger part of a run.
set -euo pipefail
bin="$(realpath "${1:?usage: kill_resume.sh path/to/hkt-train path/to/hkt-check-run}")"
check="$(realpath "${2:?usage: kill_resume.sh path/to/hkt-train path/to/hkt-check-run}")"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

args=(--task synthetic --train-size 512 --val-size 64 --test-size 64 --seq-len 32 --model hkt-tiny --dropout 0.1
      --batch-size 16 --steps 240 --warmup 10 --checkpoint-every 7 --eval-every 20 --log-every 10 --seed 5
      --threads 2 --quiet)
read -r -a extra <<<"${HKT_KILL_ARGS:-}"
# The random kills come within the first 1/HKT_KILL_DELAY_DIV (default 1/8) of
# the uninterrupted run's time after each start.
delay_div="${HKT_KILL_DELAY_DIV:-8}"
device=(--device "${HKT_KILL_DEVICE:-cpu}")
args+=("${extra[@]}" "${device[@]}")

now_ms() { date +%s%3N; }

t0=$(now_ms)
"$bin" "${args[@]}" --run-dir "$work/ref"
ref_ms=$(( $(now_ms) - t0 ))
echo "uninterrupted run: ${ref_ms} ms"

seed="${HKT_KILL_SEED:-$RANDOM}"
echo "kill seed: $seed (replay with HKT_KILL_SEED=$seed)"
RANDOM=$seed

run="$work/cut"
started=0 status=0 mid_run=0 in_save=0
start() {
  if [[ $started == 0 ]]; then
    "$bin" "${args[@]}" --run-dir "$run" & pid=$!
  else
    "$bin" --resume "$run" "${device[@]}" --quiet & pid=$!
  fi
}
for k in 1 2 3 4 5 6 7 8 9 10; do
  # A save folder left by an earlier kill is never read by --resume; drop it so
  # that the wait below sees a new save begin.
  (( k % 3 == 0 )) && rm -rf "$run/checkpoint.tmp"
  start
  if (( k % 3 == 0 )); then
    # Wait for a checkpoint save to begin, then kill at once.
    what="when checkpoint.tmp/ appeared"
    while [[ ! -e "$run/checkpoint.tmp" ]] && kill -0 "$pid" 2>/dev/null; do :; done
  else
    delay_ms=$(( 20 + RANDOM % (ref_ms / delay_div + 1) ))
    what="after ${delay_ms} ms"
    sleep "$(printf '%d.%03d' $((delay_ms / 1000)) $((delay_ms % 1000)))"
  fi
  if kill -9 "$pid" 2>/dev/null; then
    wait "$pid" || true
    mid_run=$((mid_run + 1))
    ck="none"
    [[ -f "$run/checkpoint/state.json" ]] && ck="step $(grep -o '"step": [0-9]*' "$run/checkpoint/state.json" | grep -o '[0-9]*$')"
    saving=""
    if [[ -e "$run/checkpoint.tmp" ]]; then saving=" (during a checkpoint save)"; in_save=$((in_save + 1)); fi
    echo "kill $k: killed $what$saving; checkpoint/: $ck"
  else
    wait "$pid"
    echo "kill $k: the run had finished before the kill ($what)"
  fi
  [[ -f "$run/config.json" ]] && started=1
  if ! out="$("$check" "$run")"; then
    echo "$out"
    echo "kill $k: a checkpoint on disk is unreadable"
    status=1
  fi
done
echo "$mid_run of 10 kills landed during the run, $in_save of them during a checkpoint save"

if [[ $started == 0 ]]; then
  echo "killed before config.json was written: starting the run again"
  "$bin" "${args[@]}" --run-dir "$run"
else
  echo "resuming: hkt-train --resume $run ${device[*]}"
  "$bin" --resume "$run" "${device[@]}" --quiet
fi
"$check" "$run" >/dev/null || { echo "the finished run's checkpoints are unreadable"; status=1; }

for f in checkpoint/model.safetensors checkpoint/optimizer.safetensors best.safetensors; do
  if cmp "$work/ref/$f" "$run/$f"; then
    echo "identical: $f"
  else
    echo "DIFFERENT: $f"
    status=1
  fi
done
for d in checkpoint.tmp checkpoint.old checkpoint.trash; do
  if [[ -e "$run/$d" ]]; then echo "left behind: $d"; status=1; fi
done
for k in steps best_step best_val_acc test_acc; do
  a="$(grep -m1 "^  \"$k\":" "$work/ref/summary.json")"
  b="$(grep -m1 "^  \"$k\":" "$run/summary.json")"
  if [[ "$a" != "$b" || -z "$a" ]]; then echo "summary differs: '$a' vs '$b'"; status=1; else echo "summary $b"; fi
done
[[ $status == 0 ]] && echo "kill_resume: ok" || echo "kill_resume: FAILED (HKT_KILL_SEED=$seed)"
exit $status
