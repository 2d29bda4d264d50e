"""The sandbox: its admin operations (what the merchant dashboard and the employer side
would do) on top of the service operations."""

from __future__ import annotations

import copy
import dataclasses
from datetime import datetime
from typing import Any

from qrpos import spec
from qrpos.simulator import model
from qrpos.simulator.faults import TokenBucket, make_fault
from qrpos.simulator.model import SimTransaction, Terminal, TerminalCredentials, Wallet, WalletInfo
from qrpos.simulator.operations import ServiceOperations
from qrpos.simulator.options import SimulatorOptions
from qrpos.simulator.state import SandboxError, UnknownRecord

__all__ = ["Sandbox", "SandboxError", "UnknownRecord"]


class Sandbox(ServiceOperations):
    """A faithful, in-memory (optionally SQLite-backed) Terminal Charge Service.

    The admin methods are what `/_sim` exposes over HTTP; the service operations
    themselves live in `qrpos.simulator.operations`.
    """

    # --- terminals ----------------------------------------------------------------------

    def create_terminal(self, merchant: str = "m_demo") -> TerminalCredentials:
        """A new terminal of `merchant`; its password is shown here once."""
        if not merchant or not isinstance(merchant, str):
            raise SandboxError("merchant must be a non-empty string")
        with self.lock:
            username = model.new_username()
            while username in self._terminals:
                username = model.new_username()
            terminal = Terminal(username, model.new_password(), model.new_terminal_id(), merchant)
            self._terminals[username] = terminal
            self._save_terminal(terminal)
            return terminal.credentials()

    def _terminal(self, username: str) -> Terminal:
        terminal = self._terminals.get(username)
        if terminal is None:
            raise UnknownRecord(f"no terminal {username!r}")
        return terminal

    def rotate_password(self, username: str) -> str:
        """A new password; the old one stops working at once."""
        with self.lock:
            terminal = self._terminal(username)
            terminal.password = model.new_password()
            self._save_terminal(terminal)
            return terminal.password

    def suspend_terminal(self, username: str) -> None:
        """Block the terminal (every request answers 401); its history is kept."""
        with self.lock:
            terminal = self._terminal(username)
            terminal.suspended = True
            self._save_terminal(terminal)

    # --- wallets ------------------------------------------------------------------------

    def create_wallet(self, balance_mnt: int, *, qr_token: str | None = None) -> WalletInfo:
        """A wallet with a balance and a live QR token (`qr_token` to choose it)."""
        if not isinstance(balance_mnt, int) or isinstance(balance_mnt, bool) or balance_mnt < 0:
            raise SandboxError("balanceMNT must be a non-negative integer")
        with self.lock:
            token = qr_token or model.new_qr_token()
            if token in self._live_tokens or token in self._retired_tokens:
                raise SandboxError("that QR token is already in use")
            wallet = Wallet(model.new_wallet_id(), balance_mnt, token)
            self._wallets[wallet.wallet_id] = wallet
            self._live_tokens[token] = wallet.wallet_id
            self._save_wallet(wallet)
            return wallet.info()

    def _wallet(self, wallet_id: str) -> Wallet:
        wallet = self._wallets.get(wallet_id)
        if wallet is None:
            raise UnknownRecord(f"no wallet {wallet_id!r}")
        return wallet

    def wallet(self, wallet_id: str) -> WalletInfo:
        """The wallet now (its token changes after every successful charge)."""
        with self.lock:
            return self._wallet(wallet_id).info()

    def suspend_wallet(self, wallet_id: str) -> None:
        """Charges are declined (`wallet_suspended`); reversals still credit it."""
        with self.lock:
            wallet = self._wallet(wallet_id)
            wallet.suspended = True
            self._save_wallet(wallet)

    def credit_wallet(self, wallet_id: str, amount_mnt: int) -> SimTransaction:
        """An employer top-up: a CREDIT transaction (never listed, never reversible)."""
        return self._wallet_movement(wallet_id, amount_mnt, spec.TxType.CREDIT)

    def reclaim_wallet(self, wallet_id: str, amount_mnt: int | None = None) -> SimTransaction:
        """A leaver's sweep: a RECLAIM transaction of `amount_mnt` (default: all of it)."""
        return self._wallet_movement(wallet_id, amount_mnt, spec.TxType.RECLAIM)

    def _wallet_movement(
        self, wallet_id: str, amount_mnt: int | None, kind: spec.TxType
    ) -> SimTransaction:
        with self.lock:
            wallet = self._wallet(wallet_id)
            amount = wallet.balance_mnt if amount_mnt is None else amount_mnt
            if not isinstance(amount, int) or isinstance(amount, bool) or amount <= 0:
                raise SandboxError("amountMNT must be a positive integer")
            if kind is spec.TxType.RECLAIM and amount > wallet.balance_mnt:
                raise SandboxError("cannot reclaim more than the balance")
            wallet.balance_mnt += amount if kind is spec.TxType.CREDIT else -amount
            tx = SimTransaction(
                id=model.new_tx_id(),
                amount_mnt=amount,
                status=spec.TxStatus.COMPLETED,
                type=kind,
                created_us=self._next_created_us(),
                wallet_id=wallet_id,
            )
            self._index_tx(tx)
            self._save_tx(tx)
            self._save_wallet(wallet)
            return dataclasses.replace(tx)

    # --- VAT, faults, options -----------------------------------------------------------

    def settle_vat(self) -> dict[str, int]:
        """Issue every pending receipt and void every reversed one, now."""
        issued = voided = 0
        with self.lock:
            now = self.now_us()
            for tx in self._txs.values():
                if tx.type is not spec.TxType.CHARGE:
                    continue
                for _ in range(2):  # a reversed pending receipt is issued, then voided
                    i, v = self._vat_step(tx, now)
                    if i or v:
                        self._save_tx(tx)
                    issued, voided = issued + i, voided + v
            self._vat_queue.clear()
        return {"issued": issued, "voided": voided}

    def arm_fault(self, kind: str, count: int = 1, **params: Any) -> None:
        """Arm a fault for the next `count` matching requests (see `faults.make_fault`)."""
        fault = make_fault(kind, count, **params)
        with self.lock:
            self.faults.arm(fault)

    def clear_faults(self) -> None:
        """Disarm every fault."""
        with self.lock:
            self.faults.clear()

    def set_clock_offset(self, seconds: float) -> None:
        """Run the service's clock `seconds` ahead of real time (behind when negative)."""
        with self.lock:
            self.options = dataclasses.replace(self.options, clock_offset_s=seconds)

    def configure(self, **changes: Any) -> SimulatorOptions:
        """Change options in place (e.g. ``configure(rate_limit_enabled=True)``)."""
        with self.lock:
            self.options = dataclasses.replace(self.options, **changes)
            self.bucket = TokenBucket(self.options.rate_sustained_rps, self.options.rate_burst)
            return self.options

    # --- seeding and assertions ---------------------------------------------------------

    def seed_charge(
        self,
        username: str,
        amount_mnt: int,
        created_at: datetime,
        *,
        status: spec.TxStatus = spec.TxStatus.COMPLETED,
        vat_status: spec.VatStatus | None = None,
    ) -> str:
        """Insert a past charge of `username` (no wallet moves); returns its id.

        `vat_status` defaults to ``issued`` for a completed charge and ``voided`` for a
        reversed one; issued and voided receipts get a number.
        """
        if vat_status is None:
            completed = status is spec.TxStatus.COMPLETED
            vat_status = spec.VatStatus.ISSUED if completed else spec.VatStatus.VOIDED
        with self.lock:
            terminal = self._terminal(username)
            tx = SimTransaction(
                id=model.new_tx_id(),
                amount_mnt=amount_mnt,
                status=spec.TxStatus(status),
                type=spec.TxType.CHARGE,
                created_us=model.to_micros(created_at),
                vat_status=spec.VatStatus(vat_status),
                vat_receipt_id=""
                if vat_status is spec.VatStatus.PENDING
                else model.new_receipt_number(),
                terminal_id=terminal.terminal_id,
                username=username,
                merchant=terminal.merchant,
            )
            self._index_tx(tx)
            self._save_tx(tx)
            return tx.id

    def transactions(self) -> list[SimTransaction]:
        """Every transaction of every kind, oldest first (copies, for assertions)."""
        with self.lock:
            self.advance_vat()
            ordered = sorted(self._txs.values(), key=lambda t: (t.created_us, t.id))
            # copies (a test's assertions never touch the books); `copy.copy`, not
            # `dataclasses.replace`: the till simulator reads them after every step
            return [copy.copy(tx) for tx in ordered]

    def transaction(self, tx_id: str) -> SimTransaction:
        """One transaction (a copy); raises UnknownRecord."""
        with self.lock:
            self.advance_vat()
            tx = self._txs.get(tx_id)
            if tx is None:
                raise UnknownRecord(f"no transaction {tx_id!r}")
            return dataclasses.replace(tx)
