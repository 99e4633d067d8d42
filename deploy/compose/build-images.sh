#!/usr/bin/env bash
# The compose fleet's two other images, FROM scratch like the relay's (scripts/image.sh),
# so the fleet runs where no container registry is reachable:
#   localhost/outbound-redis:latest      this machine's redis-server and redis-cli (Debian's
#                                        redis-server package, installed when missing) with
#                                        their libraries; user redis (uid 999), /data its own
#   localhost/outbound-receiver:latest   the sample receiver (receiver/main.go, Go standard
#                                        library only), static
# With a registry at hand, the official redis image does as well (docs/deploy.md).
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
source "$HERE/../../scripts/deploy-env.sh"   # ROOT, need_podman
need_podman
if ! command -v redis-server >/dev/null || ! command -v redis-cli >/dev/null; then
  deploy_apt redis-server redis-tools
fi
ctx="$(mktemp -d)"
trap 'rm -rf "$ctx"' EXIT
# Builds $2 from $1, removing the image it replaces (a rebuild would leave it untagged).
build() {
  local old
  old="$(podman image inspect --format '{{.Id}}' "$2" 2>/dev/null || true)"
  podman build --quiet --network none -t "$2" "$1" >/dev/null
  if [ -n "$old" ] && [ "$old" != "$(podman image inspect --format '{{.Id}}' "$2")" ]; then
    podman rmi "$old" >/dev/null 2>&1 || true
  fi
}

# Redis: both binaries and what they link.
fs="$ctx/redis/rootfs"
mkdir -p "$fs/usr/local/bin" "$fs/etc/redis" "$fs/data" "$fs/tmp"
chmod 1777 "$fs/tmp"
for bin in redis-server redis-cli; do
  src="$(readlink -f "$(command -v "$bin")")"
  cp "$src" "$fs/usr/local/bin/$bin"
  ldd "$src" | awk '$2 == "=>" && $3 ~ /^\// {print $3} $1 ~ /^\// {print $1}' | while read -r lib; do
    mkdir -p "$fs$(dirname "$lib")"
    cp -L "$lib" "$fs$lib"
  done
done
printf 'root:x:0:0:root:/:/nonexistent\nredis:x:999:999:redis:/data:/nonexistent\n' >"$fs/etc/passwd"
printf 'root:x:0:\nredis:x:999:\n' >"$fs/etc/group"
printf 'hosts: files dns\n' >"$fs/etc/nsswitch.conf"
mkdir -p "$ctx/redis/owned/data" "$ctx/redis/owned/etc/redis"
# Sentinel rewrites its config file: an empty one it owns, its settings on the command line.
touch "$ctx/redis/owned/etc/redis/sentinel.conf"
cat >"$ctx/redis/Containerfile" <<'CF'
FROM scratch
COPY rootfs/ /
COPY --chown=999:999 owned/ /
USER 999:999
WORKDIR /data
VOLUME /data
EXPOSE 6379 26379
ENV PATH=/usr/local/bin
ENTRYPOINT ["/usr/local/bin/redis-server"]
CF
build "$ctx/redis" localhost/outbound-redis:latest
echo "--- localhost/outbound-redis:latest ($(redis-server --version | awk '{print $3}'))"

# The receiver: a static Go binary.
mkdir -p "$ctx/receiver"
(cd "$HERE/receiver" && CGO_ENABLED=0 go build -trimpath -ldflags='-s -w' -o "$ctx/receiver/receiver" .)
printf 'nobody:x:65534:65534:nobody:/:/nonexistent\n' >"$ctx/receiver/passwd"
cat >"$ctx/receiver/Containerfile" <<'CF'
FROM scratch
COPY receiver /receiver
COPY passwd /etc/passwd
USER 65534:65534
EXPOSE 8080
ENTRYPOINT ["/receiver"]
CF
build "$ctx/receiver" localhost/outbound-receiver:latest
echo "--- localhost/outbound-receiver:latest"
