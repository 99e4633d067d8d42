#!/usr/bin/env bash
# The demo, from a clean clone: sets up .venv with the wheel's build tools only (maturin, zig,
# auditwheel), builds the release wheel users install (scripts/build-wheel.sh: stripped,
# manylinux2014, checked) into dist/ and installs it, then runs examples/python/demo.py, which
# starts a local receiver, sends every call type to the ingestion endpoint and a signed webhook,
# and prints what arrived with each signature verified. Then the relay: builds outbound-relay
# (release) with the wheel's target and environment (scripts/cargo-as-wheel.py), so the
# dependency tree is compiled once for both; puts Segment's own Python SDK
# (segment-analytics-python, alone in .tools/relay/venv) in front of it, and runs
# tests/relay/demo_relay.py, which starts the relay with one source whose webhook is a local
# receiver, sends every call type with the SDK and prints what arrived, each signature
# verified. Prints its own time last. Exits non-zero if anything is missing.
set -euo pipefail
SECONDS=0
OUTBOUND_WHEEL=release source "$(dirname "$0")/python-env.sh"   # ROOT (cd'd there), PY, WHEEL
echo "--- examples/python/demo.py"
"$PY" examples/python/demo.py </dev/null
# What dist/ holds now is what the README tells users to install: check it once more.
scripts/check-wheel.sh dist/outbound_events-*.whl
echo "--- install it anywhere with Python 3.10+ on Linux (glibc 2.17+): pip install --no-index --find-links dist outbound-events"

echo "--- outbound-relay: release, with the crates the wheel's build compiled"
"$PY" scripts/cargo-as-wheel.py build --release -p outbound-relay
relay="$(cargo metadata --format-version 1 --no-deps | "$PY" -c 'import json, sys; print(json.load(sys.stdin)["target_directory"])')/$(uname -m)-unknown-linux-gnu/release/outbound-relay"
scripts/relay-env.sh --demo
echo "--- tests/relay/demo_relay.py: segment-analytics-python -> outbound-relay -> a local webhook"
.tools/relay/venv/bin/python tests/relay/demo_relay.py "$relay" </dev/null
echo "--- the demo took $((SECONDS / 60)) min $((SECONDS % 60)) s on $(nproc) cores (load average $(cut -d' ' -f1-3 /proc/loadavg))"
