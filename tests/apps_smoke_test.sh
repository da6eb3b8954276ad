#!/usr/bin/env bash
# Smoke tests of the task executables (run by CTest):
#   apps_smoke_test.sh help    BIN_DIR   hkt-train --help exits 0 and documents every option
#   apps_smoke_test.sh tasks   BIN_DIR   a two-step run per task, on data generated here in tiny files
#   apps_smoke_test.sh compare BIN_DIR   hkt-compare on two presets writes its table
#   apps_smoke_test.sh errors  BIN_DIR   bad options, values, configs and files: a message and exit status 2
set -euo pipefail
mode="$1"
bin="$(realpath "$2")"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

case "$mode" in
help)
  "$bin/hkt-train" --help >"$work/help.txt"
  missing=0
  for o in --config --task --data-dir --seq-len --train-size --val-size --test-size --max-depth --max-args --min-len --max-len --decay \
           --data-seed --model --levels --dim --heads --layers --dropout --attention --batch-size --steps --epochs \
           --lr --weight-decay --warmup --schedule --min-lr-factor --clip-norm --log-every --eval-every \
           --eval-batches --checkpoint-every --seed --threads --run-dir --resume --quiet --print-config; do
    grep -q -- "$o" "$work/help.txt" || { echo "--help does not mention $o"; missing=1; }
  done
  # (Into a file: grep -q may exit before a longer help is written, and SIGPIPE fails the pipe.)
  "$bin/hkt-compare" --help >"$work/compare-help.txt"
  grep -q -- --models "$work/compare-help.txt" || { echo "hkt-compare --help lacks --models"; missing=1; }
  # Unknown options and bad values fail.
  if "$bin/hkt-train" --no-such-option 2>/dev/null; then echo "an unknown option was accepted"; missing=1; fi
  if "$bin/hkt-train" --task nope --steps 1 --run-dir "$work/x" 2>/dev/null; then echo "task 'nope' was accepted"; missing=1; fi
  exit $missing
  ;;
