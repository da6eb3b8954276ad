#!/usr/bin/env bash
# The whole test suite in one command (CI runs exactly this, via .ci/run):
#
#   1. setup      install the Debian packages that are missing
#   2. build      configure and build build/ (Release)
#   3. tests      ctest in build/
#   4. sanitize   an optimised (RelWithDebInfo) build with ASan+UBSan in build-asan/ and its ctest
#                 (skipped when HKT_SKIP_SANITIZE=1; CI runs it)
#   5. fuzz       libFuzzer on the safetensors reader for HKT_FUZZ_SECONDS
#                 (default 60) from the seeds in tests/fuzz/corpus
#   6. consumer   install build/ into a temporary prefix and build and run
#                 tests/consumer, an outside project that uses find_package(hkt)
#
# Extra cmake arguments for both trees can be given in HKT_CMAKE_ARGS (space
# separated); HKT_CUDA=ON builds the CUDA backend. Exits non-zero on any failure.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
jobs="$(nproc)"
read -r -a cmake_args <<<"${HKT_CMAKE_ARGS:-}"
start=$SECONDS

stage() { printf '\n== %s [%ds] ==\n' "$1" "$((SECONDS - start))"; }

stage "setup"
tools/setup.sh --test

stage "build (build/, Release)"
HKT_BUILD_DIR=build tools/build.sh "${cmake_args[@]}"

stage "tests (build/)"
ctest --test-dir build --output-on-failure -j "$jobs"

if [[ "${HKT_SKIP_SANITIZE:-0}" == 1 ]]; then
  stage "sanitize: SKIPPED (HKT_SKIP_SANITIZE=1)"
else
  stage "sanitize: build (build-asan/, RelWithDebInfo, ASan+UBSan)"
  HKT_BUILD_DIR=build-asan tools/build.sh "${cmake_args[@]}" \
    -DHKT_SANITIZE=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo -DHKT_BUILD_TOOLS=OFF
  stage "sanitize: tests (build-asan/)"
  # Leak checking is on. OpenBLAS and oneTBB currently report no leaks at exit
  # (checked with threaded BLAS and TBB loops); if a library ever does, list
  # only its frames in tools/lsan.supp, which is then picked up here.
  # LeakSanitizer needs to stop the process's threads (ptrace-like), which
  # some containers forbid; there it aborts every test. Probe it once, and
  # only if it cannot run at all, say so loudly and keep ASan+UBSan without it.
  detect_leaks=1
  probe="$(mktemp -d "${TMPDIR:-/tmp}/hkt-lsan-probe.XXXXXX")"
  printf 'int main() { return 0; }\n' >"$probe/p.cpp"
  if g++ -fsanitize=address "$probe/p.cpp" -o "$probe/p" &&
     ! ASAN_OPTIONS=detect_leaks=1 "$probe/p" >"$probe/out" 2>&1; then
    echo "WARNING: LeakSanitizer cannot run here ($(head -c 300 "$probe/out" | tr '\n' ' '));"
    echo "WARNING: running the sanitizer pass WITHOUT leak checking."
    detect_leaks=0
  fi
  rm -rf "$probe"
  lsan_options="print_suppressions=0"
  [[ -f tools/lsan.supp ]] && lsan_options="suppressions=$root/tools/lsan.supp:$lsan_options"
  ASAN_OPTIONS="detect_leaks=$detect_leaks:strict_string_checks=1:check_initialization_order=1" \
  LSAN_OPTIONS="$lsan_options" \
  UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1" \
    ctest --test-dir build-asan --output-on-failure -j "$jobs"
fi

fuzz_seconds="${HKT_FUZZ_SECONDS:-60}"
stage "fuzz: safetensors reader (libFuzzer + ASan/UBSan, ${fuzz_seconds}s)"
mkdir -p build-fuzz/corpus
clang++-14 -std=c++20 -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
  -Icore/include tests/fuzz/fuzz_safetensors.cpp core/src/*.cpp -o build-fuzz/fuzz_safetensors
if ! build-fuzz/fuzz_safetensors -max_total_time="$fuzz_seconds" -rss_limit_mb=2048 \
    build-fuzz/corpus tests/fuzz/corpus >build-fuzz/log 2>&1; then
  cat build-fuzz/log
  echo "fuzz: the safetensors reader crashed or threw something other than hkt::Error (input saved above)" >&2
  exit 1
fi
tail -n 2 build-fuzz/log

stage "consumer: install build/ and build tests/consumer against it"
tmp="$(mktemp -d "${TMPDIR:-/tmp}/hkt-consumer.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT
cmake --install build --prefix "$tmp/prefix" >/dev/null
cmake -S tests/consumer -B "$tmp/build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_PREFIX_PATH="$tmp/prefix" >/dev/null
cmake --build "$tmp/build" -j "$jobs"
stage "consumer: run"
"$tmp/build/hkt-consumer"

stage "all passed"
