#!/usr/bin/env bash
# Shared set-up of the fault scripts (scripts/soak.sh, scripts/killtest.sh; sourced, not run).
# Builds the chaos receiver into bench/.build/chaos; then, with MODE=smoke, uses the debug wheel
# scripts/test-python.sh installed in .venv, and with MODE=full builds the release wheel into
# .venv-soak. After sourcing: $PY, $BUILD (bench/.build), $ROOT.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
command -v go >/dev/null || { echo "go is required (the chaos receiver)" >&2; exit 1; }
BUILD="$ROOT/bench/.build"
mkdir -p "$BUILD"
echo "--- building the chaos receiver"
(cd bench/chaos && go build -o "$BUILD/chaos" .)

if [ "$MODE" = smoke ]; then
  # The wheel scripts/test-python.sh built and installed (smoke: checks, not figures).
  if [ -x .venv/bin/python ] && .venv/bin/python -c 'import outbound' 2>/dev/null; then
    PY="$ROOT/.venv/bin/python"
  else
    # shellcheck source=python-env.sh
    source scripts/python-env.sh
  fi
else
  VENV="$ROOT/.venv-soak"
  [ -x "$VENV/bin/python" ] || "${PYTHON:-python3}" -m venv "$VENV"
  [ -f "$VENV/.gitignore" ] || echo '*' > "$VENV/.gitignore"
  PY="$VENV/bin/python"
  export PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_INPUT=1
  MATURIN="$(grep -o 'maturin==[0-9.]*' scripts/venv.sh | head -n1)"
  "$PY" -m pip install --quiet "${MATURIN:-maturin==1.16.0}"
  echo "--- building the wheel (maturin, release)"
  rm -rf "$BUILD/soak-wheel"
  "$PY" -m maturin build --release --interpreter "$PY" --out "$BUILD/soak-wheel"
  "$PY" -m pip install --quiet --force-reinstall --no-deps "$BUILD"/soak-wheel/*.whl
  mkdir -p bench/results
fi
