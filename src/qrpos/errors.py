"""Every exception class of qrpos, on one map.

Outcomes of the service are values (`qrpos.service.outcomes`), not exceptions; what
follows is what can still be raised, each defined where it is used and named here.
Those marked ◆ are defined in this module. Private ones (``_Name``) stay inside the
module that raises and catches them and are left off the map.

    Exception
    ├── ◆ CredentialsMissing ............ no password stored; the message names the fix
    ├── ◆ CredentialStoreUnavailable .... the password cannot be stored here
    ├── ◆ CatalogueError ................ a catalogue file is unreadable or says a key twice
    ├── qrpos.cli.verify.VerifyFailed ... `qrpos verify` stopped at a step (carries the exit code)
    ├── qrpos.config.ConfigError ........ a setting is missing or malformed
    ├── qrpos.scanner.frames.CameraUnavailable
    ├── qrpos.scanner.decoders.DecoderUnavailable
    ├── qrpos.service.models.MalformedResponse ... a reply that breaks the contract
    ├── qrpos.service.limits.ResponseTooLarge .... a reply longer than the largest legal page
    ├── qrpos.service.client.ListingFailed ....... the history cannot be read (carries the outcome)
    ├── qrpos.ledger.store.LedgerError ........... the outbox file cannot be used
    ├── qrpos.ledger.views.ChargeRefusedLocally .. refused before anything is stored or sent
    │   ├── UnresolvedChargeExists
    │   ├── TokenAlreadyPaid ........ the code already paid for a sale of this outbox
    │   ├── TokenInReview ........... the code's earlier sale waits for the owner's review
    │   ├── AmountOutOfRange
    │   ├── InvalidToken
    │   ├── LedgerUnhealthy
    │   └── OutboxBusy
    ├── qrpos.reports.history_cache.CacheError
    ├── qrpos.reports.csv_export.ExportError
    ├── qrpos.ledger.reviews.ReviewRefused .. a review decision the outbox cannot take (not a
    │                                          ValueError: the store reads those as damage)
    ├── qrpos.reports.merge.MergeError .......... `report --merge` given mismatched days or tills
    ├── RuntimeError
    │   ├── qrpos.ledger.records.IllegalTransition .. a bug: a move states.py does not allow
    │   ├── ◆ IllegalSaleMove ........................ a bug: a move tui/sale.py does not allow
    │   └── qrpos.simulator.http.ConnectionDropped .. the sandbox's fault injection
    ├── OSError
    │   └── qrpos.statedir.UnsafeStateDir .... a link or a stranger's file where the state goes
    ├── LookupError
    │   └── qrpos.ledger.views.UnknownIntent
    └── ValueError
        ├── ◆ InsecureBaseURL ........... the base URL is not https (or loopback http)
        ├── qrpos.manager_pin.PinError
        ├── argparse.ArgumentTypeError
        │   └── qrpos.cli.usage.UsageError ..... a malformed option value (exit 64)
        └── qrpos.simulator.state.SandboxError
            └── UnknownRecord

The set-up errors (◆ credentials, `ConfigError`, `InsecureBaseURL`) live in modules that
import nothing heavy, so `qrpos --help` and the kiosk's first screen need neither httpx nor
keyring. `tests/test_architecture.py` checks that every class above exists where it is
named and that no exception class of qrpos is missing from this map.
"""

from __future__ import annotations


class CredentialsMissing(Exception):
    """No password is stored for this terminal; the message names the fix."""


class CredentialStoreUnavailable(Exception):
    """The password cannot be stored here; the message names the fix."""


class InsecureBaseURL(ValueError):
    """The base URL is not https (plain http is allowed only to a loopback address)."""


class CatalogueError(Exception):
    """A catalogue file is unreadable, or defines a key twice; the message says where."""


class IllegalSaleMove(RuntimeError):
    """The kiosk tried a move between sale states that `qrpos.tui.sale.MOVES` forbids."""

    def __init__(self, from_state: str, to_state: str) -> None:
        super().__init__(f"no move from {from_state} to {to_state}")
        self.from_state = from_state
        self.to_state = to_state
