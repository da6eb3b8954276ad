#!/usr/bin/env bash
# tools/hkt-data against a loopback HTTP server (tests/data_server.py) that this
# test starts on 127.0.0.1 and stops on every exit; nothing reaches further.
#
#   tests/hkt_data_test.sh
#
# A small synthetic aclImdb archive, made here, is fetched through a test
# catalog (HKT_DATA_CATALOG) and the official catalog's addresses redirected to
# the server (HKT_DATA_URL_BASE). Each case checks the exit status, the one-line
# message, and that no folder a loader would trust (and no temporary folder) is
# left after a failure: success and a second run, a 404, no server, a truncated
# file, a wrong checksum, a connection dropped once (resumed in the same run) and
# more often than the tries (resumed by the next run), a corrupt archive, a kill
# -9 and a SIGTERM during extraction, local files (--from), a multi-file data set,
# a held lock and bad usage. Exit 77 (CTest: Skipped) without python3 or curl.
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
tool=$here/../tools/hkt-data
for c in python3 curl; do
  command -v "$c" >/dev/null 2>&1 || { echo "SKIPPED: $c not found (tools/setup.sh installs it)"; exit 77; }
done
export PYTHONDONTWRITEBYTECODE=1
# Straight to 127.0.0.1: no proxy from the environment, no ~/.curlrc.
unset http_proxy https_proxy HTTP_PROXY HTTPS_PROXY ALL_PROXY all_proxy
export NO_PROXY=127.0.0.1 no_proxy=127.0.0.1
work=$(mktemp -d)
export CURL_HOME=$work XDG_CONFIG_HOME=$work
server=""
stop() {
  [[ -n "$server" ]] && kill "$server" 2>/dev/null && wait "$server" 2>/dev/null
  rm -rf "$work"
}
trap stop EXIT
trap 'exit 1' INT TERM

# The synthetic archive: aclImdb/{train,test}/{pos,neg}/<id>_<rating>.txt, ~400 KB.
gen=$work/gen
for split in train test; do
  for label in pos neg; do
    mkdir -p "$gen/aclImdb/$split/$label"
    for i in 0 1 2 3 4; do
      head -c 15000 /dev/urandom | base64 >"$gen/aclImdb/$split/$label/${i}_$([[ $label == pos ]] && echo 9 || echo 2).txt"
    done
  done
done
srv=$work/srv
mkdir -p "$srv"/{ok,drop1,drop4,bad,corrupt,short,badlines,tsv}
tar czf "$srv/ok/aclImdb_v1.tar.gz" -C "$gen" aclImdb
arch=$srv/ok/aclImdb_v1.tar.gz
size=$(stat -c %s "$arch")
sum=$(sha256sum "$arch" | cut -d' ' -f1)
cp "$arch" "$srv/drop1/"; echo 1 >"$srv/drop1/aclImdb_v1.tar.gz.drop"
cp "$arch" "$srv/drop4/"; echo 4 >"$srv/drop4/aclImdb_v1.tar.gz.drop"
# The same size with one byte changed: a wrong checksum.
python3 -c 'import sys; b = bytearray(open(sys.argv[1], "rb").read()); b[len(b) // 2] ^= 0xFF; open(sys.argv[2], "wb").write(b)' \
  "$arch" "$srv/bad/aclImdb_v1.tar.gz"
# A corrupt archive whose checksum the catalog accepts: extraction itself fails.
head -c $((size / 2)) "$arch" >"$srv/corrupt/aclImdb_v1.tar.gz"
csize=$(stat -c %s "$srv/corrupt/aclImdb_v1.tar.gz")
csum=$(sha256sum "$srv/corrupt/aclImdb_v1.tar.gz" | cut -d' ' -f1)
# Shorter than the official IMDB archive: a truncated file.
head -c 1000 "$arch" >"$srv/short/aclImdb_v1.tar.gz"
# A data set of several plain files: one checked by sha256, one by its line count.
printf 'Source\tTarget\n[MAX 1 2 ]\t2\n' >"$srv/tsv/a.tsv"
printf 'Source\tTarget\n[MIN 1 2 ]\t1\n[SM 3 4 ]\t7\n' >"$srv/tsv/b.tsv"
printf 'Source\tTarget\n[MIN 1 2 ]\t1\n' >"$srv/badlines/b.tsv"
cp "$srv/tsv/a.tsv" "$srv/badlines/"
asum=$(sha256sum "$srv/tsv/a.tsv" | cut -d' ' -f1)

