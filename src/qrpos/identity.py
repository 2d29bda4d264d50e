"""Which machine a state dir belongs to: a card cloned with its state dir is refused.

An installer flashes one image to many cards. The image carries no machine-id, so each
card makes its own at first boot (systemd). The first time the kiosk opens a state dir
on a machine, it records a digest of that machine-id there (`IDENTITY_FILE`) and a till
id of its own. A state dir copied to another card (same outbox, another machine-id)
would make that card a second install of the same terminal, which the outbox cannot tell
from its own sales: `check_machine` refuses it before the outbox is opened, and the
message tells the installer what to do.

The raw machine-id is never stored or shown (systemd asks that it stay private): only
an app-specific digest, and its first 8 hex digits in a message. A machine without a
machine-id (a development laptop in a container, an image not yet booted) is not
checked: there is nothing to compare.
"""

from __future__ import annotations

import hashlib
import json
import secrets
from dataclasses import dataclass
from pathlib import Path

from qrpos.errors import QrposError
from qrpos.said import say
from qrpos.statedir import write_private

#: where systemd keeps this machine's id (empty or "uninitialized" in an image)
MACHINE_ID_PATH = Path("/etc/machine-id")
#: the file in the state dir naming the machine it was made on
IDENTITY_FILE = "machine.json"


class ClonedStateDir(QrposError):
    """The state dir was made on another machine; the message names the fix."""


@dataclass(frozen=True)
class TillIdentity:
    machine: str  # digest of the machine-id (hex)
    till_id: str


def machine_digest(machine_id: str) -> str:
    """An app-specific digest of a machine-id (never the id itself)."""
    return hashlib.sha256(b"qrpos-state-dir:" + machine_id.encode("ascii")).hexdigest()


def read_machine_id(path: Path | None = None) -> str | None:
    """This machine's id, or None when it has none yet (empty, uninitialized, absent)."""
    try:
        text = (path or MACHINE_ID_PATH).read_text(encoding="ascii").strip()
    except (OSError, UnicodeDecodeError):
        return None
    if len(text) != 32 or any(c not in "0123456789abcdef" for c in text):
        return None  # "" or "uninitialized" (first boot) or damaged
    return text


def read_identity(state_dir: Path) -> TillIdentity | None:
    try:
        data = json.loads((state_dir / IDENTITY_FILE).read_text(encoding="utf-8"))
        return TillIdentity(machine=str(data["machine"]), till_id=str(data["till_id"]))
    except FileNotFoundError:
        return None
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ClonedStateDir(
            say(
                "error.identity_unreadable",
                "{path} cannot be read ({why}); this kiosk will not charge until it is "
                "restored from a backup of this machine, or the machine is paired as a "
                "new terminal with a fresh state dir",
                path=str(state_dir / IDENTITY_FILE),
                why=type(exc).__name__,
            )
        ) from None


def check_machine(state_dir: Path, machine_id_path: Path | None = None) -> TillIdentity | None:
    """The state dir's identity on this machine, recorded at its first open here.

    Raises `ClonedStateDir` when the state dir was made on another machine. None when
    this machine has no machine-id (nothing to check against)."""
    machine_id = read_machine_id(machine_id_path)
    if machine_id is None:
        return None
    here = machine_digest(machine_id)
    recorded = read_identity(state_dir)
    if recorded is None:
        identity = TillIdentity(machine=here, till_id=secrets.token_hex(4))
        body = {"machine": identity.machine, "till_id": identity.till_id}
        write_private(state_dir, IDENTITY_FILE, json.dumps(body).encode("utf-8") + b"\n")
        return identity
    if recorded.machine != here:
        raise ClonedStateDir(
            say(
                "error.state_dir_cloned",
                "the state dir {dir} was made on another machine ({theirs}; this one is "
                "{ours}): a copied outbox would make this till a second install of the same "
                "terminal, so it will not charge. Either put this state dir back on the "
                "machine it came from, or pair this machine as a new terminal: move {dir} "
                "aside (keep it: its sales may still need settling) and pair again",
                dir=str(state_dir),
                theirs=recorded.machine[:8],
                ours=here[:8],
            )
        )
    return recorded
