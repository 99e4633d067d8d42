"""The wheel users install: the installed module is the release build, stripped,
and scripts/check-wheel.sh, which scripts/build-wheel.sh and scripts/demo.sh run on dist/,
refuses a wheel that is a debug build, carries debug info or has the wrong platform tag."""

from __future__ import annotations

import os
import pathlib
import shutil
import subprocess
import zipfile
from typing import Callable

import pytest

from outbound import _native

ROOT = pathlib.Path(__file__).resolve().parents[2]
CHECK = ROOT / "scripts" / "check-wheel.sh"
# scripts/test-python.sh says which wheel it installed, and whether it is the release one.
WHEEL = os.environ.get("OUTBOUND_TEST_WHEEL")
RELEASE = os.environ.get("OUTBOUND_WHEEL", "release") == "release"

needs_release = pytest.mark.skipif(
    not (WHEEL and RELEASE), reason="runs on the release wheel that scripts/test-python.sh installs"
)


def sections(path: pathlib.Path) -> str:
    return subprocess.run(["readelf", "-S", "-W", str(path)], capture_output=True, text=True,
                          check=True).stdout


@needs_release
def test_installed_module_is_the_stripped_release_build() -> None:
    so = pathlib.Path(_native.__file__)
    data = so.read_bytes()
    assert b"outbound-build-profile:release" in data
    assert b"outbound-build-profile:debug" not in data
    table = sections(so)
    assert " .symtab " not in table and " .debug_" not in table


@needs_release
def test_check_wheel_accepts_the_built_wheel() -> None:
    out = subprocess.run([str(CHECK), str(WHEEL)], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert "release, stripped, manylinux_2_17_" in out.stdout


def rewrite(src: pathlib.Path, dst: pathlib.Path, change_so: Callable[[bytes], bytes]) -> None:
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w", zipfile.ZIP_DEFLATED) as zout:
        for item in zin.infolist():
            data = zin.read(item)
            if item.filename.endswith("_native.abi3.so"):
                data = change_so(data)
            zout.writestr(item, data)


def refused(wheel: pathlib.Path) -> str:
    out = subprocess.run([str(CHECK), str(wheel)], capture_output=True, text=True)
    assert out.returncode != 0, f"check-wheel accepted {wheel.name}"
    return out.stderr


@needs_release
def test_check_wheel_refuses_a_debug_build(tmp_path: pathlib.Path) -> None:
    src = pathlib.Path(str(WHEEL))
    bad = tmp_path / src.name
    # Same length, so the library stays a valid ELF file: only the profile marker differs.
    rewrite(src, bad, lambda b: b.replace(b"outbound-build-profile:release",
                                          b"outbound-build-profile:debug\0\0"))
    assert "not a release build" in refused(bad)


@needs_release
def test_check_wheel_refuses_debug_info(tmp_path: pathlib.Path) -> None:
    src = pathlib.Path(str(WHEEL))
    objcopy = shutil.which("objcopy")
    assert objcopy, "objcopy (binutils) is required"

    def add_debug_info(data: bytes) -> bytes:
        lib = tmp_path / "lib.so"
        lib.write_bytes(data)
        (tmp_path / "info").write_bytes(b"\0" * 64)
        subprocess.run([objcopy, "--add-section", f".debug_info={tmp_path / 'info'}", str(lib)],
                       check=True)
        return lib.read_bytes()

    bad = tmp_path / src.name
    rewrite(src, bad, add_debug_info)
    assert "debug info" in refused(bad)


@needs_release
def test_check_wheel_refuses_another_platform_tag(tmp_path: pathlib.Path) -> None:
    src = pathlib.Path(str(WHEEL))
    for name in [src.name.replace("manylinux2014_", "manylinux_2_34_").replace(
                     ".manylinux_2_17_", ".manylinux_2_34_"),
                 src.name.replace("-manylinux2014_", "-linux_").split(".manylinux")[0] + ".whl"]:
        bad = tmp_path / name
        shutil.copy(src, bad)
        assert "manylinux2014" in refused(bad)
        bad.unlink()
