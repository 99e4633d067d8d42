#!/usr/bin/env bash
# Shared set-up for scripts/test-python.sh and scripts/demo.sh (sourced, not run):
# makes .venv with the pinned Python tools, builds the one cp39-abi3 wheel with maturin
# into dist/, and installs that wheel into the venv (never an in-tree import).
# After sourcing: $PY is the venv's python, $WHEEL the built wheel.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

# Pinned from PyPI; bump together.
PY_TOOLS=(maturin==1.16.0 pytest==9.2.0 mypy==2.4.1 trustme==1.2.1 cryptography==50.0.2
  standardwebhooks==1.1.0)

command -v cargo >/dev/null || { echo "cargo is required (https://rustup.rs)" >&2; exit 1; }
PYTHON="${PYTHON:-python3}"
command -v "$PYTHON" >/dev/null || { echo "python3 (3.9 or newer) is required" >&2; exit 1; }

if [ ! -x .venv/bin/python ]; then
  echo "--- creating .venv with $("$PYTHON" --version 2>&1)"
  "$PYTHON" -m venv .venv
fi
PY="$ROOT/.venv/bin/python"
export PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_INPUT=1
echo "--- installing ${PY_TOOLS[*]}"
"$PY" -m pip install --quiet "${PY_TOOLS[@]}"

# A debug build: the tests and the demo do not need release speed, and it reuses the
# workspace's debug artifacts (CI has 2 cores).
echo "--- building the wheel (maturin, debug profile)"
rm -rf dist
"$PY" -m maturin build --interpreter "$PY" --out dist
shopt -s nullglob
wheels=(dist/outbound-*-cp39-abi3-*.whl)
if [ "${#wheels[@]}" -ne 1 ]; then
  echo "expected exactly one cp39-abi3 wheel in dist/, found: $(ls dist 2>/dev/null)" >&2
  exit 1
fi
WHEEL="${wheels[0]}"
echo "--- installing $WHEEL"
"$PY" -m pip install --quiet --force-reinstall --no-deps "$WHEEL"
