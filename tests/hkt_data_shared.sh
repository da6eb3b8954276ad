#!/usr/bin/env bash
# The real archives through tools/hkt-data, when a copy of them is at hand:
#
#   HKT_TEST_ARCHIVES=DIR tests/hkt_data_shared.sh
#
# DIR holds IMDB's (aclImdb_v1.tar.gz, or the aclImdb_v1_traintest.tar.gz repack)
# and/or CIFAR-10's (cifar-10-binary.tar.gz) archive; whoever runs the tests sets
# it. Each one found is prepared with `hkt-data --from DIR` into a temporary
# cache, its checksum accepted, and the extracted folder must hold exactly the
# archive's files (tar --compare: contents, sizes, modes and times), as a plain
# `tar xzf` gives; a second run must find it ready. Exit 77 (CTest: Skipped) when
# HKT_TEST_ARCHIVES is unset or holds none of the archives.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
tool=$here/../tools/hkt-data
src=${HKT_TEST_ARCHIVES:-}
if [[ -z "$src" ]]; then
  echo "SKIPPED: HKT_TEST_ARCHIVES is not set (the folder holding the IMDB / CIFAR-10 archives)"; exit 77
fi
sets=() archives=()
for a in aclImdb_v1.tar.gz aclImdb_v1_traintest.tar.gz; do
  if [[ -f "$src/$a" ]]; then sets+=(imdb); archives+=("$src/$a"); break; fi
done
[[ -f "$src/cifar-10-binary.tar.gz" ]] && { sets+=(cifar10); archives+=("$src/cifar-10-binary.tar.gz"); }
if ((${#sets[@]} == 0)); then
  echo "SKIPPED: $src holds none of aclImdb_v1.tar.gz, aclImdb_v1_traintest.tar.gz, cifar-10-binary.tar.gz"; exit 77
fi
cache=$(mktemp -d)
trap 'rm -rf "$cache"' EXIT
HKT_DATA=$cache HKT_DATA_CATALOG="" "$tool" --from "$src" "${sets[@]}"
for a in "${archives[@]}"; do
  tar --compare --gzip --file "$a" -C "$cache" || { echo "FAILED: $cache differs from $a"; exit 1; }
  echo "ok: the files extracted from $a are the archive's"
done
out=$(HKT_DATA=$cache HKT_DATA_CATALOG="" "$tool" --from "$src" "${sets[@]}")
[[ $(grep -c "ready in" <<<"$out") == "${#sets[@]}" ]] || { echo "FAILED: the second run: $out"; exit 1; }
echo "hkt-data shared archives: ok (${sets[*]})"
