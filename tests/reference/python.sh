# Sourced by the reference scripts: sets $py to a python3 that has NumPy (python3
# on PATH, then /usr/bin/python3, where Debian's python3-numpy installs it;
# tools/setup.sh --test installs that), or prints why and exits 77 (CTest: Skipped).
export PYTHONDONTWRITEBYTECODE=1  # no __pycache__ in the source tree
py=""
for c in python3 /usr/bin/python3; do
  if command -v "$c" >/dev/null 2>&1 && "$c" -c 'import numpy' 2>/dev/null; then
    py=$c
    break
  fi
done
if [[ -z "$py" ]]; then
  echo "SKIPPED: no python3 with NumPy (apt-get install python3-numpy, or tools/setup.sh --test)"
  exit 77
fi
