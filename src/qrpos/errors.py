"""Every exception class of qrpos, on one map.

Outcomes of the service are values (`qrpos.service.outcomes`), not exceptions; what
follows is what can still be raised, each defined where it is used and named here.
Those marked ◆ are defined in this module. Private ones (``_Name``) stay inside the
module that raises and catches them and are left off the map.

    Exception
    └── ◆ QrposError: the root; the ones below also derive from the built-in named in [ ]
        ├── ◆ CredentialsMissing ............ no password stored; the message names the fix
        ├── ◆ CredentialStoreUnavailable .... the password cannot be stored here
        ├── ◆ CatalogueError ................ a catalogue file is unreadable or says a key twice
        ├── ◆ InsecureBaseURL [ValueError] .. the base URL is not https (or loopback http)
        ├── ◆ IllegalSaleMove [RuntimeError] . a bug: a move tui/sale.py does not allow
        ├── qrpos.cli.verify.VerifyFailed ... `qrpos verify` stopped at a step (carries the code)
        ├── qrpos.cli.usage.UsageError [argparse.ArgumentTypeError] .. a malformed option (64)
        ├── qrpos.config.ConfigError ........ a setting is missing or malformed
        ├── qrpos.statedir.UnsafeStateDir [OSError] .. a link or a stranger's file in the way
        ├── qrpos.identity.ClonedStateDir ... the state dir was made on another machine
        ├── qrpos.manager_pin.PinError [ValueError]
        ├── qrpos.quick_prices.QuickPriceError [ValueError] .. a price out of range, a damaged file
        ├── qrpos.scanner.frames.CameraUnavailable
        ├── qrpos.scanner.replay.ImageUnreadable [ValueError] .. an image file decode cannot read
        ├── qrpos.scanner.decoders.DecoderUnavailable
        ├── qrpos.service.models.MalformedResponse ... a reply that breaks the contract
        ├── qrpos.service.limits.ResponseTooLarge .... a reply longer than the largest page
        ├── qrpos.service.client.ListingFailed ....... the history cannot be read (the outcome)
        ├── qrpos.ledger.failures.LedgerError ........ the outbox file cannot be used
        │   └── DamagedRow .............. a stored value is not what its column holds
        ├── qrpos.ledger.views.ChargeRefusedLocally .. refused before anything is stored or sent
        │   ├── UnresolvedChargeExists
        │   ├── TokenAlreadyPaid ........ the code already paid for a sale of this outbox
        │   ├── TokenInReview ........... the code's earlier sale waits for the owner's review
        │   ├── AmountOutOfRange
        │   ├── InvalidToken
        │   ├── LedgerUnhealthy
        │   └── OutboxBusy
        ├── qrpos.ledger.views.UnknownIntent [LookupError]
        ├── qrpos.ledger.reviews.ReviewRefused .. a review decision the outbox cannot take
        ├── qrpos.ledger.failures.IllegalTransition [RuntimeError] .. a bug: a move states.py
        │                                          does not allow
        ├── qrpos.ledger.events.IllegalMove [RuntimeError] .. a bug: a cell the table of
        │                                    moves refuses
        ├── qrpos.ledger.shifts.ShiftError [ValueError] .. a cashier or shift request refused
        ├── qrpos.reports.history_cache.CacheError
        ├── qrpos.reports.csv_export.ExportError
        ├── qrpos.reports.merge.MergeError .......... `report --merge` given mismatched days
        ├── qrpos.peripherals.sound.SoundSettingError [ValueError] .. a [sound] setting
        ├── qrpos.peripherals.printer.PrinterSettingError [ValueError] .. a printer setting
        ├── qrpos.peripherals.printer.PrinterTrouble .. a slip not printed (it stays queued)
        ├── qrpos.peripherals.display_settings.DisplaySettingError [ValueError] .. a display setting
        ├── qrpos.peripherals.display_port.DisplayTrouble .. a customer view not shown (it waits)
        ├── qrpos.simulator.http.ConnectionDropped [RuntimeError] .. the sandbox's faults
        └── qrpos.simulator.state.SandboxError [ValueError]
            └── UnknownRecord

An error raised with a `Said` (module `qrpos.said`: most of the ledger's, the outbox's
and the credentials') is told in the configured language by `present.words.error_words`;
its `str()` stays English for the logs.

The outbox's damage trap (`qrpos.ledger.store`) turns SQLite's errors and `DamagedRow`
into a `LedgerError` that says the file is kept; anything else raised inside a transaction
is a bug and is raised as itself. A command ends with a `QrposError`'s message
(`qrpos: …`, exit 1) where it has nothing better to say; anything else is a traceback.

The set-up errors (◆ credentials, `ConfigError`, `InsecureBaseURL`) live in modules that
import nothing heavy, so `qrpos --help` and the kiosk's first screen need neither httpx nor
keyring. `tests/test_architecture.py` checks that every class above exists where it is
named and that no exception class of qrpos is missing from this map.
"""

from __future__ import annotations

from qrpos.said import Said


class QrposError(Exception):
    """The root of every error qrpos raises on purpose: its message is for a person, and a
    command ends with it (`qrpos: <message>`) instead of a traceback. Anything else that
    escapes is a bug.

    Raised with a `Said` (`qrpos.said`), the message has words in every language:
    `str(exc)` is the English (logs), `exc.said` what `qrpos.present.words` translates."""

    said: Said | None = None

    def __init__(self, message: object = "", *args: object) -> None:
        if isinstance(message, Said):
            self.said = message
            message = message.english
        super().__init__(message, *args)


class CredentialsMissing(QrposError):
    """No password is stored for this terminal; the message names the fix."""


class CredentialStoreUnavailable(QrposError):
    """The password cannot be stored here; the message names the fix."""


class InsecureBaseURL(QrposError, ValueError):
    """The base URL is not https (plain http is allowed only to a loopback address)."""


class CatalogueError(QrposError):
    """A catalogue file is unreadable, or defines a key twice; the message says where."""


class IllegalSaleMove(QrposError, RuntimeError):
    """The kiosk tried a move between sale states that `qrpos.tui.sale.MOVES` forbids."""

    def __init__(self, from_state: str, to_state: str) -> None:
        super().__init__(f"no move from {from_state} to {to_state}")
        self.from_state = from_state
        self.to_state = to_state
