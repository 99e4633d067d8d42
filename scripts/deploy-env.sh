#!/usr/bin/env bash
# Shared by the deploy scripts (sourced, not run): podman set up for these machines, and the
# tools each deploy test needs, installed on first use into gitignored .tools/deploy/ and
# reused after. Everything comes from package registries by name (apt, crates.io, PyPI, the Go
# module proxy); no container registry is used, so every image is built FROM scratch or, for
# the systemd test, from a Debian root filesystem made by debootstrap from the apt mirror.
#
# Tools that take minutes to build (helm from source, cargo-deb) and the root filesystem are
# kept per machine, in $OUTBOUND_DEPLOY_CACHE (default ~/.cache/outbound-deploy), so a fresh
# clone on the same machine (CI's) does not build them again; the rest per clone.
#
# After sourcing: $ROOT (the repository, cd'd there), $DT (.tools/deploy), $DC (the machine's
# cache), CONTAINERS_CONF exported, and the functions need_podman, need_cargo_deb, need_helm,
# need_validate, need_compose, need_systemd_image.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
DT="$ROOT/.tools/deploy"
DC="${OUTBOUND_DEPLOY_CACHE:-$HOME/.cache/outbound-deploy}"
mkdir -p "$DT" "$DC"
export DEBIAN_FRONTEND=noninteractive PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_INPUT=1

# Pinned; bump together with the tests.
HELM_VERSION=v3.22.0
PY_DEPLOY=(kubernetes-validate==1.37.0 podman-compose==1.6.0)
CARGO_DEB_VERSION=3.6.0
DEBIAN_SUITE="${OUTBOUND_DEBIAN_SUITE:-bookworm}"
DEBIAN_MIRROR="${OUTBOUND_DEBIAN_MIRROR:-http://deb.debian.org/debian}"
SYSTEMD_IMAGE="localhost/outbound-deploy-systemd:$DEBIAN_SUITE"

deploy_apt_updated=
deploy_apt() {
  if [ -z "$deploy_apt_updated" ]; then "$ROOT/scripts/apt.sh" update -qq </dev/null; deploy_apt_updated=1; fi
  "$ROOT/scripts/apt.sh" install -y -qq --no-install-recommends "$@" </dev/null >/dev/null
}

# podman with runc (crun refuses these machines' hybrid cgroups), limits root can set here,
# and the CNI name plugin (containers of one network reach each other by name).
need_podman() {
  local missing=()
  command -v podman >/dev/null || missing+=(podman)
  command -v runc >/dev/null || missing+=(runc)
  [ -e /usr/lib/cni/dnsname ] || missing+=(golang-github-containernetworking-plugin-dnsname)
  if [ "${#missing[@]}" -gt 0 ]; then
    echo "--- deploy-env: apt-get install ${missing[*]}"
    deploy_apt "${missing[@]}"
  fi
  cat >"$DT/containers.conf" <<'CONF'
[containers]
default_ulimits = ["nofile=20000:20000", "nproc=32768:32768"]

[engine]
runtime = "runc"
events_logger = "file"
CONF
  export CONTAINERS_CONF="$DT/containers.conf"
}

# cargo-deb (its own target dir: the relay's builds are not touched).
need_cargo_deb() {
  CARGO_DEB="$DC/cargo/bin/cargo-deb"
  if [ "$("$CARGO_DEB" --version 2>/dev/null | awk '{print $2}')" != "$CARGO_DEB_VERSION" ]; then
    echo "--- deploy-env: cargo install cargo-deb@$CARGO_DEB_VERSION"
    CARGO_TARGET_DIR="$DC/cargo/build" cargo install --quiet --locked --root "$DC/cargo" \
      "cargo-deb@$CARGO_DEB_VERSION"
    rm -rf "$DC/cargo/build"
  fi
}

