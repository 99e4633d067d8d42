#!/usr/bin/env bash
# Every deploy test (docs/deploy.md), each part timed:
#   cargo test --test environment  settings from the environment (the relay's own test; also
#                                  in `cargo test --workspace`)
#   tests/deploy/test-helm.sh      the Helm chart: lint, template per values case, validated
#   tests/deploy/test-image.sh     the container image: built FROM scratch, run with podman
#   tests/deploy/test-deb.sh       the Debian package under systemd in a container
#   tests/deploy/test-compose.sh   the compose fleet: a relay and the Redis primary killed
# The image, the package and the fleet are made from the release build (one `cargo build
# --release -p outbound-relay`, timed on its own); OUTBOUND_DEPLOY_PROFILE=debug makes them
# from the dev build the test command already has (what fits its time budget). Tools and the
# systemd root filesystem are made once per machine (scripts/deploy-env.sh). Works as root,
# without standard input, with CI=true.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT="$(pwd)"   # scripts/relay-build.sh names the binary under it
start=$(date +%s)
timings=()
run() {
  local t0 status=0
  echo "=== $*"
  t0=$(date +%s)
  "$@" || status=$?
  timings+=("$(( $(date +%s) - t0 )) s  $*$([ "$status" -eq 0 ] || echo "  (FAILED: exit $status)")")
  return "$status"
}
failed=0
run cargo test -p outbound-relay --test environment || failed=1
source scripts/relay-build.sh
run relay_build "${OUTBOUND_DEPLOY_PROFILE:-release}" || failed=1
run tests/deploy/test-helm.sh || failed=1
run tests/deploy/test-image.sh || failed=1
run tests/deploy/test-deb.sh || failed=1
run tests/deploy/test-compose.sh || failed=1
printf '%s\n' "${timings[@]}"
if [ "$failed" -ne 0 ]; then
  echo "=== a deploy test failed (its output is above)" >&2
  exit 1
fi
echo "=== deploy tests passed in $(( $(date +%s) - start )) s"
