#!/usr/bin/env bash
# Checks that each given wheel is the one users should install: the release build, stripped,
# tagged manylinux2014 (manylinux_2_17, glibc 2.17: RHEL/CentOS 7+, Ubuntu 18.04+, Amazon
# Linux 2) for the architecture of the library inside it, as auditwheel reads its symbols,
# with both licence files. scripts/build-wheel.sh runs it on what it builds.
#
# Usage: scripts/check-wheel.sh WHEEL...   (auditwheel from .venv, or $AUDITWHEEL)
# Exits non-zero, saying why, on the first wheel that is not right.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
AUDITWHEEL="${AUDITWHEEL:-$ROOT/.venv/bin/auditwheel}"
[ $# -ge 1 ] || { echo "usage: $0 WHEEL..." >&2; exit 2; }
command -v readelf >/dev/null || { echo "check-wheel: readelf (binutils) is required" >&2; exit 1; }
[ -x "$AUDITWHEEL" ] || { echo "check-wheel: $AUDITWHEEL not found (scripts/build-wheel.sh installs it)" >&2; exit 1; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for wheel in "$@"; do
  name=$(basename "$wheel")
  bad() { echo "check-wheel: $name: $*" >&2; exit 1; }
  # outbound_events-0.2.0-cp310-abi3-manylinux2014_x86_64.manylinux_2_17_x86_64.whl
  [[ "$name" =~ ^outbound_events-[0-9][^-]*-cp310-abi3-manylinux2014_(x86_64|aarch64)\.manylinux_2_17_(x86_64|aarch64)\.whl$ ]] \
    || bad "not an outbound_events cp310-abi3 manylinux2014 / manylinux_2_17 wheel name"
  arch=${BASH_REMATCH[1]}
  [ "${BASH_REMATCH[2]}" = "$arch" ] || bad "two different architectures in the tag"

  rm -rf "$tmp/x" && mkdir "$tmp/x"
  (cd "$tmp/x" && python3 -m zipfile -e "$wheel" . 2>/dev/null) || unzip -q "$wheel" -d "$tmp/x"
  so="$tmp/x/outbound/_native.abi3.so"
  [ -f "$so" ] || bad "outbound/_native.abi3.so is missing"

  case "$arch" in
    x86_64) machine="X86-64" ;;
    aarch64) machine="AArch64" ;;
  esac
  readelf -h "$so" | grep -q "Machine:.*$machine" || bad "the library is not built for $arch"
  sections=$(readelf -S -W "$so")
  grep -q ' \.symtab ' <<<"$sections" && bad "the library is not stripped (it has .symtab)"
  grep -q ' \.debug_' <<<"$sections" && bad "the library carries debug info (.debug_* sections)"
  grep -aq 'outbound-build-profile:release' "$so" \
    || bad "the library is not a release build (its profile marker says: $(grep -ao 'outbound-build-profile:[a-z]*' "$so" || echo none))"

  # auditwheel reads the versioned glibc symbols the library needs.
  shown=$("$AUDITWHEEL" show "$wheel" 2>&1) || bad "auditwheel show failed: $shown"
  grep -q "consistent with the following platform tag: \"manylinux_2_17_$arch\"" <<<"$(tr -s ' \n' ' ' <<<"$shown")" \
    || bad "auditwheel does not find it manylinux_2_17_$arch: $shown"

  for f in LICENSE-MIT LICENSE-APACHE; do
    compgen -G "$tmp/x/outbound_events-*.dist-info/licenses/$f" >/dev/null || bad "$f is not in the wheel"
  done
  echo "check-wheel: $name: release, stripped, manylinux_2_17_$arch (auditwheel), $(du -k "$wheel" | cut -f1) KiB"
done
