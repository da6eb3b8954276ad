#!/usr/bin/env bash
# End-to-end check of hkt-analyze, hkt-eval and hkt-plot (CTest:
# hkt_analyze_smoke): trains a tiny run, analyses and evaluates it, draws the
# figures (when gnuplot is installed) and checks exit statuses of bad
# invocations.
#
#   tests/analysis_smoke_test.sh BIN_DIR
set -euo pipefail

bin="$1"
tmp="$(mktemp -d "${TMPDIR:-/tmp}/hkt-analyze-smoke.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

"$bin/hkt-train" --task synthetic --seq-len 16 --train-size 64 --val-size 32 --test-size 32 --model hkt-tiny \
  --batch-size 16 --steps 4 --eval-every 2 --run-dir "$tmp/run" --quiet --threads 1
"$bin/hkt-analyze" "$tmp/run" --samples 8 --cost-reps 1 --cost-levels 2 --cost-batch 1 --threads 1 >"$tmp/out.txt"
grep -q "kappa" "$tmp/out.txt" || fail "no summary printed"
for f in report.json kurtosis.csv split.csv spectrum_ms.csv spectrum_combined.csv lambda.csv beta.csv levels.csv cost.csv \
         psd.csv kurtosis_dims.csv kurtosis_entries.csv kurtosis_levels.csv sample.safetensors; do
  [[ -s "$tmp/run/analysis/$f" ]] || fail "analysis/$f missing"
done
[[ ! -e "$tmp/run/analysis.tmp" ]] || fail "analysis.tmp left behind"
grep -q "Proposition 3.1" "$tmp/out.txt" || fail "no Proposition 3.1 summary printed"
grep -q "Mardia b2/(r(r+2)) (Gaussian 1)" "$tmp/out.txt" || fail "no kurtosis normalisation printed"

# hkt-analyze approx: a level sweep (L = 1 and the run's L = 3) against an MHA target.
train_tiny() {  # DIR ARGS...
  local dir="$1"
  shift
  "$bin/hkt-train" --task synthetic --seq-len 16 --train-size 64 --val-size 32 --test-size 32 --batch-size 16 \
    --steps 2 --eval-every 2 --run-dir "$tmp/$dir" --quiet --threads 1 "$@"
}
train_tiny mha --model mha-tiny
train_tiny L1 --model hkt-tiny --levels 1
"$bin/hkt-analyze" approx --target "$tmp/mha" "$tmp/L1" "$tmp/run" --out "$tmp/approx" --samples 8 --threads 1 \
  >"$tmp/approx.txt"
grep -q "residual ratio per level" "$tmp/approx.txt" || fail "hkt-analyze approx printed no ratios"
for f in report.json approx.csv approx_fit.csv sample.safetensors; do
  [[ -s "$tmp/approx/$f" ]] || fail "approx/$f missing"
done

# hkt-analyze theory: Proposition 4.5's level fit and Theorem 4.3's information on the HKT run and the MHA one.
"$bin/hkt-analyze" theory "$tmp/run" --ranks 1,2 --max-levels 3 --samples 4 --threads 1 >"$tmp/theory.txt"
grep -q "Proposition 4.5" "$tmp/theory.txt" || fail "hkt-analyze theory printed no level fit"
grep -q "Theorem 4.3" "$tmp/theory.txt" || fail "hkt-analyze theory printed no information rows for an HKT run"
for f in report.json levelfit.csv levelfit_fit.csv information.csv sample.safetensors; do
  [[ -s "$tmp/run/theory/$f" ]] || fail "theory/$f missing"
done
"$bin/hkt-analyze" theory "$tmp/mha" --ranks 1 --max-levels 3 --samples 4 --out "$tmp/theory-mha" --threads 1 \
  >"$tmp/theory-mha.txt"
grep -q "^1 |" "$tmp/theory-mha.txt" || fail "hkt-analyze theory printed no rank-1 row for the MHA run"