cat >"$work/catalog.sh" <<EOF
dataset imdb tar aclImdb
entry imdb aclImdb_v1.tar.gz $size sha256:$sum https://example.invalid/sentiment/aclImdb_v1.tar.gz "the synthetic test archive"
dataset tsv files tsvdir
entry tsv a.tsv $(stat -c %s "$srv/tsv/a.tsv") sha256:$asum https://example.invalid/a.tsv "file a"
entry tsv b.tsv - lines:3 https://example.invalid/b.tsv "file b"
EOF
sed "s/$size sha256:$sum/$csize sha256:$csum/" "$work/catalog.sh" >"$work/corrupt.sh"

python3 "$here/data_server.py" "$srv" "$work/port" "$work/log" 150 &
server=$!
for _ in $(seq 100); do [[ -s "$work/port" ]] && break; sleep 0.1; done
[[ -s "$work/port" ]] || { echo "FAILED: the test server did not start"; exit 1; }
port=$(cat "$work/port")
base=http://127.0.0.1:$port
touch "$work/log"

bad=0
fail() { echo "FAILED: $*"; bad=1; }
# run NAME CACHE_DIR URL_BASE CATALOG ARGS...: runs hkt-data; status in $st, output in
# $work/NAME.{out,err}, its last message in $last (stdout when it succeeded, else stderr).
run() {
  local name=$1 cache=$2 url=$3 cat=$4; shift 4
  st=0
  HKT_DATA=$cache HKT_DATA_URL_BASE=$url HKT_DATA_CATALOG=$cat HKT_DATA_SRC="" HKT_DATA_TRIES=3 \
    timeout 60 "$tool" "$@" >"$work/$name.out" 2>"$work/$name.err" || st=$?
  local f=$work/$name.err
  [[ $st == 0 ]] && f=$work/$name.out
  last=$(grep '^hkt-data:' "$f" | grep -v 'not ready:' | tail -n 1)
}
# expect NAME STATUS PATTERN: the status, and the last hkt-data message (stderr) matching PATTERN.
expect() {
  local name=$1 want=$2 pat=$3
  if [[ $st != "$want" ]]; then fail "$name: exit $st, expected $want"; cat "$work/$name.err"; return; fi
  if [[ -n "$pat" ]] && ! grep -Eq -- "$pat" <<<"$last"; then
    fail "$name: the message does not match '$pat':"; cat "$work/$name.err"; return
  fi
  echo "ok: $name -> $st${last:+: $last} (${SECONDS}s)"
}
# untrusted CACHE NAME: no extracted folder, no stamp, no temporary folder.
untrusted() {
  local c=$1 name=$2
  [[ ! -e "$c/aclImdb" && ! -e "$c/.aclImdb.ok" ]] || fail "$name: left $c/aclImdb or its stamp"
  ! compgen -G "$c/.tmp-*" >/dev/null || fail "$name: left a temporary folder: $(ls -d "$c"/.tmp-*)"
}
same() {  # same CACHE NAME: the extracted folder equals the generated one
  diff -r "$gen/aclImdb" "$1/aclImdb" >/dev/null || fail "$2: $1/aclImdb differs from the archive's files"
  [[ -f "$1/.aclImdb.ok" ]] || fail "$2: no stamp"
  ! compgen -G "$1/.tmp-*" >/dev/null || fail "$2: left a temporary folder"
  [[ ! -e "$1/.downloads/aclImdb_v1.tar.gz" && ! -e "$1/.downloads/aclImdb_v1.tar.gz.part" ]] ||
    fail "$2: the download was not cleared away"
}
requests() { wc -l <"$work/log"; }

