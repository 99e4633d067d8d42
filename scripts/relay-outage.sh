#!/usr/bin/env bash
# A receiver's outage against the relay (bench/relay/outage.py), one command from a clean clone:
#
#   scripts/relay-outage.sh            the measured run on the release relay: one source's
#                                      webhook answers 503 for 10 minutes while 500 events/s
#                                      arrive (300,000), another source's single events are
#                                      timed meanwhile; then every acknowledged event must
#                                      arrive. On SQLite, then on Redis (a fleet's spool).
#                                      Writes bench/results/relay-outage-{sqlite,redis}.json
#   scripts/relay-outage.sh --smoke    the same for 30 s (15,000 events, past the default
#                                      max_queue_size of 10,000) on the dev build; part of
#                                      scripts/test.sh
#
# Exits non-zero when an acknowledged event never arrives. Needs cargo, python3, redis-server.
set -euo pipefail
MODE=full
case "${1:-}" in
  "") ;;
  --smoke) MODE=smoke ;;
  -h|--help) sed -n '2,14p' "$0"; exit 0 ;;
  *) echo "usage: scripts/relay-outage.sh [--smoke]" >&2; exit 2 ;;
esac
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT"
source scripts/redis-env.sh >/dev/null
source scripts/relay-build.sh
BUILD="$ROOT/bench/.build"
mkdir -p "$BUILD" bench/results
minutes=10
profile=release
if [ "$MODE" = smoke ]; then minutes=0.5; profile=debug; fi
relay_build "$profile"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
redis_dir="$(mktemp -d)"
redis-server --port "$port" --bind 127.0.0.1 --dir "$redis_dir" --appendonly yes \
  --appendfsync everysec --save "" --daemonize no >"$redis_dir/log" 2>&1 &
redis_pid=$!
trap 'kill $redis_pid 2>/dev/null; wait $redis_pid 2>/dev/null; rm -rf "$redis_dir"' EXIT
for _ in $(seq 200); do redis-cli -p "$port" ping >/dev/null 2>&1 && break; sleep 0.05; done
for spool in sqlite redis; do
  args=(--relay-bin "$RELAY" --workdir "$BUILD/relay-outage-$spool" --minutes "$minutes")
  if [ "$spool" = redis ]; then args+=(--redis "redis://127.0.0.1:$port/0?prefix=outage"); fi
  if [ "$MODE" = full ]; then args+=(--json "bench/results/relay-outage-$spool.json"); fi
  echo "--- bench/relay/outage.py $MODE, $spool ($(nproc) cores; load average: $(cut -d' ' -f1-3 /proc/loadavg))"
  python3 bench/relay/outage.py "${args[@]}"
done