# hkt-eval on the run's own test split reproduces summary.json's test accuracy exactly.
"$bin/hkt-eval" "$tmp/run" --json "$tmp/eval.json" >"$tmp/eval.txt"
grep -q "confusion matrix" "$tmp/eval.txt" || fail "hkt-eval printed no confusion matrix"
# Its columns are aligned: every row of the matrix (header included) has the same length.
[[ $(sed -n '/^confusion matrix/,$p' "$tmp/eval.txt" | tail -n +2 | awk '{ print length($0) }' | sort -u | wc -l) == 1 ]] ||
  { cat "$tmp/eval.txt"; fail "hkt-eval's confusion matrix is not aligned"; }
want=$(grep -o '"test_acc": [0-9.e-]*' "$tmp/run/summary.json" | cut -d' ' -f2)
got=$(grep -o '"accuracy": [0-9.e-]*' "$tmp/eval.json" | cut -d' ' -f2)
[[ -n "$want" && "$want" == "$got" ]] || fail "hkt-eval accuracy $got differs from the run's test_acc $want"
grep -q '"examples": 32' "$tmp/eval.json" || fail "hkt-eval did not evaluate the 32 test examples"
"$bin/hkt-eval" "$tmp/run" --weights final --split val --test-size 8 >"$tmp/eval.txt"
grep -q "synthetic/val: 32 examples" "$tmp/eval.txt" || fail "hkt-eval --split val did not use the validation set"

status() { set +e; "$@" >/dev/null 2>&1; echo $?; set -e; }
[[ "$(status "$bin/hkt-eval" "$tmp/missing")" == 2 ]] || fail "hkt-eval of a missing path should exit 2"
[[ "$(status "$bin/hkt-eval" "$tmp/run" --split nope)" == 2 ]] || fail "hkt-eval --split nope should exit 2"
[[ "$(status "$bin/hkt-eval" "$tmp/run" --task listops)" == 2 ]] || fail "hkt-eval of another task's data should exit 2"
[[ ! -e "$tmp/eval.json.tmp" ]] || fail "hkt-eval left eval.json.tmp behind"
# --device cuda evaluates on a GPU, or is refused (exit 2) where there is none.
rc="$(status "$bin/hkt-eval" "$tmp/run" --device cuda)"
[[ "$rc" == 0 || "$rc" == 2 ]] || fail "hkt-eval --device cuda exited $rc"
[[ "$(status "$bin/hkt-analyze" --help)" == 0 ]] || fail "--help should exit 0"
[[ "$(status "$bin/hkt-analyze")" == 2 ]] || fail "no PATH should exit 2"
[[ "$(status "$bin/hkt-analyze" "$tmp/run" --samples 0)" == 2 ]] || fail "--samples 0 should exit 2"
[[ "$(status "$bin/hkt-analyze" "$tmp/run" --split nope)" == 2 ]] || fail "--split nope should exit 2"
[[ "$(status "$bin/hkt-analyze" "$tmp/missing")" == 2 ]] || fail "a missing path should exit 2"
[[ "$(status "$bin/hkt-analyze" "$tmp/run" --task nosuch)" == 2 ]] || fail "--task nosuch should exit 2"
[[ "$(status "$bin/hkt-analyze" "$tmp/run" --seq-len -5)" == 2 ]] || fail "--seq-len -5 should exit 2"
[[ "$(status "$bin/hkt-analyze" "$tmp/run" --kurtosis-windows 4,0)" == 2 ]] || fail "--kurtosis-windows 4,0 should exit 2"
[[ "$(status "$bin/hkt-analyze" theory --help)" == 0 ]] || fail "theory --help should exit 0"
[[ "$(status "$bin/hkt-analyze" theory "$tmp/run" --ranks 0)" == 2 ]] || fail "theory --ranks 0 should exit 2"
[[ "$(status "$bin/hkt-analyze" theory "$tmp/missing" --out "$tmp/t2")" == 1 ]] || fail "theory of a missing run should exit 1"
[[ ! -e "$tmp/t2" ]] || fail "a failed theory left its output folder"
[[ "$(status "$bin/hkt-analyze" approx --help)" == 0 ]] || fail "approx --help should exit 0"
[[ "$(status "$bin/hkt-analyze" approx "$tmp/run" --out "$tmp/a2")" == 2 ]] || fail "approx without --target should exit 2"
[[ "$(status "$bin/hkt-analyze" approx "$tmp/missing" --target "$tmp/run" --out "$tmp/a2")" == 1 ]] ||
  fail "approx of a missing run should exit 1"