# helm, built from the Go module proxy.
need_helm() {
  HELM="$DC/go/bin/helm"
  # A binary built by `go install` reports no patch version of its own: a stamp says which.
  if [ ! -x "$HELM" ] || [ "$(cat "$DC/go/helm.version" 2>/dev/null)" != "$HELM_VERSION" ]; then
    echo "--- deploy-env: go install helm.sh/helm/v3/cmd/helm@$HELM_VERSION (minutes, once)"
    # Without optimization or symbols: it only renders a few small charts, and compiling it is
    # most of what it costs.
    GOBIN="$DC/go/bin" GOFLAGS=-mod=mod go install -gcflags=all='-N -l' -ldflags='-s -w' \
      "helm.sh/helm/v3/cmd/helm@$HELM_VERSION"
    echo "$HELM_VERSION" >"$DC/go/helm.version"
  fi
}

# kubernetes-validate and podman-compose, in one venv.
need_python_tools() {
  if [ ! -x "$DT/venv/bin/python" ]; then
    "${PYTHON:-python3}" -m venv "$DT/venv"
  fi
  if [ "$(cat "$DT/venv/.installed" 2>/dev/null)" != "${PY_DEPLOY[*]}" ]; then
    echo "--- deploy-env: pip install ${PY_DEPLOY[*]}"
    "$DT/venv/bin/python" -m pip install --quiet "${PY_DEPLOY[@]}"
    echo "${PY_DEPLOY[*]}" >"$DT/venv/.installed"
  fi
}
need_validate() { need_python_tools; KUBE_VALIDATE="$DT/venv/bin/kubernetes-validate"; }
need_compose() { need_python_tools; PODMAN_COMPOSE="$DT/venv/bin/podman-compose"; }

# A Debian root filesystem with systemd as an image (systemd runs as PID 1 in it). Made once
# by debootstrap from the apt mirror and kept as a tarball, imported when podman lacks it.
need_systemd_image() {
  need_podman
  if podman image exists "$SYSTEMD_IMAGE"; then return; fi
  local tarball="$DC/rootfs-$DEBIAN_SUITE.tar"
  if [ ! -s "$tarball" ]; then
    command -v debootstrap >/dev/null || { echo "--- deploy-env: apt-get install debootstrap"; deploy_apt debootstrap; }
    local dir="$DC/rootfs-$DEBIAN_SUITE.tmp"
    rm -rf "$dir"
    echo "--- deploy-env: debootstrap $DEBIAN_SUITE (minbase + systemd) from $DEBIAN_MIRROR"
    debootstrap --variant=minbase --include=systemd,systemd-sysv,procps \
      "$DEBIAN_SUITE" "$dir" "$DEBIAN_MIRROR" >"$DC/debootstrap.log" 2>&1 \
      || { tail -n 30 "$DC/debootstrap.log" >&2; exit 1; }
    # Only what a systemd container needs: no getty on a console it does not have.
    rm -f "$dir"/etc/systemd/system/getty.target.wants/* "$dir"/var/cache/apt/archives/*.deb
    tar -C "$dir" -cf "$tarball.part" . && mv "$tarball.part" "$tarball"
    rm -rf "$dir"
  fi
  echo "--- deploy-env: podman import $tarball as $SYSTEMD_IMAGE"
  podman import --change 'CMD ["/sbin/init"]' "$tarball" "$SYSTEMD_IMAGE" >/dev/null
}

# The build the image, the package and the fleet are made from: release (what users get),
# or OUTBOUND_DEPLOY_PROFILE=debug, the dev build the test command already has (no release
# build; the image's size is then not the release's). Sets RELAY and DEPLOY_PROFILE.
deploy_relay() {
  DEPLOY_PROFILE="${OUTBOUND_DEPLOY_PROFILE:-release}"
  case "$DEPLOY_PROFILE" in
    release|debug) ;;
    *) echo "OUTBOUND_DEPLOY_PROFILE must be release or debug" >&2; exit 2 ;;
  esac
  source "$ROOT/scripts/relay-build.sh"
  relay_build "$DEPLOY_PROFILE" >&2
}
