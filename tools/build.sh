#!/usr/bin/env bash
# Configures and builds hkt with Ninja, using every core.
#
#   tools/build.sh [extra cmake args...]
#
# Build tree: build/ (or $HKT_BUILD_DIR, relative to the repository root).
# Release by default; the CUDA backend is built when nvcc is found (on PATH or
# in /usr/local/cuda/bin; no GPU is needed to build it), unless HKT_CUDA=OFF is
# set in the environment (HKT_CUDA=ON insists on it).
# Extra arguments go to the cmake configure step after the defaults, so they
# override them (e.g. -DCMAKE_BUILD_TYPE=Debug).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build_dir="${HKT_BUILD_DIR:-build}"
[[ "$build_dir" = /* ]] || build_dir="$root/$build_dir"

# A tree configured earlier with another generator cannot be reused as is:
# drop its cache (not the built objects' sources) and configure afresh.
cache="$build_dir/CMakeCache.txt"
if [[ -f "$cache" ]] && ! grep -q '^CMAKE_GENERATOR:INTERNAL=Ninja$' "$cache"; then
  echo "build: $build_dir was configured with another generator; reconfiguring it for Ninja"
  rm -rf "$cache" "$build_dir/CMakeFiles"
fi

cuda_default=OFF
if command -v nvcc >/dev/null || [[ -x /usr/local/cuda/bin/nvcc ]]; then cuda_default=ON; fi
cmake -S "$root" -B "$build_dir" -G Ninja \
  -DCMAKE_BUILD_TYPE=Release \
  -DHKT_CUDA="${HKT_CUDA:-$cuda_default}" \
  "$@"
cmake --build "$build_dir" -j "$(nproc)"
