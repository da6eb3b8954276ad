#!/usr/bin/env bash
# Kill -9 test of hkt-train's checkpoints and --resume.
#
#   tests/kill_resume.sh build/bin/hkt-train
#
# Trains a small model on the synthetic task twice: once uninterrupted, once
# killed with SIGKILL after a random delay (seeded by $RANDOM, or by
# HKT_KILL_SEED to replay) and then resumed with --resume (killed and resumed
# up to twice). The final checkpoint's model and optimizer files and the best
# model must be identical byte for byte (their metadata holds no times or
# paths). A kill before the first checkpoint must resume from scratch; a kill
# before config.json exists leaves nothing to resume, and the run is started
# again.
set -euo pipefail
bin="$(realpath "${1:?usage: kill_resume.sh path/to/hkt-train}")"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

args=(--task synthetic --train-size 512 --val-size 64 --test-size 64 --seq-len 32 --model hkt-tiny --dropout 0.1
      --batch-size 16 --steps 120 --warmup 10 --checkpoint-every 7 --eval-every 20 --log-every 10 --seed 5
      --threads 2 --quiet)

now_ms() { date +%s%3N; }

t0=$(now_ms)
"$bin" "${args[@]}" --run-dir "$work/ref"
ref_ms=$(( $(now_ms) - t0 ))
echo "uninterrupted run: ${ref_ms} ms"

seed="${HKT_KILL_SEED:-$RANDOM}"
echo "kill seed: $seed (replay with HKT_KILL_SEED=$seed)"
RANDOM=$seed

run="$work/cut"
started=0
for attempt in 1 2; do
  delay_ms=$(( 20 + RANDOM % (ref_ms * 9 / 10 + 1) ))
  if [[ $started == 0 ]]; then
    "$bin" "${args[@]}" --run-dir "$run" & pid=$!
  else
    "$bin" --resume "$run" --quiet & pid=$!
  fi
  sleep "$(printf '%d.%03d' $((delay_ms / 1000)) $((delay_ms % 1000)))"
  if kill -9 "$pid" 2>/dev/null; then
    wait "$pid" || true
    ck="none"
    [[ -f "$run/checkpoint/state.json" ]] && ck="$(grep -o "\"step\": [0-9]*" "$run/checkpoint/state.json")"
    echo "attempt $attempt: killed after ${delay_ms} ms; checkpoint/: ${ck//$'\n'/ }"
  else
    wait "$pid"
    echo "attempt $attempt: the run had finished before the kill at ${delay_ms} ms"
  fi
  [[ -f "$run/config.json" ]] && started=1
done

if [[ $started == 0 ]]; then
  echo "killed before config.json was written: starting the run again"
  "$bin" "${args[@]}" --run-dir "$run"
else
  echo "resuming: hkt-train --resume $run"
  "$bin" --resume "$run" --quiet
fi

status=0
for f in checkpoint/model.safetensors checkpoint/optimizer.safetensors best.safetensors; do
  if cmp "$work/ref/$f" "$run/$f"; then
    echo "identical: $f"
  else
    echo "DIFFERENT: $f"
    status=1
  fi
done
for d in checkpoint.tmp checkpoint.old; do
  if [[ -e "$run/$d" ]]; then echo "left behind: $d"; status=1; fi
done
for k in steps best_step best_val_acc test_acc; do
  a="$(grep -m1 "^  \"$k\":" "$work/ref/summary.json")"
  b="$(grep -m1 "^  \"$k\":" "$run/summary.json")"
  if [[ "$a" != "$b" || -z "$a" ]]; then echo "summary differs: '$a' vs '$b'"; status=1; else echo "summary $b"; fi
done
[[ $status == 0 ]] && echo "kill_resume: ok" || echo "kill_resume: FAILED"
exit $status
