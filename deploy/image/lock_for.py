"""Write the entries of a hashed lock that apply to another machine's Python.

    python3 deploy/image/lock_for.py deploy/requirements.lock 3.13 aarch64 > lock-aarch64.txt

The image's builder downloads the card's wheels on the host (deploy/image/build.sh), so
that pip in the emulated arm64 root only unpacks them. `pip download --python-version`
picks wheels by the target's tags but evaluates a lock's markers for the Python running
it (3.11 here would pick numpy 1.24.2 for a 3.13 card): this evaluates them for the
target instead and writes each applying entry with its hashes and without its marker.
Standard library plus `packaging`, or the copy inside Debian's python3-pip.
"""

from __future__ import annotations

import re
import sys

try:
    from packaging.markers import Marker
except ImportError:  # Debian's host python3 has it only inside pip
    from pip._vendor.packaging.markers import Marker  # type: ignore[assignment,no-redef,unused-ignore]


def environment(python: str, machine: str) -> dict[str, str]:
    """The marker environment of CPython `python` (X.Y) on Linux `machine`."""
    return {
        "implementation_name": "cpython",
        "implementation_version": f"{python}.0",
        "os_name": "posix",
        "platform_machine": machine,
        "platform_python_implementation": "CPython",
        "platform_release": "",
        "platform_system": "Linux",
        "platform_version": "",
        "python_full_version": f"{python}.0",
        "python_version": python,
        "sys_platform": "linux",
    }


_ENTRY = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*==[^ ;\\]+)\s*(?:;(.*?))?\s*(\\?)$")


def lock_for(lock_text: str, env: dict[str, str]) -> str:
    """The lock's entries whose markers hold in `env`: requirement and hash lines only."""
    out: list[str] = []
    keep = False
    for line in lock_text.splitlines():
        match = _ENTRY.match(line)
        if match:
            requirement, marker, _ = match.groups()
            keep = marker is None or Marker(marker.strip()).evaluate(env)
            if keep:
                out.append(f"{requirement} \\")
        elif keep and line.strip().startswith("--hash="):
            out.append("    " + line.strip())  # its own continuation: ` \\` but the last
        elif line.strip() and not line.lstrip().startswith("#"):
            keep = False
    return "\n".join(out) + "\n"


def main(argv: list[str]) -> int:
    if len(argv) != 4:
        sys.stderr.write("usage: " + __doc__.strip().splitlines()[2].strip() + "\n")
        return 64
    lock, python, machine = argv[1:]
    with open(lock, encoding="utf-8") as f:
        sys.stdout.write(lock_for(f.read(), environment(python, machine)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