tasks)
  # Tiny CIFAR-10 binary files: 4 records per file (label byte + 3072 pixel bytes).
  mkdir -p "$work/data/cifar-10-batches-bin"
  for f in data_batch_1 data_batch_2 data_batch_3 data_batch_4 data_batch_5 test_batch; do
    for i in 0 1 2 3; do
      printf "\\x0$(( (i * 3 + ${#f}) % 10 ))"
      head -c 3072 /dev/urandom
    done >"$work/data/cifar-10-batches-bin/$f.bin"
  done
  # Tiny Fashion-MNIST IDX files: 8 training and 4 test images of 28 x 28.
  mkdir -p "$work/data/fashion-mnist"
  idx() {  # idx FILE MAGIC COUNT [rows cols]
    local file=$1 magic=$2 n=$3
    { printf "\\x00\\x00\\x08\\x$magic\\x00\\x00\\x00\\x$(printf %02x "$n")"
      if [[ $magic == 03 ]]; then printf '\x00\x00\x00\x1c\x00\x00\x00\x1c'; head -c $((n * 784)) /dev/urandom
      else for ((i = 0; i < n; i++)); do printf "\\x0$((i % 10))"; done; fi; } >"$file"
  }
  idx "$work/data/fashion-mnist/train-images-idx3-ubyte" 03 8
  idx "$work/data/fashion-mnist/train-labels-idx1-ubyte" 01 8
  idx "$work/data/fashion-mnist/t10k-images-idx3-ubyte" 03 4
  idx "$work/data/fashion-mnist/t10k-labels-idx1-ubyte" 01 4
  # Tiny IMDB: aclImdb/{train,test}/{pos,neg}/<id>_<rating>.txt.
  for split in train test; do
    for label in pos neg; do
      mkdir -p "$work/data/aclImdb/$split/$label"
      for i in 0 1 2 3; do
        r=$([[ $label == pos ]] && echo 8 || echo 2)
        echo "A $label review number $i of the $split split." >"$work/data/aclImdb/$split/$label/${i}_$r.txt"
      done
    done
  done
  # Tiny LRA ListOps TSV files.
  mkdir -p "$work/data/listops"
  for split in train val test; do
    printf 'Source\tTarget\n( ( [MAX 2 9 ) 4 ) ]\t9\n[MIN 3 [MAX 1 7 ] 5 ]\t3\n[SM 4 8 ]\t2\n[MED 1 5 9 ]\t5\n' \
      >"$work/data/listops/basic_$split.tsv"
  done
  common=(--steps 2 --batch-size 4 --log-every 1 --threads 2 --data-dir "$work/data")
  run() {
    local name=$1; shift
    echo "== $name: $*"
    "$bin/hkt-train" "${common[@]}" --run-dir "$work/runs/$name" "$@" >"$work/$name.log" 2>&1 ||
      { cat "$work/$name.log"; echo "FAILED: $name"; exit 1; }
    [[ -f "$work/runs/$name/summary.json" && -f "$work/runs/$name/checkpoint/model.safetensors" ]] ||
      { echo "FAILED: $name wrote no summary/checkpoint"; exit 1; }
    tail -n 1 "$work/$name.log"
  }
  run synthetic --task synthetic --model hkt-tiny
  run synthetic-mha --task synthetic --model mha-tiny --dim 32
  run listops --task listops --model hkt-tiny --seq-len 64 --train-size 16 --val-size 4 --test-size 4
  run cifar10 --task cifar10 --model hkt-tiny --val-size 4
  run cifar10-rgb --task cifar10-rgb --model mha-tiny --val-size 4
  run fashion-mnist --task fashion-mnist --model hkt-tiny --val-size 2
  run imdb --task imdb --model hkt-tiny --seq-len 64 --val-size 2
  run listops-tsv --task listops-tsv --model hkt-tiny --seq-len 32
  # A generated-ListOps run scored on LRA-format files of the same family, at the run's T = 64
  # (the file task's own default T is 2000).
  "$bin/hkt-eval" "$work/runs/listops" --task listops-tsv --data-dir "$work/data" >"$work/eval-tsv.log"
  grep -q "listops/test: 4 examples" "$work/eval-tsv.log" || { cat "$work/eval-tsv.log"; echo "FAILED: eval on TSV"; exit 1; }
  # A length window: every generated example in [20, 40], the distribution in data.json.
  run listops-window --task listops --model hkt-tiny --seq-len 64 --min-len 20 --max-len 40 --train-size 16 \
    --val-size 4 --test-size 4
  python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert all(20 <= d[s]["min"] and d[s]["max"] <= 40 for s in ("train","val","test")), d' \
    "$work/runs/listops-window/data.json" || { echo "FAILED: the length window"; exit 1; }
  [[ -f "$work/runs/listops-window/test_predictions.csv" ]] || { echo "FAILED: no test_predictions.csv"; exit 1; }
  # Resuming a finished run redoes nothing and succeeds.
  "$bin/hkt-train" --resume "$work/runs/synthetic" --quiet
  # A config file, then flag overrides.
  "$bin/hkt-train" --task synthetic --steps 3 --print-config >"$work/cfg.json"
  "$bin/hkt-train" --config "$work/cfg.json" --steps 2 --run-dir "$work/runs/cfg" --quiet
  grep -q '"steps": 2' "$work/runs/cfg/config.json"
  # A file that leaves a value to the flags (or to the defaults: one epoch) is complete with them.
  echo '{"task": "synthetic", "lr": 0.002}' >"$work/partial.json"
  "$bin/hkt-train" --config "$work/partial.json" --steps 4 --print-config | grep -q '"steps": 4'
  "$bin/hkt-train" --config "$work/partial.json" --print-config | grep -q '"epochs": 1'
  # A value from the file that no flag mends: the error names the file.
  echo '{"task": "synthetic", "batch_size": 0}' >"$work/zero.json"
  if "$bin/hkt-train" --config "$work/zero.json" --print-config 2>"$work/zero.err"; then
    echo "batch_size 0 from a config file was accepted"; exit 1
  fi
  grep -q "zero.json (with the flags given): .*batch_size" "$work/zero.err"
  "$bin/hkt-train" --config "$work/zero.json" --batch-size 8 --print-config | grep -q '"batch_size": 8'
  # Strict config files.
  echo '{"steps": 2, "stepz": 1}' >"$work/bad.json"
  if "$bin/hkt-train" --config "$work/bad.json" --run-dir "$work/runs/bad" 2>"$work/bad.err"; then
    echo "an unknown config key was accepted"; exit 1
  fi
  grep -q "unknown key 'stepz'" "$work/bad.err"
  # Non-finite loss: a clear message naming the step, exit code non-zero.
  if "$bin/hkt-train" --task synthetic --steps 50 --lr 1e30 --clip-norm 0 --run-dir "$work/runs/nan" --quiet \
       2>"$work/nan.err"; then
    echo "a diverging run exited 0"; exit 1
  fi
  grep -q "step [0-9]*: the .* is .*not finite" "$work/nan.err" || { cat "$work/nan.err"; exit 1; }
  echo "smoke tasks: ok"
  ;;
compare)
  # --levels is for the HKT models among --models (an MHA model has no levels).
  "$bin/hkt-compare" --task synthetic --models hkt-tiny,mha-tiny --steps 3 --batch-size 8 --threads 2 \
    --levels 2 --run-dir "$work/cmp" --quiet | tee "$work/out.txt"
  grep -q "| hkt-tiny |" "$work/cmp/results.md"
  grep -q "| mha-tiny |" "$work/cmp/results.md"
  grep -q '"levels": 2' "$work/cmp/hkt-tiny/config.json"
  if grep -q '"levels"' "$work/cmp/mha-tiny/config.json"; then echo "FAILED: --levels reached mha-tiny"; exit 1; fi
  echo "smoke compare: ok"
  ;;
