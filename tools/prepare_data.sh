#!/usr/bin/env bash
# Makes the real data sets ready for hkt's loaders, outside the repository:
#   imdb           aclImdb_v1_traintest.tar.gz -> $HKT_DATA/aclImdb            (load_imdb)
#   cifar10        cifar-10-binary.tar.gz      -> $HKT_DATA/cifar-10-batches-bin (load_cifar10)
#   fashion-mnist  Debian's dataset-fashion-mnist -> /usr/share/datasets/fashion-mnist (load_fashion_mnist)
#
# Usage: tools/prepare_data.sh [imdb] [cifar10] [fashion-mnist]   (default: all three)
# Environment:
#   HKT_DATA_SRC  folder holding the archives (default: ../shared/data next to the repository)
#   HKT_DATA      where to extract them (default: ~/.cache/hkt/data; never inside the repository)
# Each archive's sha256 is checked before it is extracted (and CIFAR-10's batch
# files after), extraction goes through a temporary folder renamed into place,
# and a data set already extracted is left alone, so running this again is
# quick and harmless. Fashion-MNIST is installed with apt-get when missing (as
# root, or through password-less sudo; otherwise the command to run is printed).
# Exits 1 if any requested data set could not be made ready.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
src=${HKT_DATA_SRC:-$repo/../shared/data}
dest=${HKT_DATA:-$HOME/.cache/hkt/data}
fmnist_dir=/usr/share/datasets/fashion-mnist

say() { echo "prepare_data: $*"; }
err() { echo "prepare_data: $*" >&2; }

sets=("$@")
((${#sets[@]} == 0)) && sets=(imdb cifar10 fashion-mnist)
for s in "${sets[@]}"; do
  case "$s" in
    imdb | cifar10 | fashion-mnist) ;;
    -h | --help) sed -n '2,17p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) err "unknown data set '$s' (expected imdb, cifar10 or fashion-mnist)"; exit 2 ;;
  esac
done

dest=$(realpath -m "$dest")
case "$dest/" in
  "$(realpath "$repo")/"*)
    err "HKT_DATA=$dest is inside the repository $repo; extract the data elsewhere (e.g. ~/.cache/hkt/data)"
    exit 2 ;;
esac
mkdir -p "$dest"

sha_of() { sha256sum "$1" | cut -d' ' -f1; }

# extract NAME ARCHIVE SHA256 TOPDIR [CHECKS]: ARCHIVE (in $src) -> $dest/TOPDIR.
# CHECKS: lines "file sha256" (relative to TOPDIR) verified after extraction.
extract() {
  local name=$1 archive=$2 sum=$3 top=$4 checks=${5:-}
  local target=$dest/$top stamp=$dest/.$top.ok
  if [[ -d "$target" && -f "$stamp" ]]; then
    say "$name: already extracted in $target"
    return 0
  fi
  if [[ ! -f "$src/$archive" ]]; then
    err "$name: archive $archive not found in $src"
    err "  put it there, or set HKT_DATA_SRC to the folder holding it (see shared/data/README.md)"
    return 1
  fi
  say "$name: checking the sha256 of $src/$archive"
  local got
  got=$(sha_of "$src/$archive")
  if [[ "$got" != "$sum" ]]; then
    err "$name: $src/$archive has sha256 $got, expected $sum: the archive is damaged or not the right one"
    return 1
  fi
  local tmp
  tmp=$(mktemp -d "$dest/.extract.XXXXXX")
  say "$name: extracting into $target"
  if ! tar xzf "$src/$archive" -C "$tmp"; then
    rm -rf "$tmp"
    err "$name: extracting $src/$archive failed"
    return 1
  fi
  if [[ ! -d "$tmp/$top" ]]; then
    rm -rf "$tmp"
    err "$name: $archive does not contain a $top folder"
    return 1
  fi
  local f want
  while read -r f want; do
    [[ -z "$f" ]] && continue
    if [[ ! -f "$tmp/$top/$f" ]]; then
      rm -rf "$tmp"; err "$name: $archive lacks $top/$f"; return 1
    fi
    got=$(sha_of "$tmp/$top/$f")
    if [[ "$got" != "$want" ]]; then
      rm -rf "$tmp"; err "$name: $top/$f has sha256 $got, expected $want"; return 1
    fi
  done <<<"$checks"
  rm -rf "$target"
  mv "$tmp/$top" "$target"
  rmdir "$tmp"
  touch "$stamp"
  say "$name: extracted"
}

