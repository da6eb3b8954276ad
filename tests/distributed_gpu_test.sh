#!/usr/bin/env bash
# Data-parallel training on GPUs with NCCL (docs/distributed.md, "GPUs"). Without a usable GPU
# (no device, or a build without the CUDA backend) it exits 77, which CTest reports as Skipped,
# and says why.
#
#   tests/distributed_gpu_test.sh build/bin
#
# With a GPU:
#   - world size 1: hkt-train --device cuda trains; under `mpirun -np 1` it ends with the same bytes;
#     hkt-train-faults with HKT_TEST_NCCL_ONE_RANK=1: its gradient buckets go through the device path (packed into
#     device buffers, summed by a one-rank NCCL communicator on its own stream, unpacked) and the
#     run ends with the same bytes as without (a sum over one rank changes nothing)
#   - 2 ranks: with 2 GPUs or more, 2 ranks (global batch 16) against 1 rank: relative L2
#     difference per tensor <= 1e-4, and two 2-rank runs end with the same bytes; with one GPU,
#     NCCL allows no two ranks on one GPU: the run is refused with a clear error (exit 2)
set -uo pipefail
bin="$(realpath "${1:?usage: distributed_gpu_test.sh BIN_DIR}")"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
export OMPI_MCA_btl_vader_single_copy_mechanism=none OMPI_MCA_rmaps_base_oversubscribe=1
mpi=(mpirun --allow-run-as-root --oversubscribe --bind-to none)
args=(--task synthetic --train-size 256 --val-size 64 --test-size 64 --seq-len 32 --model hkt-tiny --dropout 0.1
      --batch-size 16 --steps 20 --warmup 2 --eval-every 10 --checkpoint-every 10 --log-every 5 --seed 3
      --threads 1 --quiet --device cuda)
fail() { echo "FAIL: $*" >&2; exit 1; }
same() {  # same RUN_A RUN_B WHAT: the weights and optimizer state byte for byte
  for f in checkpoint/model.safetensors checkpoint/optimizer.safetensors; do
    cmp "$1/$f" "$2/$f" || fail "$3: $f differs"
  done
}

rc=0
"$bin/hkt-train" "${args[@]}" --run-dir "$work/one" >"$work/out" 2>&1 || rc=$?
if ((rc == 2)) && grep -q -- "--device cuda: CUDA is not available" "$work/out"; then
  echo "SKIPPED: no GPU here, nothing of NCCL was run: $(grep -m1 -- "--device cuda" "$work/out")"
  exit 77
fi
((rc == 0)) || { cat "$work/out"; fail "hkt-train --device cuda (one process): exit $rc"; }
echo "world size 1 on the GPU: trained"

"${mpi[@]}" -np 1 "$bin/hkt-train" "${args[@]}" --run-dir "$work/np1" || fail "mpirun -np 1 --device cuda"
same "$work/one" "$work/np1" "mpirun -np 1"

HKT_TEST_NCCL_ONE_RANK=1 "$bin/hkt-train-faults" "${args[@]}" --run-dir "$work/nccl1" 2>"$work/err" ||
  { cat "$work/err"; fail "HKT_TEST_NCCL_ONE_RANK=1 --device cuda"; }
cat "$work/err"
grep -q "summed by a communicator of one rank" "$work/err" ||
  fail "HKT_TEST_NCCL_ONE_RANK=1: the buckets did not go through NCCL (a build without HKT_NCCL?)"
same "$work/one" "$work/nccl1" "a one-rank NCCL sum"
echo "world size 1 with a one-rank NCCL communicator: the same bytes"

gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ' || true)
[[ -n ${CUDA_VISIBLE_DEVICES:-} ]] && gpus=$(tr ',' '\n' <<<"$CUDA_VISIBLE_DEVICES" | grep -c .)
echo "GPUs visible: $gpus"
if ((gpus >= 2)); then
  "${mpi[@]}" -np 2 "$bin/hkt-train" "${args[@]}" --run-dir "$work/two-a" || fail "2 ranks on 2 GPUs"
  "${mpi[@]}" -np 2 "$bin/hkt-train" "${args[@]}" --run-dir "$work/two-b" || fail "2 ranks on 2 GPUs (again)"
  same "$work/two-a" "$work/two-b" "two 2-rank runs on GPUs"
  python3 "$here/dist_compare.py" "$work/one/checkpoint/model.safetensors" \
    "$work/two-a/checkpoint/model.safetensors" --rtol 1e-4 || fail "2 ranks on GPUs differ from 1 rank"
  echo "2 ranks on 2 GPUs: bit-identical run to run, within 1e-4 of 1 rank"
else
  rc=0
  "${mpi[@]}" -np 2 "$bin/hkt-train" "${args[@]}" --run-dir "$work/two" >"$work/out" 2>&1 || rc=$?
  cat "$work/out"
  ((rc == 2)) && grep -q "NCCL needs one GPU per process" "$work/out" ||
    fail "2 ranks on one GPU: exit $rc, expected 2 with a clear error"
  echo "2 ranks on one GPU: refused (NCCL allows one rank per GPU)"
fi
echo "distributed_gpu_test.sh: ok"
