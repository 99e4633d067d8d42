#!/usr/bin/env python3
"""Runs cargo as scripts/build-wheel.sh's maturin ran it: the same --target and environment.

    scripts/cargo-as-wheel.py build --release -p outbound-relay
        # -> $CARGO_TARGET_DIR/x86_64-unknown-linux-gnu/release/outbound-relay

maturin builds the wheel with `--target <triple>` and zig as C compiler and linker (for glibc
2.17), which it gives cargo as environment variables. A plain `cargo build --release` differs in
both (another directory, gcc for the C in SQLite and ring), so it would compile the whole
dependency tree again. build-wheel.sh records maturin's environment in
<target dir>/wheel-env/<triple>.json; this runs cargo with it, so only the crates the wheel
does not use are compiled. The binaries it links need glibc 2.17 or newer, like the wheel.

--triple T picks another recorded target (default: this machine's architecture).
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys


def main() -> int:
    args = sys.argv[1:]
    triple = f"{platform.machine()}-unknown-linux-gnu"
    if len(args) >= 2 and args[0] == "--triple":
        triple, args = args[1], args[2:]
    if not args:
        print(__doc__, file=sys.stderr)
        return 2
    meta = subprocess.run(["cargo", "metadata", "--format-version", "1", "--no-deps"],
                          capture_output=True, text=True, check=True).stdout
    recorded = os.path.join(json.loads(meta)["target_directory"], "wheel-env", f"{triple}.json")
    if not os.path.exists(recorded):
        print(f"cargo-as-wheel: {recorded} is missing: run scripts/build-wheel.sh first", file=sys.stderr)
        return 1
    with open(recorded, encoding="utf-8") as f:
        wheel = json.load(f)
    env = {k: v for k, v in os.environ.items() if k not in wheel["unset"]}
    env.update(wheel["set"])
    cmd = ["cargo", args[0], "--target", triple, *args[1:]]
    print("--- " + " ".join(cmd) + " (with the wheel build's environment)", flush=True)
    os.execvpe("cargo", cmd, env)
    return 1  # not reached


if __name__ == "__main__":
    sys.exit(main())
