#!/usr/bin/env bash
# hkt-experiment --jobs: runs train side by side in child processes, seed by
# seed, each run
# gets the same results as when the grid runs one run after another, a failing
# run is reported (exit status 1) without stopping the others, a grid whose
# executable is rebuilt under it starts no more runs, and bad --jobs
# / --run values are refused (exit status 2).
#   tests/experiment_test.sh BIN_DIR
set -uo pipefail
bin="$1"
tmp="$(mktemp -d "${TMPDIR:-/tmp}/hkt-experiment.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT
fail() { echo "experiment_test: $*" >&2; exit 1; }
grid() {  # grid OUT_DIR [EXTRA_TASK_JSON]
  cat <<JSON
{"name": "jobs", "out_dir": "$1",
 "base": {"steps": 6, "batch_size": 4, "eval_every": 3, "eval_batches": 1, "log_every": 2,
          "data": {"train_size": 32, "val_size": 8, "test_size": 8}},
 "tasks": {"synthetic": {}${2:-}}, "models": {"hkt": {"model": "hkt-tiny"}, "mha": {"model": "mha-tiny"}},
 "seeds": [1, 2]}
JSON
}
grid "$tmp/par" >"$tmp/par.json"
grid "$tmp/seq" >"$tmp/seq.json"

"$bin/hkt-experiment" "$tmp/par.json" --jobs 2 >"$tmp/out" 2>&1 || { cat "$tmp/out"; fail "--jobs 2 failed"; }
cat "$tmp/out"
grep -q "4 run(s) to train, 2 at a time" "$tmp/out" || fail "--jobs 2 did not say what it schedules"
[[ $(grep -c ": finished" "$tmp/out") -eq 4 ]] || fail "not every run reported finished"
# How far the grid is: runs ended and the ETA of the rest, after each run.
grep -q "; grid: 1/4 runs ended, about [0-9]*m[0-9]*s left for the grid$" "$tmp/out" &&
  grep -q "; grid: 4/4 runs ended$" "$tmp/out" || fail "no grid progress (runs ended, ETA)"
# Seed by seed: both models of seed 1 start before seed 2 (a stop leaves whole seeds).
[[ "$(grep -o '^\[[0-9]/4\] [a-z/0-9]*' "$tmp/out" | head -2 | tr '\n' ' ')" == \
   "[1/4] synthetic/hkt/seed1 [2/4] synthetic/mha/seed1 " ]] || fail "runs were not started seed by seed, numbered in that order"
"$bin/hkt-experiment" "$tmp/par.json" --list >"$tmp/list"
[[ $(grep -c "  done  " "$tmp/list") -eq 4 ]] || { cat "$tmp/list"; fail "--list does not show 4 finished runs"; }
grep -q "^synthetic/hkt/seed1  done  .*  test [0-9.]*%, best val [0-9.]*% at step [36]$" "$tmp/list" ||
  { cat "$tmp/list"; fail "--list does not give a finished run's accuracies"; }
# --list --json: the same runs as one JSON object, a finished run with its accuracies.
"$bin/hkt-experiment" "$tmp/par.json" --list --json >"$tmp/list.json" || fail "--list --json failed"
[[ $(grep -c '"state": "done"' "$tmp/list.json") -eq 4 ]] || { cat "$tmp/list.json"; fail "--list --json: not 4 done"; }
grep -q '"id": "synthetic/hkt/seed1"' "$tmp/list.json" && grep -q '"run_dir": "'"$tmp"'/par/synthetic/mha/seed2"' \
  "$tmp/list.json" && [[ $(grep -c '"test_acc": [0-9.]*,$' "$tmp/list.json") -eq 4 ]] ||
  { cat "$tmp/list.json"; fail "--list --json lacks the ids, folders or accuracies"; }
"$bin/hkt-experiment" "$tmp/par.json" --json >"$tmp/out" 2>&1
[[ $? -eq 2 ]] && grep -q -- "--json requires --list" "$tmp/out" || { cat "$tmp/out"; fail "--json without --list"; }
for id in hkt-seed1 hkt-seed2 mha-seed1 mha-seed2; do
  grep -q "^done: 6 steps" "$tmp/par/logs/synthetic-$id.log" || fail "the log of synthetic-$id lacks the run's output"
done
grep -q "| synthetic | hkt | 2/2 | 6 |" "$tmp/par/results.md" || fail "results.md lacks the hkt row"
grep -q "^synthetic,mha,2,2,6," "$tmp/par/results.csv" || fail "results.csv lacks the mha row"

