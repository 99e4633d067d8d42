#!/usr/bin/env bash
# Shared by the Python scripts (sourced, not run): makes .venv with the pinned Python tools.
# After sourcing: $ROOT is the repository (and the working directory), $PY the venv's python,
# and the venv's bin/ is first on PATH (maturin finds zig there, from the ziglang package).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

# Pinned from PyPI; bump together. The build tools make and check the manylinux2014 wheel
# (scripts/build-wheel.sh: maturin, zig from the ziglang package, auditwheel); that is all the
# demo installs. The test tools come in only with OUTBOUND_VENV_TESTS=1 (scripts/test-python.sh;
# standardwebhooks: the spec's reference library, which tests/python/test_standard_webhooks.py
# checks our requests against).
PY_BUILD_TOOLS=(maturin==1.16.0 ziglang==0.17.1 auditwheel==6.8.2)
PY_TEST_TOOLS=(pytest==9.2.0 pytest-timeout==2.4.0 pytest-xdist==3.8.0 mypy==2.4.1 trustme==1.2.1 cryptography==50.0.2
  standardwebhooks==1.1.0)
PY_TOOLS=("${PY_BUILD_TOOLS[@]}")
[ "${OUTBOUND_VENV_TESTS:-}" = 1 ] && PY_TOOLS+=("${PY_TEST_TOOLS[@]}")

command -v cargo >/dev/null || { echo "cargo is required (https://rustup.rs)" >&2; exit 1; }
PYTHON="${PYTHON:-python3}"
command -v "$PYTHON" >/dev/null || { echo "python3 (3.10 or newer) is required" >&2; exit 1; }

if [ ! -x .venv/bin/python ]; then
  echo "--- creating .venv with $("$PYTHON" --version 2>&1)"
  "$PYTHON" -m venv .venv
fi
PY="$ROOT/.venv/bin/python"
export PATH="$ROOT/.venv/bin:$PATH"
export PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_INPUT=1
# pip only when a pin is not installed yet (.venv/.installed lists what was): a warm demo
# skips it.
installed=" $(cat .venv/.installed 2>/dev/null || true) "
missing=()
for tool in "${PY_TOOLS[@]}"; do
  [[ "$installed" == *" $tool "* ]] || missing+=("$tool")
done
if [ "${#missing[@]}" -gt 0 ]; then
  echo "--- installing ${missing[*]}"
  "$PY" -m pip install --quiet "${missing[@]}"
  # Keeps what an earlier run installed (the test tools stay listed after a demo).
  printf '%s\n' $installed "${missing[@]}" | sort -u | tr '\n' ' ' >.venv/.installed
fi