errors)
  # Bad command lines, configs and files: a message on stderr naming the problem
  # and exit status 2 (never a crash, never a run). Each case: the expected
  # text in the message, then the arguments.
  bad=0
  expect_usage() {  # expect_usage BINARY TEXT ARGS...
    local exe=$1 text=$2; shift 2
    local st=0
    "$bin/$exe" "$@" >"$work/out" 2>"$work/err" || st=$?
    if [[ $st != 2 ]] || ! grep -qi -- "$text" "$work/err"; then
      echo "FAILED: $exe $* -> exit $st (expected 2 and a message with '$text'):"; cat "$work/err"; bad=1
    else
      echo "ok: $exe $* -> 2: $(grep -i -m1 -- "$text" "$work/err")"
    fi
  }
  r=(--run-dir "$work/r" --steps 1)
  echo '{"steps": 2, "stepz": 1}' >"$work/bad.json"
  echo '{"steps": ' >"$work/broken.json"
  expect_usage hkt-train "no-such-option" --no-such-option
  expect_usage hkt-train "levels must be >= 1" --task synthetic --levels 0 "${r[@]}"
  expect_usage hkt-train '--levels: ClassifierConfig: attention "mha" has no options of "hkt"' --task synthetic \
    --model mha-tiny --levels 2 "${r[@]}"
  expect_usage hkt-train "unknown attention kind 'linear'" --task synthetic --attention linear "${r[@]}"
  echo '{"task": "synthetic", "model": "mha-tiny", "model_overrides": {"window": 8}, "steps": 1}' >"$work/foreign.json"
  expect_usage hkt-train "key 'window' is an option of attention \"local\"" --config "$work/foreign.json" "${r[@]}"
  expect_usage hkt-train "data sizes must be >= 0" --task synthetic --seq-len -1 "${r[@]}"
  expect_usage hkt-train "divisible by heads" --task synthetic --dim 30 --heads 4 "${r[@]}"
  expect_usage hkt-train "batch_size must be >= 1" --task synthetic --batch-size 0 "${r[@]}"
  expect_usage hkt-train "lr must be > 0" --task synthetic --lr -1 "${r[@]}"
  expect_usage hkt-train "could not convert" --task synthetic "${r[@]}" --steps many
  expect_usage hkt-train "unknown task 'nope'" --task nope "${r[@]}"
  expect_usage hkt-train "unknown preset" --task synthetic --model huge "${r[@]}"
  expect_usage hkt-train "does not exist" --config "$work/missing.json" "${r[@]}"
  expect_usage hkt-train "unknown key 'stepz'" --config "$work/bad.json" "${r[@]}"
  expect_usage hkt-train "invalid JSON" --config "$work/broken.json" "${r[@]}"
  expect_usage hkt-train "no config.json" --resume "$work/no-such-run"
  expect_usage hkt-train "remove: --lr" --resume "$work/r" --lr 3
  expect_usage hkt-train "warmup" --task synthetic --steps 2 --warmup 5 --run-dir "$work/w"
  [[ ! -e "$work/w" ]] || { echo "FAILED: refused settings left a run folder behind"; bad=1; }
  expect_usage hkt-train "seed" --task synthetic --seed -1 "${r[@]}"
  expect_usage hkt-train "data-seed" --task synthetic --data-seed -5 "${r[@]}"
  expect_usage hkt-train "threads" --resume "$work/r" --threads -1
  # Missing data: the message names the command that fetches it (into --data-dir, or the default cache).
  for t in imdb cifar10 cifar10-rgb fashion-mnist listops-tsv; do
    expect_usage hkt-train "no $t data in '$work/no-data'; fetch it with \`HKT_DATA=$work/no-data tools/hkt-data ${t%-rgb}\`" \
      --task "$t" --data-dir "$work/no-data" "${r[@]}"
  done
  mkdir -p "$work/empty-cache"
  HKT_DATA=$work/empty-cache expect_usage hkt-train "data in '$work/empty-cache'; fetch it with \`tools/hkt-data imdb\`" \
    --task imdb "${r[@]}"
  expect_usage hkt-compare "no-such-option" --no-such-option
  expect_usage hkt-compare "unknown preset" --task synthetic --models hkt-tiny,huge --steps 1 --run-dir "$work/c"
  expect_usage hkt-compare "levels must be >= 1" --task synthetic --levels 0 --steps 1 --run-dir "$work/c"
  [[ ! -e "$work/c/huge" ]] || { echo "FAILED: hkt-compare trained before checking every preset"; bad=1; }
  [[ $bad == 0 ]] && echo "smoke errors: ok"
  exit $bad
  ;;
*)
  echo "unknown mode $mode"; exit 2 ;;
esac
