#!/usr/bin/env bash
# One executable's bad command lines (CTest: *_bad_options, added by hkt_add_bad_options_test in
# tools/CMakeLists.txt): each must exit with status 2, print nothing on stdout, and name on stderr
# the option that was wrong (its first word).
#
#   tools/tests/bad_options_test.sh EXE 'ARGS 1' 'ARGS 2' ...   (each ARGS split on spaces)
set -u
exe=$1; shift
(($# > 0)) || { echo "bad_options_test.sh: no command lines given for $exe" >&2; exit 1; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/hkt-bad-options.XXXXXX") && trap 'rm -rf "$tmp"' EXIT
bad=0
for args in "$@"; do
  read -r -a argv <<<"$args"
  "$exe" "${argv[@]}" >"$tmp/out" 2>"$tmp/err"
  rc=$?
  opt=${argv[0]}
  if ((rc != 2)); then
    echo "FAILED: $exe $args: exit $rc, expected 2"; bad=1
  elif [[ -s "$tmp/out" ]]; then
    echo "FAILED: $exe $args: wrote to stdout:"; cat "$tmp/out"; bad=1
  elif ! grep -qF -- "$opt" "$tmp/err"; then
    echo "FAILED: $exe $args: stderr does not name $opt:"; cat "$tmp/err"; bad=1
  fi
done
((bad == 0)) && echo "bad options: $# command lines of $(basename "$exe") exit 2 and name the option"
exit $bad
