"""The customer's view as a function of the sale's state: every sale state and every
outcome has a view, "paid" only on proof, never "not paid" for an outcome not known, the
words in both languages, and the pole display's lines within 20 characters."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from qrpos import spec
from qrpos.ledger.states import IntentState
from qrpos.present import i18n
from qrpos.present.customer import (
    RESULT_KINDS,
    STAGE_KINDS,
    VIEW_KINDS,
    SaleSnapshot,
    customer_view,
    offline_view,
    pole_lines,
)
from qrpos.tui.sale_states import SaleState

#: outcomes whose money is proven taken
PROVEN_CHARGED = {
    IntentState.APPROVED,
    IntentState.CHARGED_PER_HISTORY,
    IntentState.CHARGED_PER_REVIEW,
}
#: outcomes not known at the till: the customer is never told "not paid"
NOT_KNOWN = {
    IntentState.PENDING,
    IntentState.UNRESOLVED,
    IntentState.NEEDS_REVIEW,
    IntentState.ABANDONED,
    IntentState.CREDENTIALS_REJECTED,
}


@pytest.fixture(params=["mn", "en"])
def language(request: pytest.FixtureRequest) -> Iterator[str]:
    was = i18n.current_language()
    i18n.set_language(request.param)
    yield request.param
    i18n.set_language(was)


def test_every_sale_state_has_a_view() -> None:
    assert set(STAGE_KINDS) == {state.value for state in SaleState}


def test_every_outcome_has_a_view() -> None:
    assert set(RESULT_KINDS) == {state.value for state in IntentState}


def test_paid_only_for_a_sale_proven_charged() -> None:
    for state in IntentState:
        view = customer_view(SaleSnapshot("result", 4500, state.value))
        assert (view.kind == "paid") is (state in PROVEN_CHARGED), state
        assert (view.mark == "tick") is (state in PROVEN_CHARGED), state


def test_an_outcome_not_known_is_the_cashiers_to_check_never_not_paid() -> None:
    for state in NOT_KNOWN:
        view = customer_view(SaleSnapshot("result", 4500, state.value))
        assert view.kind == "check"
        assert view.mark != "cross"


def test_an_unknown_state_is_never_paid_nor_a_stale_amount_to_pay() -> None:
    assert customer_view(SaleSnapshot("result", 100, "a_state_of_tomorrow")).kind == "check"
    assert customer_view(SaleSnapshot("a_stage_of_tomorrow", 100)).kind == "check"


@pytest.mark.parametrize(
    ("state", "code", "reason"),
    [
        ("declined", "insufficient_funds", "no_money"),
        ("declined", "limit_exceeded", "no_money"),
        ("declined", "token_invalid", "refresh_code"),
        ("declined", "wallet_suspended", "ask_cashier"),
        ("declined", "a_code_of_tomorrow", "ask_cashier"),
        ("token_used", None, "refresh_code"),
        ("refused", None, "ask_cashier"),
        ("not_charged", None, "ask_cashier"),
        ("reversed_after_abandon", None, "refunded"),
    ],
)
def test_not_paid_says_the_plain_reason(state: str, code: str | None, reason: str) -> None:
    view = customer_view(SaleSnapshot("result", 4500, state, code))
    assert (view.kind, view.reason) == ("not_paid", reason)


def test_every_known_decline_code_has_a_customer_reason() -> None:
    for code in spec.DeclineCode:
        view = customer_view(SaleSnapshot("result", 1, "declined", code.value))
        assert view.reason is not None


def test_english_words(language: str) -> None:
    if language != "en":
        pytest.skip("English only")
    pay = customer_view(SaleSnapshot("presenting", 12_500))
    assert (pay.headline, pay.amount, pay.lines) == (
        "Amount to pay",
        "12,500 ₮",
        ("Show your QR code to the camera",),
    )
    assert pay.camera
    checking = customer_view(SaleSnapshot("charging", 12_500, elapsed_s=7.4))
    assert checking.lines == ("Please wait · 0:07",)
    assert pole_lines(checking) == ("Checking        0:07", "12,500 ₮            ")
    paid = customer_view(SaleSnapshot("result", 12_500, "approved"))
    assert pole_lines(paid) == ("PAID        12,500 ₮", "Thank you!          ")
    assert customer_view(SaleSnapshot("ready"), "Canteen No. 3").headline == "Canteen No. 3"
    assert offline_view().headline == "Display not connected to the till"


def test_mongolian_words_use_the_letters_a_customer_reads(language: str) -> None:
    if language != "mn":
        pytest.skip("Mongolian only")
    pay = customer_view(SaleSnapshot("presenting", 12_500))
    assert pay.headline == "Төлөх дүн" and "QR код" in pay.lines[0] and "ү" in pay.lines[0]
    paid = customer_view(SaleSnapshot("result", 12_500, "charged_per_history"))
    assert paid.headline == "Төлбөр амжилттай"
    assert pole_lines(paid)[0] == "ТӨЛСӨН      12,500 ₮"


def test_every_view_fits_a_pole_display_in_both_languages(language: str) -> None:
    snapshots = [SaleSnapshot(state.value, 1_000_000) for state in SaleState]
    snapshots += [
        SaleSnapshot("result", 1_000_000, s.value, "insufficient_funds") for s in IntentState
    ]
    snapshots += [SaleSnapshot("charging", 1_000_000, elapsed_s=3599.0)]
    kinds = set()
    for snapshot in snapshots:
        view = customer_view(snapshot, "Canteen")
        kinds.add(view.kind)
        assert all(len(line) == 20 for line in pole_lines(view))
        if view.amount:
            assert view.amount in " ".join(pole_lines(view)), view
    kinds.add(offline_view().kind)
    assert kinds == set(VIEW_KINDS)


def test_the_idle_view_shows_no_amount() -> None:
    assert customer_view(SaleSnapshot("ready", 4500)).amount == ""
