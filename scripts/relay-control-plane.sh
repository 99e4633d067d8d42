#!/usr/bin/env bash
# The control plane at many sources (bench/relay/control_plane.py): what a PUT costs with 1
# source and with N, how fast one client creates N sources through the admin API, the start
# with them (API-made, persisted) and its RSS, a page of the list and a search.
#
#   scripts/relay-control-plane.sh           the release relay, 100,000 sources (several
#                                            minutes: each PUT waits for its fsync); writes
#                                            bench/results/relay-control-plane.json
#   scripts/relay-control-plane.sh --smoke   the dev build, 300 sources: checks the benchmark
#                                            works; part of scripts/test.sh
#   ... --redis                              the same on a Redis fleet's store and spool (a
#                                            redis-server on 127.0.0.1, AOF); the full run
#                                            writes bench/results/relay-control-plane-redis.json
set -euo pipefail
MODE=full
REDIS=()
for arg in "$@"; do
  case "$arg" in
    --smoke) MODE=smoke ;;
    --redis) REDIS=(--redis) ;;
    -h|--help) sed -n '2,14p' "$0"; exit 0 ;;
    *) echo "usage: scripts/relay-control-plane.sh [--smoke] [--redis]" >&2; exit 2 ;;
  esac
done
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT"
source scripts/relay-build.sh
if [ ${#REDIS[@]} -gt 0 ]; then
  source scripts/redis-env.sh
fi
RESULT=bench/results/relay-control-plane${REDIS:+-redis}.json
echo "--- load average at the start: $(cut -d' ' -f1-3 /proc/loadavg)"
if [ "$MODE" = smoke ]; then
  relay_build debug
  python3 bench/relay/control_plane.py --relay-bin "$RELAY" --sources 300 "${REDIS[@]}" </dev/null
else
  relay_build release
  python3 bench/relay/control_plane.py --relay-bin "$RELAY" --sources 100000 "${REDIS[@]}" \
    --json "$RESULT" </dev/null
fi
echo "--- load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
