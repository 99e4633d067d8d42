#!/usr/bin/env bash
# The container image: scripts/image.sh builds it (FROM scratch; reused when already built
# for this commit) and the release image's size is checked against the goal (20 MB); then
# tests/deploy/image_test.py runs it with podman and sends Segment's Python SDK's events
# through it to a signed webhook on this host, across a SIGTERM stop, a backup restored into
# a new volume, and a SIGKILL: nothing acknowledged may be lost.
# OUTBOUND_DEPLOY_PROFILE=debug: the image of the dev build (scripts/deploy-env.sh).
set -euo pipefail
source "$(dirname "$0")/../../scripts/deploy-env.sh"   # ROOT, DT, need_*, deploy_relay
need_podman
scripts/relay-env.sh --python-only >/dev/null
out="$(mktemp)"
trap 'rm -f "$out"' EXIT
if [ "${OUTBOUND_DEPLOY_PROFILE:-release}" = release ]; then
  scripts/image.sh | tee "$out"
else
  deploy_relay
  scripts/image.sh --binary "$RELAY" | tee "$out"
fi
image="$(sed -n 's/^image //p' "$out")"
bytes="$(podman image inspect --format '{{.Size}}' "$image")"
if [ "${OUTBOUND_DEPLOY_PROFILE:-release}" = release ] && [ "$bytes" -gt 20000000 ]; then
  echo "the image is $bytes bytes, over the 20 MB goal" >&2
  exit 1
fi
.tools/relay/venv/bin/python tests/deploy/image_test.py "$image" </dev/null
