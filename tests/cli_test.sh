#!/usr/bin/env bash
# The command-line conventions of docs/tasks.md, "Command lines". One CTest test per mode:
#   cli_test.sh suggest BIN_DIR  errors start with the program's name; an unknown option, task or preset
#                                names the closest valid one (exit 2, nothing written)
#   cli_test.sh version BIN_DIR  --version of every executable: version, git revision, build type, backends
#   cli_test.sh signal  BIN_DIR  SIGINT exits 130 and SIGTERM 143, each after a checkpoint of the step
#                                reached; --resume then ends with an uninterrupted run's bytes
#   cli_test.sh longer  BIN_DIR  --resume RUN --steps N trains a finished run further: with a constant
#                                schedule it equals a run of N steps from the start, bit for bit; a cosine
#                                one ends at N with the schedule of N steps; a shorter N is refused; --resume
#                                of a finished run says so without loading the data
#   cli_test.sh progress BIN_DIR  on a terminal (a pty from script(1)) generating ListOps and an evaluation
#                                show a percentage that ends at 100%; hkt-eval shows it on stderr only
#   cli_test.sh evaltest BIN_DIR  periodic evaluations score the validation set only; the test set once at
#                                the end on the best checkpoint; --eval-test-every gives (marked) test points
set -euo pipefail
mode="$1"
bin="$(realpath "$2")"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
work="$(mktemp -d "${TMPDIR:-/tmp}/hkt-cli.XXXXXX")"
trap 'rm -rf "$work"' EXIT
cd "$work"
bad=0
small=(--task synthetic --train-size 64 --val-size 16 --test-size 16 --seq-len 16 --batch-size 8 --threads 1)
fail() { echo "FAILED: $*"; bad=1; }
# expect STATUS TEXT CMD...: CMD exits STATUS, its stderr contains TEXT (grep -E) and starts with the program's name.
expect() {
  local want=$1 text=$2 st=0 prog
  shift 2
  prog=$(basename "$1")
  "$@" >out.txt 2>err.txt || st=$?
  if [[ $st != "$want" ]] || { [[ -n $text ]] && ! grep -qE -- "$text" err.txt; }; then
    fail "${*#"$bin/"} -> exit $st (expected $want and '$text'):"; head -c 2000 err.txt
  elif [[ $want == 2 ]] && ! head -n1 err.txt | grep -q "^$prog: "; then
    fail "${*#"$bin/"}: the message does not start with '$prog: ':"; head -n3 err.txt
  else
    echo "ok: exit $st: $(grep -E -m1 -- "$text" err.txt | head -c 300)"
  fi
}
# model_step RUN: the step of RUN's checkpoint (state.json).
ck_step() { sed -n 's/^ *"step": \([0-9]*\).*/\1/p' "$1/checkpoint/state.json"; }

case "$mode" in
suggest)
  expect 2 "unknown option '--step'; did you mean '--steps'\?" "$bin/hkt-train" "${small[@]}" --step 10 --run-dir R
  expect 2 "unknown option '--eval_every'; did you mean '--eval-every'\?" "$bin/hkt-train" "${small[@]}" --eval_every 5
  expect 2 "unknown option '--bacth-size'; did you mean '--batch-size'\?" "$bin/hkt-compare" --bacth-size 8
  expect 2 "unknown option '--sample'; did you mean '--samples'\?" "$bin/hkt-analyze" R --sample 3
  expect 2 "unknown option '--split-name'" "$bin/hkt-eval" R --split-name test
  expect 2 "unknown option '--job'; did you mean '--jobs'\?" "$bin/hkt-experiment" x.json --job 2
  expect 2 "unknown task 'synthtic'; did you mean 'synthetic'\?" "$bin/hkt-train" --task synthtic --steps 1 --run-dir R
  expect 2 "unknown preset 'hkt-smal'; did you mean 'hkt-small'\?" "$bin/hkt-train" --task synthetic --model hkt-smal --steps 1 --run-dir R
  expect 2 "unknown preset 'mha-tny'; did you mean 'mha-tiny'\?" "$bin/hkt-compare" --task synthetic --models hkt-tiny,mha-tny --steps 1
  # Nothing close: the valid names, no guess.
  expect 2 "unknown option '--zzzzzz' \(hkt-train --help" "$bin/hkt-train" --zzzzzz
  grep -q "did you mean" err.txt && fail "a suggestion for a name close to nothing: $(cat err.txt)"
  expect 2 "unknown task 'qqqqqqq' \(known: synthetic" "$bin/hkt-train" --task qqqqqqq --steps 1 --run-dir R
  [[ ! -e R ]] || fail "a refused command line left a run folder"
  ;;
