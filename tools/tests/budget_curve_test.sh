#!/usr/bin/env bash
# tools/budget-curve on hand-made run folders (CTest: budget_curve): the least-squares slope per
# doubling, its t interval, the prediction interval and the budget that reaches a target, all
# against values worked out by hand; a falling series; and bad input (exit status 2, the file or
# option named, nothing written).
#
#   tools/tests/budget_curve_test.sh
source "$(dirname "${BASH_SOURCE[0]}")/tool_test_lib.sh" budget-curve budget_curve_test

mkrun() {  # mkrun DIR STEPS TEST_ACC [VAL_ACC]: a finished run's summary.json, batch 32, 96,000 train
  mkdir -p "$tmp/$1"
  cat >"$tmp/$1/summary.json" <<JSON
{"config": {"batch_size": 32, "data": {"train_size": 96000}}, "steps": $2,
 "test_acc": $3, "best_val_acc": ${4:-$3}}
JSON
}
# 2^15, 2^16 and three runs at 2^17 examples: acc = 30, 32, 34 / 35 / 33 (%). By hand: xbar 16.4,
# ybar 32.8, Sxx 3.2, Sxy 6.4, so b = 2, a = 0, SSE 2, s = sqrt(2/3); se(b) = s / sqrt(3.2), t(3) =
# 3.1824: b in [0.55, 3.45]. At 2^18: 36 +- 3.1824 s sqrt(1 + 1/5 + 1.6^2 / 3.2) = [32.33, 39.67].
# 40% at x = 16.4 + 7.2 / 2 = 20: 1,048,576 examples, 32,768 steps, 10.9 epochs.
mkrun a 1024 0.30
mkrun b 2048 0.32
mkrun c1 4096 0.34
mkrun c2 4096 0.35
mkrun c3 4096 0.33 0.50
mkrun d1 1024 0.40
mkrun d2 4096 0.38

run() { run_tool "$tmp/out" "$@"; }  # run ARGS...: the output in $tmp/out, the exit status in $rc
run --target 40 --series "up=$tmp/c1,$tmp/a,$tmp/c2,$tmp/b,$tmp/c3" --series "down=$tmp/d2,$tmp/d1"
[[ $rc -eq 0 ]] || { cat "$tmp/out"; fail "exit status $rc"; }
grep -qF "| up | 5 | 0.00 | +2.00 [+0.55, +3.45] | 36.00 [32.33, 39.67] (at 262,144) |" "$tmp/out" \
  || { cat "$tmp/out"; fail "wrong fit of the rising series"; }
grep -qF "up: 40.00% at about 1,048,576 examples, 32,768 steps of 32, 10.9 epochs; the slope's 95% interval gives" \
  "$tmp/out" || { cat "$tmp/out"; fail "wrong budget for the target"; }
grep -qF "| down | 2 | " "$tmp/out" && grep -qF "| -1.00 (no interval: 2 runs) |" "$tmp/out" \
  || { cat "$tmp/out"; fail "wrong fit of the two-run series"; }
grep -qF "down: 40.00% not reached: the accuracy does not grow with the budget." "$tmp/out" \
  || { cat "$tmp/out"; fail "a falling series not said so"; }
# The runs are listed by budget, whatever the order given.
[[ "$(grep -o '| up | [^|]* | [0-9,]* |' "$tmp/out" | awk -F'|' '{print $4}' | tr -d ' ,' | tr '\n' ' ')" \
   == "1024 2048 4096 4096 4096 " ]] || { cat "$tmp/out"; fail "runs not sorted by budget"; }
[[ "$(grep -o '| down | [^|]* | [0-9,]* |' "$tmp/out" | awk -F'|' '{print $4}' | tr -d ' ,' | tr '\n' ' ')" \
   == "1024 4096 " ]] || { cat "$tmp/out"; fail "runs not sorted by budget"; }

# --metric val reads best_val_acc (c3: 50 instead of 33).
run --metric val --series "up=$tmp/a,$tmp/b,$tmp/c3"
grep -qF "| 4,096 | 32 | 131,072 | 1.37 | 50.00 |" "$tmp/out" || { cat "$tmp/out"; fail "--metric val not read"; }

# --out writes the report; bad input writes nothing and names what was wrong.
run --series "up=$tmp/a,$tmp/b" --out "$tmp/report.md"
[[ $rc -eq 0 && -s "$tmp/report.md" ]] || fail "--out wrote nothing"
expect_error() {  # expect_error TEXT ARGS...
  local text="$1"
  shift
  run "$@" --out "$tmp/bad.md"
  [[ $rc -eq 2 ]] || { cat "$tmp/out"; fail "$* gave exit status $rc, not 2"; }
  grep -qF -- "$text" "$tmp/out" || { cat "$tmp/out"; fail "$*: no '$text' in the error"; }
  [[ ! -e "$tmp/bad.md" ]] || fail "$*: wrote a report"
}
expect_error "needs runs at two budgets" --series "x=$tmp/c1,$tmp/c2"
expect_error "$tmp/none/summary.json: cannot read" --series "x=$tmp/a,$tmp/none"
mkdir -p "$tmp/torn" && printf '{"steps": 10, "conf' >"$tmp/torn/summary.json"
expect_error "$tmp/torn/summary.json: cannot read" --series "x=$tmp/a,$tmp/torn"
mkdir -p "$tmp/unfinished" && echo '{"config": {"batch_size": 32}, "steps": 100}' >"$tmp/unfinished/summary.json"
expect_error "no test_acc in [0, 1]" --series "x=$tmp/a,$tmp/unfinished"
expect_error "expected NAME=RUN" --series "$tmp/a,$tmp/b"
expect_error "--target 150.0: expected a percentage" --target 150 --series "x=$tmp/a,$tmp/b"
echo "budget_curve_test: passed"
