#!/usr/bin/env bash
# tools/grid-archive on a tiny grid (CTest: grid_archive): save keeps the finished runs' small
# files and no checkpoint, restore puts them back so that hkt-experiment counts them as finished
# and its report reads them, runs that hold something else are left alone with exit status 1,
# pack keeps the same small files (and the logs) in one .tar.xz, and usage errors exit 2.
#
#   tools/tests/grid_archive_test.sh BIN_DIR
bin="$1"
source "$(dirname "${BASH_SOURCE[0]}")/tool_test_lib.sh" grid-archive grid_archive_test

cat >"$tmp/grid.json" <<JSON
{"name": "tiny", "out_dir": "$tmp/runs",
 "base": {"steps": 4, "batch_size": 4, "eval_every": 2, "eval_batches": 1, "log_every": 2,
          "data": {"seq_len": 16, "train_size": 32, "val_size": 16, "test_size": 8}},
 "tasks": {"synthetic": {}},
 "models": {"mha": {"model": "mha-tiny"}, "hkt": {"model": "hkt-tiny"}},
 "seeds": [1, 2]}
JSON
"$bin/hkt-experiment" "$tmp/grid.json" --only seed1 --quiet >/dev/null 2>&1 || fail "the tiny grid did not train"

run() { run_tool "$@" --bin "$bin"; }  # run OUT_FILE ARGS...: tools/grid-archive, its exit status in $rc
states() {  # the runs' states as "id=state" lines
  "$bin/hkt-experiment" "$tmp/grid.json" --list --json |
    python3 -c 'import json,sys; [print(r["id"] + "=" + r["state"]) for r in json.load(sys.stdin)["runs"]]'
}

arch="$tmp/arch"
run "$tmp/o1" save "$tmp/grid.json" --archive "$arch"
[[ $rc -eq 0 ]] || { cat "$tmp/o1"; fail "save gave exit status $rc"; }
grep -q "^grid-archive: 2 saved, 0 already" "$tmp/o1" || { cat "$tmp/o1"; fail "not 2 runs saved"; }
for m in mha hkt; do
  d="$arch/synthetic/$m/seed1"
  for f in config.json data.json metrics.jsonl summary.json test_predictions.csv; do
    cmp -s "$d/$f" "$tmp/runs/synthetic/$m/seed1/$f" || fail "$m: $f not archived as it is"
  done
  [[ ! -e "$d/checkpoint" && ! -e "$d/best" ]] || fail "$m: a checkpoint was archived"
done
[[ ! -e "$arch/synthetic/mha/seed2" ]] || fail "an unfinished run was archived"
run "$tmp/o2" save "$tmp/grid.json" --archive "$arch"
grep -q "^grid-archive: 0 saved, 2 already" "$tmp/o2" || { cat "$tmp/o2"; fail "a second save copied again"; }
# The default archive: experiments-style results/NAME beside the file.
run "$tmp/o3" save "$tmp/grid.json"
[[ -s "$tmp/results/tiny/synthetic/hkt/seed1/summary.json" ]] || { cat "$tmp/o3"; fail "no default archive"; }
python3 "$tool" list "$tmp/grid.json" --archive "$arch" | grep -q "^grid-archive: 2 runs in" ||
  fail "list does not count 2 runs"

# A fresh checkout: no run folders. Restore, and the runner sees seed 1 finished and reports it.
cp "$tmp/runs/results.md" "$tmp/results-before.md"
rm -rf "$tmp/runs"
run "$tmp/o4" restore "$tmp/grid.json" --archive "$arch"
[[ $rc -eq 0 ]] || { cat "$tmp/o4"; fail "restore gave exit status $rc"; }
grep -q "^grid-archive: 2 restored, 0 already there, 0 left alone" "$tmp/o4" || { cat "$tmp/o4"; fail "not 2 restored"; }
[[ "$(states | sort | tr '\n' ' ')" == "synthetic/hkt/seed1=done synthetic/hkt/seed2=new synthetic/mha/seed1=done synthetic/mha/seed2=new " ]] ||
  { states; fail "the runner does not see the restored runs as finished"; }
find "$tmp/runs" -name '*grid-archive-tmp*' | grep -q . && fail "a temporary folder was left"
"$bin/hkt-experiment" "$tmp/grid.json" --report >/dev/null 2>&1 || fail "--report on the restored runs failed"
# The report from restored runs is the report from the trained ones (the paired bootstrap included).
diff "$tmp/results-before.md" "$tmp/runs/results.md" >/dev/null ||
  { diff "$tmp/results-before.md" "$tmp/runs/results.md" || true; fail "the report differs after restore"; }
run "$tmp/o5" restore "$tmp/grid.json" --archive "$arch"
grep -q "^grid-archive: 0 restored, 2 already there" "$tmp/o5" || { cat "$tmp/o5"; fail "a second restore copied again"; }

