#!/usr/bin/env bash
# The kill test on a Redis spool (see BENCHMARKS.md, "Fault runs"):
#
#   scripts/killtest-redis.sh           100,000 tracks through the release wheel, spool =
#                                       redis:// (a redis-server started on 127.0.0.1, AOF
#                                       everysec), to ingestion + 1 signed webhook behind the
#                                       chaos receiver; process A is SIGKILLed 10 s after its
#                                       last call and process B, on the same Redis, takes
#                                       over once A's heartbeat expires; then the same again
#                                       with Redis itself SIGKILLed and restarted halfway
#   scripts/killtest-redis.sh --smoke   both runs with 2,000 messages, killed after 4 s, and
#                                       the test wheel (debug, from .venv); part of
#                                       scripts/test.sh
#
# Exits non-zero when an id is lost at either receiver, has no outcome in A or B, or Redis
# still holds entries at the end. Figures of the full run: bench/results/killtest-redis*.json.
set -euo pipefail
MODE=full
case "${1:-}" in
  "") ;;
  --smoke) MODE=smoke ;;
  -h|--help) sed -n '2,17p' "$0"; exit 0 ;;
  *) echo "usage: scripts/killtest-redis.sh [--smoke]" >&2; exit 2 ;;
esac
"$(dirname "$0")/redis-env.sh" >/dev/null
source "$(dirname "$0")/fault-env.sh"
WORK="$BUILD/killtest-redis"
REDIS="$(command -v redis-server)"
if [ "$MODE" = smoke ]; then
  "$PY" bench/killtest.py --receiver-bin "$BUILD/chaos" --n 2000 --kill-after 4 \
    --deadline 150 --workdir "$WORK" --redis-server "$REDIS" </dev/null
  exec "$PY" bench/killtest.py --receiver-bin "$BUILD/chaos" --n 2000 --kill-after 4 \
    --deadline 150 --workdir "$WORK" --redis-server "$REDIS" --restart-redis </dev/null
fi
"$PY" bench/killtest.py --receiver-bin "$BUILD/chaos" --n "${KILL_N:-100000}" --kill-after 10 \
  --deadline 300 --workdir "$WORK" --redis-server "$REDIS" \
  --json-out bench/results/killtest-redis.json </dev/null
exec "$PY" bench/killtest.py --receiver-bin "$BUILD/chaos" --n "${KILL_N:-100000}" --kill-after 10 \
  --deadline 300 --workdir "$WORK" --redis-server "$REDIS" --restart-redis \
  --json-out bench/results/killtest-redis-restart.json </dev/null