version)
  want_version=$(sed -n 's/^#define HKT_VERSION_STRING "\(.*\)"/\1/p' "$here/../core/include/hkt/version.hpp")
  [[ -n $want_version ]] || fail "no HKT_VERSION_STRING in core/include/hkt/version.hpp"
  for exe in hkt-train hkt-compare hkt-experiment hkt-eval hkt-analyze hkt-plot; do
    st=0; out=$("$bin/$exe" --version 2>&1) || st=$?
    if [[ $st == 0 ]] && grep -qE "^$exe [0-9]+\.[0-9]+\.[0-9]+ \(git [^ ,]+, [A-Za-z]+ build; backends: cpu" <<<"$out"; then
      echo "ok: $out"
    else
      fail "$exe --version -> exit $st: $out"
    fi
  done
  "$bin/hkt-train" --version | grep -q "^hkt-train $want_version " || fail "hkt-train --version is not version $want_version"
  ;;
signal)
  # Stopped runs of 100,000 steps, resumed with --steps 1000 (constant schedule): the bytes of a run of 1000.
  run=("${small[@]}" --schedule constant --warmup 0 --log-every 1 --eval-every 50 --checkpoint-every 5000 --quiet)
  "$bin/hkt-train" "${run[@]}" --steps 1000 --run-dir ref
  for sig in INT TERM; do
    "$bin/hkt-train" "${run[@]}" --steps 100000 --run-dir "$sig" 2>"$sig.err" & pid=$!
    # Stop it after its 20th step (metrics.jsonl: one train event per step).
    for _ in $(seq 3000); do (( $(grep -c '"event":"train"' "$sig/metrics.jsonl" 2>/dev/null || echo 0) >= 20 )) && break; sleep 0.01; done
    kill -"$sig" "$pid"
    st=0; wait "$pid" || st=$?
    want=$([[ $sig == INT ]] && echo 130 || echo 143)
    [[ $st == "$want" ]] || { fail "SIG$sig gave exit $st, not $want:"; cat "$sig.err"; }
    grep -q "^hkt-train: train: stopped by signal" "$sig.err" && ! grep -q "error:" "$sig.err" || { fail "SIG$sig: message"; cat "$sig.err"; }
    last=$(grep -o '"event":"train","step":[0-9]*' "$sig/metrics.jsonl" | tail -n1 | grep -o '[0-9]*$')
    [[ -n $last && $(ck_step "$sig") == "$last" ]] ||
      fail "SIG$sig: the checkpoint is of step $(ck_step "$sig"), the last step trained $last"
    (( last >= 20 && last < 1000 )) || fail "SIG$sig: stopped at step $last, not between 20 and 1000"
    grep -q "after step $last; the checkpoint of step $last was written" "$sig.err" || { fail "SIG$sig: the message does not say so"; cat "$sig.err"; }
    "$bin/hkt-train" --resume "$sig" --steps 1000 --quiet || fail "--resume after SIG$sig"
    cmp "$sig/checkpoint/model.safetensors" ref/checkpoint/model.safetensors &&
      cmp "$sig/best.safetensors" ref/best.safetensors || fail "SIG$sig then --resume differs from the uninterrupted run"
    echo "ok: SIG$sig at step $last: exit $st, checkpoint of step $last, resumed to the uninterrupted run's bytes"
  done
  ;;
longer)
  c=("${small[@]}" --schedule constant --warmup 4 --eval-every 10 --checkpoint-every 10 --quiet)
  "$bin/hkt-train" "${c[@]}" --steps 20 --run-dir A
  "$bin/hkt-train" "${c[@]}" --steps 40 --run-dir B
  expect 0 "" "$bin/hkt-train" --resume A --steps 40
  grep -q '"steps": 40' A/config.json && grep -q '"steps": 40' A/summary.json || fail "A was not trained to 40 steps"
  cmp A/checkpoint/model.safetensors B/checkpoint/model.safetensors && cmp A/best.safetensors B/best.safetensors &&
    cmp A/test_predictions.csv B/test_predictions.csv || fail "20 steps then --steps 40 differs from 40 steps"
  # Finished: nothing more to do, said without loading the data; the run's files stay as they were.
  cp A/summary.json A/metrics.jsonl .
  "$bin/hkt-train" --resume A >again.txt || fail "--resume of a finished run"
  grep -q "^resume: 'A' is finished (step 40 of 40" again.txt && ! grep -q "preparing the data" again.txt ||
    { fail "--resume of a finished run did not say so at once:"; cat again.txt; }
  cmp summary.json A/summary.json && cmp metrics.jsonl A/metrics.jsonl || fail "a second --resume changed the finished run"
  # --epochs too; a shorter run is refused and changes nothing.
  expect 0 "" "$bin/hkt-train" --resume A --epochs 6 --quiet
  grep -q '"steps": 48' A/summary.json || fail "--epochs 6 (8 steps each) did not give 48 steps"
  cp A/config.json config.before
  expect 2 "hkt-train: error: .*can only lengthen" "$bin/hkt-train" --resume A --steps 30
  cmp A/config.json config.before || fail "a refused --steps changed config.json"
  expect 2 "remove: --lr" "$bin/hkt-train" --resume A --steps 60 --lr 0.1
  # Cosine: the schedule of the new length from the resumed step on.
  "$bin/hkt-train" "${small[@]}" --schedule cosine --warmup 2 --steps 10 --checkpoint-every 5 --quiet --run-dir C
  expect 0 "" "$bin/hkt-train" --resume C --steps 30
  grep -q "resume: training to step 30 (.*cosine" out.txt || { fail "no line on the new schedule:"; cat out.txt; }
  grep -q '"steps": 30' C/summary.json || fail "C was not trained to 30 steps"
  ;;
