"""Set-up errors every entry point reports, in a module that imports nothing heavy.

The CLI catches these around every command; keeping them here lets `qrpos --help` and
the kiosk's first screen come up without loading httpx or keyring first.
"""

from __future__ import annotations


class CredentialsMissing(Exception):
    """No password is stored for this terminal; the message names the fix."""


class CredentialStoreUnavailable(Exception):
    """The password cannot be stored here; the message names the fix."""


class InsecureBaseURL(ValueError):
    """The base URL is not https (plain http is allowed only to a loopback address)."""
