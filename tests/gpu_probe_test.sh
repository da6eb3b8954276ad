#!/usr/bin/env bash
# tools/cuda-lab/gpu-probe with a stand-in for hkt-bench-gpu (CTest: gpu_probe_self_test; no
# GPU needed): the variants whose probe faults, hangs or reports results off the
# default kernels' are listed, each name once, in the order probed; knobs set
# around the script reach no probe; a failed reference probe lists nothing.
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
tmp="$(mktemp -d "${TMPDIR:-/tmp}/hkt-gpu-probe.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT
fail() {
  echo "gpu-probe-test: $*" >&2
  exit 1
}
stub() {  # stub NAME BODY: a stand-in bench that runs BODY for --probe
  printf '#!/usr/bin/env bash\n[[ "$1" == --probe ]] || exit 2\nknobs="${HKT_CUDA_ATTN_FWD:-}/${HKT_CUDA_ATTN_BWD:-}/${HKT_CUDA_ATTN_BWD_ACC:-}"\n%s\nexit 0\n' \
    "$2" >"$tmp/$1"
  chmod +x "$tmp/$1"
}
stub faulty 'case "$knobs" in
  mma-lean//) sleep 20 ;;     # hangs
  wgmma//) kill -SEGV $$ ;;   # faults
  /wgmma/) kill -ABRT $$ ;;   # the backward of the same name: listed once
  /fused8/) exit 3 ;;         # results off the defaults
  //) ;;                      # the reference
  */*/*?) exit 4 ;;           # a knob leaked in from outside
esac'
HKT_PROBE_TIMEOUT=2 HKT_CUDA_ATTN_BWD_ACC=regs bash "$root/tools/cuda-lab/gpu-probe" "$tmp/faulty" "$tmp/skip" >"$tmp/out" 2>&1
rc=$?
cat "$tmp/out"
[[ $rc == 1 ]] || fail "exit status $rc with failing variants, not 1"
[[ "$(cat "$tmp/skip")" == "mma-lean,wgmma,fused8" ]] || fail "skip list '$(cat "$tmp/skip")', not mma-lean,wgmma,fused8"
grep -q "HKT_CUDA_ATTN_FWD=mma-lean FAILED (hung past 2s)" "$tmp/out" || fail "the hang is not named"
grep -q "HKT_CUDA_ATTN_FWD=wgmma FAILED (killed by signal 11)" "$tmp/out" || fail "the fault is not named"
grep -q "HKT_CUDA_ATTN_BWD=fused8 FAILED (results off the default kernels')" "$tmp/out" || fail "wrong results not named"

stub fine ''
bash "$root/tools/cuda-lab/gpu-probe" "$tmp/fine" "$tmp/skip" >"$tmp/out" 2>&1 || fail "exit status $? when every variant passes"
[[ -z "$(cat "$tmp/skip")" ]] || fail "a skip list when every variant passed"
grep -q "every variant passed" "$tmp/out" || fail "no summary line"

stub nogpu 'exit 77'
echo stale >"$tmp/skip"
bash "$root/tools/cuda-lab/gpu-probe" "$tmp/nogpu" "$tmp/skip" >"$tmp/out" 2>&1
rc=$?
[[ $rc == 1 && -z "$(cat "$tmp/skip")" ]] || fail "a failed reference probe: exit $rc, skip list '$(cat "$tmp/skip")'"
grep -q "the default kernels' probe failed: no variant probed" "$tmp/out" || fail "the failed reference is not named"
bash "$root/tools/cuda-lab/gpu-probe" "$tmp/fine" >/dev/null 2>&1
[[ $? == 2 ]] || fail "a missing argument is not a usage error"
echo "gpu-probe-test: passed"
