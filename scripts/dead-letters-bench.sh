#!/usr/bin/env bash
# What dead letters cost (bench/relay/dead_letters.py): the release relay with dead letters on
# (default) and off, paired and alternated in the same sitting, in the accept and tenants cases of
# scripts/relay-bench.sh; then 100,000 dead letters listed through the admin API.
#
#   scripts/dead-letters-bench.sh            the measured run (about 10 minutes on 2 cores)
#   scripts/dead-letters-bench.sh --smoke    tiny, on the dev build: the script works
#
# Prints a table, each figure with the load average (1 min) it started under: run it when
# `cat /proc/loadavg` is low, and say the load. Needs go, cargo and python3.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT"
BUILD="$ROOT/bench/.build"
mkdir -p "$BUILD"
(cd bench/relay/loadgen && go build -o "$BUILD/relaybench" .)
source scripts/relay-build.sh
profile=release
ARGS=()
if [ "${1:-}" = --smoke ]; then
  profile=debug
  ARGS=(--pairs 1 --seconds 2 --tenants 10 --tenant-rate 500 --tenant-seconds 2 --dead 2000 --samples 5)
fi
relay_build "$profile"
echo "--- bench/relay/dead_letters.py ($(nproc) cores; load average: $(cut -d' ' -f1-3 /proc/loadavg))"
exec python3 bench/relay/dead_letters.py --relay-bin "$RELAY" --tool-bin "$BUILD/relaybench" \
  --workdir "$BUILD/dead-letters-bench" "${ARGS[@]}" </dev/null
