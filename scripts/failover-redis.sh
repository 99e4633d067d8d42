#!/usr/bin/env bash
# A fleet losing its Redis primary (bench/redis_failover.py), one command from a
# clean clone:
#
#   scripts/failover-redis.sh           on the release relay: a primary, a replica and three
#                                       Sentinels on 127.0.0.1; first the cost of each
#                                       redis_ack mode (paired, one run), then two relays
#                                       acknowledging events at a steady rate while the primary
#                                       is SIGKILLed (relay A SIGKILLed too, later), with the
#                                       relay's default redis_ack, then again with
#                                       redis_ack = "replicas:1" and the killed server restarted
#   scripts/failover-redis.sh --smoke   the default-redis_ack run, shorter, on the dev build;
#                                       part of scripts/test.sh
#
# Exits non-zero when an acknowledged event never reaches the webhook, or a relay does not
# acknowledge again within 10 s of the promotion. Full run's figures:
# bench/results/redis-failover*.json.
set -euo pipefail
MODE=full
case "${1:-}" in
  "") ;;
  --smoke) MODE=smoke ;;
  -h|--help) sed -n '2,18p' "$0"; exit 0 ;;
  *) echo "usage: scripts/failover-redis.sh [--smoke]" >&2; exit 2 ;;
esac
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT"
"$ROOT/scripts/redis-env.sh" >/dev/null
source scripts/relay-build.sh
if [ "$MODE" = smoke ]; then relay_build debug; else relay_build release; fi
BUILD="$ROOT/bench/.build"
mkdir -p "$BUILD"
WORK="$BUILD/redis-failover"
PY="${PYTHON:-python3}"
if [ "$MODE" = smoke ]; then
  exec "$PY" bench/redis_failover.py --relay-bin "$RELAY" --workdir "$WORK" --rate 50 \
    --before 2 --after 8 --cost-seconds 1 --cost-rounds 2 --deadline 60 </dev/null
fi
mkdir -p bench/results
"$PY" bench/redis_failover.py --relay-bin "$RELAY" --workdir "$WORK" --rate 200 \
  --before 5 --after 20 --cost-seconds 3 --cost-rounds 5 --deadline 120 \
  --json-out bench/results/redis-failover.json </dev/null
# The guarantee that never degrades: acknowledged only once a replica has it, so after the
# promotion only once the killed server is back as a replica.
exec "$PY" bench/redis_failover.py --relay-bin "$RELAY" --workdir "$WORK" --rate 200 \
  --before 5 --after 40 --cost-seconds 0.5 --cost-rounds 1 --deadline 120 \
  --redis-ack replicas:1 --restart-primary --accept-within 30 \
  --json-out bench/results/redis-failover-replicas.json </dev/null
