"""The layering rules of design.md, checked on the real import graph."""

from __future__ import annotations

import json
import pkgutil
import subprocess
import sys

import qrpos

CORE_PACKAGES = (
    "qrpos.spec",
    "qrpos.service",
    "qrpos.ledger",
    "qrpos.scanner",
    "qrpos.reports",
    "qrpos.simulator",
    "qrpos.config",
    "qrpos.credentials",
    "qrpos.notify",
    "qrpos.redact",
)


def _core_modules() -> list[str]:
    names = []
    for info in pkgutil.walk_packages(qrpos.__path__, "qrpos."):
        if info.name.startswith(("qrpos.tui", "qrpos.cli")):
            continue
        if info.name.startswith(CORE_PACKAGES):
            names.append(info.name)
    return names


def test_core_imports_without_textual_or_picamera2() -> None:
    modules = _core_modules()
    assert "qrpos.service.client" in modules
    code = (
        "import importlib, json, sys\n"
        f"for name in {modules!r}:\n"
        "    importlib.import_module(name)\n"
        "print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in "
        "('textual', 'picamera2', 'libcamera'))))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], check=True, capture_output=True, text=True
    ).stdout
    assert json.loads(out) == []


def test_cli_help_loads_no_textual() -> None:
    code = (
        "import sys\n"
        "from qrpos.cli import build_parser\n"
        "build_parser()\n"
        "print(any(m.split('.')[0] == 'textual' for m in sys.modules))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], check=True, capture_output=True, text=True
    ).stdout
    assert out.strip() == "False"


def test_kiosk_command_parses_without_loading_other_commands_or_heavy_libraries() -> None:
    """`qrpos demo`/`qrpos run` draw their first screen before httpx, cv2 or keyring load."""
    code = (
        "import sys\n"
        "from qrpos.cli import build_parser, chosen_command\n"
        "argv = ['--log-level', 'info', 'demo', '--keep-state']\n"
        "build_parser(only=chosen_command(argv)).parse_args(argv)\n"
        "heavy = ('httpx', 'cv2', 'keyring', 'numpy', 'starlette', 'qrpos.scanner')\n"
        "print(sorted(m for m in sys.modules if m.startswith(heavy)))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], check=True, capture_output=True, text=True
    ).stdout
    assert out.strip() == "[]"


def test_every_command_is_listed_in_the_full_help() -> None:
    from qrpos.cli import COMMANDS, build_parser

    text = build_parser().format_help()
    for name in COMMANDS:
        assert name in text
