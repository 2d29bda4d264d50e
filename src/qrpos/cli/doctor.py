"""Placeholder: the commands of this module are not built yet."""

from __future__ import annotations

import argparse
from typing import Any

from qrpos.cli.common import not_yet


def register(sub: Any) -> None:
    p: argparse.ArgumentParser = sub.add_parser("doctor", help="(not available yet)")
    p.set_defaults(func=not_yet("doctor"))
