#!/usr/bin/env bash
# The whole test suite in one command (CI runs exactly this, via .ci/run):
#
#   1. setup      install the Debian packages that are missing
#   2. build      configure and build build/ (Release)
#   3. tests      ctest in build/
#   4. sanitize   an optimised build (-O1, line tables) with ASan+UBSan in build-asan/ and its ctest
#                 (the sanitizer and fuzz trees are built without MPI: Open MPI is not instrumented and
#                 reports its own allocations as leaks; the MPI tests run in build/)
#                 (skipped when HKT_SKIP_SANITIZE=1; CI runs it)
#   5. tsan       ThreadSanitizer on the suites of the TBB-parallel kernels: a static
#                 RelWithDebInfo build of the library and those suites only, in build-tsan/
#                 (skipped when HKT_SKIP_SANITIZE=1)
#   6. fuzz       libFuzzer (clang++-14, ASan+UBSan) on every reader of outside data, in
#                 build-fuzz/: HKT_FUZZ_SECONDS (default 20) per target, nproc targets at
#                 a time, from the seeds in tests/fuzz/corpus/<target>/
#   7. consumer   install build/ (shared) into a temporary prefix and build and run
#                 tests/consumer, an outside project that uses find_package(hkt), and the
#                 program of docs/getting-started.md; then the same against the static
#                 build-tsan/ (with -fsanitize=thread), unless the tsan stage was skipped
#
# Extra cmake arguments for both trees can be given in HKT_CMAKE_ARGS (space
# separated); build/ has the CUDA backend and tools/cuda-lab when nvcc exists (HKT_CUDA=OFF:
# not; without a GPU its suites report Skipped), the sanitizer trees never (ASan and
# the CUDA runtime do not mix). HKT_BUILD_PREFIX (default
# "build") names the trees: $HKT_BUILD_PREFIX, -asan, -tsan, -fuzz. Exits
# non-zero on any failure. docs/reliability.md describes stages 4-6.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
jobs="$(nproc)"
read -r -a cmake_args <<<"${HKT_CMAKE_ARGS:-}"
b="${HKT_BUILD_PREFIX:-build}"
start=$SECONDS

stage() { printf '\n== %s [%ds] ==\n' "$1" "$((SECONDS - start))"; }

stage "setup"
tools/setup.sh --test

stage "build ($b/, Release)"
# With the CUDA backend, build/ compiles tools/cuda-lab too (-DHKT_CUDA_LAB=ON: the kernels
# that are not the library's defaults and hkt-bench-gpu), so that the lab does not rot.
HKT_BUILD_DIR="$b" tools/build.sh -DHKT_CUDA_LAB=ON "${cmake_args[@]}"

stage "tests ($b/)"
ctest --test-dir "$b" --output-on-failure -j "$jobs"

if [[ "${HKT_SKIP_SANITIZE:-0}" == 1 ]]; then
  stage "sanitize: SKIPPED (HKT_SKIP_SANITIZE=1)"
else
  # -O1 with line tables only (-g1): reports keep file:line, and the build takes
  # about half the time of -O2 -g on 2 cores.
  stage "sanitize: build ($b-asan/, -O1 -g1, ASan+UBSan)"
  HKT_BUILD_DIR="$b-asan" tools/build.sh "${cmake_args[@]}" \
    -DHKT_SANITIZE=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g1" \
    -DHKT_BUILD_TOOLS=OFF -DHKT_CUDA=OFF -DHKT_MPI=OFF
  stage "sanitize: tests ($b-asan/)"
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
    ctest --test-dir "$b-asan" --output-on-failure -j "$jobs"

  # ThreadSanitizer: only the library and the suites that drive the TBB-parallel
  # kernels (static library, so the consumer stage can also check a static install).
  stage "tsan: build ($b-tsan/, RelWithDebInfo, static, 3 suites)"
  tsan_tests=(test_determinism test_fused_attention test_linalg tsan_probe)
  # (-O2: at -O1 oneTBB's inlined start_for code is instrumented differently and TSan
  # reports races inside it that the annotations in kernels/cpu/parallel.hpp cover at -O2.
  # -g1: line tables are all a report's stacks need, and build a quarter faster than -g.)
  cmake -S . -B "$b-tsan" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O2 -g1 -DNDEBUG" \
    "${cmake_args[@]}" -DHKT_TSAN=ON -DHKT_SHARED=OFF -DHKT_BUILD_TOOLS=OFF -DHKT_CUDA=OFF -DHKT_MPI=OFF >/dev/null
  cmake --build "$b-tsan" -j "$jobs" --target "${tsan_tests[@]}"
  stage "tsan: tests ($b-tsan/)"
  # OpenBLAS runs its own (uninstrumented) threads: keep it on the calling thread so that
  # only our TBB parallelism is checked. tools/tsan.supp lists the oneTBB-internal frames.
  regex="^($(IFS='|'; echo "${tsan_tests[*]}")|tsan_probe_detects_race)\$"
  # The float64 gradient checks (one tile each: no parallel path the other cases miss)
  # are left out here; they run in the two stages above.
  OPENBLAS_NUM_THREADS=1 HKT_TEST_EXCLUDE="*gradcheck*" \
  TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:suppressions=$root/tools/tsan.supp" \
    ctest --test-dir "$b-tsan" --output-on-failure -R "$regex"