# The same grid one run after another, in this process: the same numbers.
"$bin/hkt-experiment" "$tmp/seq.json" --quiet >/dev/null 2>&1 || fail "the sequential grid failed"
for r in hkt/seed1 hkt/seed2 mha/seed1 mha/seed2; do
  for key in best_val_acc test_acc test_loss; do
    a=$(grep -o "\"$key\": [^,]*" "$tmp/par/synthetic/$r/summary.json")
    b=$(grep -o "\"$key\": [^,]*" "$tmp/seq/synthetic/$r/summary.json")
    [[ -n "$a" && "$a" == "$b" ]] || fail "$r: $key differs: --jobs 2 gave '$a', one after another '$b'"
  done
done
# A second call has nothing left to do.
"$bin/hkt-experiment" "$tmp/par.json" --jobs 2 >"$tmp/out" 2>&1 || fail "rerunning a finished grid failed"
grep -q "0 run(s) to train" "$tmp/out" || fail "a finished grid was trained again"

# A run that cannot start (its data folder does not exist) fails alone.
grid "$tmp/bad" ', "imdb": {"data": {"data_dir": "'"$tmp"'/no-such-folder"}}' >"$tmp/bad.json"
"$bin/hkt-experiment" "$tmp/bad.json" --jobs 2 --only seed1 >"$tmp/out" 2>&1
rc=$?
cat "$tmp/out"
[[ $rc -eq 1 ]] || fail "a failed run gave exit status $rc, expected 1"
grep -q "imdb/hkt/seed1: FAILED (exit status 2)" "$tmp/out" || fail "the failed run was not named"
grep -q "2 run(s) failed: imdb/hkt/seed1 imdb/mha/seed1" "$tmp/out" || fail "the summary of failures is missing"
grep -q "no-such-folder" "$tmp/bad/logs/imdb-hkt-seed1.log" || fail "the failed run's log does not say why"
"$bin/hkt-experiment" "$tmp/bad.json" --list | grep -q "synthetic/mha/seed1  done" ||
  fail "the other runs did not finish"

# SIGTERM to the parent stops the children too; their runs stay resumable.
cat >"$tmp/slow.json" <<JSON
{"name": "slow", "out_dir": "$tmp/slow",
 "base": {"steps": 5000, "batch_size": 8, "log_every": 0, "checkpoint_every": 1000,
          "data": {"seq_len": 128, "train_size": 64, "val_size": 8, "test_size": 8}},
 "tasks": {"synthetic": {}}, "models": {"hkt": {"model": "hkt-small"}, "mha": {"model": "mha-small"}}, "seeds": [1]}
JSON
"$bin/hkt-experiment" "$tmp/slow.json" --jobs 2 >"$tmp/out" 2>&1 &
parent=$!
# Stop it once both runs have written their config.json (what makes a run "started"); a fixed
# sleep was too short on a loaded machine, where a child can take seconds to get there.
for _ in $(seq 600); do
  [[ -f "$tmp/slow/synthetic/hkt/seed1/config.json" && -f "$tmp/slow/synthetic/mha/seed1/config.json" ]] && break
  sleep 0.1
done
sleep 0.5
kill -TERM "$parent"
wait "$parent"
rc=$?
cat "$tmp/out"
[[ $rc -eq 143 ]] || fail "SIGTERM gave exit status $rc, expected 143"
grep -q "stopped by signal 15 with 2 run(s) under way" "$tmp/out" || fail "the stop was not reported"
sleep 0.5
if pgrep -f -- "--run synthetic/.*/seed1 .*--no-report" | xargs -r ps -o args= -p | grep -q "$tmp/slow.json"; then
  fail "children kept running after the parent was stopped"
fi
"$bin/hkt-experiment" "$tmp/slow.json" --list | grep -q "synthetic/hkt/seed1  started (will resume)" ||
  fail "the stopped run is not resumable"
"$bin/hkt-experiment" "$tmp/slow.json" --list --json | grep -q '"state": "started"' ||
  fail "--list --json does not show the stopped run as started"

# A grid whose executable is rebuilt or replaced under it starts no more children (they would run
# other code than its runs so far, or crash on a library that does not fit): the runs under way
# finish, the rest are named as not started, exit status 1, and a rerun trains them.
mkdir -p "$tmp/bin"
cp "$bin/hkt-experiment" "$tmp/bin/hkt-experiment"
cat >"$tmp/guard.json" <<JSON
{"name": "guard", "out_dir": "$tmp/guard",
 "base": {"steps": 1000, "batch_size": 8, "log_every": 0, "checkpoint_every": 0,
          "data": {"seq_len": 64, "train_size": 64, "val_size": 8, "test_size": 8}},
 "tasks": {"synthetic": {}}, "models": {"hkt": {"model": "hkt-tiny"}}, "seeds": [1, 2, 3]}
