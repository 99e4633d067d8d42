#!/usr/bin/env bash
# The container image: scripts/image.sh builds it (FROM scratch, release build; reused when
# already built for this commit) and its size is checked against the goal (20 MB); then
# tests/deploy/image_test.py runs it with podman and sends Segment's Python SDK's events
# through it to a signed webhook on this host, across a SIGTERM stop and a SIGKILL, each
# followed by a new container on the same volume: nothing acknowledged may be lost.
#
# OUTBOUND_IMAGE_PROFILE=debug builds the image around the dev build instead (no release
# build; the size is then not checked): what the test command can afford when it has no
# release build at hand.
set -euo pipefail
source "$(dirname "$0")/../../scripts/deploy-env.sh"   # ROOT, DT, need_podman
need_podman
scripts/relay-env.sh --python-only >/dev/null
profile="${OUTBOUND_IMAGE_PROFILE:-release}"
out="$(mktemp)"
trap 'rm -f "$out"' EXIT
if [ "$profile" = release ]; then
  scripts/image.sh | tee "$out"
else
  source scripts/relay-build.sh
  relay_build debug
  scripts/image.sh --binary "$RELAY" | tee "$out"
fi
image="$(sed -n 's/^image //p' "$out")"
bytes="$(podman image inspect --format '{{.Size}}' "$image")"
if [ "$profile" = release ] && [ "$bytes" -gt 20000000 ]; then
  echo "the image is $bytes bytes, over the 20 MB goal" >&2
  exit 1
fi
.tools/relay/venv/bin/python tests/deploy/image_test.py "$image" </dev/null
