#!/usr/bin/env python3
"""The workspace's `rust-version` must be at least every dependency's own (normal and build
dependencies of the crates we ship; dev-dependencies only build our tests). Run from the
repository root: prints the dependencies that need the newest Rust, exits 1 on a mismatch."""
import json
import subprocess
import sys


def key(v: str) -> tuple:
    return tuple(int(x) for x in (v.split(".") + ["0", "0"])[:3])


meta = json.loads(subprocess.run(["cargo", "metadata", "--format-version", "1", "--locked"],
                                 check=True, stdout=subprocess.PIPE).stdout)
pkgs = {p["id"]: p for p in meta["packages"]}
nodes = {n["id"]: n for n in meta["resolve"]["nodes"]}
ours = min(key(pkgs[m]["rust_version"]) for m in meta["workspace_members"])
seen, stack = set(), list(meta["workspace_members"])
while stack:
    i = stack.pop()
    if i in seen:
        continue
    seen.add(i)
    for dep in nodes[i]["deps"]:
        if any(k["kind"] in (None, "build") for k in dep["dep_kinds"]):
            stack.append(dep["pkg"])
needs = sorted(((key(pkgs[i]["rust_version"]), pkgs[i]["name"], pkgs[i]["version"])
                for i in seen if pkgs[i].get("rust_version") and i not in meta["workspace_members"]),
               reverse=True)
newest = needs[0][0] if needs else (0, 0, 0)
print("rust-version: ours %s; dependencies need at most %s (%s)" % (
    ".".join(map(str, ours)), ".".join(map(str, newest)),
    ", ".join(f"{n} {v}" for k, n, v in needs if k == newest)))
if ours < newest:
    print("the workspace's rust-version is lower than a dependency's: raise it in Cargo.toml")
    sys.exit(1)
