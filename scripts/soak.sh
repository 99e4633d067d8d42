#!/usr/bin/env bash
# The fault soak (see BENCHMARKS.md, "Fault soak"), one command from a clean clone:
#
#   scripts/soak.sh           the full run: 100,000 tracks through the release wheel to
#                             ingestion + 1 signed webhook, against the chaos receiver (30 % 503,
#                             10 % resets, 5 % stalls of 6 s); every message must be delivered
#                             within 180 s of the last call (a few minutes on 2 cores)
#   scripts/soak.sh --smoke   the same checks with 2,000 messages and the test wheel (debug
#                             build, from .venv); part of scripts/test.sh
#
# Exits non-zero when a message is lost, an id has no or several outcomes, or delivery misses
# the deadline. Figures of the full run: bench/results/soak.json.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

MODE=full
case "${1:-}" in
  "") ;;
  --smoke) MODE=smoke ;;
  -h|--help) sed -n '2,13p' "$0"; exit 0 ;;
  *) echo "usage: scripts/soak.sh [--smoke]" >&2; exit 2 ;;
esac
command -v go >/dev/null || { echo "soak: go is required (the chaos receiver)" >&2; exit 1; }

BUILD="$ROOT/bench/.build"
mkdir -p "$BUILD"
echo "--- building the chaos receiver"
(cd bench/chaos && go build -o "$BUILD/chaos" .)

if [ "$MODE" = smoke ]; then
  # The wheel scripts/test-python.sh built and installed (a debug build: checks, not figures).
  if [ -x .venv/bin/python ] && .venv/bin/python -c 'import outbound' 2>/dev/null; then
    PY="$ROOT/.venv/bin/python"
  else
    # shellcheck source=python-env.sh
    source scripts/python-env.sh
  fi
  exec "$PY" bench/soak.py --receiver-bin "$BUILD/chaos" --n 2000 --deadline 150 </dev/null
fi

VENV="$ROOT/.venv-soak"
PYTHON="${PYTHON:-python3}"
[ -x "$VENV/bin/python" ] || "$PYTHON" -m venv "$VENV"
[ -f "$VENV/.gitignore" ] || echo '*' > "$VENV/.gitignore"
PY="$VENV/bin/python"
export PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_INPUT=1
MATURIN="$(grep -o 'maturin==[0-9.]*' scripts/python-env.sh | head -n1)"
"$PY" -m pip install --quiet "${MATURIN:-maturin==1.16.0}"
echo "--- building the wheel (maturin, release)"
rm -rf "$BUILD/soak-wheel"
"$PY" -m maturin build --release --interpreter "$PY" --out "$BUILD/soak-wheel"
"$PY" -m pip install --quiet --force-reinstall --no-deps "$BUILD"/soak-wheel/*.whl
mkdir -p bench/results
exec "$PY" bench/soak.py --receiver-bin "$BUILD/chaos" --n "${SOAK_N:-100000}" --deadline 180 \
  --json-out bench/results/soak.json </dev/null
