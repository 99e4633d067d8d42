#!/usr/bin/env bash
# The kill test (see BENCHMARKS.md, "Fault runs"), one command from a clean clone:
#
#   scripts/killtest.sh           100,000 tracks through the release wheel with a spool, to
#                                 ingestion + 1 signed webhook behind the chaos receiver (30 %
#                                 503, 10 % resets, 5 % stalls); the sending process is killed
#                                 with SIGKILL 10 s after its last call, mid-delivery; a new
#                                 process on the same spool delivers the rest
#   scripts/killtest.sh --smoke   the same with 2,000 messages, killed after 2 s, and the test
#                                 wheel (debug, from .venv); part of scripts/test.sh
#
# Exits non-zero when an id is lost at either receiver, has no outcome in either process, or
# the spool is not empty at the end. Figures of the full run: bench/results/killtest.json.
set -euo pipefail
MODE=full
case "${1:-}" in
  "") ;;
  --smoke) MODE=smoke ;;
  -h|--help) sed -n '2,14p' "$0"; exit 0 ;;
  *) echo "usage: scripts/killtest.sh [--smoke]" >&2; exit 2 ;;
esac
source "$(dirname "$0")/fault-env.sh"
WORK="$BUILD/killtest"
if [ "$MODE" = smoke ]; then
  exec "$PY" bench/killtest.py --receiver-bin "$BUILD/chaos" --n 2000 --kill-after 2 \
    --deadline 150 --workdir "$WORK" </dev/null
fi
exec "$PY" bench/killtest.py --receiver-bin "$BUILD/chaos" --n "${KILL_N:-100000}" --kill-after 10 \
  --deadline 300 --workdir "$WORK" --json-out bench/results/killtest.json </dev/null