evaltest)
  "$bin/hkt-train" "${small[@]}" --steps 12 --eval-every 4 --quiet --run-dir V
  [[ $(grep -c '"event":"eval"' V/metrics.jsonl) == 3 ]] || fail "not 3 evaluations"
  grep '"event":"eval"' V/metrics.jsonl | grep -q test_ && fail "a periodic evaluation scored the test set"
  [[ $(grep -c '"event":"test"' V/metrics.jsonl) == 1 ]] || fail "not one test event"
  best=$(sed -n 's/^ *"best_step": \([0-9]*\).*/\1/p' V/summary.json)
  grep -q "\"event\":\"test\",\"step\":$best," V/metrics.jsonl || fail "the test event is not of the best step $best"
  "$bin/hkt-train" "${small[@]}" --steps 12 --eval-every 4 --eval-test-every 8 --quiet --run-dir W
  [[ $(grep '"event":"eval"' W/metrics.jsonl | grep -c '"test_acc":.*"test_curve":true') == 1 ]] ||
    { fail "--eval-test-every 8: not one marked test point"; cat W/metrics.jsonl; }
  grep '"event":"eval","step":8,' W/metrics.jsonl | grep -q test_acc || fail "no test point at step 8"
  # The model and its choice do not depend on the curve.
  cmp V/best.safetensors W/best.safetensors || fail "--eval-test-every changed the best model"
  cmp V/test_predictions.csv W/test_predictions.csv || fail "--eval-test-every changed the final test predictions"
  ;;
progress)
  # Sizes that take a few seconds here; a line appears once a loop has run a second.
  lo=(--task listops --train-size 100000 --val-size 3000 --test-size 200 --model hkt-tiny --steps 1 --threads 1)
  script -qec "$bin/hkt-train ${lo[*]} --eval-every 1 --batch-size 8 --run-dir P" tty.txt >/dev/null ||
    fail "hkt-train in a pty: exit $?"
  tr '\r' '\n' <tty.txt >lines.txt
  grep -qE '^.*listops: generating [0-9,]+ of 103,200 \([0-9]+%\)' lines.txt || { fail "no ListOps progress"; head -c 2000 lines.txt; }
  grep -qE 'scoring listops/val [0-9,]+ of 3,000 \([0-9]+%\)' lines.txt || { fail "no evaluation progress"; head -c 2000 lines.txt; }
  grep -q 'scoring listops/val 3,000 of 3,000 (100%)' lines.txt || fail "the evaluation's progress does not end at 100%"
  # hkt-eval: stdout to a file, stderr the terminal: the progress is in the terminal's text only.
  script -qec "$bin/hkt-eval P --split val --batch-size 4 --threads 1 >out.txt" tty2.txt >/dev/null ||
    fail "hkt-eval in a pty: exit $?"
  grep -qaE 'hkt-eval: scoring listops/val [0-9,]+ of 3,000' tty2.txt || { fail "hkt-eval: no progress on stderr"; head -c 1000 tty2.txt; }
  grep -q 'accuracy' out.txt || fail "hkt-eval: no result on stdout"
  ! grep -q 'scoring' out.txt || fail "hkt-eval: progress on stdout"
  # Not a terminal: no progress lines in what a log or a pipe receives.
  "$bin/hkt-eval" P --split val --threads 1 >out.txt 2>err.txt || fail "hkt-eval: exit $?"
  ! grep -q 'scoring' out.txt err.txt || fail "progress written where no terminal is"
  echo "ok: progress on a terminal, none in a pipe"
  ;;
*) echo "unknown mode $mode"; exit 2 ;;
esac
exit "$bad"
