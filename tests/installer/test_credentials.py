"""Credentials: systemd first (read-only), then the keyring; a clear fix when nothing stores."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import keyring
import keyring.backends.fail
import keyring.errors
import pytest

from qrpos import credentials
from qrpos.credentials import (
    CREDENTIAL_NAME,
    CredentialsMissing,
    CredentialStoreUnavailable,
    SystemdCredentialKeyring,
    find_password,
    load_password,
    store_password,
)

PASSWORD = "vpt_" + "A1b2C3d4" * 4
USERNAME = "term_ab12cd34"


@pytest.fixture
def no_keyring() -> Iterator[None]:
    saved = keyring.get_keyring()
    keyring.set_keyring(keyring.backends.fail.Keyring())  # type: ignore[no-untyped-call]
    yield
    keyring.set_keyring(saved)


def test_systemd_credential_directory_wins(tmp_path: Path, no_keyring: None) -> None:
    (tmp_path / CREDENTIAL_NAME).write_text(PASSWORD + "\n")
    password, source = find_password(USERNAME, env={"CREDENTIALS_DIRECTORY": str(tmp_path)})
    assert password == PASSWORD
    assert "systemd credential" in source
    assert PASSWORD not in source


def test_backend_is_viable_only_where_systemd_handed_over_the_credential(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("CREDENTIALS_DIRECTORY", raising=False)
    assert not SystemdCredentialKeyring.viable
    (tmp_path / CREDENTIAL_NAME).write_text(PASSWORD)
    monkeypatch.setenv("CREDENTIALS_DIRECTORY", str(tmp_path))
    assert SystemdCredentialKeyring.viable


def test_systemd_backend_is_read_only_and_says_to_use_provision(tmp_path: Path) -> None:
    backend = SystemdCredentialKeyring(env={"CREDENTIALS_DIRECTORY": str(tmp_path)})
    with pytest.raises(keyring.errors.PasswordSetError, match=r"provision\.sh"):
        backend.set_password(credentials.KEYRING_SERVICE, USERNAME, PASSWORD)
    saved = keyring.get_keyring()
    keyring.set_keyring(backend)
    try:
        with pytest.raises(CredentialStoreUnavailable, match=r"provision\.sh") as info:
            store_password(USERNAME, PASSWORD)
    finally:
        keyring.set_keyring(saved)
    assert PASSWORD not in str(info.value)
    assert not (tmp_path / CREDENTIAL_NAME).exists()


def test_nothing_can_store_names_both_fixes(no_keyring: None) -> None:
    with pytest.raises(CredentialStoreUnavailable) as info:
        store_password(USERNAME, PASSWORD)
    message = str(info.value)
    assert "provision.sh" in message
    assert "keyrings.alt" in message
    assert PASSWORD not in message


def test_malformed_password_is_refused_without_echoing_it(no_keyring: None) -> None:
    with pytest.raises(ValueError) as info:
        store_password(USERNAME, "hunter2-secret")
    assert "hunter2" not in str(info.value)


def test_missing_everywhere_names_how_to_pair(tmp_path: Path, no_keyring: None) -> None:
    with pytest.raises(CredentialsMissing) as info:
        load_password(USERNAME, env={"CREDENTIALS_DIRECTORY": str(tmp_path)})
    assert "provision.sh" in str(info.value)
    assert f"qrpos pair --username {USERNAME}" in str(info.value)


def test_desktop_keyring_round_trip(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from installer.file_keyring import JsonFileKeyring

    monkeypatch.setenv("QRPOS_TEST_KEYRING_FILE", str(tmp_path / "keyring.json"))
    saved = keyring.get_keyring()
    keyring.set_keyring(JsonFileKeyring())  # type: ignore[no-untyped-call]
    try:
        assert store_password(USERNAME, PASSWORD) == "JsonFileKeyring"
        password, source = find_password(USERNAME, env={})
    finally:
        keyring.set_keyring(saved)
    assert password == PASSWORD
    assert source == "keyring (JsonFileKeyring)"


def _encrypt(tmp_path: Path, secret: str) -> Path:
    """An encrypted credential as provision.sh writes it (null key: no host secret made)."""
    if shutil.which("systemd-creds") is None:
        pytest.skip("systemd-creds is not installed")
    target = tmp_path / "credstore" / CREDENTIAL_NAME
    target.parent.mkdir()
    result = subprocess.run(
        [
            "systemd-creds",
            "encrypt",
            "--with-key=tpm2-absent",
            f"--name={CREDENTIAL_NAME}",
            "-",
            str(target),
        ],
        input=secret.encode(),
        capture_output=True,
    )
    if result.returncode != 0:
        pytest.skip(f"systemd-creds cannot encrypt here: {result.stderr.decode()[-200:]}")
    return target


def test_encrypted_credstore_is_decrypted_for_root(tmp_path: Path, no_keyring: None) -> None:
    store = _encrypt(tmp_path, PASSWORD)
    assert PASSWORD.encode() not in store.read_bytes()
    backend = SystemdCredentialKeyring(env={}, credstore=store)
    assert backend.get_password(credentials.KEYRING_SERVICE, USERNAME) == PASSWORD
    assert backend.source == f"encrypted credential {store}"


def test_damaged_credstore_names_the_fix_not_the_content(tmp_path: Path) -> None:
    store = _encrypt(tmp_path, PASSWORD)
    data = bytearray(store.read_bytes())
    data[len(data) // 2] ^= 0xFF
    store.write_bytes(bytes(data))
    backend = SystemdCredentialKeyring(env={}, credstore=store)
    with pytest.raises(CredentialsMissing, match=r"provision\.sh") as info:
        backend.get_password(credentials.KEYRING_SERVICE, USERNAME)
    assert PASSWORD not in str(info.value)
