#!/usr/bin/env python3
"""Every build the project's scripts make must resolve each shared dependency with the same
features as `cargo test --workspace`; otherwise cargo compiles the dependency, and every crate
above it, once more (target/ grew past a CI machine's disk that way). The crate
crates/workspace-hack pins the union. Run from the repository root: prints each drift with the
features to add to crates/workspace-hack/Cargo.toml, exits 1 on any."""
import subprocess
import sys

# (what the scripts build, the dependency edges that build uses)
BUILDS = [
    ("-p outbound-c", "normal,build"),           # scripts/test-c.sh, test-go.sh, test-python.sh
    ("-p outbound-relay", "normal,build"),       # the relay binary (test-relay.sh, demo.sh)
    ("-p outbound-relay", "normal,build,dev"),   # the relay's fuzz test (test-relay.sh)
    ("-p outbound", "normal,build,dev"),
    ("-p outbound-python", "normal,build"),      # the wheel (maturin)
]


def features(selection: str, edges: str) -> dict:
    out = subprocess.run(["cargo", "tree", "--locked", *selection.split(), "-e", edges,
                          "--prefix", "none", "-f", "{p}\t{f}"],
                         check=True, stdout=subprocess.PIPE, text=True).stdout
    found = {}
    for line in out.splitlines():
        if "\t" not in line or "(/" in line:   # workspace members carry their path
            continue
        pkg, feats = line.replace(" (*)", "").split("\t")
        found.setdefault(pkg, set()).add(feats)
    return found


workspace = features("--workspace", "normal,build,dev")
drift = []
for selection, edges in BUILDS:
    for pkg, feats in sorted(features(selection, edges).items()):
        if feats != workspace.get(pkg):
            drift.append(f"{selection} ({edges}): {pkg} has [{' | '.join(sorted(feats))}], "
                         f"the workspace [{' | '.join(sorted(workspace.get(pkg, [])))}]")
if drift:
    print("features differ from `cargo test --workspace` (add them to crates/workspace-hack):")
    print("\n".join(drift))
    sys.exit(1)
print(f"features: {len(BUILDS)} builds resolve like the workspace")
