"""The status bar warns when another install uses this terminal's credentials."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest
from kiosk_harness import FAST, Kiosk, make_services

from qrpos.ledger import ChargeDesk, IntentState, Ledger, RetryPolicy
from qrpos.present.i18n import set_language, t
from qrpos.service import TerminalClient
from qrpos.simulator import Sandbox, TerminalCredentials
from qrpos.tui.app import KioskApp


async def _another_install_was_seen(
    tmp_path: Path, live_url: str, sandbox: Sandbox, terminal: TerminalCredentials
) -> tuple[str, list[str]]:
    """A sale whose look-up met rows this kiosk never sent (another device's charges):
    two rows of its amount in its window, while none of its own sends reached the
    service (each a 500 before commit, for as long as the cashier waited; then the
    cashier abandoned it). Two rows for one sale: one is another install's, the kiosk
    records it, and a person decides the sale. Returns (wallet id, the other rows)."""
    ledger = Ledger.open(tmp_path / "outbox.sqlite3")
    client = TerminalClient(live_url, terminal.username, terminal.password, timeout_s=5.0)
    desk = ChargeDesk(ledger, client, policy=RetryPolicy.testing())
    others = [sandbox.seed_charge(terminal.username, 900, datetime.now(UTC)) for _ in range(2)]
    wallet = sandbox.create_wallet(5_000)
    sandbox.arm_fault("error_before_commit", count=1_000_000, operation="charge")
    checking = await desk.charge(900, wallet.qr_token, deadline_s=1)
    assert checking.state is IntentState.UNRESOLVED
    await desk.abandon(checking.intent_id)
    sandbox.clear_faults()  # an abandoned sale is never sent again: a send would charge
    await desk.recover(deadline_s=5)
    (review,) = desk.listing.reviews()
    offered = sorted(c.transaction.id for c in review.candidates)
    assert (review.intent.id, review.reason, offered) == (
        str(checking.intent_id),
        "foreign_activity",
        sorted(others),
    )
    assert desk.listing.foreign_activity() is not None
    await client.aclose()
    ledger.close()
    assert sandbox.wallet(wallet.wallet_id).balance_mnt == 5_000
    return wallet.wallet_id, others


@pytest.mark.parametrize("language", ["en", "mn"])
async def test_the_status_bar_warns_of_another_device_until_the_owner_clears_it(
    tmp_path: Path,
    live_url: str,
    sandbox: Sandbox,
    terminal: TerminalCredentials,
    language: str,
) -> None:
    wallet_id, others = await _another_install_was_seen(tmp_path, live_url, sandbox, terminal)
    services, ledger = make_services(tmp_path, live_url, terminal)
    app = KioskApp(services, **FAST)  # type: ignore[arg-type]
    set_language(language)
    warning = t("status.foreign")
    try:
        async with app.run_test(size=(120, 24)) as pilot:
            kiosk = Kiosk(app, pilot, services, sandbox, terminal, ledger)
            await kiosk.on_screen("AmountScreen")
            await kiosk.until(lambda: warning in kiosk.text("#status"))
            assert services.desk is not None
            services.desk.clear_foreign_activity()
            await app.sale.count_unresolved()
            await kiosk.until(lambda: warning not in kiosk.text("#status"))
            # clearing the warning decides nothing: the sale still waits for the owner
            assert [v.reason for v in services.desk.listing.reviews()] == ["foreign_activity"]
    finally:
        set_language("mn")
        ledger.close()
    assert [(tx.id, tx.status) for tx in sandbox.transactions()] == [
        (tx_id, "COMPLETED") for tx_id in others
    ]
    assert sandbox.wallet(wallet_id).balance_mnt == 5_000
