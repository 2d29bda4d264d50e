"""The settings of a kiosk's config.toml that site.yml's rewrite would lose.

Run by site.yml on the kiosk with its /usr/bin/python3 (3.11 or newer: tomllib):
`python3 -c "$(cat config_lost.py)" /etc/qrpos/config.toml`, with on stdin the JSON
`{"want": <what the play writes>, "given": <what the inventory sets>}`. Prints one line
per setting that is in the file and that the inventory does not set, whose value the
rewrite would drop or change (to a default of the play), with the inventory variable
that carries it; prints nothing when nothing would be lost, and nothing for a kiosk
without a config.toml. A value the inventory sets wins: it is the inventory's to change.
"""

import json
import sys
import tomllib
from typing import Any

#: the top-level setting or table -> the inventory variable that sets it (site.yml)
VARIABLES = {
    "base_url": "qrpos_base_url",
    "state_dir": "qrpos_state_dir",
    "language": "qrpos_language",
    "request_timeout": "qrpos_request_timeout",
    "scanner": "qrpos_scanner",
    "sound": "qrpos_sound",
    "printer": "qrpos_printer",
    "customer_display": "qrpos_customer_display",
    "owner": "qrpos_owner",
}


def lost(have: dict[str, Any], want: Any, given: Any, at: str) -> list[tuple[str, Any]]:
    """(dotted path, value) of every setting in `have` the rewrite would not keep."""
    want = want if isinstance(want, dict) else {}
    given = given if isinstance(given, dict) else {}
    found: list[tuple[str, Any]] = []
    for key, value in have.items():
        path = f"{at}{key}"
        if isinstance(value, dict) and isinstance(want.get(key), dict):
            found += lost(value, want[key], given.get(key), f"{path}.")
        elif key in given:
            continue  # the inventory sets it: its value is the one meant
        elif key not in want or want[key] != value:
            found.append((path, value))
    return found


def main() -> int:
    asked = json.load(sys.stdin)
    try:
        with open(sys.argv[1], "rb") as fh:
            have = tomllib.load(fh)
    except FileNotFoundError:
        return 0  # a new kiosk: nothing to lose
    except tomllib.TOMLDecodeError as exc:
        sys.stderr.write(f"{sys.argv[1]} is not valid TOML ({exc}): mend or remove it\n")
        return 1
    for path, value in lost(have, asked["want"], asked["given"], ""):
        top = path.split(".")[0]
        shown = json.dumps(value, ensure_ascii=False, default=str)
        sys.stdout.write(f"{path} = {shown} ({VARIABLES.get(top, 'qrpos_config_extra')})\n")
    return 0


sys.exit(main())
