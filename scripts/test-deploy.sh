#!/usr/bin/env bash
# Every deploy test (docs/deploy.md), each part timed:
#   tests/deploy/test-helm.sh      the Helm chart: lint, template per values case, validated
#   tests/deploy/test-image.sh     the container image: built FROM scratch, run with podman
#   tests/deploy/test-deb.sh       the Debian package under systemd in a container
#   tests/deploy/test-compose.sh   the compose fleet: a relay and the Redis primary killed
#   cargo test --test environment  settings from the environment (the relay's own test)
# The image, the package and the fleet use the release build (one `cargo build --release -p
# outbound-relay`, shared); OUTBOUND_IMAGE_PROFILE=debug runs the image and the fleet on the
# dev build instead, and the package test is then left out (a package is a release artifact).
# Tools and the systemd root filesystem are made once into .tools/deploy. Works as root,
# without standard input, with CI=true.
set -euo pipefail
cd "$(dirname "$0")/.."
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
if [ "${OUTBOUND_IMAGE_PROFILE:-release}" = release ]; then
  source scripts/relay-build.sh
  run relay_build release || failed=1
fi
run tests/deploy/test-helm.sh || failed=1
run tests/deploy/test-image.sh || failed=1
if [ "${OUTBOUND_IMAGE_PROFILE:-release}" = release ]; then
  run tests/deploy/test-deb.sh || failed=1
fi
run tests/deploy/test-compose.sh || failed=1
printf '%s\n' "${timings[@]}"
if [ "$failed" -ne 0 ]; then
  echo "=== a deploy test failed (its output is above)" >&2
  exit 1
fi
echo "=== deploy tests passed in $(( $(date +%s) - start )) s"
