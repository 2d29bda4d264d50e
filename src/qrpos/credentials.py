"""Where the terminal password comes from, and where pairing puts it.

Order:

1. the systemd credential `$CREDENTIALS_DIRECTORY/qrpos-password` (the kiosk under
   systemd, `LoadCredentialEncrypted=`);
2. the encrypted credential store `/etc/credstore.encrypted/qrpos-password`, decrypted
   with `systemd-creds` (root only: an installer running `qrpos doctor` or `qrpos verify`
   on the Pi);
3. the normal keyring (a desktop or a dev machine).

The first two are `SystemdCredentialKeyring`, a read-only keyring backend: storing into
it fails with the fix (deploy/provision.sh). The password is never in a file of the
repo, a log, a repr or an exception.
"""

from __future__ import annotations

import logging
import os
import shutil
import subprocess
from collections.abc import Mapping
from pathlib import Path

import keyring
import keyring.backend
import keyring.errors
from jaraco.classes import properties

from qrpos import spec
from qrpos.errors import CredentialsMissing as CredentialsMissing
from qrpos.errors import CredentialStoreUnavailable as CredentialStoreUnavailable
from qrpos.said import Said, os_reason, say
from qrpos.statedir import as_root

log = logging.getLogger("qrpos.credentials")

KEYRING_SERVICE = "qrpos"
CREDENTIAL_NAME = "qrpos-password"
CREDSTORE_PATH = Path("/etc/credstore.encrypted") / CREDENTIAL_NAME
#: how to store the password on a kiosk (named in every "cannot store" message)
PROVISION_FIX = "sudo deploy/provision.sh (encrypted systemd credential)"


def systemd_credential_path(env: Mapping[str, str] | None = None) -> Path | None:
    """`$CREDENTIALS_DIRECTORY/qrpos-password` when systemd passed us credentials."""
    env = os.environ if env is None else env
    directory = env.get("CREDENTIALS_DIRECTORY")
    if not directory:
        return None
    return Path(directory) / CREDENTIAL_NAME


class SystemdCredentialKeyring(keyring.backend.KeyringBackend):
    """A read-only keyring over systemd credentials.

    Reads `$CREDENTIALS_DIRECTORY/qrpos-password`, else decrypts the credential store
    with `systemd-creds decrypt` when this process may read it (root). The credential
    holds one terminal's password, so the username is not part of the lookup.
    """

    def __init__(
        self, env: Mapping[str, str] | None = None, credstore: Path = CREDSTORE_PATH
    ) -> None:
        super().__init__()  # type: ignore[no-untyped-call]
        self._env = os.environ if env is None else env
        self._credstore = credstore
        #: where the last password came from, for `qrpos doctor` (never the value)
        self.source: str | None = None

    @properties.classproperty
    def priority(cls) -> float:
        # Chosen by keyring itself only inside a unit that was handed the credential.
        path = systemd_credential_path()
        if path is None or not path.exists():
            raise RuntimeError("no systemd credential qrpos-password in this process")
        return 20

    def get_password(self, service: str, username: str) -> str | None:
        """The password from systemd, or None when systemd holds none for us."""
        if service != KEYRING_SERVICE:
            return None
        path = systemd_credential_path(self._env)
        if path is not None and path.exists():
            try:
                password = path.read_text(encoding="utf-8").strip("\r\n")
            except OSError as exc:
                raise CredentialsMissing(
                    say(
                        "error.credential_unreadable",
                        "the systemd credential {name} cannot be read ({why})",
                        name=CREDENTIAL_NAME,
                        why=os_reason(exc),
                    )
                ) from None
            if password:
                self.source = f"systemd credential $CREDENTIALS_DIRECTORY/{CREDENTIAL_NAME}"
                return password
        return self._from_credstore()

    def _from_credstore(self) -> str | None:
        # a root tool acting as the kiosk user (qrpos.statedir) is root for this alone
        with as_root():
            return self._decrypt_credstore()

    def _decrypt_credstore(self) -> str | None:
        if not os.access(self._credstore, os.R_OK):
            return None
        tool = shutil.which("systemd-creds")
        if tool is None:
            return None
        result = subprocess.run(
            [tool, "decrypt", f"--name={CREDENTIAL_NAME}", str(self._credstore), "-"],
            capture_output=True,
            timeout=30,
            check=False,
        )
        if result.returncode != 0:
            # systemd-creds' stderr says why (wrong machine, damaged file); never the secret
            reason = result.stderr.decode("utf-8", "replace").strip().splitlines()
            raise CredentialsMissing(
                say(
                    "error.credential_undecryptable",
                    "{path} cannot be decrypted on this machine ({why}): run {fix} again",
                    path=str(self._credstore),
                    why=Said.plain(reason[-1] if reason else "systemd-creds failed"),
                    fix=PROVISION_FIX,
                )
            )
        password = result.stdout.decode("utf-8", "replace").strip("\r\n")
        if not password:
            return None
        self.source = f"encrypted credential {self._credstore}"
        return password

    def set_password(self, service: str, username: str, password: str) -> None:
        """Always refused: systemd credentials are written by provision.sh, not by us."""
        raise keyring.errors.PasswordSetError(
            f"systemd credentials are read-only here; store the password with {PROVISION_FIX}"
        )

    def delete_password(self, service: str, username: str) -> None:
        """Always refused, for the same reason as `set_password`."""
        raise keyring.errors.PasswordDeleteError(
            f"systemd credentials are read-only; remove {self._credstore} as root"
        )


