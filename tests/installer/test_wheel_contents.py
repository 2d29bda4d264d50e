"""The wheel holds the product only: the scene generators the benchmarks and the scanner
tests share (benchmarks/scenes) are tools, and no benchmark or test module ships (issue 49:
hardscenes.py and fieldscenes.py were inside qrpos.scanner)."""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
#: words no file of the wheel may be named by
TOOLS = ("scenes", "benchmark", "conftest", "test_")


def wheel_files(tmp_path: Path) -> list[str]:
    """Build the wheel as a release does (setuptools, no dependencies) from a copy of the
    checkout (the build writes build/ and egg-info beside the sources) and list it."""
    tree = tmp_path / "tree"
    shutil.copytree(
        ROOT / "src", tree / "src", ignore=shutil.ignore_patterns("*.egg-info", "__pycache__")
    )
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, tree / name)
    out = tmp_path / "wheel"
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
         "-w", str(out), str(tree)],
        check=True, capture_output=True, timeout=120,
    )  # fmt: skip
    (wheel,) = out.glob("qrpos-*.whl")
    with zipfile.ZipFile(wheel) as whl:
        return whl.namelist()


def tools_in(names: list[str]) -> list[str]:
    return [n for n in names if any(word in n.rpartition("/")[2] for word in TOOLS)]


def test_the_wheel_holds_no_scene_generator_benchmark_or_test(tmp_path: Path) -> None:
    names = wheel_files(tmp_path)
    assert "qrpos/scanner/stack.py" in names  # the listing is the real wheel's
    assert "qrpos/present/locales/mn/kiosk.toml" in names
    assert tools_in(names) == []


def test_a_scene_generator_in_the_listing_is_caught() -> None:
    names = ["qrpos/scanner/loop.py", "qrpos/scanner/hardscenes.py", "qrpos/x/test_y.py"]
    assert tools_in(names) == ["qrpos/scanner/hardscenes.py", "qrpos/x/test_y.py"]
