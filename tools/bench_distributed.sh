#!/usr/bin/env bash
# Step time of data-parallel training on this machine (docs/distributed.md, "Measured here").
#
#   tools/bench_distributed.sh [build/bin] [steps]
#
# hkt-small on the synthetic task at T = 1024, global batch 8, `steps` steps (default 6):
#   1 rank x 2 threads;  2 ranks x 1 thread (overlap);  2 ranks x 1 thread (--no-overlap).
# Prints per configuration the mean step time (summary.json's s_per_step: the steps alone,
# the first included) and the share of it spent waiting for the all-reduces after the
# backward (comm_share: what overlap did not hide). Needs mpirun (openmpi-bin).
set -euo pipefail
bin="$(realpath "${1:-build/bin}")"
steps="${2:-6}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
export OMPI_MCA_btl_vader_single_copy_mechanism=none
mpi=(mpirun --allow-run-as-root --oversubscribe --bind-to none)
args=(--task synthetic --seq-len 1024 --train-size 64 --val-size 8 --test-size 8 --model hkt-small
      --batch-size 8 --steps "$steps" --eval-every 0 --log-every 0 --quiet)
report() {
  python3 - "$1" "$2" <<'PY'
import json, sys
s = json.load(open(sys.argv[2] + "/summary.json"))
print(f"{sys.argv[1]:<34} {s['s_per_step'] * 1000:8.0f} ms/step   comm wait {100 * s['comm_share']:5.1f} %")
PY
}
echo "hkt-small, T 1024, global batch 8, $steps steps; $(nproc) cores; load average: $(cut -d' ' -f1-3 /proc/loadavg)"
"$bin/hkt-train" "${args[@]}" --threads 2 --run-dir "$work/one"
report "1 rank x 2 threads" "$work/one"
"${mpi[@]}" -np 2 "$bin/hkt-train" "${args[@]}" --threads 1 --run-dir "$work/two"
report "2 ranks x 1 thread, overlap" "$work/two"
"${mpi[@]}" -np 2 "$bin/hkt-train" "${args[@]}" --threads 1 --no-overlap --run-dir "$work/two-no"
report "2 ranks x 1 thread, no overlap" "$work/two-no"