# Success, then a second run that does nothing.
run ok "$work/c1" "$base/ok" "$work/catalog.sh" imdb
expect ok 0 "imdb: ready in .*/c1/aclImdb"; same "$work/c1" ok
grep -q "Received\|Speed\|100" "$work/ok.err" || fail "ok: no progress meter on stderr"
n=$(requests)
run again "$work/c1" "$base/ok" "$work/catalog.sh" imdb
expect again 0 "imdb: ready in"
[[ $(requests) == "$n" ]] || fail "again: the second run downloaded again"

# The official catalog, redirected: a 404, no server, a truncated file.
run 404 "$work/c2" "$base/nowhere" "" cifar10
expect 404 1 "cifar10: $base/nowhere/cifar-10-binary.tar.gz answered HTTP 404.*--from DIR cifar10"
[[ ! -e "$work/c2/cifar-10-batches-bin" && ! -e "$work/c2/.downloads/cifar-10-binary.tar.gz.part" ]] ||
  fail "404: left files behind"
run nonet "$work/c2" "http://127.0.0.1:1" "" imdb
expect nonet 1 "imdb: cannot reach http://127.0.0.1:1/aclImdb_v1.tar.gz .*no network.*--from DIR imdb"
untrusted "$work/c2" nonet
run short "$work/c2" "$base/short" "" imdb
expect short 1 "imdb: the file downloaded from $base/short/aclImdb_v1.tar.gz has 1000 bytes, expected 84125825, so it was deleted"
untrusted "$work/c2" short
[[ ! -e "$work/c2/.downloads/aclImdb_v1.tar.gz.part" ]] || fail "short: kept the truncated file"

# A server that never ends its response (issue 70: 141 MiB in 15 s for a 3 MiB file): stopped
# at the catalogue's size while it streams, the part deleted, exit 1, in seconds.
mkdir -p "$srv/endless"; cp "$arch" "$srv/endless/"; touch "$srv/endless/aclImdb_v1.tar.gz.endless"
t0=$SECONDS
run endless "$work/c2e" "$base/endless" "$work/catalog.sh" imdb
expect endless 1 "imdb: .*/endless/aclImdb_v1.tar.gz sent more than the $size bytes the catalogue gives this file; it was stopped and the part deleted"
untrusted "$work/c2e" endless
[[ ! -e "$work/c2e/.downloads/aclImdb_v1.tar.gz.part" ]] || fail "endless: kept the part"
((SECONDS - t0 < 30)) || fail "endless: took $((SECONDS - t0)) s"

# A wrong checksum: refused, deleted, nothing extracted.
run badsum "$work/c3" "$base/bad" "$work/catalog.sh" imdb
expect badsum 1 "imdb: the file downloaded from .*/bad/aclImdb_v1.tar.gz has sha256 [0-9a-f]{64}, expected $sum, so it was deleted"
untrusted "$work/c3" badsum
! compgen -G "$work/c3/.downloads/aclImdb*" >/dev/null || fail "badsum: kept the bad file"

# A full disk: a file size limit stands in for it (writes fail with EFBIG as they would with
# ENOSPC; SIGXFSZ ignored, as a full disk sends no signal). Named, exit 1, nothing trusted left.
(
  trap '' XFSZ
  ulimit -f 4
  run full "$work/c3f" "$base/ok" "$work/catalog.sh" imdb
  echo "$st" >"$work/full.st"
  printf '%s' "$last" >"$work/full.last"
)
st=$(cat "$work/full.st"); last=$(cat "$work/full.last")
expect full 1 "imdb: cannot write .*aclImdb_v1.tar.gz.part \(curl exit 23: disk full or not writable\); free space in .*c3f and run this again"
untrusted "$work/c3f" full
# With space again, the same command finishes the download.
run fullagain "$work/c3f" "$base/ok" "$work/catalog.sh" imdb
expect fullagain 0 "imdb: ready in"; same "$work/c3f" fullagain

