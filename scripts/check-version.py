#!/usr/bin/env python3
"""Checks that every face of outbound states one version: the workspace's Cargo.toml.

    scripts/check-version.py [--python PY] [--relay BIN]

Always (from the sources): every published crate takes the workspace's version; the wheel's
version comes from Cargo (pyproject.toml's `dynamic`); CHANGELOG.md's newest release is that
version; the C test (tests/c/test_outbound.c, so `outbound_version()` and the User-Agent), the
header's comment, docs/c.md's installed names and the bodies of docs/receivers.md and
examples/receivers/send-test.sh say it. With --python: that interpreter's installed
`outbound.__version__`. With --relay: `BIN --version`. scripts/test.sh runs the first form,
scripts/test-relay.sh the whole (it has the relay and the wheel at hand).
"""

from __future__ import annotations

import argparse
import glob
import os
import re
import subprocess
import sys
from typing import List

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def read(path: str) -> str:
    with open(os.path.join(ROOT, path), encoding="utf-8") as f:
        return f.read()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--python", help="a python with the outbound wheel installed")
    ap.add_argument("--relay", help="an outbound-relay binary")
    a = ap.parse_args()

    # Read with patterns, not tomllib: the scripts run on Python 3.10.
    cargo = read("Cargo.toml")
    package = re.search(r"^\[workspace\.package\]\n(?:[^\[].*\n|\n)*?version = \"([^\"]+)\"", cargo, re.M)
    members = re.search(r"^members = \[([^\]]*)\]", cargo, re.M)
    if not package or not members:
        print("FAIL  Cargo.toml: no [workspace.package] version or members", file=sys.stderr)
        return 1
    version = package.group(1)
    bad: List[str] = []

    def want(face: str, found: object) -> None:
        if found != version:
            bad.append(f"{face} says {found!r}, the workspace {version!r}")

    for member in re.findall(r'"([^"]+)"', members.group(1)):
        manifest = read(f"{member}/Cargo.toml")
        if re.search(r'^name = "workspace-hack"$', manifest, re.M):
            continue  # no code, never published: cargo-hakari's pattern keeps its own 0.1.0
        if not re.search(r"^version\.workspace = true$", manifest, re.M):
            bad.append(f"{member}/Cargo.toml: not version.workspace = true")

    project = read("pyproject.toml").split("[project]", 1)[-1].split("\n[", 1)[0]
    if re.search(r"^version\s*=", project, re.M) or not re.search(r'^dynamic = \[[^\]]*"version"', project, re.M):
        bad.append("pyproject.toml: the version must be dynamic (maturin takes Cargo's)")

    changelog = read("CHANGELOG.md")
    releases = re.findall(r"^## (\d+\.\d+\.\d+) — (\d{4}-\d{2}-\d{2})$", changelog, re.M)
    if not releases:
        bad.append("CHANGELOG.md: no release heading `## X.Y.Z — YYYY-MM-DD`")
    else:
        want("CHANGELOG.md's newest release", releases[0][0])
    unreleased = changelog.find("\n## Unreleased\n")
    if releases and not 0 <= unreleased < changelog.find(f"\n## {releases[0][0]} — "):
        bad.append("CHANGELOG.md: `## Unreleased` must come first, above the newest release")

    c_test = read("tests/c/test_outbound.c")
    for m in re.finditer(r'strcmp\(outbound_version\(\), "([^"]*)"\)', c_test):
        want("tests/c/test_outbound.c (outbound_version())", m.group(1))
    for m in re.finditer(r'strcmp\(ua, "outbound/([^"]*)"\)', c_test):
        want("tests/c/test_outbound.c (User-Agent)", m.group(1))
    for m in re.finditer(r"version as a NUL-terminated string \(`\"([^\"]*)\"`\)", read("include/outbound.h")):
        want("include/outbound.h", m.group(1))
    for m in re.finditer(r"^liboutbound\.so\.(\d+\.\d+\.\d+) ", read("docs/c.md"), re.M):
        want("docs/c.md's installed names", m.group(1))
    for path in ["docs/receivers.md", "examples/receivers/send-test.sh"]:
        for m in re.finditer(r'"name": ?"outbound", ?"version": ?"([^"]*)"', read(path)):
            want(f"{path} (context.library)", m.group(1))

    if a.python:
        out = subprocess.run([a.python, "-c", "import outbound; print(outbound.__version__)"],
                             capture_output=True, text=True, check=True, cwd="/")
        want(f"{a.python}: outbound.__version__", out.stdout.strip())
    if a.relay:
        out = subprocess.run([a.relay, "--version"], capture_output=True, text=True, check=True)
        want(f"{a.relay} --version", out.stdout.strip().removeprefix("outbound-relay "))
    for wheel in glob.glob(os.path.join(ROOT, "dist", "outbound_events-*.whl")):
        want(os.path.relpath(wheel, ROOT), os.path.basename(wheel).split("-")[1])

    for b in bad:
        print(f"FAIL  {b}", file=sys.stderr)
    faces = "sources" + (", the wheel" if a.python else "") + (", the relay" if a.relay else "")
    print(f"version {version}: {'agreed' if not bad else 'NOT agreed'} ({faces})")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
