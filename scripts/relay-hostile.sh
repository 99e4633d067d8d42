#!/usr/bin/env bash
# What a hostile request costs the relay (bench/relay/hostile_cost.py): the CPU time of the
# worst 500 KB body of each shape (many keys, long keys, deep and wide arrays, a long
# writeKey, gzip), before and after the write key, on the relay's request threads. Then
# (bench/relay/admin_cost.py) the admin API's: the memory and time of the worst source body of
# each shape, sent with a source's own token and with the admin token, and four at once
# (within 64 MiB of the idle relay, /healthz answering meanwhile).
#
#   scripts/relay-hostile.sh           the release relay, every case 5 times (the median
#                                      counts; about a minute once built); fails when a shape's
#                                      worst case is over 20 ms of CPU
#   scripts/relay-hostile.sh --smoke   the dev build, each case once, no limit checked: checks
#                                      the script works and the relay answers every shape; part
#                                      of scripts/test.sh
#
# Prints the worst case per shape with its status and answer size, the relay's peak RSS, and
# the load average at the start and the end.
set -euo pipefail
MODE=full
case "${1:-}" in
  "") ;;
  --smoke) MODE=smoke ;;
  -h|--help) sed -n '2,16p' "$0"; exit 0 ;;
  *) echo "usage: scripts/relay-hostile.sh [--smoke]" >&2; exit 2 ;;
esac
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT"
source scripts/relay-build.sh
if [ "$MODE" = smoke ]; then
  relay_build debug
  python3 bench/relay/hostile_cost.py --relay-bin "$RELAY" --smoke </dev/null
  exec python3 bench/relay/admin_cost.py --relay-bin "$RELAY" --smoke </dev/null
fi
relay_build release
python3 bench/relay/hostile_cost.py --relay-bin "$RELAY" </dev/null
exec python3 bench/relay/admin_cost.py --relay-bin "$RELAY" </dev/null