fi

fuzz_seconds="${HKT_FUZZ_SECONDS:-20}"
fuzz_targets=(safetensors cifar idx listops imdb config checkpoint experiment text npy npz)
stage "fuzz: build ($b-fuzz/, clang++-14, libFuzzer + ASan/UBSan)"
cmake -S . -B "$b-fuzz" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g1" \
  -DCMAKE_CXX_COMPILER=clang++-14 \
  -DHKT_CUDA=OFF -DHKT_MPI=OFF -DHKT_FUZZ=ON -DHKT_SHARED=OFF -DHKT_BUILD_TESTS=OFF -DHKT_BUILD_TOOLS=OFF >/dev/null
cmake --build "$b-fuzz" -j "$jobs" --target "${fuzz_targets[@]/#/fuzz_}"
# Each target: the seeds (and the regression inputs kept with them) first, then new inputs
# for fuzz_seconds. Any crash, leak, sanitizer report or exception other than hkt::Error fails.
# libFuzzer runs on one thread: $jobs targets run side by side, each for the whole time.
fuzz_one() {  # fuzz_one TARGET: its output in $b-fuzz/log-TARGET
  mkdir -p "$b-fuzz/corpus/$1"
  ASAN_OPTIONS="detect_leaks=${detect_leaks:-1}" "$b-fuzz/fuzz/fuzz_$1" -max_total_time="$fuzz_seconds" \
    -rss_limit_mb=2048 -timeout=20 -max_len=16384 -artifact_prefix="$b-fuzz/crash-$1-" \
    "$b-fuzz/corpus/$1" "tests/fuzz/corpus/$1" >"$b-fuzz/log-$1" 2>&1
}
for ((i = 0; i < ${#fuzz_targets[@]}; i += jobs)); do
  batch=("${fuzz_targets[@]:i:jobs}")
  stage "fuzz: ${batch[*]} (${fuzz_seconds}s each, side by side)"
  pids=()
  for t in "${batch[@]}"; do
    fuzz_one "$t" &
    pids+=("$!")
  done
  for k in "${!batch[@]}"; do
    t="${batch[k]}"
    if ! wait "${pids[k]}"; then
      kill "${pids[@]}" 2>/dev/null || true
      tail -n 60 "$b-fuzz/log-$t"
      echo "fuzz: the $t reader crashed, leaked or threw something other than hkt::Error;" \
           "the input is saved as $b-fuzz/crash-$t-* (replay: $b-fuzz/fuzz/fuzz_$t FILE)" >&2
      exit 1
    fi
    echo "$t: $(grep -E "^Done|stat::number_of_executed_units" "$b-fuzz/log-$t" | tail -n 1)"
  done
done

consumer() {  # consumer BUILD_TREE LABEL [cmake args for the consumer...]
  local tree=$1 label=$2; shift 2
  stage "consumer ($label): install $tree/ and build tests/consumer against it"
  local tmp
  tmp="$(mktemp -d "${TMPDIR:-/tmp}/hkt-consumer.XXXXXX")"
  tmps+=("$tmp")
  cmake --install "$tree" --prefix "$tmp/prefix" >/dev/null
  cmake -S tests/consumer -B "$tmp/build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_PREFIX_PATH="$tmp/prefix" "$@" >/dev/null
  cmake --build "$tmp/build" -j "$jobs"
  stage "consumer ($label): run"
  HKT_NUM_THREADS=1 "$tmp/build/hkt-consumer"
  (cd "$tmp/build" && ./getting-started)
}
tmps=()
trap 'rm -rf "${tmps[@]}"' EXIT
consumer "$b" "shared"
if [[ "${HKT_SKIP_SANITIZE:-0}" != 1 ]]; then
  OPENBLAS_NUM_THREADS=1 TSAN_OPTIONS="halt_on_error=1:suppressions=$root/tools/tsan.supp" \
    consumer "$b-tsan" "static, tsan" -DCMAKE_CXX_FLAGS=-fsanitize=thread -DCMAKE_EXE_LINKER_FLAGS=-fsanitize=thread
fi

stage "all passed"
