#!/usr/bin/env bash
# tools/analyze-grid on a tiny grid (CTest: analyze_grid): every finished run analysed
# once (a rerun skips them), a conv-only run listed as not analysable with exit status 1,
# the level sweep's approx folders per seed, the tables of analysis.md with the seeds'
# mean +- std, and usage errors with exit status 2.
#
#   tools/tests/analyze_grid_test.sh BIN_DIR
bin="$1"
source "$(dirname "${BASH_SOURCE[0]}")/tool_test_lib.sh" analyze-grid analyze_grid_test

base='{"steps": 4, "batch_size": 4, "eval_every": 2, "eval_batches": 1, "log_every": 2,
        "data": {"seq_len": 16, "train_size": 32, "val_size": 16, "test_size": 8}}'
cat >"$tmp/grid.json" <<JSON
{"name": "tiny", "out_dir": "$tmp/runs", "base": $base,
 "tasks": {"synthetic": {}},
 "models": {"mha": {"model": "mha-tiny"},
            "L1": {"model": "hkt-tiny", "model_overrides": {"levels": 1}},
            "L2": {"model": "hkt-tiny", "model_overrides": {"levels": 2}},
            "L3": {"model": "hkt-tiny"},
            "conv": {"model": "hkt-tiny", "model_overrides": {"conv_only": true}, "seeds": [1]}},
 "seeds": [1, 2]}
JSON
"$bin/hkt-experiment" "$tmp/grid.json" --quiet >/dev/null 2>&1 || fail "the tiny grid did not train"
plots=()
command -v gnuplot >/dev/null 2>&1 || plots=(--no-plots)

run() { run_tool "$@"; }  # run OUT_FILE ARGS...: tools/analyze-grid, its exit status in $rc
run "$tmp/out1" "$tmp/grid.json" --out "$tmp/an" --bin "$bin" --samples 4 --sweep synthetic:L1,L2,L3 \
  --target synthetic/mha --target synthetic/L3/seed1 "${plots[@]}"
[[ $rc -eq 1 ]] || { cat "$tmp/out1"; fail "a conv-only run gave exit status $rc, not 1"; }
[[ $(grep -c ": analysed$" "$tmp/out1") -eq 8 ]] || { cat "$tmp/out1"; fail "not 8 runs analysed"; }
grep -q "^synthetic/conv/seed1: not analysed: " "$tmp/out1" || { cat "$tmp/out1"; fail "the conv-only run not named"; }
for m in mha L1 L2 L3; do
  for s in 1 2; do
    [[ -s "$tmp/an/runs/synthetic/$m/seed$s/report.json" ]] || fail "no report for $m seed$s"
  done
done
for s in 1 2; do
  for t in mha-seed$s L3-seed1; do
    [[ -s "$tmp/an/approx/synthetic-seed$s-vs-synthetic-$t/approx.csv" ]] || fail "no approx seed$s against $t"
  done
done
md="$tmp/an/analysis.md"
# L3 has levels 0-2 over seeds 1,2 with a spread; mha one level; the L = 1 .. 3 sweep in each approx table.
grep -Eq "^\| L3 \| 1,2 \| 2 \| [0-9.e+-]+ \+- " "$md" || { cat "$md"; fail "no L3 level-2 row with mean +- std"; }
grep -Eq "^\| mha \| 1,2 \| 0 \| " "$md" || fail "no mha row"
# The per-layer entry kurtosis: L3 level 2 of its one layer (hkt-tiny), over both seeds.
grep -Eq "^\| L3 \| 2 \| 0 \| [0-9.e+-]+ \+- [0-9.e+-]+ \| [0-9.e+-]+ - [0-9.e+-]+ \|$" "$md" ||
  { cat "$md"; fail "no per-layer kurtosis row for L3 level 2"; }
