#!/usr/bin/env bash
# The main job in one command: install what is missing, build, then train HKT
# and the MHA baseline briefly on generated ListOps and print a result table.
#
#   tools/quickstart.sh [hkt-compare args...]
#
# Arguments are passed to build/bin/hkt-compare after the quick-start settings
# below, so they override them (e.g. --steps 1000, --seed 1; --help lists them).
# The runs and the table (results.md) go to runs/quickstart/. Extra cmake
# arguments can be given in HKT_CMAKE_ARGS (space separated); HKT_CUDA=ON
# builds the CUDA backend.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

echo "== setup =="
tools/setup.sh
echo "== build (build/) =="
read -r -a cmake_args <<<"${HKT_CMAKE_ARGS:-}"
HKT_BUILD_DIR=build tools/build.sh "${cmake_args[@]}"

# A few minutes on 2 cores: ListOps at T = 128 (4000 generated training
# examples), the small presets narrowed to D = 64, 300 steps of 32 each.
args=(--task listops --seq-len 128 --train-size 4000 --val-size 500 --test-size 500 --data-seed 0
      --models hkt-small,mha-small --dim 64
      --steps 300 --batch-size 32 --lr 1e-3 --warmup 30 --schedule cosine
      --eval-every 150 --log-every 50 --seed 0 --run-dir runs/quickstart --overwrite)  # a rerun replaces the last
echo "== run: build/bin/hkt-compare ${args[*]}${*:+ $*} =="
exec build/bin/hkt-compare "${args[@]}" "$@"
