#!/usr/bin/env bash
# Makes every tool the deploy tests use (scripts/deploy-env.sh's: podman set up, cargo-deb,
# helm, kubernetes-validate, podman-compose, the systemd image) without running a test;
# scripts/test.sh starts it early, at low priority.
#
#   scripts/deploy-tools.sh            all of them
#   scripts/deploy-tools.sh --fetch    those fetched from registries (podman and debootstrap
#                                      with apt-get, the Python tools, the systemd image):
#                                      they wait on the network and the disk
#   scripts/deploy-tools.sh --build    those compiled from source (cargo-deb, helm): CPU
set -euo pipefail
which=all
case "${1:-}" in
  "") ;;
  --fetch) which=fetch ;;
  --build) which=build ;;
  *) echo "usage: scripts/deploy-tools.sh [--fetch|--build]" >&2; exit 2 ;;
esac
source "$(dirname "$0")/deploy-env.sh"
if [ "$which" != build ]; then
  need_podman
  need_validate
  need_compose
  need_systemd_image
fi
if [ "$which" != fetch ]; then
  need_cargo_deb
  need_helm
fi
