#!/usr/bin/env bash
# The relay's kill test (bench/relay_killtest.py), one command from a clean clone:
#
#   scripts/relay-killtest.sh           100,000 events in batches of 100 to /v1/batch of the
#                                       release relay, SIGKILLed 3 times at random moments and
#                                       restarted on the same data_dir; its webhook behind the
#                                       chaos receiver (30 % 503, 10 % resets, 5 % stalls past
#                                       the relay's timeout); unacknowledged batches resent
#   scripts/relay-killtest.sh --smoke   the same with 3,000 events, on the dev build; part of
#                                       scripts/test.sh
#   scripts/relay-killtest.sh --tenants [--smoke]
#                                       many tenants: 200 sources x 5 URLs behind the chaos
#                                       receiver and 20 sources x 5 URLs that never answer,
#                                       200,000 events over their 220 write keys, SIGKILLed twice;
#                                       every acknowledged event of the 200 reaches one of its
#                                       source's URLs (smoke: 20 + 2 sources, 5,000 events)
#   scripts/relay-killtest.sh --subscriptions [--smoke]
#                                       the first case with 3 subscriptions on the source too,
#                                       behind the chaos receiver: one for every event (PUT, a
#                                       mapped body), one for 30 % by its trigger, one batching
#                                       50 % by 100 (Segment's export form); every acknowledged
#                                       event reaches each that matches it, none another
#                                       (smoke: 3,000 events on the dev build); full figures in
#                                       bench/results/relay-killtest-subscriptions.json
#
# Prints acknowledged, delivered distinct, lost, duplicates, seconds and peak RSS; exits
# non-zero when an acknowledged event never reaches the receiver, a signature is bad, or
# SIGTERM at the end does not exit 0. Full run's figures: bench/results/relay-killtest.json.
# The driver takes more options (python3 bench/relay_killtest.py -h), e.g. --max-queue-size 300
# to run the relay at its queue limit, so that it answers 429 and the sender resends.
set -euo pipefail
MODE=full
TENANTS=
SUBS=
for arg in "$@"; do
  case "$arg" in
    --smoke) MODE=smoke ;;
    --tenants) TENANTS=1 ;;
    --subscriptions) SUBS=1 ;;
    -h|--help) sed -n '2,30p' "$0"; exit 0 ;;
    *) echo "usage: scripts/relay-killtest.sh [--tenants | --subscriptions] [--smoke]" >&2; exit 2 ;;
  esac
done
if [ -n "$TENANTS" ] && [ -n "$SUBS" ]; then
  echo "usage: scripts/relay-killtest.sh [--tenants | --subscriptions] [--smoke]" >&2; exit 2
fi
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT"
for tool in go cargo python3; do
  command -v "$tool" >/dev/null || { echo "$tool is required" >&2; exit 1; }
done
BUILD="$ROOT/bench/.build"
mkdir -p "$BUILD"
echo "--- building the chaos receiver"
(cd bench/chaos && go build -o "$BUILD/chaos" .)
source scripts/relay-build.sh
if [ "$MODE" = smoke ]; then relay_build debug; else relay_build release; fi
WORK="$BUILD/relay-killtest"
PY="${PYTHON:-python3}"
if [ -n "$TENANTS" ]; then
  WORK="$BUILD/relay-killtest-tenants"
  if [ "$MODE" = smoke ]; then
    exec "$PY" bench/relay_killtest.py --relay-bin "$RELAY" --chaos-bin "$BUILD/chaos" \
      --tenants 20 --hanging 2 --kills 2 --n 5000 --deadline 240 --workdir "$WORK" </dev/null
  fi
  mkdir -p bench/results
  exec "$PY" bench/relay_killtest.py --relay-bin "$RELAY" --chaos-bin "$BUILD/chaos" \
    --tenants 200 --hanging 20 --kills 2 --n "${KILL_N:-200000}" --deadline 900 \
    --workdir "$WORK" --json-out bench/results/relay-killtest-tenants.json </dev/null
fi
if [ -n "$SUBS" ]; then
  WORK="$BUILD/relay-killtest-subscriptions"
  if [ "$MODE" = smoke ]; then
    exec "$PY" bench/relay_killtest.py --relay-bin "$RELAY" --chaos-bin "$BUILD/chaos" \
      --subscriptions --n 3000 --deadline 240 --workdir "$WORK" </dev/null
  fi
  mkdir -p bench/results
  exec "$PY" bench/relay_killtest.py --relay-bin "$RELAY" --chaos-bin "$BUILD/chaos" \
    --subscriptions --n "${KILL_N:-100000}" --deadline 900 --workdir "$WORK" \
    --json-out bench/results/relay-killtest-subscriptions.json </dev/null
fi
if [ "$MODE" = smoke ]; then
  exec "$PY" bench/relay_killtest.py --relay-bin "$RELAY" --chaos-bin "$BUILD/chaos" \
    --n 3000 --deadline 240 --workdir "$WORK" </dev/null
fi
mkdir -p bench/results
exec "$PY" bench/relay_killtest.py --relay-bin "$RELAY" --chaos-bin "$BUILD/chaos" \
  --n "${KILL_N:-100000}" --deadline 900 --workdir "$WORK" \
  --json-out bench/results/relay-killtest.json </dev/null
