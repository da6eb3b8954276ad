#!/usr/bin/env bash
# The tokens and series tasks end to end (CTest: array_task): hkt-train on the committed examples
# (experiments/examples/tokens-train.npy with its labels .npy, series-train.npz), hkt-eval,
# hkt-predict on unlabelled arrays (CSV and JSON lines), hkt-experiment with data.arrays, and bad
# input: exit 2, the file and the element named, nothing half-written. The bad files are written
# here byte by byte (no Python needed).
#
#   tests/array_task_test.sh BIN_DIR
source "$(dirname "${BASH_SOURCE[0]}")/helpers/task_test.sh" "$1" array-task
# npy_header DESCR SHAPE: a version 1.0 .npy header as NumPy pads it (the data follows).
npy_header() {
  local h="{'descr': '$1', 'fortran_order': False, 'shape': $2, }"
  local n=$((${#h} + 1))
  local pad=$(((64 - (10 + n) % 64) % 64))
  local len=$((n + pad))
  printf '\x93NUMPY\x01\x00'
  printf "\\x$(printf %02x $((len % 256)))\\x$(printf %02x $((len / 256)))"
  printf '%s%*s\n' "$h" "$pad" ""
}
i64() { for v in "$@"; do printf "\\x$(printf %02x "$v")\\x00\\x00\\x00\\x00\\x00\\x00\\x00"; done; }

# The tokens task: ids 1-9 after a pad id 0, labels in a second .npy; 400 rows, a tenth each carved.
tok=("$bin/hkt-train" --task tokens --model hkt-tiny --batch-size 32 --steps 60 --eval-every 30 --quiet --threads 1)
tokfiles=(--train-file "$ex/tokens-train.npy" --train-labels "$ex/tokens-train-labels.npy" --pad-id 0)
"${tok[@]}" "${tokfiles[@]}" --run-dir "$tmp/tok"
enc="$tmp/tok/encoding.json"
[[ -s "$enc" ]] || fail "no encoding.json in the tokens run folder"
grep -q '"task": "tokens"' "$enc" && grep -q '"vocab_size": 10' "$enc" && grep -q '"pad_id": 0' "$enc" ||
  fail "encoding.json does not hold the task, vocabulary size and pad id: $(cat "$enc")"
grep -q '"rows": 320' "$enc" || fail "the training split is not 320 rows"
"$bin/hkt-eval" "$tmp/tok" >"$tmp/eval.txt" || fail "hkt-eval failed on the tokens run"
grep -q "40 examples" "$tmp/eval.txt" || fail "hkt-eval did not evaluate the 40 carved test rows"
"$bin/hkt-predict" "$tmp/tok" "$ex/tokens-new.npy" --out "$tmp/t.csv" --threads 1 >/dev/null 2>&1 ||
  fail "hkt-predict on tokens-new.npy"
[[ "$(head -1 "$tmp/t.csv")" == "row,predicted,p_0,p_1" ]] || fail "predictions header: $(head -1 "$tmp/t.csv")"
[[ "$(wc -l <"$tmp/t.csv")" == 21 ]] || fail "expected 20 predictions and a header"
awk -F, 'NR > 1 { s = $3 + $4; if (s < 0.999 || s > 1.001 || ($2 != "0" && $2 != "1") || $1 != NR - 2) exit 1 }' \
  "$tmp/t.csv" || fail "a prediction row is malformed (row numbers, classes, probabilities summing to 1)"
"$bin/hkt-predict" "$tmp/tok" "$ex/tokens-new.npy" --out "$tmp/t.jsonl" --threads 1 >/dev/null 2>&1
[[ "$(wc -l <"$tmp/t.jsonl")" == 20 ]] || fail "expected 20 JSON lines"
grep -q '"probabilities":{"0":' "$tmp/t.jsonl" || fail "JSON lines without the probabilities by class name"

# The series task: a .npz of float32 inputs [300, 24, 2], labels and lengths; classes named.
ser=("$bin/hkt-train" --task series --model hkt-tiny --batch-size 32 --steps 30 --eval-every 15 --quiet --threads 1)
"${ser[@]}" --train-file "$ex/series-train.npz" --classes falling,rising --run-dir "$tmp/ser"
grep -q '"features": 2' "$tmp/ser/encoding.json" && grep -q '"scale"' "$tmp/ser/encoding.json" ||
  fail "the series encoding.json lacks its features or their standardisation"
"$bin/hkt-eval" "$tmp/ser" >/dev/null || fail "hkt-eval failed on the series run"
"$bin/hkt-predict" "$tmp/ser" "$ex/series-new.npz" --out "$tmp/s.csv" --threads 1 >/dev/null 2>&1 ||
  fail "hkt-predict on series-new.npz"
[[ "$(head -1 "$tmp/s.csv")" == "row,predicted,p_falling,p_rising" ]] || fail "series header: $(head -1 "$tmp/s.csv")"
[[ "$(wc -l <"$tmp/s.csv")" == 21 ]] || fail "expected 20 series predictions and a header"

# Bad input: exit 2, the file and the element named, no run folder.
b="$tmp/bad"
mkdir "$b"
i64 1 0 >"$b/y2.npy.data"
{ npy_header '<i8' '(2,)'; cat "$b/y2.npy.data"; } >"$b/y2.npy"
{ npy_header '|O' '(2,)'; printf '\x80\x02junk'; } >"$b/ragged.npy"
expect_error "ragged.npy: dtype object: the array holds Python objects, as NumPy makes of rows of different lengths" \
  "${tok[@]}" --train-file "$b/ragged.npy" --train-labels "$b/y2.npy" --run-dir "$tmp/r1"
{ npy_header '<f4' '(2, 2)'; printf '\x00\x00\x80\x3f\x00\x00\xc0\x7f\x00\x00\x80\x3f\x00\x00\x80\x3f'; } >"$b/nan.npy"
expect_error "nan.npy[0, 1] = nan is not a finite float32" \
  "${ser[@]}" --train-file "$b/nan.npy" --train-labels "$b/y2.npy" --run-dir "$tmp/r2"
expect_error "nan.npy: token ids must be integers, got float32" \
  "${tok[@]}" --train-file "$b/nan.npy" --train-labels "$b/y2.npy" --run-dir "$tmp/r3"
{ npy_header '<i8' '(3,)'; i64 0 1 1; } >"$b/y3.npy"
expect_error "y3.npy: 3 labels for 400 input rows" \
  "${tok[@]}" --train-file "$ex/tokens-train.npy" --train-labels "$b/y3.npy" --run-dir "$tmp/r4"
{ npy_header '|u1' '(2, 3)'; printf '\x01\x02\x03\x04\xc8\x00'; } >"$b/test.npy"
expect_error "test.npy[1, 1] = 200 is outside the vocabulary [0, 10)" \
  "${tok[@]}" "${tokfiles[@]}" --test-file "$b/test.npy" --test-labels "$b/y2.npy" --run-dir "$tmp/r5"
head -c 5000 "$ex/tokens-train.npy" >"$b/cut.npy"
expect_error "cut.npy: the header says shape (400, 32) of uint8 (12800 bytes of data), but 4872 bytes follow it" \
  "${tok[@]}" --train-file "$b/cut.npy" --train-labels "$ex/tokens-train-labels.npy" --run-dir "$tmp/r6"
sed 's/(400, 32)/(900, 32)/' "$ex/tokens-train.npy" >"$b/lie.npy"
expect_error "lie.npy: the header says shape (900, 32) of uint8 (28800 bytes of data), but 12800 bytes follow it" \
  "${tok[@]}" --train-file "$b/lie.npy" --train-labels "$ex/tokens-train-labels.npy" --run-dir "$tmp/r7"
head -c 30000 "$ex/series-train.npz" >"$b/cut.npz"
expect_error "cut.npz: not a readable .npz (zip) file" "${ser[@]}" --train-file "$b/cut.npz" --run-dir "$tmp/r8"
expect_error "series-train.npz: inputs: token ids must be integers" \
  "${tok[@]}" --train-file "$ex/series-train.npz" --run-dir "$tmp/r9"
expect_error "task 'series' needs a training file" "${ser[@]}" --run-dir "$tmp/r10"
for r in r1 r2 r3 r4 r5 r6 r7 r8 r9 r10; do [[ ! -e "$tmp/$r" ]] || fail "$r: a run folder despite bad input"; done
expect_error "tokens-new.npy: 1 features a position, the run has 2" \
  "$bin/hkt-predict" "$tmp/ser" "$ex/tokens-new.npy" --out "$tmp/bad.csv"
{ npy_header '|u1' '(1, 2)'; printf '\x01\x0c'; } >"$b/new.npy"
expect_error "new.npy[0, 1] = 12 is outside the vocabulary [0, 10)" \
  "$bin/hkt-predict" "$tmp/tok" "$b/new.npy" --out "$tmp/bad.csv"
[[ ! -e "$tmp/bad.csv" ]] || fail "a failed hkt-predict left its output"

# hkt-experiment takes the array tasks like the built-in ones ("data": {"arrays": {...}}).
cat >"$tmp/exp.json" <<JSON
{"name": "array-exp", "out_dir": "$tmp/exp",
 "base": {"steps": 4, "batch_size": 16, "eval_every": 4, "log_every": 0, "model": "hkt-tiny"},
 "tasks": {"tok": {"task": "tokens", "data": {"arrays": {"train": "$ex/tokens-train.npy",
                   "train_labels": "$ex/tokens-train-labels.npy", "pad_id": 0}}},
           "ser": {"task": "series", "data": {"arrays": {"train": "$ex/series-train.npz"}}}},
 "models": {"hkt": {"model": "hkt-tiny"}},
 "seeds": [1]}
JSON
"$bin/hkt-experiment" "$tmp/exp.json" --quiet >"$tmp/exp.log" 2>&1 ||
  { cat "$tmp/exp.log"; fail "hkt-experiment failed on an array grid"; }
for r in tok ser; do [[ -s "$tmp/exp/$r/hkt/seed1/encoding.json" ]] || fail "the array grid left no $r run"; done
[[ -s "$tmp/exp/results.md" ]] || fail "the array grid wrote no results.md"
# Resuming a finished run reads the same files the same way.
"$bin/hkt-train" --resume "$tmp/tok" --quiet >/dev/null 2>&1 || fail "--resume of a finished tokens run failed"
echo "array task test: OK"
