#!/usr/bin/env bash
# The Python gates and tests, from a clean clone: .venv with pinned tools, the cp39-abi3
# wheel built with maturin and installed into it, then mypy --strict on the example that
# uses the whole API, stubtest against the built module, and the pytest suite (against the
# installed wheel and real local receivers).
set -euo pipefail
source "$(dirname "$0")/python-env.sh"   # sets ROOT (and cd's there), PY, WHEEL

echo "--- mypy --strict examples/python/full_api.py examples/python/demo.py"
"$PY" -m mypy --strict --cache-dir=/dev/null examples/python/full_api.py examples/python/demo.py

echo "--- stubtest outbound (stubs against the built module)"
# Run outside the tree so only the installed package can be found.
(cd "$ROOT/.venv" && "$PY" -m mypy.stubtest outbound --allowlist "$ROOT/python/stubtest-allowlist.txt")

echo "--- pytest tests/python"
status=0
"$PY" -m pytest -p no:cacheprovider tests/python "$@" </dev/null || status=$?
if [ "$status" -eq 5 ]; then
  echo "pytest collected no tests: treating as a failure" >&2
  exit 1
fi
exit "$status"
