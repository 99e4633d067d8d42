#!/usr/bin/env bash
# The relay with many tenants (bench/relay/tenants.py), one command from a clean clone:
#
#   scripts/relay-tenants.sh           one measured run on the release relay (about 4 minutes
#                                      on 2 cores): 10,000 idle sources x 5 URLs (ready time,
#                                      RSS, threads); 200 sources x 5 URLs answering after
#                                      100 ms + 20 hanging under 10,000 events/s, then a bare
#                                      one-thread hyper client on the same receiver with as
#                                      many connections (the relay's rate as a percentage of
#                                      it); 2,000 sources x 5 URLs with 10 % hanging; single
#                                      events to one signed URL (send -> URL latency). Writes
#                                      bench/results/relay-tenants.json
#   scripts/relay-tenants.sh --smoke   every case, tiny, on the dev build; checks the
#                                      benchmark works; part of scripts/test.sh
#
# Prints a table (each figure with the load average it ran under); exits non-zero when a case
# breaks (nothing acknowledged, an event of a healthy source never delivered). Needs go and
# cargo.
set -euo pipefail
MODE=full
case "${1:-}" in
  "") ;;
  --smoke) MODE=smoke ;;
  -h|--help) sed -n '2,18p' "$0"; exit 0 ;;
  *) echo "usage: scripts/relay-tenants.sh [--smoke]" >&2; exit 2 ;;
esac
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT"
for tool in go cargo python3; do
  command -v "$tool" >/dev/null || { echo "$tool is required" >&2; exit 1; }
done
BUILD="$ROOT/bench/.build"
mkdir -p "$BUILD"
echo "--- building the load generator and receivers (bench/relay/loadgen)"
(cd bench/relay/loadgen && go build -o "$BUILD/relaybench-tenants" .)
source scripts/relay-build.sh
profile=release
if [ "$MODE" = smoke ]; then profile=debug; fi
relay_build "$profile" --example bare_hyper_client   # the tenants case's yardstick
relay_build "$profile"
BARE="${CARGO_TARGET_DIR:-$ROOT/target}/$profile/examples/bare_hyper_client"
ARGS=(--relay-bin "$RELAY" --tool-bin "$BUILD/relaybench-tenants" --bare-bin "$BARE"
  --workdir "$BUILD/relay-tenants")
echo "--- bench/relay/tenants.py $MODE ($(nproc) cores; load average: $(cut -d' ' -f1-3 /proc/loadavg))"
if [ "$MODE" = smoke ]; then
  echo "--- smoke: a dev build and tiny cases: the figures below are no measurement"
  exec python3 bench/relay/tenants.py "${ARGS[@]}" --idle 200 --healthy 20 --hanging 2 \
    --wide 50 --rate 500 --seconds 3 --single-seconds 3 </dev/null
fi
mkdir -p bench/results
exec python3 bench/relay/tenants.py "${ARGS[@]}" --json-out bench/results/relay-tenants.json </dev/null
