"""Cashiers and their shifts: who took which sale, and the X and Z reports of a shift.

A till with no cashier works as before. Once the owner adds cashiers, a cashier opens a
shift with their PIN; every sale and refund written while it is open is stamped with it
(the outbox does this itself when it writes the row: `sales_sql.insert_intent`). One shift
is open at a time; it stays open across midnight and reboots until it is closed.

The figures follow the service's own bookkeeping, so that the shifts of a day add up to
the day's end-of-day report exactly: a sale charged and kept counts in `sales` (the
service lists it COMPLETED), a charge later refunded in `reversed` (the service lists it
REVERSED), both under the shift that took the sale; the refunds a shift made are listed
beside them. A sale whose outcome is not known yet is named, never guessed.

The **X** report is a shift's figures at any moment. The **Z** report closes the shift:
the figures are frozen with a running Z number and never change again (the outbox
refuses it: a trigger). A sale named open on a Z that settles later appears as a
correction on the next Z, never by rewriting the closed one.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from typing import Any, Final

from qrpos.errors import QrposError
from qrpos.ledger import shifts_sql
from qrpos.ledger.money import Money, is_held, money_of
from qrpos.ledger.states import IntentRow, IntentState, ReversalState
from qrpos.ledger.store import Ledger
from qrpos.ledger.typed_rows import Connection, stored_json
from qrpos.said import say
from qrpos.service.models import format_rfc3339 as _iso

#: the longest cashier name (a status bar and a slip line hold it)
NAME_MAX = 24


#: refunds made that have neither landed nor been refused: still being sent, or kept for a
#: re-pairing after a 401 (the X's and the Z's "refunds waiting")
_REFUND_WAITING: Final = frozenset({ReversalState.PENDING, ReversalState.CREDENTIALS_REJECTED})


class ShiftError(QrposError, ValueError):
    """A cashier or shift request that cannot be done; the message says why."""


@dataclass(frozen=True)
class Cashier:
    """A cashier; `pin_record` is the PIN's salted hash (never the PIN)."""

    id: int
    name: str
    active: bool
    created_at: datetime
    pin_record: str = field(repr=False)


@dataclass(frozen=True)
class Shift:
    id: int
    cashier_id: int
    cashier: str
    opened_at: datetime
    closed_at: datetime | None
    closed_by: str | None
    z_number: int | None
    #: the Z as it was taken (None while open)
    z_report: dict[str, Any] | None

    @property
    def is_open(self) -> bool:
        return self.closed_at is None


@dataclass(frozen=True)
class OpenSale:
    """A sale whose outcome a report cannot give yet."""

    intent: int
    amount_mnt: int
    state: str
    created_at: str


@dataclass(frozen=True)
class ShiftFigures:
    """What a shift took, as the service will list it (see the module docstring)."""

    sales: int = 0
    sales_mnt: int = 0
    reversed: int = 0
    reversed_mnt: int = 0
    not_charged: int = 0
    refunds_made: int = 0
    refunds_made_mnt: int = 0
    refunds_pending: int = 0
    in_review: tuple[OpenSale, ...] = ()
    unsettled: tuple[OpenSale, ...] = ()
    #: counted in `sales`: charged, the money with the merchant while its fate is open
    #: (a refund queued, stalled or refused, or a review of it: `money.is_held`)
    held: tuple[OpenSale, ...] = ()

    def __add__(self, other: ShiftFigures) -> ShiftFigures:
        return ShiftFigures(
            self.sales + other.sales,
            self.sales_mnt + other.sales_mnt,
            self.reversed + other.reversed,
            self.reversed_mnt + other.reversed_mnt,
            self.not_charged + other.not_charged,
            self.refunds_made + other.refunds_made,
            self.refunds_made_mnt + other.refunds_made_mnt,
            self.refunds_pending + other.refunds_pending,
            self.in_review + other.in_review,
            self.unsettled + other.unsettled,
            self.held + other.held,
        )

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def _time(value: float | None) -> datetime | None:
    return None if value is None else datetime.fromtimestamp(value, UTC)


# --- cashiers ---------------------------------------------------------------------------


def _cashier(row: Sequence[Any]) -> Cashier:
    ident, name, pin, active, created = row
    return Cashier(int(ident), str(name), bool(active), datetime.fromtimestamp(created, UTC), pin)


