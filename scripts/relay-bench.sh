#!/usr/bin/env bash
# The relay's speed benchmark (bench/relay/bench.py), one command from a clean clone:
#
#   scripts/relay-bench.sh           one measured run of every case on the release relay
#                                    (about 4 minutes on 2 cores): accept rate with durable
#                                    acknowledgement (/v1/batch, 100 events, 32 connections, a
#                                    batched forward: at flush_at 100 = the SDKs' batches, at
#                                    the relay's defaults, and joined with max_batch_messages,
#                                    each row labelled), a burst of 1,000,000 events to one
#                                    signed webhook beside the library alone, single events
#                                    against the loopback limit (a trivial server, same load
#                                    generator), 200 sources × 5 webhook URLs answering after
#                                    100 ms; the accept rate with 5 subscriptions on the source
#                                    over the rate without (paired, twice), and a burst to one
#                                    subscription beside one classic webhook; writes
#                                    bench/results/relay-bench.json
#   scripts/relay-bench.sh --smoke   every case, tiny, on the dev build (under 60 s once
#                                    built); checks the benchmark works; part of scripts/test.sh
#
# Prints a table (each figure with the load average it ran under); exits non-zero when a case
# breaks (nothing acknowledged, an acknowledged event never delivered). Needs go and cargo.
set -euo pipefail
MODE=full
case "${1:-}" in
  "") ;;
  --smoke) MODE=smoke ;;
  -h|--help) sed -n '2,18p' "$0"; exit 0 ;;
  *) echo "usage: scripts/relay-bench.sh [--smoke]" >&2; exit 2 ;;
esac
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT"
for tool in go cargo python3; do
  command -v "$tool" >/dev/null || { echo "$tool is required" >&2; exit 1; }
done
BUILD="$ROOT/bench/.build"
mkdir -p "$BUILD"
echo "--- building the load generator and receivers (bench/relay/loadgen)"
(cd bench/relay/loadgen && go build -o "$BUILD/relaybench" .)
source scripts/relay-build.sh
# The smoke pass only checks the benchmark works: the dev build, as scripts/bench.sh --smoke does.
profile=release
if [ "$MODE" = smoke ]; then profile=debug; fi
relay_build "$profile" --example bench_library_webhook   # the library alone
relay_build "$profile"
TARGET="${CARGO_TARGET_DIR:-$ROOT/target}"
ARGS=(--relay-bin "$RELAY" --tool-bin "$BUILD/relaybench"
  --library-bin "$TARGET/$profile/examples/bench_library_webhook" --workdir "$BUILD/relay-bench")
echo "--- bench/relay/bench.py $MODE ($(nproc) cores; load average: $(cut -d' ' -f1-3 /proc/loadavg))"
if [ "$MODE" = smoke ]; then
  echo "--- smoke: a dev build and tiny cases: the figures below are no measurement"
  exec python3 bench/relay/bench.py "${ARGS[@]}" --seconds 2 --burst 20000 --library-n 5000 \
    --tenants 10 --tenant-rate 1000 --tenant-seconds 2 --sub-burst 5000 </dev/null
fi
mkdir -p bench/results
exec python3 bench/relay/bench.py "${ARGS[@]}" --json-out bench/results/relay-bench.json </dev/null
