#!/usr/bin/env bash
# tools/gpu-experiment on a tiny grid with --device cpu (CTest: gpu_experiment): it trains within
# its time limit (only the runs --only names, when given), packs the table, the runs' small files
# and the best checkpoints, and the packed runs, unpacked on another machine, are what
# tools/grid-archive needs to keep them.
#
#   tools/tests/gpu_experiment_test.sh BIN_DIR
bin="$1"
source "$(dirname "${BASH_SOURCE[0]}")/tool_test_lib.sh" grid-archive gpu_experiment_test
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"

grid() {  # grid OUT_DIR: the tiny experiment file, its runs in OUT_DIR
  cat <<JSON
{"name": "tiny", "out_dir": "$1",
 "base": {"steps": 4, "batch_size": 4, "eval_every": 2, "eval_batches": 1, "log_every": 2,
          "data": {"seq_len": 16, "train_size": 32, "val_size": 16, "test_size": 8}},
 "tasks": {"synthetic": {}},
 "models": {"mha": {"model": "mha-tiny"}, "hkt": {"model": "hkt-tiny"}},
 "seeds": [1]}
JSON
}
grid "$tmp/runs" >"$tmp/grid.json"
# --only: the runs that match, and no other.
HKT_BIN="$bin" bash "$root/tools/gpu-experiment" "$tmp/grid.json" --device cpu --jobs 1 --minutes 2 --only /hkt/ \
  --out "$tmp/out0" >"$tmp/log0" 2>&1 || { cat "$tmp/log0"; fail "gpu-experiment --only gave exit status $?"; }
states="$("$bin/hkt-experiment" "$tmp/grid.json" --list --json |
  python3 -c 'import json,sys; print(" ".join(r["id"] + "=" + r["state"] for r in json.load(sys.stdin)["runs"]))')"
[[ "$states" == "synthetic/mha/seed1=new synthetic/hkt/seed1=done" ]] || fail "--only /hkt/ left: $states"
set +e
HKT_BIN="$bin" bash "$root/tools/gpu-experiment" "$tmp/grid.json" --device cpu --jobs 1 --minutes 2 \
  --out "$tmp/out" >"$tmp/log" 2>&1
rc=$?
set -e
[[ $rc -eq 0 ]] || { cat "$tmp/log"; fail "gpu-experiment gave exit status $rc"; }
[[ -s "$tmp/out/tiny-results.md" ]] || fail "no results table"
for m in mha hkt; do
  [[ -s "$tmp/out/tiny-best-$m.tar.xz" ]] || fail "no best checkpoints of $m"
done
# Unpacked elsewhere, the runs are finished runs the archive keeps whole.
mkdir -p "$tmp/there"
tar -xJf "$tmp/out/tiny-runs.tar.xz" -C "$tmp/there"
grid "$tmp/there" >"$tmp/there.json"
run_tool "$tmp/o1" save "$tmp/there.json" --archive "$tmp/arch" --bin "$bin"
[[ $rc -eq 0 ]] && grep -q "^grid-archive: 2 saved" "$tmp/o1" || { cat "$tmp/o1"; fail "the unpacked runs were not archived"; }
for m in mha hkt; do
  for f in config.json data.json metrics.jsonl summary.json test_predictions.csv; do
    [[ -s "$tmp/arch/synthetic/$m/seed1/$f" ]] || fail "$m: $f not packed"
  done
done
# Bad use: exit 2.
set +e
HKT_BIN="$bin" bash "$root/tools/gpu-experiment" "$tmp/nope.json" >/dev/null 2>&1
[[ $? -eq 2 ]] || fail "a missing experiment file did not give exit status 2"
HKT_BIN="$bin" bash "$root/tools/gpu-experiment" "$tmp/grid.json" --device tpu >/dev/null 2>&1
[[ $? -eq 2 ]] || fail "an unknown device did not give exit status 2"
set -e
echo "gpu_experiment_test: ok"