# Run folders that hold something else are left alone (exit 1), the rest restored.
python3 - "$tmp/runs/synthetic/mha/seed1/summary.json" <<'PY'
import json, sys
p = sys.argv[1]; j = json.load(open(p)); j["test_acc"] = 0.123; open(p, "w").write(json.dumps(j))
PY
rm -rf "$tmp/runs/synthetic/hkt/seed1"
mkdir -p "$tmp/runs/synthetic/hkt/seed1" && cp "$arch/synthetic/hkt/seed1/config.json" "$tmp/runs/synthetic/hkt/seed1/"
run "$tmp/o6" restore "$tmp/grid.json" --archive "$arch"
[[ $rc -eq 1 ]] || { cat "$tmp/o6"; fail "restore over other runs gave exit status $rc, not 1"; }
grep -q "^synthetic/mha/seed1: not restored: .* holds another finished run" "$tmp/o6" || { cat "$tmp/o6"; fail "no other-run message"; }
grep -q "^synthetic/hkt/seed1: not restored: .* holds a started run" "$tmp/o6" || { cat "$tmp/o6"; fail "no started-run message"; }
grep -q '"test_acc": 0.123' "$tmp/runs/synthetic/mha/seed1/summary.json" || fail "restore overwrote another run"
# Saving that other run over the archived one is refused too.
run "$tmp/o7" save "$tmp/grid.json" --archive "$arch"
[[ $rc -eq 1 ]] || { cat "$tmp/o7"; fail "save over another archived run gave exit status $rc, not 1"; }
grep -q "^synthetic/mha/seed1: not saved: .* holds another run" "$tmp/o7" || { cat "$tmp/o7"; fail "no save conflict message"; }
grep -q '"test_acc": 0.123' "$arch/synthetic/mha/seed1/summary.json" && fail "save overwrote the archived run"

# pack: the small files of every run under the folders, the logs and results.csv, no checkpoint,
# paths relative to -C; a missing folder is named and skipped.
echo "a log" >"$tmp/runs/grid.log"
mkdir -p "$tmp/runs/synthetic/hkt/seed2/checkpoint" && echo x >"$tmp/runs/synthetic/hkt/seed2/checkpoint/summary.json"
run_tool "$tmp/p1" pack "$tmp/packed.tar.xz" -C "$tmp" runs nope
[[ $rc -eq 0 ]] || { cat "$tmp/p1"; fail "pack gave exit status $rc"; }
grep -q "nope: no such folder; skipped" "$tmp/p1" || { cat "$tmp/p1"; fail "pack did not name the missing folder"; }
tar -tJf "$tmp/packed.tar.xz" | sort >"$tmp/packed.list"
( cd "$tmp" && find runs \( -name config.json -o -name data.json -o -name metrics.jsonl -o -name summary.json \
    -o -name test_predictions.csv -o -name '*.log' -o -name results.csv \) -not -path '*/checkpoint/*' | sort ) >"$tmp/want.list"
diff "$tmp/want.list" "$tmp/packed.list" || fail "pack did not keep exactly the small files"
grep -q "^runs/synthetic/mha/seed1/summary.json$" "$tmp/packed.list" || fail "pack lost a summary"
grep -q "^runs/grid.log$" "$tmp/packed.list" || fail "pack lost the log"
mkdir -p "$tmp/unpacked" && tar -xJf "$tmp/packed.tar.xz" -C "$tmp/unpacked"
cmp -s "$tmp/unpacked/runs/synthetic/mha/seed1/metrics.jsonl" "$tmp/runs/synthetic/mha/seed1/metrics.jsonl" ||
  fail "pack changed a file"
run_tool "$tmp/p2" pack "$tmp/p2.tar.xz" -C "$tmp/nope" runs
[[ $rc -eq 2 && ! -e "$tmp/p2.tar.xz" ]] || { cat "$tmp/p2"; fail "pack -C a missing folder: exit $rc"; }
run_tool "$tmp/p3" pack "$tmp/nope/p3.tar.xz" -C "$tmp" runs
[[ $rc -eq 2 ]] || { cat "$tmp/p3"; fail "pack into a missing folder: exit $rc"; }
ls -a "$tmp" | grep -q grid-archive-tmp && fail "pack left a temporary file"

# Usage errors: exit 2, nothing written.
run "$tmp/u1" save "$tmp/nope.json" --archive "$tmp/u-arch"
[[ $rc -eq 2 ]] && grep -q "no such file" "$tmp/u1" || { cat "$tmp/u1"; fail "a missing file: exit $rc"; }
run "$tmp/u2" restore "$tmp/grid.json" --archive "$tmp/u-arch"
[[ $rc -eq 2 ]] && grep -q "no archive" "$tmp/u2" || { cat "$tmp/u2"; fail "a missing archive: exit $rc"; }
run "$tmp/u3" keep "$tmp/grid.json"
[[ $rc -eq 2 ]] || { cat "$tmp/u3"; fail "an unknown verb: exit $rc"; }
echo '{"name": "bad"' >"$tmp/bad.json"
run "$tmp/u4" save "$tmp/bad.json" --archive "$tmp/u-arch"
[[ $rc -eq 2 ]] || { cat "$tmp/u4"; fail "an unreadable experiment: exit $rc"; }
[[ ! -e "$tmp/u-arch" ]] || fail "a usage error wrote the archive"
echo "grid_archive_test: ok"
