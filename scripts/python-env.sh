#!/usr/bin/env bash
# Shared set-up for scripts/test-python.sh and scripts/demo.sh (sourced, not run): makes
# .venv with the pinned Python tools, builds the cp310-abi3 wheel (scripts/build-wheel.sh)
# and installs it into the venv (never an in-tree import).
#
# OUTBOUND_WHEEL=release (default): the wheel users get, into dist/ (checked: release,
# stripped, manylinux2014). OUTBOUND_WHEEL=debug: a debug build into target/wheels-debug/.
# After sourcing: $PY is the venv's python, $WHEEL the installed wheel.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/venv.sh"   # ROOT (cd'd there), PY

shopt -s nullglob
case "${OUTBOUND_WHEEL:-release}" in
  release)
    scripts/build-wheel.sh
    wheels=(dist/outbound_events-*-cp310-abi3-manylinux2014_"$(uname -m)".*.whl) ;;
  debug)
    scripts/build-wheel.sh --debug
    wheels=(target/wheels-debug/outbound_events-*-cp310-abi3-*.whl) ;;
  *) echo "OUTBOUND_WHEEL must be release or debug" >&2; exit 2 ;;
esac
if [ "${#wheels[@]}" -ne 1 ]; then
  echo "expected exactly one cp310-abi3 wheel for $(uname -m), found: ${wheels[*]:-none}" >&2
  exit 1
fi
WHEEL="${wheels[0]}"
echo "--- installing $WHEEL"
"$PY" -m pip install --quiet --force-reinstall --no-deps "$WHEEL"
