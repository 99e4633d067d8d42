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
#                             bench/results/soak-endpoint-auth.json; with --subscriptions too,
#                             the subscriptions behind the token as well (the first also
#                             limited): bench/results/soak-subscriptions-endpoint-auth.json
#   ... --subscriptions       either run with 3 subscriptions on the client too, at the chaos
#                             receiver (stalls past their 10 s timeout): one for every track
#                             (PUT, a mapped body), one for 30 % by its trigger, one batching
#                             50 % by 100 (Segment's export form); every (message, subscription
#                             it matches) exactly one outcome, delivered, and none other, within
#                             420 s of the last call; full figures in
#                             bench/results/soak-subscriptions.json
#
# Exits non-zero when a message is lost, an id has no or several outcomes, or delivery misses
# the deadline. Figures of the full run: bench/results/soak.json.
set -euo pipefail
MODE=full
AUTH=()
SUBS=()
OUT=bench/results/soak.json
for arg in "$@"; do
  case "$arg" in
    --smoke) MODE=smoke ;;
    --endpoint-auth) AUTH=(--endpoint-auth); OUT=bench/results/soak-endpoint-auth.json ;;
    --subscriptions) SUBS=(--subscriptions); OUT=bench/results/soak-subscriptions.json ;;
    -h|--help) sed -n '2,22p' "$0"; exit 0 ;;
    *) echo "usage: scripts/soak.sh [--smoke] [--endpoint-auth] [--subscriptions]" >&2; exit 2 ;;
  esac
done
if [ ${#AUTH[@]} -gt 0 ] && [ ${#SUBS[@]} -gt 0 ]; then
  OUT=bench/results/soak-subscriptions-endpoint-auth.json
fi
source "$(dirname "$0")/fault-env.sh"
if [ "$MODE" = smoke ]; then
  exec "$PY" bench/soak.py --receiver-bin "$BUILD/chaos" --n 2000 --deadline 150 \
    ${AUTH[@]+"${AUTH[@]}"} ${AUTH[@]+--rate-limit 200} ${SUBS[@]+"${SUBS[@]}"} </dev/null
fi
# With the rate limit, 100,000 webhook requests take at least 100 s on their own. With the
# subscriptions, the one that gets every track has 512 requests in flight of which 5 % wait out
# its 10 s timeout: about 550 requests a second, 100,000 messages in about 250 s on 2 cores.
DEADLINE=180
[ ${#AUTH[@]} -gt 0 ] && DEADLINE=300
[ ${#SUBS[@]} -gt 0 ] && DEADLINE=420
exec "$PY" bench/soak.py --receiver-bin "$BUILD/chaos" --n "${SOAK_N:-100000}" \
  --deadline "$DEADLINE" \
  ${AUTH[@]+"${AUTH[@]}"} ${SUBS[@]+"${SUBS[@]}"} --json-out "$OUT" </dev/null
