"""The customer's side of the counter: what the customer display shows, as a function of
the sale's state. Pure: no Textual, no I/O, no clock (the elapsed time is passed in).

The sale's owner (`qrpos.tui.sale`) hands over a `SaleSnapshot` (its state's value, the
amount, the result's state and decline code); `customer_view` answers in words of the
current language. A picture (`qrpos.peripherals.customer_picture`) and a 2×20 pole display
(`qrpos.peripherals.pole`) both draw from the same `CustomerView`.

The rules the customer's words keep, as the cashier's do: "paid" only for a sale proven
charged; an outcome not known is "the cashier will check", never "not paid".
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from qrpos.present.format import elapsed, format_mnt
from qrpos.present.i18n import t

ViewKind = Literal["idle", "pay", "checking", "paid", "not_paid", "check", "offline"]
#: every kind the display can show, in the order a test pattern lists them
VIEW_KINDS: tuple[ViewKind, ...] = (
    "idle",
    "pay",
    "checking",
    "paid",
    "not_paid",
    "check",
    "offline",
)
#: a mark drawn beside the words (a tick only for a sale proven charged)
Mark = Literal["tick", "cross", "wait", "attention", "none"]
#: why a sale was not paid, in the customer's terms (each a catalogue key `customer.why.*`)
NotPaidReason = Literal["no_money", "refresh_code", "ask_cashier", "refunded"]

#: the sale's states (`qrpos.tui.sale_states.SaleState` values) and what each shows; a
#: test fails when a state is missing here (the result's kind comes from `RESULT_KINDS`)
STAGE_KINDS: dict[str, ViewKind | None] = {
    "starting": "idle",
    "pairing": "idle",
    "recovering": "idle",
    "ready": "idle",
    "presenting": "pay",
    "charging": "checking",
    "result": None,
    "locked": "idle",
}
#: the outcomes (`qrpos.ledger.IntentState` values) a result can show; the customer hears
#: "paid" only on proof, and an outcome not known is the cashier's to check
RESULT_KINDS: dict[str, ViewKind] = {
    "approved": "paid",
    "charged_per_history": "paid",
    "charged_per_review": "paid",
    "declined": "not_paid",
    "refused": "not_paid",
    "token_used": "not_paid",
    "not_charged": "not_paid",
    "reversed_after_abandon": "not_paid",
    "refunded_per_review": "not_paid",
    "pending": "check",
    "unresolved": "check",
    "credentials_rejected": "check",
    "needs_review": "check",
    "abandoned": "check",
}
#: why a result was not paid: by the outcome, then by the decline code
_RESULT_REASONS: dict[str, NotPaidReason] = {
    "token_used": "refresh_code",
    "refused": "ask_cashier",
    "not_charged": "ask_cashier",
    "reversed_after_abandon": "refunded",
    "refunded_per_review": "refunded",
}
DECLINE_REASONS: dict[str, NotPaidReason] = {
    "insufficient_funds": "no_money",
    "limit_exceeded": "no_money",
    "token_invalid": "refresh_code",
    "wallet_suspended": "ask_cashier",
}
_MARKS: dict[ViewKind, Mark] = {
    "idle": "none",
    "pay": "none",
    "checking": "wait",
    "paid": "tick",
    "not_paid": "cross",
    "check": "attention",
    "offline": "none",
}


@dataclass(frozen=True)
class SaleSnapshot:
    """The sale as the customer display needs it: plain values, no ledger objects.

    `stage` is a `SaleState` value; `result_state` an `IntentState` value (on a result);
    `elapsed_s` how long the charge has been under way (boot-time or monotonic seconds,
    measured by the caller); `sale` counts the sales so a display can tell two apart."""

    stage: str
    amount: int | None = None
    result_state: str | None = None
    decline_code: str | None = None
    elapsed_s: float = 0.0
    sale: int = 0


@dataclass(frozen=True)
class CustomerView:
    """What the customer reads, already in words of the current language.

    `headline` is the biggest line (the shop's name, "Amount to pay", "Paid"...);
    `amount` the formatted amount (empty when none is shown); `lines` what to do or why;
    `camera` asks a screen for the live camera view beside the amount; `pole` the same in
    two short lines for a 2×20 display (cut to 20 characters by the display)."""

    kind: ViewKind
    headline: str
    amount: str
    lines: tuple[str, ...]
    mark: Mark
    camera: bool
    pole: tuple[str, str]
    #: the amount in tugrik (None when none is shown): tests and the benchmark compare it
    amount_mnt: int | None = None
    #: which not-paid reason (None for any other kind)
    reason: NotPaidReason | None = None
    sale: int = 0


def kind_of(snapshot: SaleSnapshot) -> ViewKind:
    """Which view a sale's state shows; an unknown state is the cashier's to check (never
    "paid", never a stale amount's "pay")."""
    if snapshot.stage not in STAGE_KINDS:
        return "check"
    kind = STAGE_KINDS[snapshot.stage]
    if kind is not None:
        return kind
    return RESULT_KINDS.get(snapshot.result_state or "", "check")


def not_paid_reason(result_state: str | None, decline_code: str | None) -> NotPaidReason:
    """The customer's reason a sale was not paid (an unknown decline: ask the cashier)."""
    if result_state == "declined":
        return DECLINE_REASONS.get(decline_code or "", "ask_cashier")
    return _RESULT_REASONS.get(result_state or "", "ask_cashier")


def customer_view(snapshot: SaleSnapshot, shop: str = "") -> CustomerView:
    """The customer's view of `snapshot` in the current language; `shop` is the shop's
    name on the idle screen (the catalogue's welcome when empty)."""
    kind = kind_of(snapshot)
    amount_mnt = snapshot.amount if kind not in ("idle", "offline") else None
    amount = format_mnt(amount_mnt) if amount_mnt is not None else ""
    sale = snapshot.sale
    if kind == "idle":
        name = shop.strip() or t("customer.welcome")
        idle = (name, t("customer.pole.idle"))
        return _view(kind, name, "", (t("customer.idle_line"),), idle, sale=sale)
    if kind == "pay":
        return _view(
            kind,
            t("customer.pay"),
            amount,
            (t("customer.show_code"),),
            (_pole_pair(t("customer.pole.pay"), amount), t("customer.pole.show_code")),
            camera=True,
            amount_mnt=amount_mnt,
            sale=sale,
        )
    if kind == "checking":
        took = elapsed(snapshot.elapsed_s)
        return _view(
            kind,
            t("customer.checking"),
            amount,
            (t("customer.wait", elapsed=took),),
            (_pole_pair(t("customer.pole.checking"), took), amount),
            amount_mnt=amount_mnt,
            sale=sale,
        )
    if kind == "paid":
        return _view(
            kind,
            t("customer.paid"),
            amount,
            (t("customer.thanks"),),
            (_pole_pair(t("customer.pole.paid"), amount), t("customer.pole.thanks")),
            amount_mnt=amount_mnt,
            sale=sale,
        )
    if kind == "not_paid":
        reason = not_paid_reason(snapshot.result_state, snapshot.decline_code)
        return _view(
            kind,
            t("customer.not_paid"),
            amount,
            (t(f"customer.why.{reason}"),),
            (_pole_pair(t("customer.pole.not_paid"), amount), t(f"customer.pole.why.{reason}")),
            amount_mnt=amount_mnt,
            reason=reason,
            sale=sale,
        )
    if kind == "check":
        return _view(
            kind,
            t("customer.check"),
            amount,
            (t("customer.check_line"),),
            (_pole_pair(t("customer.pole.wait"), amount), t("customer.pole.check")),
            amount_mnt=amount_mnt,
            sale=sale,
        )
    return offline_view()


def offline_view() -> CustomerView:
    """ "Display not connected to the till": the till stopped, or has not started yet."""
    return _view(
        "offline",
        t("customer.offline"),
        "",
        (t("customer.offline_line"),),
        (t("customer.pole.offline"), t("customer.pole.offline2")),
    )


def _view(
    kind: ViewKind,
    headline: str,
    amount: str,
    lines: tuple[str, ...],
    pole: tuple[str, str],
    *,
    camera: bool = False,
    amount_mnt: int | None = None,
    reason: NotPaidReason | None = None,
    sale: int = 0,
) -> CustomerView:
    return CustomerView(
        kind, headline, amount, lines, _MARKS[kind], camera, pole, amount_mnt, reason, sale
    )


POLE_WIDTH = 20


def _pole_pair(left: str, right: str) -> str:
    """`left` and `right` on one 20-character line (right-aligned); the amount wins."""
    room = POLE_WIDTH - len(right) - 1
    if room < 1:
        return right[:POLE_WIDTH]
    return left[:room].ljust(room) + " " + right


def pole_lines(view: CustomerView) -> tuple[str, str]:
    """The view's two lines, exactly 20 characters each (cut, padded)."""
    first, second = view.pole
    return _fit(first), _fit(second)


def _fit(line: str) -> str:
    return line[:POLE_WIDTH].ljust(POLE_WIDTH)


#: the states `qrpos display preview --state` draws (and the goldens cover), each the
#: sale's state that shows it
PREVIEW_STATES: dict[ViewKind, SaleSnapshot] = {
    "idle": SaleSnapshot("ready"),
    "pay": SaleSnapshot("presenting"),
    "checking": SaleSnapshot("charging", elapsed_s=7.0),
    "paid": SaleSnapshot("result", result_state="approved"),
    "not_paid": SaleSnapshot("result", result_state="declined"),
    "check": SaleSnapshot("result", result_state="needs_review"),
    "offline": SaleSnapshot("offline"),
}
#: the not-paid reasons, each the outcome (and decline code) that gives it
REASON_OUTCOMES: dict[NotPaidReason, tuple[str, str | None]] = {
    "no_money": ("declined", "insufficient_funds"),
    "refresh_code": ("token_used", None),
    "ask_cashier": ("declined", "wallet_suspended"),
    "refunded": ("reversed_after_abandon", None),
}


def preview_view(
    kind: ViewKind, amount: int = 12_500, reason: NotPaidReason = "no_money", shop: str = ""
) -> CustomerView:
    """The view of `kind` as a sale would show it (`qrpos display preview`, the goldens)."""
    if kind == "offline":
        return offline_view()
    snapshot = PREVIEW_STATES[kind]
    if kind == "not_paid":
        state, code = REASON_OUTCOMES[reason]
        snapshot = SaleSnapshot("result", result_state=state, decline_code=code)
    return customer_view(
        SaleSnapshot(
            snapshot.stage,
            amount,
            snapshot.result_state,
            snapshot.decline_code,
            snapshot.elapsed_s,
        ),
        shop,
    )
