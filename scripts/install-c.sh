#!/usr/bin/env bash
# Installs the C library into a prefix:
#   PREFIX/include/outbound.h
#   PREFIX/lib/liboutbound.so.0.2.0           (the shared library; SONAME liboutbound.so.0.2)
#   PREFIX/lib/liboutbound.so.0.2 -> liboutbound.so.0.2.0   (what programs load)
#   PREFIX/lib/liboutbound.so -> liboutbound.so.0.2         (what -loutbound finds)
#   PREFIX/lib/liboutbound.a
#   PREFIX/lib/pkgconfig/outbound.pc         (links liboutbound.so)
#   PREFIX/lib/pkgconfig/outbound-static.pc  (links liboutbound.a and its system libraries)
# (0.2 stands for the version's compatible series: see "Versions and the ABI" in docs/c.md.)
#
# Usage: scripts/install-c.sh PREFIX        (builds with cargo --release first)
#        OUTBOUND_C_PROFILE=debug scripts/install-c.sh PREFIX   (installs the debug build)
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -eq 1 ] || { echo "usage: $0 PREFIX" >&2; exit 2; }
mkdir -p "$1"
prefix=$(cd "$1" && pwd)
profile=${OUTBOUND_C_PROFILE:-release}
case "$profile" in
  release) cargo build -p outbound-c --release ;;
  debug) cargo build -p outbound-c ;;
  *) echo "OUTBOUND_C_PROFILE must be release or debug" >&2; exit 2 ;;
esac
libs="${CARGO_TARGET_DIR:-target}/$profile"
version=$(sed -n 's/^version = "\(.*\)"$/\1/p' Cargo.toml | head -n1)
# The compatible series, as bindings/c/build.rs names the SONAME: MAJOR, or 0.MINOR before 1.0.
IFS=. read -r major minor _ <<<"$version"
if [ "$major" = 0 ]; then series="0.$minor"; else series="$major"; fi
soname="liboutbound.so.$series"
built_soname=$(readelf -d "$libs/liboutbound.so" | sed -n 's/.*Library soname: \[\(.*\)\]/\1/p')
[ "$built_soname" = "$soname" ] || { echo "liboutbound.so has SONAME '$built_soname', expected $soname" >&2; exit 1; }
# System libraries a Rust static library needs (as `rustc --print native-static-libs` says).
static_libs="-lgcc_s -lutil -lrt -lpthread -lm -ldl -lc"

install -d "$prefix/include" "$prefix/lib/pkgconfig"
install -m 0644 include/outbound.h "$prefix/include/outbound.h"
install -m 0755 "$libs/liboutbound.so" "$prefix/lib/liboutbound.so.$version"
ln -sfn "liboutbound.so.$version" "$prefix/lib/$soname"
ln -sfn "$soname" "$prefix/lib/liboutbound.so"
install -m 0644 "$libs/liboutbound.a" "$prefix/lib/liboutbound.a"

write_pc() { # name, description, Libs line, Libs.private line
  cat > "$prefix/lib/pkgconfig/$1.pc" <<PC
prefix=$prefix
exec_prefix=\${prefix}
libdir=\${exec_prefix}/lib
includedir=\${prefix}/include

Name: $1
Description: $2
Version: $version
Cflags: -I\${includedir}
Libs: $3
Libs.private: $4
PC
}
write_pc outbound "Server-side events to a Segment-compatible endpoint and signed webhooks (C ABI)" \
  "-L\${libdir} -loutbound" "$static_libs"
write_pc outbound-static "outbound (C ABI), linked statically" \
  "\${libdir}/liboutbound.a $static_libs" ""
echo "installed outbound $version ($profile, SONAME $soname) into $prefix"
