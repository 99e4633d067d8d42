#!/usr/bin/env bash
# The compose fleet (deploy/compose/compose.yaml) with podman-compose: the relay's image
# (scripts/image.sh; OUTBOUND_DEPLOY_PROFILE=debug: around the dev build), the Redis and
# receiver images (deploy/compose/build-images.sh, FROM scratch), then
# tests/deploy/compose_test.py: events through both relays, relay 1 and the Redis primary
# SIGKILLed, 0 acknowledged lost. podman-compose (PyPI) is installed into .tools/deploy.
set -euo pipefail
source "$(dirname "$0")/../../scripts/deploy-env.sh"   # ROOT, DT, need_*, deploy_relay
need_podman
need_compose
scripts/relay-env.sh --python-only >/dev/null
out="$(mktemp)"
trap 'rm -f "$out"' EXIT
if [ "${OUTBOUND_DEPLOY_PROFILE:-release}" = release ]; then
  scripts/image.sh >"$out"
else
  deploy_relay
  scripts/image.sh --binary "$RELAY" >"$out"
fi
image="$(sed -n 's/^image //p' "$out")"
deploy/compose/build-images.sh
.tools/relay/venv/bin/python tests/deploy/compose_test.py "$PODMAN_COMPOSE" "$image" </dev/null
