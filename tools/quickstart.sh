#!/usr/bin/env bash
# The main job in one command: install what is missing, build, run the demo.
#
#   tools/quickstart.sh [demo args...]
#
# Arguments are passed to build/tools/hkt-demo. Extra cmake arguments can be
# given in HKT_CMAKE_ARGS (space separated); HKT_CUDA=ON builds the CUDA backend.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

echo "== setup =="
tools/setup.sh
echo "== build (build/) =="
read -r -a cmake_args <<<"${HKT_CMAKE_ARGS:-}"
HKT_BUILD_DIR=build tools/build.sh "${cmake_args[@]}"
echo "== run: build/tools/hkt-demo${*:+ $*} =="
exec build/tools/hkt-demo "$@"
