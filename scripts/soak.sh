#!/usr/bin/env bash
# The fault soak (see BENCHMARKS.md, "Fault runs"), one command from a clean clone:
#
#   scripts/soak.sh           the full run: 100,000 tracks through the release wheel to
#                             ingestion + 1 signed webhook, against the chaos receiver (30 % 503,
#                             10 % resets, 5 % stalls of 6 s); every message must be delivered
#                             within 180 s of the last call (a few minutes on 2 cores)
#   scripts/soak.sh --smoke   the same checks with 2,000 messages and the test wheel (debug
#                             build, from .venv); part of scripts/test.sh
#   ... --endpoint-auth       either run with the webhook behind a bearer token the receiver
#                             requires and a rate limit (1,000/s; smoke: 200/s); full figures in
#                             bench/results/soak-endpoint-auth.json
#
# Exits non-zero when a message is lost, an id has no or several outcomes, or delivery misses
# the deadline. Figures of the full run: bench/results/soak.json.
set -euo pipefail
MODE=full
AUTH=()
OUT=bench/results/soak.json
for arg in "$@"; do
  case "$arg" in
    --smoke) MODE=smoke ;;
    --endpoint-auth) AUTH=(--endpoint-auth); OUT=bench/results/soak-endpoint-auth.json ;;
    -h|--help) sed -n '2,16p' "$0"; exit 0 ;;
    *) echo "usage: scripts/soak.sh [--smoke] [--endpoint-auth]" >&2; exit 2 ;;
  esac
done
source "$(dirname "$0")/fault-env.sh"
if [ "$MODE" = smoke ]; then
  exec "$PY" bench/soak.py --receiver-bin "$BUILD/chaos" --n 2000 --deadline 150 \
    ${AUTH[@]+"${AUTH[@]}"} ${AUTH[@]+--rate-limit 200} </dev/null
fi
# With the rate limit, 100,000 webhook requests take at least 100 s on their own.
exec "$PY" bench/soak.py --receiver-bin "$BUILD/chaos" --n "${SOAK_N:-100000}" \
  --deadline "$([ ${#AUTH[@]} -gt 0 ] && echo 300 || echo 180)" \
  ${AUTH[@]+"${AUTH[@]}"} --json-out "$OUT" </dev/null
