#!/usr/bin/env bash
# Runs every test of the project, installing what it needs first. `.ci/run` calls this.
# Each part can also be run alone: scripts/test-rust.sh, scripts/test-c.sh, scripts/test-go.sh,
# scripts/test-python.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
start=$(date +%s)
for part in rust c go python; do
  echo "=== scripts/test-$part.sh"
  "scripts/test-$part.sh"
done
# Benchmarks do not run here beyond a smoke pass that checks the script still works.
echo "=== scripts/bench.sh --smoke"
scripts/bench.sh --smoke
echo "=== all test parts passed in $(( $(date +%s) - start )) s"
