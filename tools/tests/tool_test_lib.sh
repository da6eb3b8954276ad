# Shared set-up of the tests of the Python tools in tools/ (tools/tests/*_test.sh):
#
#   source "$(dirname "${BASH_SOURCE[0]}")/tool_test_lib.sh" TOOL TEST_NAME
#
# sets $tool (the path of tools/TOOL), $tmp (a temporary folder, removed on exit) and the
# functions fail MESSAGE (exit 1, the test named) and run_tool OUT_FILE ARGS... (the tool under
# python3, its output in OUT_FILE, its exit status in $rc, without stopping the test).
set -euo pipefail

tool="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/$1"
test_name="$2"
tmp="$(mktemp -d "${TMPDIR:-/tmp}/hkt-$1.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT
fail() { echo "$test_name: $*" >&2; exit 1; }

run_tool() {
  local out="$1"
  shift
  set +e
  python3 "$tool" "$@" >"$out" 2>&1
  rc=$?
  set -e
}
