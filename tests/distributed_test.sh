#!/usr/bin/env bash
# Data-parallel training with mpirun (docs/distributed.md), on the synthetic task.
#
#   tests/distributed_test.sh MODE build/bin build/tests/hkt-check-run
#
# MODE:
#   equivalence  2 ranks reach the weights of 1 rank (same global batch, dropout on) after 20
#                steps: relative L2 difference per tensor <= 1e-5 in float32, <= 1e-12 in float64
#                (measured: 2e-7 and 1e-15; docs/distributed.md, "How close to one process")
#   identical    two 2-rank runs end with the same bytes (model, optimizer, best model), and so
#                does one with --no-overlap; a run under mpirun -np 1 ends with the bytes of a
#                run without mpirun
#   resume       a 2-rank run stopped after its step-10 checkpoint, resumed on 1 rank, ends as an
#                uninterrupted 1-rank run (to the float32 tolerance); and 1 rank resumed on 2
#   kill         kill -9 of rank 1 ends the job with a non-zero status within 60 s; the last
#                checkpoint is readable (hkt-check-run) and --resume continues from it
#   experiment   hkt-experiment with "launcher": ["mpirun", ..., "-np", "2"] trains each run with
#                2 ranks; a malformed launcher is refused (exit 2)
#   diverge      a rank whose weights are made to differ (HKT_TEST_DIVERGE) stops the run with
#                the checksum's error and a non-zero status
set -euo pipefail
mode="${1:?usage: distributed_test.sh MODE BIN_DIR CHECK_RUN}"
bin="$(realpath "${2:?usage: distributed_test.sh MODE BIN_DIR CHECK_RUN}")"
check="$(realpath "${3:?usage: distributed_test.sh MODE BIN_DIR CHECK_RUN}")"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
train="$bin/hkt-train"
# As root (CI), in containers (no ptrace for single-copy), more ranks than cores.
export OMPI_MCA_btl_vader_single_copy_mechanism=none OMPI_MCA_rmaps_base_oversubscribe=1
mpi=(mpirun --allow-run-as-root --oversubscribe --bind-to none)
args=(--task synthetic --train-size 256 --val-size 64 --test-size 64 --seq-len 32 --model hkt-tiny --dropout 0.1
      --batch-size 16 --steps 20 --warmup 2 --eval-every 10 --checkpoint-every 10 --log-every 5 --seed 3
      --threads 1 --quiet)
compare() { python3 "$here/dist_compare.py" "$@"; }
fail() { echo "FAIL: $*" >&2; exit 1; }

case "$mode" in
  equivalence)
    for dt in float32 float64; do
      tol=1e-5; [[ $dt == float64 ]] && tol=1e-12
      extra=(--config "$work/$dt.json")
      echo "{\"model_overrides\": {\"dtype\": \"$dt\"}}" >"$work/$dt.json"
      "$train" "${args[@]}" "${extra[@]}" --run-dir "$work/one-$dt"
      "${mpi[@]}" -np 2 "$train" "${args[@]}" "${extra[@]}" --run-dir "$work/two-$dt"
      compare "$work/one-$dt/checkpoint/model.safetensors" "$work/two-$dt/checkpoint/model.safetensors" \
        --rtol "$tol" || fail "$dt: 2 ranks differ from 1 rank by more than $tol"
      # Both saw the same global batches: the same step count and the same training-loss log, to rounding.
      python3 - "$work/one-$dt/metrics.jsonl" "$work/two-$dt/metrics.jsonl" <<'PY' || fail "$dt: the logged losses differ"
import json, sys
a = [json.loads(l) for l in open(sys.argv[1]) if '"train"' in l]
b = [json.loads(l) for l in open(sys.argv[2]) if '"train"' in l]
assert [x["step"] for x in a] == [x["step"] for x in b], "different steps logged"
for x, y in zip(a, b):
    assert abs(x["loss"] - y["loss"]) <= 1e-3 * abs(x["loss"]), (x, y)
    assert x["acc"] == y["acc"], (x, y)
PY
    done
    ;;
  identical)
    "${mpi[@]}" -np 2 "$train" "${args[@]}" --run-dir "$work/a"
    "${mpi[@]}" -np 2 "$train" "${args[@]}" --run-dir "$work/b"
    for f in checkpoint/model.safetensors checkpoint/optimizer.safetensors best.safetensors; do
      cmp "$work/a/$f" "$work/b/$f" || fail "two 2-rank runs: $f differs"
    done
    cmp "$work/a/test_predictions.csv" "$work/b/test_predictions.csv" || fail "test predictions differ"
    # Blocking buckets after the backward sum the same elements: with 2 ranks (a + b = b + a) the same bytes.
    "${mpi[@]}" -np 2 "$train" "${args[@]}" --run-dir "$work/c" --no-overlap
    cmp "$work/a/checkpoint/model.safetensors" "$work/c/checkpoint/model.safetensors" || fail "--no-overlap differs"
    "$train" "${args[@]}" --run-dir "$work/plain"
    "${mpi[@]}" -np 1 "$train" "${args[@]}" --run-dir "$work/np1"
    for f in checkpoint/model.safetensors checkpoint/optimizer.safetensors best.safetensors test_predictions.csv; do
      cmp "$work/plain/$f" "$work/np1/$f" || fail "mpirun -np 1: $f differs from a run without mpirun"
    done
    # Only rank 0 wrote: one line per event.
    [[ $(grep -c '"event":"train"' "$work/a/metrics.jsonl") == 4 ]] || fail "metrics.jsonl: not 4 train events"
    ;;
  resume)
    "$train" "${args[@]}" --run-dir "$work/ref"
    # 2 ranks, stopped at step 12 (last checkpoint: step 10), resumed on 1 rank; then the reverse.
    "${mpi[@]}" -np 2 "$train" "${args[@]}" --run-dir "$work/r21" --stop-after 12
    [[ ! -e "$work/r21/summary.json" ]] || fail "the stopped run finished"
    "$train" --resume "$work/r21" --quiet
    compare "$work/ref/checkpoint/model.safetensors" "$work/r21/checkpoint/model.safetensors" --rtol 1e-5 ||
      fail "2 ranks resumed on 1 differ from 1 rank"
    "$train" "${args[@]}" --run-dir "$work/r12" --stop-after 12
    "${mpi[@]}" -np 2 "$train" --resume "$work/r12" --quiet
    compare "$work/ref/checkpoint/model.safetensors" "$work/r12/checkpoint/model.safetensors" --rtol 1e-5 ||
      fail "1 rank resumed on 2 differs from 1 rank"
    # A checkpoint-free comparison of the data order: a 2-rank resumed run from step 10 and a
    # 1-rank resumed run from the same checkpoint log the same steps and accuracies.
    python3 - "$work/ref/metrics.jsonl" "$work/r21/metrics.jsonl" "$work/r12/metrics.jsonl" <<'PY' || fail "logs differ"