# A connection dropped halfway once: the same run resumes with a range request.
: >"$work/log"
run drop1 "$work/c4" "$base/drop1" "$work/catalog.sh" imdb
expect drop1 0 "imdb: ready in"; same "$work/c4" drop1
grep -Eq "^GET /drop1/aclImdb_v1.tar.gz bytes=[1-9][0-9]*-$" "$work/log" || { fail "drop1: no range request"; cat "$work/log"; }
grep -q "resuming" "$work/drop1.out" || fail "drop1: no 'resuming' message"

# Dropped more often than the tries: the run fails and keeps the part, the next run resumes it.
run drop4 "$work/c5" "$base/drop4" "$work/catalog.sh" imdb
expect drop4 1 "imdb: the download of $base/drop4/aclImdb_v1.tar.gz kept breaking off; [0-9]+ bytes are kept in .*\.part: run the same command again to resume"
untrusted "$work/c5" drop4
[[ -s "$work/c5/.downloads/aclImdb_v1.tar.gz.part" ]] || fail "drop4: the partial download was not kept"
: >"$work/log"
run drop4b "$work/c5" "$base/drop4" "$work/catalog.sh" imdb
expect drop4b 0 "imdb: ready in"; same "$work/c5" drop4b
grep -Eq "^GET /drop4/aclImdb_v1.tar.gz bytes=[1-9][0-9]*-$" "$work/log" || fail "drop4b: the second run did not resume"
[[ $(requests) == 2 ]] || { fail "drop4b: expected 2 requests (one more drop, then the rest)"; cat "$work/log"; }

# A corrupt archive (its checksum accepted): extraction fails, nothing is kept but the checked archive.
run corrupt "$work/c6" "$base/corrupt" "$work/corrupt.sh" imdb
expect corrupt 1 "imdb: extracting .*aclImdb_v1.tar.gz failed .*run this again"
untrusted "$work/c6" corrupt
[[ -f "$work/c6/.downloads/aclImdb_v1.tar.gz" ]] || fail "corrupt: the checked download was not kept for the next run"

# Killed (-9) during extraction, then run again; then a SIGTERM during extraction.
realtar=$(command -v tar)
mkdir -p "$work/kill9" "$work/term"
printf '#!/bin/bash\n"%s" "$@"\nkill -9 0\n' "$realtar" >"$work/kill9/tar"
printf '#!/bin/bash\n"%s" "$@"\nkill -TERM 0\n' "$realtar" >"$work/term/tar"
chmod +x "$work/kill9/tar" "$work/term/tar"
st=0
(PATH=$work/kill9:$PATH HKT_DATA=$work/c7 HKT_DATA_URL_BASE=$base/ok HKT_DATA_CATALOG=$work/catalog.sh \
  timeout 60 setsid "$tool" imdb >"$work/kill9.out" 2>&1) 2>/dev/null || st=$?
[[ $st == 137 ]] || fail "kill9: exit $st, expected 137 (SIGKILL)"
[[ ! -e "$work/c7/aclImdb" && ! -e "$work/c7/.aclImdb.ok" ]] || fail "kill9: a killed extraction left $work/c7/aclImdb"
compgen -G "$work/c7/.tmp-aclImdb.*" >/dev/null || fail "kill9: the fake tar did not extract anything (test broken)"
run afterkill "$work/c7" "$base/ok" "$work/catalog.sh" imdb
expect afterkill 0 "imdb: ready in"; same "$work/c7" afterkill
st=0
PATH=$work/term:$PATH HKT_DATA=$work/c8 HKT_DATA_URL_BASE=$base/ok HKT_DATA_CATALOG=$work/catalog.sh \
  timeout 60 setsid "$tool" imdb >"$work/term.out" 2>"$work/term.err" || st=$?
