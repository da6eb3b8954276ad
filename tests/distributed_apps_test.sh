#!/usr/bin/env bash
# hkt-eval and hkt-compare under an MPI launcher (docs/distributed.md, "hkt-compare and
# hkt-eval"), against the same commands in one process.
#
#   tests/distributed_apps_test.sh MODE build/bin
#
# MODE:
#   eval     a trained run evaluated by 2 ranks (mpirun -np 2 hkt-eval, and hkt-eval --launcher
#            "mpirun ... -np 2") gives the 1-process figures: the same examples, accuracy,
#            per-class accuracy and confusion matrix, the loss to 1e-12 relative (the ranks'
#            partial sums of float64 losses are added in another order); "ranks" is 2;
#            a bad launcher exits 2
#   compare  hkt-compare --launcher "mpirun ... -np 2" trains each preset with 2 ranks
#            (summary.json's "ranks"), ends within 1e-5 of the 1-process weights (the float32
#            tolerance of distributed_equivalence) with the same accuracies in results.md
#            (the time column aside); rank 0 alone prints the table
#   nccl     without NCCL (a build without CUDA or HKT_NCCL), 2 ranks with --device cuda are
#            refused with a clear error and exit 2, before anything is written
set -euo pipefail
mode="${1:?usage: distributed_apps_test.sh MODE BIN_DIR}"
bin="$(realpath "${2:?usage: distributed_apps_test.sh MODE BIN_DIR}")"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
export OMPI_MCA_btl_vader_single_copy_mechanism=none OMPI_MCA_rmaps_base_oversubscribe=1
mpi=(mpirun --allow-run-as-root --oversubscribe --bind-to none)
launcher="mpirun --allow-run-as-root --oversubscribe --bind-to none -np 2"
fail() { echo "FAIL: $*" >&2; exit 1; }
data=(--task synthetic --train-size 128 --val-size 32 --test-size 50 --seq-len 32)

case "$mode" in
  eval)
    "$bin/hkt-train" "${data[@]}" --model hkt-tiny --batch-size 8 --steps 10 --eval-every 5 --seed 4 \
      --threads 1 --quiet --run-dir "$work/run"
    # 50 test examples in batches of 8: 7 batches, split 3 + 4 over 2 ranks (the last one short).
    "$bin/hkt-eval" "$work/run" --threads 1 --json "$work/one.json" >"$work/one.out"
    "${mpi[@]}" -np 2 "$bin/hkt-eval" "$work/run" --threads 1 --json "$work/two.json" >"$work/two.out"
    "$bin/hkt-eval" "$work/run" --threads 1 --split val --launcher "$launcher" --json "$work/val2.json" >"$work/val2.out"
    "$bin/hkt-eval" "$work/run" --threads 1 --split val --json "$work/val1.json" >/dev/null
    # Rank 0 alone prints.
    [[ $(grep -c '^hkt-eval: ' "$work/two.out") == 1 ]] || { cat "$work/two.out"; fail "not one report"; }
    grep -q "(split over 2 processes)" "$work/two.out" || fail "the report does not say it was split"
    python3 - "$work/one.json" "$work/two.json" "$work/val1.json" "$work/val2.json" <<'PY' || fail "2 ranks differ from 1"
import json, sys
for a, b in [(sys.argv[1], sys.argv[2]), (sys.argv[3], sys.argv[4])]:
    x, y = json.load(open(a)), json.load(open(b))
    assert x["ranks"] == 1 and y["ranks"] == 2, (x["ranks"], y["ranks"])
    for k in ("examples", "accuracy", "per_class_accuracy", "confusion", "split", "step"):
        assert x[k] == y[k], (a, k, x[k], y[k])
    assert abs(x["loss"] - y["loss"]) <= 1e-12 * abs(x["loss"]), (a, x["loss"], y["loss"])
    print(b, "examples", y["examples"], "accuracy", y["accuracy"], "loss difference", abs(x["loss"] - y["loss"]))
PY
    # A launcher that cannot be started, and an empty one: exit 2 with the reason.
    rc=0
    "$bin/hkt-eval" "$work/run" --launcher "no-such-launcher-hkt -np 2" >"$work/bad.out" 2>&1 || rc=$?
    ((rc == 2)) && grep -q "cannot start 'no-such-launcher-hkt'" "$work/bad.out" || { cat "$work/bad.out"; fail "bad launcher: exit $rc"; }
    rc=0
    "$bin/hkt-eval" "$work/run" --launcher " " >"$work/bad.out" 2>&1 || rc=$?
    ((rc == 2)) && grep -q "an empty command" "$work/bad.out" || { cat "$work/bad.out"; fail "empty launcher: exit $rc"; }
    # --launcher inside a job is refused on every rank (it would start a job per rank).
    rc=0
    "${mpi[@]}" -np 2 "$bin/hkt-eval" "$work/run" --launcher "$launcher" >"$work/bad.out" 2>&1 || rc=$?
    ((rc != 0)) && grep -q "already runs under an MPI launcher" "$work/bad.out" || { cat "$work/bad.out"; fail "nested launcher: exit $rc"; }
    ;;
  compare)
    args=("${data[@]}" --models hkt-tiny,mha-tiny --batch-size 8 --steps 8 --eval-every 4 --seed 5 --threads 1)
    "$bin/hkt-compare" "${args[@]}" --quiet --run-dir "$work/one" >"$work/one.out"
    "$bin/hkt-compare" "${args[@]}" --launcher "$launcher" --run-dir "$work/two" >"$work/two.out"
    [[ $(grep -c '^| model |' "$work/two.out") == 1 ]] || { cat "$work/two.out"; fail "not one table"; }
    for m in hkt-tiny mha-tiny; do
      python3 -c 'import json,sys; assert json.load(open(sys.argv[1]))["ranks"] == 2' "$work/two/$m/summary.json" ||
        fail "$m was not trained by 2 ranks"
      python3 "$here/dist_compare.py" "$work/one/$m/checkpoint/model.safetensors" \
        "$work/two/$m/checkpoint/model.safetensors" --rtol 1e-5 || fail "$m: 2 ranks differ from 1"
    done
    # The table but the time per step (last column).
    strip() { grep '^| [a-z]' "$1" | sed 's/| [^|]* |$//'; }
    diff <(strip "$work/one/results.md") <(strip "$work/two/results.md") || fail "the tables differ"
    ;;
  nccl)
    rc=0
    "${mpi[@]}" -np 2 "$bin/hkt-train" "${data[@]}" --model hkt-tiny --batch-size 8 --steps 2 --device cuda \
      --threads 1 --run-dir "$work/gpu" >"$work/out" 2>&1 || rc=$?
    cat "$work/out"
    ((rc == 2)) || fail "2 ranks with --device cuda without NCCL: exit $rc, expected 2"
    grep -q "the gradients of ranks on GPUs are summed with NCCL" "$work/out" || fail "no clear error"
    [[ ! -e "$work/gpu/config.json" ]] || fail "the refused run wrote its folder"
    ;;
  *) echo "distributed_apps_test.sh: unknown mode '$mode'" >&2; exit 2 ;;
esac
echo "distributed_apps_test.sh $mode: ok"