def cashiers(ledger: Ledger, *, include_removed: bool = False) -> list[Cashier]:
    """The till's cashiers by name (none: shifts are off)."""
    rows = ledger.read(lambda c: shifts_sql.cashier_rows(c, include_removed=include_removed))
    return [_cashier(row) for row in rows]


def find_cashier(ledger: Ledger, name: str) -> Cashier:
    """The active cashier called `name` (case as typed or any), else ShiftError."""
    wanted = name.strip().casefold()
    for cashier in cashiers(ledger):
        if cashier.name.casefold() == wanted:
            return cashier
    raise ShiftError(say("shift.no_cashier", "no cashier called {name}", name=name.strip()))


def _checked_name(name: str) -> str:
    clean = " ".join(name.split())
    if not clean or len(clean) > NAME_MAX or not clean.isprintable():
        raise ShiftError(
            say(
                "shift.bad_name",
                "a cashier's name is 1 to {most} printable characters",
                most=NAME_MAX,
            )
        )
    return clean


def add_cashier(ledger: Ledger, name: str, pin_record: str, *, at: datetime) -> Cashier:
    """A new cashier; `pin_record` from `qrpos.manager_pin.pin_record(pin, cashier=True)`."""
    clean = _checked_name(name)
    if any(c.name.casefold() == clean.casefold() for c in cashiers(ledger)):
        raise ShiftError(say("shift.name_taken", "there is a cashier called {name}", name=clean))
    ident = ledger.write(lambda c: shifts_sql.insert_cashier(c, clean, pin_record, at.timestamp()))
    return Cashier(ident, clean, True, at, pin_record)


def rename_cashier(ledger: Ledger, cashier: Cashier, new_name: str) -> Cashier:
    clean = _checked_name(new_name)
    others = [c for c in cashiers(ledger) if c.id != cashier.id]
    if any(c.name.casefold() == clean.casefold() for c in others):
        raise ShiftError(say("shift.name_taken", "there is a cashier called {name}", name=clean))
    ledger.write(lambda c: shifts_sql.update_cashier(c, cashier.id, name=clean))
    return Cashier(cashier.id, clean, cashier.active, cashier.created_at, cashier.pin_record)


def set_cashier_pin(ledger: Ledger, cashier: Cashier, pin_record: str) -> None:
    ledger.write(lambda c: shifts_sql.update_cashier(c, cashier.id, pin_record=pin_record))


def remove_cashier(ledger: Ledger, cashier: Cashier) -> None:
    """The cashier can no longer open a shift; their shifts and Z reports keep the name.
    Refused while their shift is open."""
    shift = current_shift(ledger)
    if shift is not None and shift.cashier_id == cashier.id:
        raise ShiftError(
            say("shift.remove_open", "{name}'s shift is open: close it first", name=cashier.name)
        )
    ledger.write(lambda c: shifts_sql.update_cashier(c, cashier.id, active=False))


# --- shifts -----------------------------------------------------------------------------


def _shifts(ledger: Ledger, **where: Any) -> list[Shift]:
    def read(conn: Connection) -> tuple[list[tuple[Any, ...]], dict[int, str]]:
        names = {int(r[0]): str(r[1]) for r in shifts_sql.cashier_rows(conn, include_removed=True)}
        return shifts_sql.shift_rows(conn, **where), names

    rows, names = ledger.read(read)
    out = []
    for ident, cashier_id, opened, closed, by, number, report in rows:
        out.append(
            Shift(
                id=int(ident),
                cashier_id=int(cashier_id),
                cashier=names.get(int(cashier_id), "?"),
                opened_at=datetime.fromtimestamp(opened, UTC),
                closed_at=_time(closed),
                closed_by=by,
                z_number=number,
                z_report=stored_json(report, "a Z report") if report else None,
            )
        )
    return out


def current_shift(ledger: Ledger) -> Shift | None:
    """The shift open now (across midnight and reboots until it is closed), or None."""
    found = _shifts(ledger, open_only=True)
    return found[0] if found else None


def shift_needed(ledger: Ledger) -> bool:
    """True when the till has cashiers and none has a shift open: no sale then (the
    kiosk and `qrpos charge` refuse it, so every sale belongs to a cashier's shift)."""
    return bool(cashiers(ledger)) and current_shift(ledger) is None


def shifts(ledger: Ledger) -> list[Shift]:
    """Every shift, oldest first."""
    return _shifts(ledger)


