#!/usr/bin/env bash
# The Debian package: cargo-deb packs the release relay (crates/outbound-relay/Cargo.toml,
# [package.metadata.deb]; unit and maintainer scripts in deploy/debian/) into dist/deb/, then
# tests/deploy/deb_test.py installs it in a container running systemd (a debootstrapped
# Debian, kept as an image), sends Segment's Python SDK's events through it, reloads,
# kill -9s it and checks systemd's restart lost nothing acknowledged, stops and purges it.
# cargo-deb (crates.io) and the root filesystem are made once per machine.
# OUTBOUND_DEPLOY_PROFILE=debug packs the dev build instead (scripts/deploy-env.sh).
set -euo pipefail
source "$(dirname "$0")/../../scripts/deploy-env.sh"   # ROOT, DT, need_*, deploy_relay
need_podman
need_cargo_deb
need_systemd_image
scripts/relay-env.sh --python-only >/dev/null
deploy_relay
# The dev build's package (OUTBOUND_DEPLOY_PROFILE=debug) tests the packaging and the unit, not
# the binary: cargo-deb warns that it is for releases, and it goes to a folder of its own.
out=dist/deb
profile=()
if [ "$DEPLOY_PROFILE" = debug ]; then out=target/deb-debug; profile=(--profile dev --fast); fi
mkdir -p "$out"
echo "--- cargo deb -p outbound-relay --no-build ${profile[*]}"
deb="$("$CARGO_DEB" deb -p outbound-relay --no-build "${profile[@]}" --output "$out/" 2>"$DT/cargo-deb.log" | tail -n1)" \
  || { cat "$DT/cargo-deb.log" >&2; exit 1; }
echo "$deb ($(du -h "$deb" | cut -f1))"
.tools/relay/venv/bin/python tests/deploy/deb_test.py "$deb" "$SYSTEMD_IMAGE" </dev/null
