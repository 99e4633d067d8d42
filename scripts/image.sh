#!/usr/bin/env bash
# The relay's container image (OCI), built with podman FROM scratch: nothing is pulled, so it
# builds where no container registry is reachable. It holds the release binary (stripped),
# the shared libraries it links (as `ldd` names them, with the loader), a CA bundle, a
# non-root user (outbound-relay, uid 10001), the image's relay.toml (listen 0.0.0.0:8088,
# data_dir /var/lib/outbound-relay) and that data directory, owned by the user, as a volume.
#
#   scripts/image.sh             builds localhost/outbound-relay:<commit> (and :latest), prints
#                                its size and writes dist/image/outbound-relay-<commit>.oci.tar
#                                (podman save --format oci-archive); an image already built for
#                                this commit is reused, with no build at all
#   scripts/image.sh --binary F  the image of binary F instead of the release build (tests)
#
# Prints `image <name>` and `archive <path>` as its last two lines. Run it: podman load -i
# <archive>; docs/deploy.md ("A container").
set -euo pipefail
BINARY=
while [ $# -gt 0 ]; do
  case "$1" in
    --binary) BINARY=$2; shift 2 ;;
    -h|--help) sed -n '2,15p' "$0"; exit 0 ;;
    *) echo "usage: scripts/image.sh [--binary FILE]" >&2; exit 2 ;;
  esac
done
source "$(dirname "$0")/deploy-env.sh"   # ROOT (cd'd there), DT, need_podman
need_podman
command -v strip >/dev/null || { echo "strip (binutils) is required" >&2; exit 1; }

version="$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -n1)"
commit="$(git rev-parse --short=12 HEAD)"
# A tree with changes to what goes into the image is not that commit: its tag says so, and it
# is always built.
tag="$commit"
if [ -n "$(git status --porcelain -- crates Cargo.toml Cargo.lock scripts/image.sh deploy/image)" ]; then
  tag="$commit-dirty"
fi
[ -n "$BINARY" ] && tag="$tag-custom"
IMAGE="localhost/outbound-relay:$tag"
ARCHIVE="$ROOT/dist/image/outbound-relay-$tag.oci.tar"
mkdir -p "$ROOT/dist/image"

size_of() {
  local bytes
  bytes="$(podman image inspect --format '{{.Size}}' "$IMAGE")"
  echo "--- $IMAGE: $(awk -v b="$bytes" 'BEGIN{printf "%.1f MB (%d bytes)", b/1e6, b}'); archive $(du -h "$ARCHIVE" | cut -f1)"
}

if [[ "$tag" != *-dirty* && "$tag" != *-custom ]] && podman image exists "$IMAGE" && [ -s "$ARCHIVE" ]; then
  echo "--- reusing $IMAGE (built for this commit)"
  size_of
  echo "image $IMAGE"
  echo "archive $ARCHIVE"
  exit 0
fi

if [ -z "$BINARY" ]; then
  source scripts/relay-build.sh
  relay_build release
  BINARY="$RELAY"
fi

ctx="$(mktemp -d)"
trap 'rm -rf "$ctx"' EXIT
fs="$ctx/rootfs"
mkdir -p "$fs/usr/bin" "$fs/etc/ssl/certs" "$fs/etc/outbound-relay" "$ctx/data" "$fs/tmp"
chmod 1777 "$fs/tmp"
cp "$BINARY" "$fs/usr/bin/outbound-relay"
strip "$fs/usr/bin/outbound-relay"
# Each library the binary loads, and the loader, at the path the binary asks for.
ldd "$BINARY" | awk '$2 == "=>" && $3 ~ /^\// {print $3} $1 ~ /^\// {print $1}' | while read -r lib; do
  mkdir -p "$fs$(dirname "$lib")"
  cp -L "$lib" "$fs$lib"
done
cp -L /etc/ssl/certs/ca-certificates.crt "$fs/etc/ssl/certs/ca-certificates.crt"
printf 'root:x:0:0:root:/:/nonexistent\noutbound-relay:x:10001:10001:outbound-relay:/var/lib/outbound-relay:/nonexistent\n' >"$fs/etc/passwd"
printf 'root:x:0:\noutbound-relay:x:10001:\n' >"$fs/etc/group"
printf 'hosts: files dns\n' >"$fs/etc/nsswitch.conf"
cat >"$fs/etc/outbound-relay/relay.toml" <<'TOML'
# The image's defaults. OUTBOUND_RELAY_* variables override any top-level key (an admin token:
# OUTBOUND_RELAY_ADMIN_TOKEN_FILE=/run/secrets/...); a file mounted here replaces this one.
listen = "0.0.0.0:8088"
data_dir = "/var/lib/outbound-relay"
TOML
cat >"$ctx/Containerfile" <<EOF
FROM scratch
COPY rootfs/ /
# Owned by the relay's user, so a new volume mounted here is too (podman and docker copy it up).
COPY --chown=10001:10001 data/ /var/lib/outbound-relay/
USER 10001:10001
WORKDIR /var/lib/outbound-relay
VOLUME /var/lib/outbound-relay
EXPOSE 8088
STOPSIGNAL SIGTERM
ENTRYPOINT ["/usr/bin/outbound-relay"]
CMD ["--config", "/etc/outbound-relay/relay.toml"]
LABEL org.opencontainers.image.title="outbound-relay" \\
      org.opencontainers.image.description="Segment's tracking API in, signed webhooks out" \\
      org.opencontainers.image.version="$version" \\
      org.opencontainers.image.revision="$(git rev-parse HEAD)" \\
      org.opencontainers.image.licenses="MIT OR Apache-2.0"
EOF
echo "--- podman build $IMAGE (FROM scratch)"
old_id="$(podman image inspect --format '{{.Id}}' "$IMAGE" 2>/dev/null || true)"
podman build --quiet --no-cache --network none -t "$IMAGE" -f "$ctx/Containerfile" "$ctx" >/dev/null
[[ "$tag" == *-custom ]] || podman tag "$IMAGE" localhost/outbound-relay:latest
# Only this build's image and archive are kept: one per commit would fill the disk.
new_id="$(podman image inspect --format '{{.Id}}' "$IMAGE")"
for other in $(podman images --format '{{.Repository}}:{{.Tag}}' localhost/outbound-relay); do
  case "$other" in *:latest|"$IMAGE") ;; *) podman rmi "$other" >/dev/null 2>&1 || true ;; esac
done
if [ -n "$old_id" ] && [ "$old_id" != "$new_id" ]; then podman rmi "$old_id" >/dev/null 2>&1 || true; fi
find "$ROOT/dist/image" -name 'outbound-relay-*.oci.tar' ! -name "$(basename "$ARCHIVE")" -delete
rm -f "$ARCHIVE"
podman save --quiet --format oci-archive -o "$ARCHIVE" "$IMAGE"
size_of
echo "image $IMAGE"
echo "archive $ARCHIVE"
