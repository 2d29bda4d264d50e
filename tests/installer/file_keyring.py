"""A keyring backend for tests: a JSON file named by $QRPOS_TEST_KEYRING_FILE.

It stands in for a desktop keyring (gnome-keyring, KWallet) at keyring's own plug-in
seam, so a `qrpos pair` subprocess can store a password and the test can read it back.
Select it with PYTHON_KEYRING_BACKEND=installer.file_keyring.JsonFileKeyring (PYTHONPATH=tests).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from keyring.backend import KeyringBackend


class JsonFileKeyring(KeyringBackend):
    priority = 1

    @property
    def _path(self) -> Path:
        return Path(os.environ["QRPOS_TEST_KEYRING_FILE"])

    def _load(self) -> dict[str, str]:
        try:
            return dict(json.loads(self._path.read_text()))
        except FileNotFoundError:
            return {}

    def get_password(self, service: str, username: str) -> str | None:
        return self._load().get(f"{service}/{username}")

    def set_password(self, service: str, username: str, password: str) -> None:
        data = self._load()
        data[f"{service}/{username}"] = password
        self._path.write_text(json.dumps(data))

    def delete_password(self, service: str, username: str) -> None:
        data = self._load()
        data.pop(f"{service}/{username}", None)
        self._path.write_text(json.dumps(data))
