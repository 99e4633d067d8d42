#!/usr/bin/env bash
# Builds the wheel users install: release profile, stripped, manylinux2014 (glibc 2.17), one
# cp310-abi3 wheel per architecture, into dist/ (emptied first), then checks each with
# scripts/check-wheel.sh. No Docker: maturin links with zig (the ziglang package from PyPI)
# against glibc 2.17 symbols.
#
#   scripts/build-wheel.sh           x86_64, and aarch64 when Rust's standard library for
#                                    aarch64-unknown-linux-gnu is installed (rustup target
#                                    add aarch64-unknown-linux-gnu); otherwise it says so
#   scripts/build-wheel.sh --debug   a debug build for the host only, into target/wheels-debug/
#                                    (fast to rebuild; never into dist/, never for users)
#
# Prints the wheels' paths last, one a line. Sets up .venv with the pinned tools first.
set -euo pipefail
source "$(dirname "$0")/venv.sh"   # ROOT (cd'd there), PY, PATH with .venv/bin

profile=release
case "${1:-}" in
  "") ;;
  --debug) profile=debug ;;
  -h|--help) sed -n '2,13p' "$0"; exit 0 ;;
  *) echo "usage: scripts/build-wheel.sh [--debug]" >&2; exit 2 ;;
esac

if [ "$profile" = debug ]; then
  out="$ROOT/target/wheels-debug"
  rm -rf "$out"
  echo "--- building the wheel (maturin, debug profile, host only) into ${out#"$ROOT"/}"
  "$PY" -m maturin build --interpreter "$PY" --out "$out"
  ls "$out"/outbound_events-*.whl
  exit 0
fi

out="$ROOT/dist"
rm -rf "$out"
sysroot=$(rustc --print sysroot)
# maturin builds with --target and zig's C compiler and linker for glibc 2.17 (environment
# variables it gives cargo). A cargo shim records that environment per target, so
# scripts/cargo-as-wheel.py can build the relay with it and reuse every crate built here.
target_dir="$(cargo metadata --format-version 1 --no-deps | "$PY" -c 'import json, sys; print(json.load(sys.stdin)["target_directory"])')"
env_dir="$target_dir/wheel-env"
shim="$(mktemp -d)"
trap 'rm -rf "$shim"' EXIT
cat >"$shim/cargo" <<'SHIM'
#!/usr/bin/env bash
[ "${1:-}" = rustc ] && env -0 >"$OUTBOUND_WHEEL_ENV_OUT"
exec "$OUTBOUND_REAL_CARGO" "$@"
SHIM
chmod +x "$shim/cargo"
mkdir -p "$env_dir"
env -0 >"$shim/before"
real_cargo="$(command -v cargo)"
built=()
for arch in x86_64 aarch64; do
  target="$arch-unknown-linux-gnu"
  if [ ! -d "$sysroot/lib/rustlib/$target/lib" ]; then
    echo "--- $arch: skipped: Rust's standard library for $target is not installed" \
      "(rustup target add $target)"
    continue
  fi
  echo "--- building the $arch wheel (maturin --release --strip --zig, manylinux2014)"
  PATH="$shim:$PATH" OUTBOUND_REAL_CARGO="$real_cargo" OUTBOUND_WHEEL_ENV_OUT="$shim/$target" \
    "$PY" -m maturin build --release --strip --zig --compatibility manylinux2014 \
    --target "$target" --interpreter "$PY" --out "$out"
  "$PY" - "$shim/before" "$shim/$target" "$env_dir/$target.json" <<'DIFF'
import json, sys
def read(path):
    items = open(path, "rb").read().decode("utf-8", "surrogateescape").split("\0")
    return dict(i.split("=", 1) for i in items if "=" in i)
before, during = read(sys.argv[1]), read(sys.argv[2])
ours = {"PATH", "OUTBOUND_REAL_CARGO", "OUTBOUND_WHEEL_ENV_OUT", "_", "SHLVL", "PWD", "OLDPWD"}
env = {k: v for k, v in during.items() if before.get(k) != v and k not in ours}
unset = sorted(k for k in before if k not in during and k not in ours)
json.dump({"set": env, "unset": unset}, open(sys.argv[3], "w"), indent=1, sort_keys=True)
DIFF
  built+=("$arch")
done
[ "${#built[@]}" -gt 0 ] || { echo "build-wheel: no wheel could be built" >&2; exit 1; }

shopt -s nullglob
wheels=("$out"/outbound_events-*.whl)
[ "${#wheels[@]}" -eq "${#built[@]}" ] \
  || { echo "build-wheel: expected ${#built[@]} wheels in dist/, found: $(ls "$out")" >&2; exit 1; }
echo "--- checking the wheels"
scripts/check-wheel.sh "${wheels[@]}"
printf '%s\n' "${wheels[@]}"
