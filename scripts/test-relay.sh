#!/usr/bin/env bash
# The relay's tests from the clients' side (tests/relay), from a clean clone, after a short
# fuzz run of its request handling:
#   1. scripts/relay-env.sh: chromium, analytics-next, analytics-node, puppeteer-core,
#      segment-analytics-python, analytics-go v3, analytics-kotlin's core (all cached in
#      gitignored .tools/relay)
#   2. cargo build -p outbound-relay (the binary under test: the dev build, which `cargo test
#      --workspace` has made already; OUTBOUND_RELAY_PROFILE=release tests the release build
#      the demo and the full kill test use), cargo build -p outbound-c (liboutbound.a for the C
#      and Go senders)
#   3. outbound's release wheel (scripts/python-env.sh builds it) into .tools/relay/venv
#   4. pytest tests/relay: each test starts the relay with a temporary config, two sources
#      and two real webhook receivers on 127.0.0.1, and sends with a real SDK
# Extra arguments go to pytest. Works with CI=true, as root, without standard input.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT"

# The relay's request handling under random input (crates/outbound-relay/tests/fuzz.rs: a
# seeded, structured loop against the running binary; not coverage-guided), briefly.
fuzz_secs="${OUTBOUND_RELAY_FUZZ_SECS:-10}"
echo "--- fuzz: cargo test -p outbound-relay --test fuzz (${fuzz_secs} s, seed ${OUTBOUND_RELAY_FUZZ_SEED:-25})"
t0=$(date +%s)
fuzz_log="$(mktemp)"
if ! OUTBOUND_RELAY_FUZZ_SECS="$fuzz_secs" cargo test -p outbound-relay --test fuzz -- --nocapture >"$fuzz_log" 2>&1; then
  tail -n 60 "$fuzz_log"
  echo "fuzz: the relay failed under random input (log above)" >&2
  exit 1
fi
grep -E '^fuzz:|^test result' "$fuzz_log"
rm -f "$fuzz_log"
echo "fuzz: done in $(( $(date +%s) - t0 )) s (build included)"

scripts/relay-env.sh
T="$ROOT/.tools/relay"

source scripts/relay-build.sh
relay_build "${OUTBOUND_RELAY_PROFILE:-debug}"
echo "--- cargo build -p outbound-c (liboutbound.a for the C and Go senders)"
cargo build -p outbound-c
target="${CARGO_TARGET_DIR:-$ROOT/target}"
export OUTBOUND_RELAY_BIN="$RELAY" OUTBOUND_C_LIBDIR="$target/debug"

# outbound's own Python client: the wheel users install (as scripts/test-python.sh tests it).
OUTBOUND_WHEEL="${OUTBOUND_WHEEL:-release}" source scripts/python-env.sh   # WHEEL
echo "--- installing $WHEEL into $T/venv"
"$T/venv/bin/python" -m pip install --quiet --force-reinstall --no-deps "$WHEEL"

echo "--- one version in every face: the sources, the wheel, outbound-relay --version"
python3 scripts/check-version.py --python "$T/venv/bin/python" --relay "$RELAY"

echo "--- the docs' relay blocks, run as written (scripts/check-docs.py)"
python3 scripts/check-docs.py --part relay

# Two workers: the tests wait on browsers, SDKs' flush timers and receivers far more than
# they compute.
workers="${OUTBOUND_PYTEST_WORKERS:-2}"
echo "--- pytest tests/relay ($workers workers)"
status=0
"$T/venv/bin/python" -m pytest -p no:cacheprovider --timeout 300 -v -n "$workers" tests/relay "$@" </dev/null || status=$?
if [ "$status" -eq 5 ]; then
  echo "pytest collected no tests: treating as a failure" >&2
  exit 1
fi
exit "$status"
