#!/usr/bin/env bash
# Makes every tool the deploy tests use (scripts/deploy-env.sh's: podman set up, cargo-deb,
# helm, kubernetes-validate, podman-compose, the systemd image) without running a test;
# scripts/test.sh starts it early, at low priority.
set -euo pipefail
source "$(dirname "$0")/deploy-env.sh"
need_podman
need_cargo_deb
need_helm
need_validate
need_compose
need_systemd_image
