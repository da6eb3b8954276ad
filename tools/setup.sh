#!/usr/bin/env bash
# Installs the Debian packages that building hkt needs, if any is missing
# (with --test, also those the test command needs).
# Quiet and a no-op when everything is present. As root it runs apt-get
# itself; otherwise it uses sudo when that works without a password, and
# else prints the command to run and exits 1.
set -euo pipefail

# gnuplot-nox: hkt-plot's figures (pngcairo / svg terminals). curl: tools/hkt-data's downloads.
# libboost-dev: Boost.Math's Student's t quantiles (header-only) for hkt-analyze's fits.
# openmpi-bin libopenmpi-dev: data-parallel training with mpirun (docs/distributed.md).
# libcsv-dev: the RFC 4180 parser of the text task's TSV / CSV files (docs/tasks.md).
# libzip-dev: the members of NumPy's .npz files (the tokens and series tasks, docs/tasks.md).
packages=(cmake g++ ninja-build pkg-config libopenblas-dev libtbb-dev doctest-dev
          zlib1g-dev nlohmann-json3-dev libcli11-dev gnuplot-nox curl libboost-dev
          openmpi-bin libopenmpi-dev libcsv-dev libzip-dev)
# tools/setup.sh --test: also what the test command needs (clang's libFuzzer, and
# NumPy for the independent reference of tests/reference/check.py).
if [[ "${1:-}" == --test ]]; then
  packages+=(clang-14 libclang-rt-14-dev python3-numpy)
fi

if ! command -v dpkg-query >/dev/null 2>&1; then
  echo "setup: dpkg-query not found; hkt's scripts expect Debian 12. Install these packages" \
       "(or your system's equivalents) by hand: ${packages[*]}" >&2
  exit 1
fi

missing_packages() {
  local p status
  for p in "${packages[@]}"; do
    status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
    [[ "$status" == "install ok installed" ]] || echo "$p"
  done
}

mapfile -t missing < <(missing_packages)
((${#missing[@]} == 0)) && exit 0

echo "setup: missing Debian packages: ${missing[*]}"
if ((EUID == 0)); then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -q
  apt-get install -y -q --no-install-recommends "${missing[@]}"
elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
  sudo DEBIAN_FRONTEND=noninteractive apt-get update -q
  sudo DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}"
else
  echo "setup: installing them needs root. Run:" >&2
  echo "  sudo apt-get update && sudo apt-get install -y ${missing[*]}" >&2
  echo "then run this command again." >&2
  exit 1
fi

mapfile -t still < <(missing_packages)
if ((${#still[@]} != 0)); then
  echo "setup: still missing after apt-get install: ${still[*]}" >&2
  exit 1
fi
echo "setup: packages installed"