def open_shift(ledger: Ledger, cashier: Cashier, *, at: datetime) -> Shift:
    """Open `cashier`'s shift (their PIN checked by the caller); ShiftError when a shift
    is open already."""
    if not cashier.active:
        raise ShiftError(say("shift.no_cashier", "no cashier called {name}", name=cashier.name))

    def insert(conn: Connection) -> int | None:
        if shifts_sql.shift_rows(conn, open_only=True):
            return None
        return shifts_sql.insert_shift(conn, cashier.id, at.timestamp())

    ident = ledger.write(insert)  # one transaction: two tills' clicks cannot both open
    if ident is None:
        open_now = current_shift(ledger)
        raise ShiftError(
            say(
                "shift.already_open",
                "{name}'s shift is open: close it first",
                name=open_now.cashier if open_now else "?",
            )
        )
    return Shift(ident, cashier.id, cashier.name, at, None, None, None, None)


def _open_sale(row: IntentRow) -> OpenSale:
    return OpenSale(
        row.id, row.amount_mnt, str(row.state), _iso(datetime.fromtimestamp(row.created_at, UTC))
    )


def _money(conn: Connection, rows: Sequence[IntentRow]) -> list[tuple[IntentRow, Money]]:
    """Each sale with where its money stands (`money.money_of`, the one definition)."""
    refunded = shifts_sql.refunded_tx_ids(conn, [r.tx_id for r in rows if r.tx_id])
    return [(r, money_of(r.state, r.charged, r.tx_id in refunded)) for r in rows]


def _figures_of(conn: Connection, shift_id: int | None) -> tuple[ShiftFigures, list[Any]]:
    sales = _money(conn, shifts_sql.shift_sales(conn, shift_id))
    kept = [r for r, money in sales if money is Money.CHARGED]
    gone = [r for r, money in sales if money is Money.REFUNDED]
    unknown = [r for r, money in sales if money is Money.UNKNOWN]
    made = shifts_sql.shift_refunds(conn, shift_id)
    done = [r for r in made if str(r.state) == "refunded"]
    shown = ShiftFigures(
        sales=len(kept),
        sales_mnt=sum(r.amount_mnt for r in kept),
        reversed=len(gone),
        reversed_mnt=sum(r.amount_mnt for r in gone),
        not_charged=sum(1 for _, money in sales if money is Money.NOT_CHARGED),
        refunds_made=len(done),
        refunds_made_mnt=sum(r.amount_mnt or 0 for r in done),
        # not landed and not refused: still being sent, or kept for a re-pairing (a 401)
        refunds_pending=sum(1 for r in made if r.state in _REFUND_WAITING),
        in_review=tuple(_open_sale(r) for r in unknown if r.state is IntentState.NEEDS_REVIEW),
        unsettled=tuple(_open_sale(r) for r in unknown if r.state is not IntentState.NEEDS_REVIEW),
        held=tuple(_open_sale(r) for r in kept if is_held(r.state, r.charged, refunded=False)),
    )
    return shown, [(r.id, money, r.amount_mnt) for r, money in sales]


def _figures(conn: Connection, shift_id: int | None) -> ShiftFigures:
    return _figures_of(conn, shift_id)[0]


def figures(ledger: Ledger, shift_id: int | None) -> ShiftFigures:
    """A shift's figures now: its X report (None: the sales written with no shift open)."""
    return ledger.read(lambda c: _figures(c, shift_id))


def _change(was: Money, now: Money, amount: int, money: Money) -> int:
    return amount * ((now is money) - (was is money))


def _correction(
    intent: int, of_z: int, was: Money, now: Money, amount: int, state: str
) -> dict[str, Any]:
    """A correction line: the earlier Z's sale, its money then and now, and what that
    changes in the figures (`sales_mnt`, `reversed_mnt`): the Zs' figures plus their
    corrections are the books."""
    return {
        "intent": intent,
        "of_z": of_z,
        "was": str(was),
        "now": str(now),
        "amount_mnt": amount,
        "sales_mnt": _change(was, now, amount, Money.CHARGED),
        "reversed_mnt": _change(was, now, amount, Money.REFUNDED),
        "state": state,
    }