[[ ! -e "$tmp/a2" ]] || fail "a failed approx left its output folder"
[[ "$(status "$bin/hkt-plot" "$tmp/missing" --out "$tmp/p")" == 2 ]] || fail "hkt-plot of a missing folder should exit 2"
[[ "$(status "$bin/hkt-plot")" == 2 ]] || fail "hkt-plot without folders should exit 2"
# plot_fails TEXT ARGS...: hkt-plot ARGS (bad input) must exit 2 with TEXT in its message.
plot_fails() {
  local text="$1" rc=0
  shift
  "$bin/hkt-plot" "$@" 2>"$tmp/plot.err" >/dev/null || rc=$?
  [[ $rc == 2 ]] && grep -q -- "$text" "$tmp/plot.err" ||
    { cat "$tmp/plot.err"; fail "hkt-plot $*: exit $rc, expected 2 and '$text'"; }
}
# A metrics.jsonl whose last line was torn by a kill: hkt-plot skips that line; a torn line
# before the last is an error naming the file and line.
if command -v gnuplot >/dev/null 2>&1; then
  mkdir -p "$tmp/torn"
  cp "$tmp/run/config.json" "$tmp/torn/"
  { cat "$tmp/run/metrics.jsonl"; printf '{"event": "tra'; } >"$tmp/torn/metrics.jsonl"
  "$bin/hkt-plot" "$tmp/torn" --out "$tmp/p3" >/dev/null 2>&1 || fail "hkt-plot failed on a torn last line"
  { printf '{"event": "tra\n'; cat "$tmp/run/metrics.jsonl"; } >"$tmp/torn/metrics.jsonl"
  plot_fails "torn/metrics.jsonl:1: not a JSON object" "$tmp/torn" --out "$tmp/p4"
fi
# A run folder whose config.json has a field of the wrong type: hkt-plot names the file.
mkdir -p "$tmp/oddrun"
cp "$tmp/run/metrics.jsonl" "$tmp/oddrun/"
echo '{"model": 5}' >"$tmp/oddrun/config.json"
plot_fails "oddrun/config.json: " "$tmp/oddrun" --out "$tmp/p2"

if command -v gnuplot >/dev/null 2>&1; then
  "$bin/hkt-plot" "$tmp/run" "$tmp/run/analysis" --out "$tmp/plots" >/dev/null
  for f in val_acc train_loss kurtosis directional_share frac_negative lambda eig_ms eig_combined cost kurtosis_dims; do
    [[ -s "$tmp/plots/$f.png" ]] || fail "plots/$f.png missing"
  done
  # One x axis for both training figures (epochs by default), the loss drawn against the same column.
  [[ "$(grep xlabel "$tmp/plots/val_acc.gp")" == "$(grep xlabel "$tmp/plots/train_loss.gp")" ]] ||
    fail "val_acc.png and train_loss.png have different x axes"
  grep -q "using 4:2" "$tmp/plots/train_loss.gp" || fail "train_loss.gp does not plot the loss against epochs"
  "$bin/hkt-plot" "$tmp/run" --x step --out "$tmp/plots3" >/dev/null
  grep -q "set xlabel 'step'" "$tmp/plots3/train_loss.gp" && grep -q "set xlabel 'step'" "$tmp/plots3/val_acc.gp" ||
    fail "--x step did not put steps on both figures"
  "$bin/hkt-plot" "$tmp/approx" --out "$tmp/plots2" >/dev/null
  [[ -s "$tmp/plots2/approx.png" ]] || fail "plots2/approx.png missing"
else
  echo "gnuplot not installed: hkt-plot not checked (tools/setup.sh installs gnuplot-nox)"
fi
echo "hkt-analyze smoke test: OK"