last=$(grep '^hkt-data:' "$work/term.err" | tail -n 1)
expect term 1 "imdb: interrupted; nothing half-made was kept"
untrusted "$work/c8" term

# Local files: --from DIR (the server is not asked), a missing file, a wrong file (kept: it is the user's).
mkdir -p "$work/local" "$work/empty" "$work/wrong"
cp "$arch" "$work/local/"; cp "$srv/bad/aclImdb_v1.tar.gz" "$work/wrong/"
n=$(requests)
run from "$work/c9" "$base/nowhere" "$work/catalog.sh" --from "$work/local" imdb
expect from 0 "imdb: ready in"
diff -r "$gen/aclImdb" "$work/c9/aclImdb" >/dev/null || fail "from: wrong files"
[[ -f "$work/local/aclImdb_v1.tar.gz" && $(requests) == "$n" ]] || fail "from: removed the local file or asked the server"
run fromempty "$work/c10" "$base/nowhere" "$work/catalog.sh" --from "$work/empty" imdb
expect fromempty 1 "imdb: .*/empty holds none of aclImdb_v1.tar.gz; download .*aclImdb_v1.tar.gz into it"
untrusted "$work/c10" fromempty
run fromwrong "$work/c10" "$base/nowhere" "$work/catalog.sh" --from "$work/wrong" imdb
expect fromwrong 1 "imdb: .*/wrong/aclImdb_v1.tar.gz is not a file hkt accepts \(the synthetic test archive: sha256 [0-9a-f]{64}, expected $sum\)"
untrusted "$work/c10" fromwrong
[[ -f "$work/wrong/aclImdb_v1.tar.gz" ]] || fail "fromwrong: deleted the user's file"

# A data set of several files, and one whose file has the wrong number of lines.
run tsv "$work/c11" "$base/tsv" "$work/catalog.sh" tsv
expect tsv 0 "tsv: ready in .*/c11/tsvdir"
cmp -s "$srv/tsv/a.tsv" "$work/c11/tsvdir/a.tsv" && cmp -s "$srv/tsv/b.tsv" "$work/c11/tsvdir/b.tsv" ||
  fail "tsv: the files differ"
run badlines "$work/c12" "$base/badlines" "$work/catalog.sh" tsv
expect badlines 1 "tsv: the file downloaded from .*/badlines/b.tsv has 2 lines, expected 3, so it was deleted"
[[ ! -e "$work/c12/tsvdir" ]] || fail "badlines: left the folder"

# A second hkt-data on the same cache waits for nobody: it says so.
mkdir -p "$work/c13"
exec 8>"$work/c13/.lock"
flock -n 8 || fail "locked: could not take the lock (test broken)"
run locked "$work/c13" "$base/ok" "$work/catalog.sh" imdb
exec 8>&-
expect locked 1 "another hkt-data is working in .*/c13"

# Bad usage: exit 2.
run unknown "$work/c14" "$base/ok" "" nope
expect unknown 2 "unknown data set 'nope' \(known: imdb cifar10 fashion-mnist listops-tsv\)"
run badfrom "$work/c14" "$base/ok" "" --from "$work/no-such-dir" imdb
expect badfrom 2 "is not a folder"
run inrepo "$here/../build-hkt-data-test" "$base/ok" "" imdb
expect inrepo 2 "is inside the repository"
[[ ! -e "$here/../build-hkt-data-test" ]] || fail "inrepo: created a folder in the repository"

"$tool" --help >"$work/help.txt" || fail "--help: exit $?"
grep -q "^Usage: tools/hkt-data" "$work/help.txt" && ! grep -q "set -e" "$work/help.txt" || fail "--help: not the usage text"
run badopt "$work/c14" "$base/ok" "" --frm x
expect badopt 2 "unknown option '--frm'"

[[ $bad == 0 ]] && echo "hkt-data: all cases ok"
exit $bad
