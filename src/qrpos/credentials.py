"""Where the terminal password comes from, and where pairing puts it.

Order: the systemd credential `$CREDENTIALS_DIRECTORY/qrpos-password` first (the kiosk
under systemd, `LoadCredentialEncrypted=`), else the keyring (a desktop or a dev
machine). The password is never in a file of the repo, a log, a repr or an exception.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from qrpos import spec

KEYRING_SERVICE = "qrpos"
CREDENTIAL_NAME = "qrpos-password"


class CredentialsMissing(Exception):
    """No password is stored for this terminal; the message names the fix."""


class CredentialStoreUnavailable(Exception):
    """The password cannot be stored here; the message names the fix."""


def systemd_credential_path(env: Mapping[str, str] | None = None) -> Path | None:
    """`$CREDENTIALS_DIRECTORY/qrpos-password` when systemd passed us credentials."""
    env = os.environ if env is None else env
    directory = env.get("CREDENTIALS_DIRECTORY")
    if not directory:
        return None
    return Path(directory) / CREDENTIAL_NAME


def load_password(username: str, env: Mapping[str, str] | None = None) -> str:
    """The terminal's password, or `CredentialsMissing` saying how to pair."""
    cred = systemd_credential_path(env)
    if cred is not None and cred.exists():
        try:
            password = cred.read_text(encoding="utf-8").strip("\r\n")
        except OSError as exc:
            raise CredentialsMissing(
                f"the systemd credential {CREDENTIAL_NAME} cannot be read ({exc.strerror})"
            ) from None
        if password:
            return password
    try:
        import keyring
        import keyring.errors
    except ImportError:  # pragma: no cover - keyring is a dependency
        raise CredentialsMissing("no keyring module: reinstall qrpos") from None
    try:
        stored = keyring.get_password(KEYRING_SERVICE, username)
    except keyring.errors.KeyringError as exc:
        raise CredentialsMissing(
            f"the keyring cannot be read ({type(exc).__name__}); "
            "pair again with `qrpos pair` or provide the systemd credential"
        ) from None
    if not stored:
        raise CredentialsMissing(
            f"no password stored for {username}: pair the terminal with "
            f"`qrpos pair --username {username} --password-stdin`"
        )
    return stored


def store_password(username: str, password: str) -> str:
    """Store the password in the keyring; returns the backend's name.

    Raises `CredentialStoreUnavailable` naming the fix when no backend can store it
    (a headless Pi has none: use the systemd credential, see deploy/provision.sh).
    """
    if not spec.PASSWORD_RE.match(password):
        # do not echo the value: it is (almost) a secret even when malformed
        raise ValueError(
            f"that is not a terminal password ({spec.PASSWORD_PREFIX} followed by "
            f"{spec.PASSWORD_SUFFIX_LEN} characters)"
        )
    import keyring
    import keyring.errors

    backend = keyring.get_keyring()
    try:
        keyring.set_password(KEYRING_SERVICE, username, password)
    except (keyring.errors.KeyringError, RuntimeError) as exc:
        raise CredentialStoreUnavailable(
            f"no keyring can store the password here ({type(backend).__name__}: "
            f"{type(exc).__name__}). On a kiosk use the encrypted systemd credential "
            "(sudo deploy/provision.sh); on a desktop install a keyring such as "
            "gnome-keyring, or `pip install keyrings.alt` for a file-based one"
        ) from None
    return type(backend).__name__
