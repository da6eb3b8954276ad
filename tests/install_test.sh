#!/usr/bin/env bash
# A user's install: cmake --install into a fresh prefix, then the README's tour from
# PREFIX/bin alone (PATH = PREFIX/bin and the system's folders; no file of the build or
# source tree): --version, hkt-train, hkt-eval, hkt-experiment on the installed example
# file (PREFIX/share/hkt/experiments/examples/tiny.json), hkt-data --help, the text task and
# hkt-predict on the installed motif example, the tokens task (a .npy token array) and the series
# task (a .npz of float features) with hkt-small, evaluated, with predictions; and the op
# harness and the CMake helper where an installed project finds them.
#   tests/install_test.sh BUILD_DIR
set -euo pipefail
build="$(realpath "$1")"
tmp="$(mktemp -d "${TMPDIR:-/tmp}/hkt-install.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT
fail() { echo "install_test: FAILED: $*" >&2; exit 1; }
p="$tmp/prefix"
cmake --install "$build" --prefix "$p" >"$tmp/install.log" 2>&1 || { cat "$tmp/install.log"; fail "cmake --install"; }
apps=(hkt-train hkt-compare hkt-experiment hkt-eval hkt-analyze hkt-plot hkt-predict)
for exe in "${apps[@]}" hkt-data analyze-grid budget-curve; do
  [[ -x $p/bin/$exe ]] || fail "PREFIX/bin/$exe was not installed"
done
for f in share/hkt/op_harness/helpers/op_harness.hpp share/hkt/op_harness/helpers/op_harness.cpp \
         share/hkt/experiments/examples/tiny.json; do
  [[ -f $p/$f ]] || fail "PREFIX/$f was not installed"
done
grep -q "function(hkt_add_op_harness" "$p"/lib*/cmake/hkt/hktConfig.cmake || fail "hktConfig.cmake has no hkt_add_op_harness"
# The installed executables find libhkt in the prefix, not in the build tree.
for exe in "${apps[@]}"; do
  libs=$(ldd "$p/bin/$exe")
  grep -q "not found" <<<"$libs" && fail "$exe: a library is not found: $(grep 'not found' <<<"$libs")"
  grep -qF "$build" <<<"$libs" && fail "$exe links a library of the build tree: $(grep -F "$build" <<<"$libs")"
done
mkdir "$tmp/work"
cd "$tmp/work"
run() { env -i PATH="$p/bin:/usr/local/bin:/usr/bin:/bin" HOME="$tmp/work" HKT_NUM_THREADS=1 "$@"; }
for exe in "${apps[@]}"; do
  out=$(run "$exe" --version) || fail "$exe --version exited non-zero"
  grep -q "^$exe $(sed -n 's/^#define HKT_VERSION_STRING "\(.*\)"/\1/p' "$p/include/hkt/version.hpp")" <<<"$out" ||
    fail "$exe --version printed '$out'"
done
run hkt-data --help >/dev/null || fail "hkt-data --help"
small=(--task synthetic --model hkt-tiny --train-size 64 --val-size 16 --test-size 16 --seq-len 16 --batch-size 8)
run hkt-train "${small[@]}" --steps 8 --eval-every 4 --run-dir run --quiet || fail "hkt-train from PREFIX/bin"
[[ -f run/summary.json ]] || fail "hkt-train wrote no summary.json"
run hkt-eval run >eval.txt || { cat eval.txt; fail "hkt-eval from PREFIX/bin"; }
grep -qi "accuracy" eval.txt || { cat eval.txt; fail "hkt-eval printed no accuracy"; }
start=$SECONDS
run hkt-experiment "$p/share/hkt/experiments/examples/tiny.json" >exp.txt 2>&1 || { cat exp.txt; fail "hkt-experiment on the example file"; }
echo "the example experiment took $((SECONDS - start)) s"
for m in hkt mha; do [[ -f runs/tiny/synthetic/$m/seed1/summary.json ]] || { cat exp.txt; fail "no finished run for $m"; }; done
[[ -f runs/tiny/results.md ]] || fail "hkt-experiment wrote no results.md"
# Your own data from the installed prefix: the text task on the installed DNA-motif example,
# evaluated, and predictions for its unlabelled rows.
ex="$p/share/hkt/experiments/examples"
run hkt-train --task text --train-file "$ex/motif-train.tsv" --tokenizer chars --model hkt-tiny --steps 8 \
  --batch-size 16 --eval-every 4 --run-dir motif --quiet || fail "hkt-train --task text from PREFIX/bin"
run hkt-eval motif >motif-eval.txt || { cat motif-eval.txt; fail "hkt-eval of the text run"; }
run hkt-predict motif "$ex/motif-new.tsv" --out motif-new.csv >/dev/null 2>&1 || fail "hkt-predict from PREFIX/bin"
[[ $(wc -l <motif-new.csv) == 21 ]] || fail "hkt-predict wrote $(wc -l <motif-new.csv) lines, expected a header and 20 rows"
# Arrays from the installed prefix: hkt-small on the .npy token array (labels in a second .npy)
# and on the float series file, each evaluated, with predictions for the unlabelled arrays.
run hkt-train --task tokens --train-file "$ex/tokens-train.npy" --train-labels "$ex/tokens-train-labels.npy" \
  --pad-id 0 --model hkt-small --steps 6 --batch-size 16 --eval-every 3 --run-dir tokens --quiet ||
  fail "hkt-train --task tokens from PREFIX/bin"
run hkt-train --task series --train-file "$ex/series-train.npz" --classes falling,rising --model hkt-small \
  --steps 6 --batch-size 16 --eval-every 3 --run-dir series --quiet || fail "hkt-train --task series from PREFIX/bin"
for r in tokens series; do
  run hkt-eval "$r" >"$r-eval.txt" || { cat "$r-eval.txt"; fail "hkt-eval of the $r run"; }
  grep -qi "accuracy" "$r-eval.txt" || { cat "$r-eval.txt"; fail "hkt-eval of the $r run printed no accuracy"; }
done
run hkt-predict tokens "$ex/tokens-new.npy" --out tokens-new.csv >/dev/null 2>&1 || fail "hkt-predict of the tokens run"
run hkt-predict series "$ex/series-new.npz" --out series-new.jsonl >/dev/null 2>&1 || fail "hkt-predict of the series run"
[[ $(wc -l <tokens-new.csv) == 21 && $(wc -l <series-new.jsonl) == 20 ]] ||
  fail "hkt-predict wrote $(wc -l <tokens-new.csv) and $(wc -l <series-new.jsonl) lines, expected 21 and 20"
grep -q '"predicted":"falling"\|"predicted":"rising"' series-new.jsonl || fail "series predictions do not name the classes"
echo "install_test: ok"
