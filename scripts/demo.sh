#!/usr/bin/env bash
# The demo, from a clean clone: sets up .venv, builds and installs the outbound wheel (as
# scripts/test-python.sh does), then runs examples/python/demo.py, which starts a local
# receiver, sends every call type to the ingestion endpoint and a signed webhook, and
# prints what arrived with each signature verified. Exits non-zero if anything is missing.
set -euo pipefail
source "$(dirname "$0")/python-env.sh"   # sets ROOT (and cd's there), PY, WHEEL
echo "--- examples/python/demo.py"
exec "$PY" examples/python/demo.py </dev/null
