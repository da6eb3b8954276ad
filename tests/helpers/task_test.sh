# Sourced by the end-to-end task tests (text_task_test.sh, array_task_test.sh):
#   source "$(dirname "${BASH_SOURCE[0]}")/helpers/task_test.sh" BIN_DIR NAME
# sets $bin, $here (the repository), $ex (experiments/examples), a temporary folder $tmp removed
# at exit, and fail / status / expect_error.
set -euo pipefail
bin="$1"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
ex="$here/experiments/examples"
tmp="$(mktemp -d "${TMPDIR:-/tmp}/hkt-$2.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
status() { set +e; "$@" >"$tmp/out" 2>"$tmp/err"; echo $?; set -e; }
# expect_error TEXT CMD...: CMD must exit 2 with TEXT in its error output.
expect_error() {
  local text="$1" rc
  shift
  rc=$(status "$@")
  [[ "$rc" == 2 ]] && grep -qF -- "$text" "$tmp/err" ||
    { cat "$tmp/err"; fail "$* exited $rc, expected 2 and '$text'"; }
}
