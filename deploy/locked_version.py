"""Print the version of a package that a hashed lock holds for the Python running this.

    python3 deploy/locked_version.py numpy deploy/requirements.lock      ->  2.2.4 on 3.13

The locks are universal: numpy and OpenCV are forked by `python_full_version` (3.11 is
Debian 12 / Bookworm with python3-numpy 1.24.2, 3.13 is Debian 13 / Trixie with 2.2.4),
and pip installs the entry whose marker holds for its interpreter. install.sh and the
Ansible play use this to compare the system's own numpy with the one the lock expects for
the same interpreter, without pip or `packaging` (plain python3, standard library only).
Exits 1, printing nothing, when no entry applies.
"""

from __future__ import annotations

import operator
import re
import sys
from collections.abc import Callable

_OPS: dict[str, Callable[[tuple[int, ...], tuple[int, ...]], bool]] = {
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
    "==": operator.eq,
    "!=": operator.ne,
}
_MARKER = re.compile(r"(python_full_version|python_version)\s*(<=|>=|==|!=|<|>)\s*'([0-9.]+)'")


def locked_version(name: str, lock_text: str, python: tuple[int, ...]) -> str | None:
    """The pinned version of `name` whose Python markers hold for `python`, or None.

    Only the markers uv writes into these locks are understood (comparisons of
    python_version / python_full_version joined by `and`); an entry with any other
    marker is refused rather than guessed at.
    """
    entry = re.compile(re.escape(name) + r"==([^ ;\\]+)\s*(?:;(.*?))?\s*\\?$", re.IGNORECASE)
    for line in lock_text.splitlines():
        match = entry.match(line)
        if not match:
            continue
        marker = (match[2] or "").strip()
        terms = _MARKER.findall(marker)
        if _MARKER.sub("", marker).replace("and", "").strip():
            raise ValueError(f"{name}: a marker this script does not read: {marker}")
        if all(
            _OPS[op](python[: len(want)], want)
            for _, op, ver in terms
            for want in [tuple(int(x) for x in ver.split("."))]
        ):
            return match[1]
    return None


def main(argv: list[str]) -> int:
    """`locked_version.py NAME LOCK`: print the version, exit 1 when there is none."""
    if len(argv) != 3:
        sys.stderr.write("usage: locked_version.py NAME LOCK\n")
        return 64
    with open(argv[2], encoding="utf-8") as lock:
        version = locked_version(argv[1], lock.read(), tuple(sys.version_info[:3]))
    if version is None:
        return 1
    sys.stdout.write(version + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