def _legacy_corrections(conn: Connection, earlier: Sequence[Shift]) -> list[dict[str, Any]]:
    """The sales a Z taken before Z lines were kept (migration 16) named open, settled
    since and not corrected yet: each corrected once, then followed by its line."""
    named: dict[int, int] = {}
    corrected: set[int] = set()
    for shift in earlier:
        report = shift.z_report or {}
        for sale in [*report.get("in_review", ()), *report.get("unsettled", ())]:
            named.setdefault(int(sale["intent"]), int(report.get("z_number", 0)))
        corrected |= {int(c["intent"]) for c in report.get("corrections", ())}
    lined = shifts_sql.lined_intents(conn, list(named))
    waiting = [i for i in named if i not in corrected and i not in lined]
    out = []
    for row, now in _money(conn, shifts_sql.intents_by_id(conn, waiting)):
        if now is not Money.UNKNOWN:
            out.append(
                _correction(row.id, named[row.id], Money.UNKNOWN, now, row.amount_mnt, row.state)
            )
    return out


def _corrections(conn: Connection, earlier: Sequence[Shift]) -> list[dict[str, Any]]:
    """The sales of earlier Zs whose money has moved since a Z last said it (an open sale
    settled, a charged abandon's refund landed, a refund refused and kept, a review
    decided), each reported once: on the first Z taken after it moved."""
    moved = [_correction(*found) for found in shifts_sql.moved_since_z(conn)]
    return _legacy_corrections(conn, earlier) + moved


def take_z(
    ledger: Ledger,
    shift: Shift,
    *,
    at: datetime,
    by: str,
    reconciliation: Mapping[str, Any] | None = None,
) -> Shift:
    """Close `shift` with its Z report: the figures now, the open sales named, the
    corrections to earlier Zs, and the reconciliation against the service's history
    for the shift's span (None: it could not be had). Frozen from then on."""
    if by not in ("cashier", "manager"):
        raise ValueError(by)
    earlier = [s for s in shifts(ledger) if s.z_report is not None]

    def close(conn: Connection) -> dict[str, Any]:
        number = shifts_sql.next_z_number(conn)
        shown, lines = _figures_of(conn, shift.id)
        fixes = _corrections(conn, earlier)
        report: dict[str, Any] = {
            "z_number": number,
            "shift": shift.id,
            "cashier": shift.cashier,
            "opened_at": _iso(shift.opened_at),
            "closed_at": _iso(at),
            "closed_by": by,
            **shown.to_json(),
            "corrections": fixes,
            "reconciliation": dict(reconciliation) if reconciliation is not None else None,
        }
        text = json.dumps(report, ensure_ascii=False, sort_keys=True)
        shifts_sql.insert_z_lines(conn, number, lines)
        fixed = [(f["intent"], Money(f["now"]), f["amount_mnt"]) for f in fixes]
        shifts_sql.insert_z_lines(conn, number, fixed)
        shifts_sql.close_shift(
            conn, shift.id, at=at.timestamp(), by=by, z_number=number, z_report=text
        )
        return dict(json.loads(text))  # as it reads back, ever after

    report = ledger.write(close)
    return Shift(
        shift.id,
        shift.cashier_id,
        shift.cashier,
        shift.opened_at,
        at,
        by,
        int(report["z_number"]),
        report,
    )


def z_reports(ledger: Ledger) -> list[dict[str, Any]]:
    """Every Z taken, oldest first, exactly as it was taken."""
    return [s.z_report for s in shifts(ledger) if s.z_report is not None]


def by_cashier(ledger: Ledger, of: Sequence[Shift]) -> dict[str, ShiftFigures]:
    """The figures of `of` summed per cashier, each shift's sales as their money stands
    now: for a closed shift its Z plus every later correction of its sales (the books),
    not the Z's own figures, which leave a sale open at its Z and charged since in no
    cashier's takings (review 7)."""
    out: dict[str, ShiftFigures] = {}
    for shift in of:
        out[shift.cashier] = out.get(shift.cashier, ShiftFigures()) + figures(ledger, shift.id)
    return out


def frozen_figures(report: Mapping[str, Any]) -> ShiftFigures:
    """The figures a Z froze."""

    def sales(key: str) -> tuple[OpenSale, ...]:
        return tuple(OpenSale(**sale) for sale in report.get(key, ()))

    return ShiftFigures(
        sales=int(report["sales"]),
        sales_mnt=int(report["sales_mnt"]),
        reversed=int(report["reversed"]),
        reversed_mnt=int(report["reversed_mnt"]),
        not_charged=int(report["not_charged"]),
        refunds_made=int(report["refunds_made"]),
        refunds_made_mnt=int(report["refunds_made_mnt"]),
        refunds_pending=int(report["refunds_pending"]),
        in_review=sales("in_review"),
        unsettled=sales("unsettled"),
        held=sales("held"),
    )
