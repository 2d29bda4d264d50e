"""The pairing screen's way to root: hand a verified pairing to qrpos-pair.socket.

The kiosk runs as the unprivileged user qrpos; only root can encrypt the terminal's
password into /etc/credstore.encrypted (`systemd-creds encrypt`). The unit sets
`QRPOS_PAIR_SOCKET`; each connection runs qrpos-pair@.service (deploy/pair-store.sh ->
deploy/provision.sh), which verifies the three lines again with the service before it
stores anything, and answers one line: `ok` or `failed EXIT`.

Protocol: base URL, username, password, one per line, then the write side is shut. The
password travels only over this socket (root and the group qrpos may connect), never in
an argument, a file or a log.
"""

from __future__ import annotations

import logging
import socket
from pathlib import Path

from qrpos.credentials import PROVISION_FIX, CredentialStoreUnavailable
from qrpos.said import os_reason, say

log = logging.getLogger("qrpos.kiosk.pairing")

#: provision.sh's exit status when the service rejected the username and password
EXIT_REJECTED = 4
#: root verifies with the service again and encrypts: allow for a slow service
HELPER_TIMEOUT_S = 120.0


def hand_to_root(
    socket_path: Path,
    base_url: str,
    username: str,
    password: str,
    *,
    timeout_s: float = HELPER_TIMEOUT_S,
) -> str:
    """Store the pairing through root's helper; where it went, or
    `CredentialStoreUnavailable` saying why (never the password)."""
    for value in (base_url, username, password):
        if "\n" in value or "\r" in value:
            raise ValueError("a pairing field holds a line break")
    answer = b""
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
            conn.settimeout(timeout_s)
            conn.connect(str(socket_path))
            conn.sendall(f"{base_url}\n{username}\n{password}\n".encode())
            conn.shutdown(socket.SHUT_WR)
            while len(answer) < 200:
                chunk = conn.recv(200)
                if not chunk:
                    break
                answer += chunk
    except OSError as exc:
        log.warning("pairing helper %s unreachable: %s", socket_path, type(exc).__name__)
        raise CredentialStoreUnavailable(
            say(
                "error.pair_helper_unreachable",
                "the pairing helper {path} cannot be reached ({why}): run "
                "`sudo systemctl enable --now qrpos-pair.socket`, or {fix}",
                path=str(socket_path),
                why=os_reason(exc),
                fix=PROVISION_FIX,
            )
        ) from None
    words = answer.decode("utf-8", "replace").strip().split()
    if words == ["ok"]:
        log.info("pairing of %s stored by root (%s)", username, socket_path)
        return "encrypted credential (qrpos-pair.socket)"
    status = words[1] if len(words) == 2 and words[0] == "failed" else "?"
    log.warning("pairing helper refused %s: provision.sh exit %s", username, status)
    if status == str(EXIT_REJECTED):
        raise CredentialStoreUnavailable(
            say(
                "error.pair_helper_rejected",
                "the service rejected the password when root checked it again: nothing was stored",
            )
        )
    raise CredentialStoreUnavailable(
        say(
            "error.pair_helper_failed",
            "root did not store the pairing (provision.sh exit {status}): "
            "`journalctl -u 'qrpos-pair@*'` says why",
            status=status,
        )
    )