JSON
"$tmp/bin/hkt-experiment" "$tmp/guard.json" --jobs 2 >"$tmp/out" 2>&1 &
parent=$!
for _ in $(seq 200); do [[ $(grep -c ", pid " "$tmp/out") -eq 2 ]] && break; sleep 0.05; done
touch "$tmp/bin/hkt-experiment"  # as a rebuild does
wait "$parent"
rc=$?
cat "$tmp/out"
[[ $(grep -c ", pid " "$tmp/out") -eq 2 ]] || fail "a child was started after the executable changed"
[[ $rc -eq 1 ]] || fail "a grid whose executable changed gave exit status $rc, expected 1"
grep -q "$tmp/bin/hkt-experiment was rebuilt or replaced since this process started" "$tmp/out" ||
  fail "the changed executable was not named"
grep -q "1 run(s) not started" "$tmp/out" || fail "the runs not started were not counted"
[[ $(grep -c ": finished" "$tmp/out") -eq 2 ]] || fail "the runs under way did not finish"
"$tmp/bin/hkt-experiment" "$tmp/guard.json" --jobs 2 --no-report >"$tmp/out" 2>&1 || { cat "$tmp/out"; fail "the rerun failed"; }
grep -q "1 run(s) to train" "$tmp/out" || { cat "$tmp/out"; fail "the rerun did not train the run left"; }

# Bad values.
"$bin/hkt-experiment" "$tmp/par.json" --jobs 0 >"$tmp/out" 2>&1
[[ $? -eq 2 ]] || fail "--jobs 0 was accepted"
"$bin/hkt-experiment" "$tmp/par.json" --run synthetic/hkt/seed9 >"$tmp/out" 2>&1
[[ $? -eq 2 ]] && grep -q "no such run" "$tmp/out" || { cat "$tmp/out"; fail "--run of an unknown id was accepted"; }
"$bin/hkt-experiment" "$tmp/par.json" --only zzz >"$tmp/out" 2>&1
[[ $? -eq 2 ]] && grep -q "no run id .* contains it" "$tmp/out" || { cat "$tmp/out"; fail "--only matching nothing was accepted"; }
"$bin/hkt-experiment" "$tmp/par.json" --only hkt/seed1 --only zzz >"$tmp/out" 2>&1
[[ $? -eq 2 ]] && grep -q -- "--only zzz: no run id .* contains it" "$tmp/out" ||
  { cat "$tmp/out"; fail "a second --only matching nothing was accepted or not named"; }
# Repeated --only: the runs that match any of them, and only those.
grid "$tmp/only" >"$tmp/only.json"
"$bin/hkt-experiment" "$tmp/only.json" --only hkt/seed1 --only mha/seed2 --no-report --quiet >"$tmp/out" 2>&1 ||
  { cat "$tmp/out"; fail "two --only failed"; }
"$bin/hkt-experiment" "$tmp/only.json" --list >"$tmp/list"
[[ $(grep -c "  done  " "$tmp/list") -eq 2 ]] && grep -q "^synthetic/hkt/seed1  done" "$tmp/list" &&
  grep -q "^synthetic/mha/seed2  done" "$tmp/list" || { cat "$tmp/list"; fail "two --only did not train exactly their runs"; }
# A finished run's summary.json that cannot be read: --list says which, exit status 1 (no abort).
cp "$tmp/par/synthetic/mha/seed1/summary.json" "$tmp/summary.keep"
head -c 20 "$tmp/summary.keep" >"$tmp/par/synthetic/mha/seed1/summary.json"
"$bin/hkt-experiment" "$tmp/par.json" --list >"$tmp/out" 2>&1
rc=$?
[[ $rc -eq 1 ]] && grep -q "hkt-experiment: --list: .*synthetic/mha/seed1/summary.json" "$tmp/out" ||
  { cat "$tmp/out"; fail "--list on a torn summary.json gave exit status $rc"; }
"$bin/hkt-experiment" "$tmp/par.json" --list --json >"$tmp/out" 2>/dev/null
rc=$?
[[ $rc -eq 1 ]] && grep -q '"error": ".*synthetic/mha/seed1/summary.json' "$tmp/out" ||
  { cat "$tmp/out"; fail "--list --json on a torn summary.json gave exit status $rc"; }
cp "$tmp/summary.keep" "$tmp/par/synthetic/mha/seed1/summary.json"
# A started run whose config.json is malformed: the error names that file.
printf '{"stepz": 1}\n' >"$tmp/slow/synthetic/hkt/seed1/config.json"
"$bin/hkt-experiment" "$tmp/slow.json" --list >"$tmp/out" 2>&1
rc=$?
[[ $rc -eq 2 ]] && grep -q "$tmp/slow/synthetic/hkt/seed1/config.json: .*stepz" "$tmp/out" ||
  { cat "$tmp/out"; fail "a malformed config.json of a started run was not named (exit status $rc)"; }
echo "experiment_test: ok"
