#!/usr/bin/env bash
# The text task end to end (CTest: text_task): hkt-train --task text on the committed DNA-motif
# example (experiments/examples/motif-train.tsv), hkt-eval, hkt-predict on unlabelled rows (CSV and
# JSON lines), and bad input: exit 2, the file and line named, nothing half-written.
#
#   tests/text_task_test.sh BIN_DIR
source "$(dirname "${BASH_SOURCE[0]}")/helpers/task_test.sh" "$1" text-task

train=("$bin/hkt-train" --task text --model hkt-tiny --batch-size 16 --steps 12 --eval-every 6 --seq-len 96
       --quiet --threads 1)
"${train[@]}" --train-file "$ex/motif-train.tsv" --tokenizer chars --run-dir "$tmp/run"
[[ -s "$tmp/run/encoding.json" ]] || fail "no encoding.json in the run folder"
grep -q '"classes"' "$tmp/run/encoding.json" && grep -q '"diff"' "$tmp/run/encoding.json" ||
  fail "encoding.json does not name the classes"
grep -q '"tokenizer": "chars"' "$tmp/run/encoding.json" || fail "encoding.json does not name the tokenizer"
# 400 rows: a tenth each carved for validation and test.
grep -q '"rows": 320' "$tmp/run/encoding.json" || fail "the training split is not 320 rows"

"$bin/hkt-eval" "$tmp/run" >"$tmp/eval.txt" || fail "hkt-eval failed on the text run"
grep -q "40 examples" "$tmp/eval.txt" || fail "hkt-eval did not evaluate the 40 carved test rows"

"$bin/hkt-predict" "$tmp/run" "$ex/motif-new.tsv" --out "$tmp/p.csv" --threads 1 >/dev/null 2>&1
[[ "$(head -1 "$tmp/p.csv")" == "row,line,predicted,p_diff,p_same" ]] || fail "predictions header: $(head -1 "$tmp/p.csv")"
[[ "$(wc -l <"$tmp/p.csv")" == 21 ]] || fail "expected 20 predictions and a header"
awk -F, 'NR > 1 { s = $4 + $5; if (s < 0.999 || s > 1.001 || ($3 != "diff" && $3 != "same")) exit 1 }' "$tmp/p.csv" ||
  fail "a prediction row is malformed (probabilities must sum to 1, classes named)"
[[ "$(sed -n 2p "$tmp/p.csv" | cut -d, -f1-2)" == "0,2" ]] || fail "the first prediction is not row 0, line 2"
"$bin/hkt-predict" "$tmp/run" "$ex/motif-new.tsv" --out "$tmp/p.jsonl" --threads 1 >/dev/null 2>&1
[[ "$(wc -l <"$tmp/p.jsonl")" == 20 ]] || fail "expected 20 JSON lines"
grep -q '"probabilities":{"diff":' "$tmp/p.jsonl" || fail "JSON lines without the probabilities by class name"

# Bad input: exit 2, the file and line named.
printf 'text\tlabel\nACGT\tsame\nACGA\nACGG\tdiff\n' >"$tmp/missing.tsv"
expect_error "missing.tsv:3: 1 field, but the label column is field 2" \
  "${train[@]}" --train-file "$tmp/missing.tsv" --run-dir "$tmp/r1"
printf 'text\tlabel\nACGTA\tmaybe\n' >"$tmp/test.tsv"
expect_error "test.tsv:2: label 'maybe' is not one of the classes ('diff', 'same')" \
  "${train[@]}" --train-file "$ex/motif-train.tsv" --test-file "$tmp/test.tsv" --run-dir "$tmp/r2"
{ head -2 "$ex/motif-train.tsv"; printf 'AC\xffGT\tdiff\n'; tail -n +3 "$ex/motif-train.tsv"; } >"$tmp/utf8.tsv"
expect_error "utf8.tsv:3: invalid UTF-8 at byte 3" \
  "${train[@]}" --train-file "$tmp/utf8.tsv" --tokenizer chars --run-dir "$tmp/r3"
printf 'text,label\n"ACGT,same\n' >"$tmp/quote.csv"
expect_error "quote.csv:2: a quoted field is never closed" \
  "${train[@]}" --train-file "$tmp/quote.csv" --run-dir "$tmp/r4"
expect_error "longer than seq_len 8" "${train[@]}" --train-file "$ex/motif-train.tsv" --seq-len 8 --run-dir "$tmp/r5"
expect_error "task 'text' needs a training file" "${train[@]}" --run-dir "$tmp/r6"
expect_error "data.text.tokenizer must be" "${train[@]}" --train-file "$ex/motif-train.tsv" --tokenizer words --run-dir "$tmp/r7"
for r in r1 r2 r3 r4 r5 r6 r7; do [[ ! -e "$tmp/$r/best.safetensors" ]] || fail "$r trained despite bad input"; done
printf 'sequence\nACGT\n' >"$tmp/nocol.tsv"
expect_error "no text column 'text'" "$bin/hkt-predict" "$tmp/run" "$tmp/nocol.tsv" --out "$tmp/bad.csv"
[[ ! -e "$tmp/bad.csv" ]] || fail "a failed hkt-predict left its output"
"$bin/hkt-train" --task synthetic --model hkt-tiny --steps 2 --batch-size 8 --train-size 16 --val-size 8 \
  --test-size 8 --seq-len 8 --quiet --threads 1 --run-dir "$tmp/syn"
expect_error "has no encoding.json" "$bin/hkt-predict" "$tmp/syn" "$ex/motif-new.tsv"
# hkt-experiment takes the text task like the built-in ones ("data": {"text": {...}}).
cat >"$tmp/exp.json" <<JSON
{"name": "text-exp", "out_dir": "$tmp/exp",
 "base": {"steps": 4, "batch_size": 16, "eval_every": 4, "log_every": 0,
          "data": {"seq_len": 96, "text": {"train": "$ex/motif-train.tsv", "tokenizer": "chars"}}},
 "tasks": {"motif": {"task": "text"}},
 "models": {"hkt": {"model": "hkt-tiny"}, "mha": {"model": "mha-tiny"}},
 "seeds": [1]}
JSON
"$bin/hkt-experiment" "$tmp/exp.json" --quiet >/dev/null 2>&1 || fail "hkt-experiment failed on a text-task grid"
[[ -s "$tmp/exp/motif/hkt/seed1/encoding.json" && -s "$tmp/exp/results.md" ]] || fail "the text-task grid left no runs"
# Resuming a finished text run reads the same files the same way.
"$bin/hkt-train" --resume "$tmp/run" --quiet >/dev/null 2>&1 || fail "--resume of a finished text run failed"
echo "text task test: OK"