grep -Eq "^\| L3 \| 2 \| 1 \| " "$md" && fail "a per-layer row for a layer hkt-tiny does not have"
grep -Eq "^\| mha \| 1,2 \| 1 \| " "$md" && fail "mha has a level 1 row"
grep -q "^### synthetic-seed2-vs-synthetic-L3-seed1" "$md" || fail "no approx table against L3 seed1"
grep -Eq "^\| .*/L3/seed1 \(target\) \| 3 \| 0 \| 0 \|" "$md" || { cat "$md"; fail "the target run is not at error 0"; }
grep -q "^- fit: log(err) = a + b L over " "$md" || fail "no fit line"
grep -q "^- synthetic/conv/seed1: " "$md" || fail "the conv-only run is not listed as not analysed"
if ((${#plots[@]} == 0)); then
  ls "$tmp/an/plots/synthetic/"*.png >/dev/null 2>&1 || fail "no learning-curve plots"
fi

# A rerun analyses nothing again (the reports are newer than the checkpoints) but rebuilds analysis.md.
run "$tmp/out2" "$tmp/grid.json" --out "$tmp/an" --bin "$bin" --samples 4 --no-plots
grep -q ": analysed$" "$tmp/out2" && { cat "$tmp/out2"; fail "the rerun analysed runs again"; }
grep -Eq "^\| L2 \| 1,2 \| 1 \| " "$md" || fail "the rerun lost the tables"

# An experiment whose runs another experiment trains ("shared_with"): they are found in that one's folder.
cat >"$tmp/shared.json" <<JSON
{"name": "shared", "out_dir": "$tmp/shared-runs", "base": $base,
 "tasks": {"synthetic": {}}, "models": {"L3": {"model": "hkt-tiny", "shared_with": "grid.json"}}, "seeds": [1, 2]}
JSON
run "$tmp/out4" "$tmp/shared.json" --out "$tmp/an-shared" --bin "$bin" --samples 4 --no-plots
[[ $rc -eq 0 && $(grep -c "^synthetic/L3/seed[12]: analysed$" "$tmp/out4") -eq 2 ]] ||
  { cat "$tmp/shared.json" "$tmp/out4"; fail "the shared runs were not found (rc $rc)"; }

# Usage errors: exit status 2, a message naming what was wrong.
run "$tmp/out3" "$tmp/no-such.json" --out "$tmp/x" --bin "$bin"
[[ $rc -eq 2 ]] && grep -q "experiment file '$tmp/no-such.json' not found" "$tmp/out3" ||
  fail "a missing experiment file: rc $rc"
echo '{"name": "bad", "tasks": {"synthetic": {}}, "models": {"m": {"model": "mha-tiny"}}, "seeds": []}' >"$tmp/bad.json"
run "$tmp/out3" "$tmp/bad.json" --out "$tmp/x" --bin "$bin"
[[ $rc -eq 2 ]] && grep -q "^analyze-grid: $tmp/bad.json: .*\"seeds\" must be" "$tmp/out3" ||
  { cat "$tmp/out3"; fail "a bad experiment file: rc $rc"; }
run "$tmp/out3" "$tmp/grid.json" --out "$tmp/x" --bin "$bin" --sweep synthetic:L1,L2
[[ $rc -eq 2 ]] && grep -q "\-\-sweep needs at least one \-\-target" "$tmp/out3" || fail "--sweep without --target: rc $rc"
run "$tmp/out3" "$tmp/grid.json" --out "$tmp/x" --bin "$bin" --sweep L1 --target synthetic/mha
[[ $rc -eq 2 ]] && grep -q "\-\-sweep must be TASK:MODEL" "$tmp/out3" || fail "a bad --sweep: rc $rc"
run "$tmp/out3" "$tmp/grid.json" --out "$tmp/x" --bin "$tmp"
[[ $rc -eq 2 ]] && grep -q "$tmp/hkt-experiment not found" "$tmp/out3" || fail "a missing binary: rc $rc"
echo "analyze_grid_test: ok"
