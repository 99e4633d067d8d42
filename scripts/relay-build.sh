# Sourced by the relay's scripts: `relay_build release|debug` builds outbound-relay in that
# profile and sets RELAY to the binary. The test command's relay tests and smoke passes use the
# dev build, which `cargo test --workspace` has already made (a release build costs about 4
# minutes of CI's 2 cores); measured runs, full fault runs and the demo use the release build
# users install.
relay_build() {
  local profile=$1
  shift
  if [ "$profile" = release ]; then
    echo "--- cargo build --release -p outbound-relay${*:+ $*}"
    cargo build --release -p outbound-relay "$@"
  else
    echo "--- cargo build -p outbound-relay${*:+ $*} (dev build: smoke mode and tests)"
    cargo build -p outbound-relay "$@"
  fi
  RELAY="${CARGO_TARGET_DIR:-$ROOT/target}/$profile/outbound-relay"
}