fashion_mnist() {
  local files=(train-images-idx3-ubyte.gz train-labels-idx1-ubyte.gz t10k-images-idx3-ubyte.gz
               t10k-labels-idx1-ubyte.gz)
  have_all() {
    local f
    for f in "${files[@]}"; do [[ -f "$fmnist_dir/$f" ]] || return 1; done
  }
  if have_all; then
    say "fashion-mnist: installed in $fmnist_dir"
    return 0
  fi
  if ! command -v apt-get >/dev/null 2>&1; then
    err "fashion-mnist: $fmnist_dir lacks the IDX files and apt-get is not available;"
    err "  put train-/t10k- images and labels (IDX, gzipped or not) in a folder and pass it to load_fashion_mnist"
    return 1
  fi
  say "fashion-mnist: installing Debian's dataset-fashion-mnist"
  if ((EUID == 0)); then
    export DEBIAN_FRONTEND=noninteractive
    { apt-get update -q && apt-get install -y -q --no-install-recommends dataset-fashion-mnist; } || true
  elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
    { sudo DEBIAN_FRONTEND=noninteractive apt-get update -q &&
      sudo DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends dataset-fashion-mnist; } || true
  else
    err "fashion-mnist: installing it needs root. Run:"
    err "  sudo apt-get update && sudo apt-get install -y dataset-fashion-mnist"
    err "then run this command again."
    return 1
  fi
  if have_all; then
    say "fashion-mnist: installed in $fmnist_dir"
  else
    err "fashion-mnist: apt-get did not install the IDX files into $fmnist_dir"
    return 1
  fi
}

cifar_checks="data_batch_1.bin cee916563c9f80d84e3cc88e17fdc0941787f1244f00a67874d45b261883ada5
data_batch_2.bin a591ca11fa1708a91ee40f54b3da4784ccd871ecf2137de63f51ada8b3fa57ed
data_batch_3.bin bbe8596564c0f86427f876058170b84dac6670ddf06d79402899d93ceea26f67
data_batch_4.bin 014e562d6e23c72197cc727519169a60359f5eccd8945ad5a09d710285ff4e48
data_batch_5.bin 755304fc0b379caeae8c14f0dac912fbc7d6cd469eb67a1029a08a39453a9add
test_batch.bin 8e2eb146ae340b09e24670f29cabc6326dba54da8789dab6768acf480273f65b"

failed=()
where=()
for s in "${sets[@]}"; do
  case "$s" in
    imdb)
      if extract imdb aclImdb_v1_traintest.tar.gz \
          1f025e7b9e04c9728d2348230b58d563fdc15154153f38614fcf039058921749 aclImdb; then
        where+=("imdb           $dest/aclImdb   (load_imdb)")
      else failed+=(imdb); fi ;;
    cifar10)
      if extract cifar10 cifar-10-binary.tar.gz \
          e03b22cd9830f01cd437f361373a3a352c460bc7e745e9da15ee869336e168c8 cifar-10-batches-bin "$cifar_checks"; then
        where+=("cifar10        $dest/cifar-10-batches-bin   (load_cifar10)")
      else failed+=(cifar10); fi ;;
    fashion-mnist)
      if fashion_mnist; then
        where+=("fashion-mnist  $fmnist_dir   (load_fashion_mnist)")
      else failed+=(fashion-mnist); fi ;;
  esac
done

if ((${#where[@]} > 0)); then
  say "ready:"
  for w in "${where[@]}"; do echo "  $w"; done
fi
if ((${#failed[@]} > 0)); then
  err "not ready: ${failed[*]} (see the messages above)"
  exit 1
fi