import json, sys
logs = [[json.loads(l) for l in open(p) if '"train"' in l] for p in sys.argv[1:]]
for other in logs[1:]:
    assert [x["step"] for x in logs[0]] == [x["step"] for x in other], "different steps logged"
    for x, y in zip(logs[0], other):
        assert x["acc"] == y["acc"] and abs(x["loss"] - y["loss"]) <= 1e-3 * abs(x["loss"]), (x, y)
PY
    ;;
  kill)
    run="$work/k"
    "${mpi[@]}" -np 2 "$train" "${args[@]}" --steps 100000 --checkpoint-every 5 --eval-every 0 --run-dir "$run" &
    mp=$!
    for _ in $(seq 1200); do
      [[ -f "$run/checkpoint/state.json" ]] && grep -q '"step": [1-9][0-9]' "$run/checkpoint/state.json" && break
      sleep 0.1
    done
    grep -q '"step": [1-9][0-9]' "$run/checkpoint/state.json" || fail "no checkpoint of step >= 10 within 120 s"
    victim=""
    for p in $(pgrep -P "$mp"); do
      tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null | grep -qx 'OMPI_COMM_WORLD_RANK=1' && victim=$p
    done
    [[ -n $victim ]] || fail "rank 1's process not found among mpirun's children"
    t0=$(date +%s)
    kill -9 "$victim"
    rc=0
    wait "$mp" || rc=$?
    dt=$(($(date +%s) - t0))
    echo "kill -9 of rank 1: mpirun exited with status $rc after $dt s"
    ((rc != 0)) || fail "the job ended with status 0 after a rank was killed"
    ((dt <= 60)) || fail "the job took $dt s (> 60) to end after a rank was killed"
    "$check" "$run" || fail "a checkpoint is damaged after the kill"
    step=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["step"])' "$run/checkpoint/state.json")
    "$train" --resume "$run" --stop-after $((step + 3)) --threads 1 >"$work/resume.log"
    grep -q "continuing from step $step" "$work/resume.log" || fail "--resume did not continue from step $step"
    ;;
  diverge)
    rc=0
    # hkt-train with the fault injected from outside the library (tests/helpers/train_faults.cpp).
    HKT_TEST_DIVERGE=1 "${mpi[@]}" -np 2 "$bin/hkt-train-faults" "${args[@]}" --run-dir "$work/d" 2>"$work/err" || rc=$?
    cat "$work/err" >&2
    ((rc != 0)) || fail "diverged ranks: the run ended with status 0"
    grep -q "the ranks diverged" "$work/err" || fail "no divergence error"
    ;;
  experiment)
    # hkt-experiment with "launcher": each run trained by 2 ranks, the results table written.
    cat >"$work/grid.json" <<JSON
{"name": "dp", "out_dir": "$work/grid",
 "launcher": ["mpirun", "--allow-run-as-root", "--oversubscribe", "--bind-to", "none", "-np", "2"],
 "base": {"steps": 6, "batch_size": 8, "eval_every": 3, "log_every": 2,
          "data": {"seq_len": 32, "train_size": 64, "val_size": 16, "test_size": 16}},
 "tasks": {"synthetic": {}}, "models": {"hkt": {"model": "hkt-tiny"}}, "seeds": [1, 2]}
JSON
    "$bin/hkt-experiment" "$work/grid.json" >"$work/out" 2>&1 || { cat "$work/out" "$work"/grid/logs/* >&2; fail "hkt-experiment failed"; }
    for seed in 1 2; do
      python3 -c 'import json,sys; assert json.load(open(sys.argv[1]))["ranks"] == 2' \
        "$work/grid/synthetic/hkt/seed$seed/summary.json" || fail "seed $seed was not trained by 2 ranks"
    done
    grep -q "hkt" "$work/grid/results.md" || fail "no results.md"
    # A launcher that is not a list of strings is refused (exit 2).
    sed 's/"launcher": \[/"launcher": [1, /' "$work/grid.json" >"$work/bad.json"
    rc=0
    "$bin/hkt-experiment" "$work/bad.json" --out-dir "$work/bad" >"$work/out" 2>&1 || rc=$?
    ((rc == 2)) && grep -q '"launcher" must hold non-empty strings' "$work/out" || { cat "$work/out"; fail "bad launcher"; }
    ;;
  *) echo "distributed_test.sh: unknown mode '$mode'" >&2; exit 2 ;;
esac
echo "distributed_test.sh $mode: ok"
