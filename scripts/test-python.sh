#!/usr/bin/env bash
# The Python gates and tests, from a clean clone: .venv with pinned tools, the wheel users
# install (scripts/build-wheel.sh: release, stripped, manylinux2014, checked) installed into
# it, then mypy --strict on the example that uses the whole API, stubtest against the built
# module, and the pytest suite (against the installed wheel and real local receivers; the
# receivers' guide examples also need node, go, a C compiler, curl and openssl); then the
# docs' Python, pip and Node blocks, run as written (scripts/check-docs.py --part python).
#
# OUTBOUND_WHEEL=debug tests a debug build instead (faster to rebuild while developing).
set -euo pipefail
# The test tools too (pytest, mypy, ...): the demo installs only what builds the wheel.
OUTBOUND_VENV_TESTS=1 source "$(dirname "$0")/python-env.sh"   # sets ROOT (and cd's there), PY, WHEEL
export OUTBOUND_WHEEL="${OUTBOUND_WHEEL:-release}" OUTBOUND_TEST_WHEEL="$ROOT/$WHEEL"

missing=()
for tool in curl:curl openssl:openssl cc:gcc readelf:binutils; do
  command -v "${tool%%:*}" >/dev/null || missing+=("${tool#*:}")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "--- installing ${missing[*]} with apt-get"
  scripts/apt.sh update -q < /dev/null
  DEBIAN_FRONTEND=noninteractive scripts/apt.sh install -y -q "${missing[@]}" < /dev/null
fi
for tool in node go; do
  command -v "$tool" >/dev/null || { echo "$tool is required (the receivers' guide examples)" >&2; exit 1; }
done
# The Redis spool's tests start their own redis-server (installed here when missing).
scripts/redis-env.sh
echo "--- cargo build -p outbound-c (liboutbound.a for the C receiver example)"
cargo build -p outbound-c
export OUTBOUND_C_LIBDIR="${CARGO_TARGET_DIR:-$ROOT/target}/debug"

echo "--- mypy --strict examples/python/full_api.py examples/python/demo.py"
"$PY" -m mypy --strict --cache-dir=/dev/null examples/python/full_api.py examples/python/demo.py

echo "--- stubtest outbound (stubs against the built module)"
# Run outside the tree so only the installed package can be found.
(cd "$ROOT/.venv" && "$PY" -m mypy.stubtest outbound --allowlist "$ROOT/python/stubtest-allowlist.txt")

# Two workers: most tests wait on receivers, timers and child processes, not on the CPU.
workers="${OUTBOUND_PYTEST_WORKERS:-2}"
echo "--- pytest tests/python ($workers workers)"
status=0
"$PY" -m pytest -p no:cacheprovider -n "$workers" tests/python "$@" </dev/null || status=$?
if [ "$status" -eq 5 ]; then
  echo "pytest collected no tests: treating as a failure" >&2
  exit 1
fi
[ "$status" -eq 0 ] || exit "$status"

echo "--- the docs' Python (and pip, Node) blocks, run as written against the installed wheel"
OUTBOUND_DOCS_PYTHON="$PY" OUTBOUND_C_LIBDIR="$OUTBOUND_C_LIBDIR" python3 scripts/check-docs.py --part python