def _keyring_trouble(exc: BaseException) -> Said:
    """What went wrong with the keyring, for a person (the class names stay in the log)."""
    if isinstance(exc, keyring.errors.NoKeyringError):
        return say("error.no_keyring", "this machine has no keyring service")
    if isinstance(exc, keyring.errors.KeyringLocked):
        return say("error.keyring_locked", "the keyring is locked")
    return say("error.keyring_refused", "the keyring refused it")


def find_password(username: str, env: Mapping[str, str] | None = None) -> tuple[str, str]:
    """(password, where it came from), or `CredentialsMissing` saying how to pair."""
    systemd = SystemdCredentialKeyring(env)
    password = systemd.get_password(KEYRING_SERVICE, username)
    if password and systemd.source:
        return password, systemd.source
    backend = keyring.get_keyring()
    if isinstance(backend, SystemdCredentialKeyring):
        raise CredentialsMissing(
            say(
                "error.credential_empty",
                "the systemd credential is empty: run {fix}",
                fix=PROVISION_FIX,
            )
        )
    try:
        stored = backend.get_password(KEYRING_SERVICE, username)
    except (keyring.errors.KeyringError, RuntimeError) as exc:
        raise CredentialsMissing(
            say(
                "error.keyring_unreadable",
                "no password in a systemd credential, and the keyring cannot be read "
                "({why}): on a kiosk run {fix}; on a desktop "
                "`qrpos pair --username {username} --password-stdin`",
                why=_keyring_trouble(exc),
                fix=PROVISION_FIX,
                username=username,
            )
        ) from None
    if not stored:
        raise CredentialsMissing(
            say(
                "error.no_password",
                "no password stored for {username}: on a kiosk run {fix}; on a desktop "
                "`qrpos pair --username {username} --password-stdin`",
                username=username,
                fix=PROVISION_FIX,
            )
        )
    return stored, f"keyring ({type(backend).__name__})"


def load_password(username: str, env: Mapping[str, str] | None = None) -> str:
    """The terminal's password, or `CredentialsMissing` saying how to pair."""
    return find_password(username, env)[0]


def check_password_shape(password: str) -> None:
    """ValueError (never echoing the value) unless it looks like a terminal password."""
    if not spec.PASSWORD_RE.match(password):
        raise ValueError(
            f"that is not a terminal password ({spec.PASSWORD_PREFIX} followed by "
            f"{spec.PASSWORD_SUFFIX_LEN} letters and digits)"
        )


def store_password(username: str, password: str) -> str:
    """Store the password in the keyring; returns the backend's name.

    Raises `CredentialStoreUnavailable` naming the fix when no backend can store it
    (a headless Pi has none: use the systemd credential, see deploy/provision.sh).
    """
    check_password_shape(password)
    backend = keyring.get_keyring()
    try:
        backend.set_password(KEYRING_SERVICE, username, password)
    except (keyring.errors.KeyringError, RuntimeError) as exc:
        log.warning("keyring %s cannot store: %s", type(backend).__name__, type(exc).__name__)
        raise CredentialStoreUnavailable(
            say(
                "error.keyring_cannot_store",
                "no keyring can store the password here ({why}). On a kiosk use {fix}; on a "
                "desktop install a keyring such as gnome-keyring, or `pip install "
                "keyrings.alt` for a file-based one",
                why=_keyring_trouble(exc),
                fix=PROVISION_FIX,
            )
        ) from None
    return type(backend).__name__
