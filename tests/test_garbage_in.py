"""Garbage into every local surface: each gets a clear message and nothing stored is lost.

The surfaces: the keypad (tests/tui/test_keypad_garbage.py), `--amount` and
`--token` (the real CLI, with an outbox that already holds a sale), the TOML config, a
corrupted or truncated outbox file, and a full disk during a commit. "Clear message":
an exception of the documented kind (ConfigError, LedgerError) or a one-line message,
never a traceback. "Nothing lost": the sale already in the outbox is still there, and a
damaged outbox is kept byte for byte.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, event, given, settings
from hypothesis import strategies as st

from headless import one_usage_message
from qrpos import spec
from qrpos.cli import main, usage
from qrpos.cli.usage import EXIT_USAGE, UsageError
from qrpos.config import ConfigError, load_config
from qrpos.ledger import (
    ChargeDesk,
    Ledger,
    LedgerError,
    RetryPolicy,
    UnresolvedChargeExists,
    outbox_views,
)
from qrpos.service import TerminalClient
from qrpos.simulator import Sandbox, WalletInfo

FIXTURES = [HealthCheck.function_scoped_fixture]


# --- the outbox every CLI case starts from: one settled sale ----------------------------


@pytest.fixture
async def outbox(
    tmp_path: Path, asgi_client: TerminalClient, wallet: WalletInfo, monkeypatch: pytest.MonkeyPatch
) -> Path:
    path = tmp_path / "state" / "outbox.sqlite3"
    ledger = Ledger.open(path)
    try:
        desk = ChargeDesk(ledger, asgi_client, policy=RetryPolicy.testing())
        result = await desk.charge(700, wallet.qr_token, deadline_s=2)
        assert result.charged
    finally:
        ledger.close()
    (tmp_path / "empty.toml").write_text("")
    monkeypatch.setenv("QRPOS_STATE_DIR", str(path.parent))
    monkeypatch.setenv("QRPOS_CONFIG", str(tmp_path / "empty.toml"))
    monkeypatch.setenv("QRPOS_BASE_URL", "http://127.0.0.1:9")
    monkeypatch.setenv("QRPOS_USERNAME", "term_abcdefgh")
    monkeypatch.setenv("QRPOS_LANGUAGE", "en")  # the answers below are read in English
    return path


def _stored(path: Path) -> list[tuple[Any, ...]]:
    ledger = Ledger.open(path)
    try:
        return [
            (v.amount_mnt, v.state, v.transaction_id)
            for v in outbox_views(ledger, include_final=True)
        ]
    finally:
        ledger.close()


# --- --amount and --token ---------------------------------------------------------------

amounts = st.text(max_size=12) | st.integers().map(str) | st.floats().map(str)
tokens = st.text(max_size=20) | st.binary(max_size=12).map(
    lambda b: "vqr_" + b.decode("utf-8", "surrogateescape")
)


@settings(max_examples=40, deadline=None, suppress_health_check=FIXTURES)
@given(amount=amounts, token=tokens)
def test_garbage_amount_or_token_is_a_usage_error_and_the_outbox_keeps_its_sale(
    outbox: Path, capsys: pytest.CaptureFixture[str], amount: str, token: str
) -> None:
    def accepted(check: Callable[[str], object], value: str) -> bool:
        try:
            check(value)
        except UsageError:
            return False
        return True

    assume(
        not (accepted(usage.amount_mnt, amount) and accepted(usage.qr_token, token))
    )  # a valid pair would really charge
    before = outbox.read_bytes()
    capsys.readouterr()
    code = main(["charge", f"--amount={amount}", f"--token={token}"])
    _, err = capsys.readouterr()
    assert code == EXIT_USAGE, err
    assert one_usage_message(err) and err.startswith("qrpos charge: ") and "Traceback" not in err
    assert outbox.read_bytes() == before  # refused before the outbox was even opened
    ((amount_kept, state, tx_id),) = _stored(outbox)
    assert (amount_kept, state) == (700, "approved") and tx_id


# --- config TOML --------------------------------------------------------------------------

KEYS = ["base_url", "username", "state_dir", "request_timeout", "language", "scanner", "x"]
toml_scalars = (
    st.text(max_size=12)
    | st.integers()
    | st.floats(allow_nan=False)
    | st.booleans()
    | st.just("https://pay.example.mn")
)


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value) if not isinstance(value, float) or math.isfinite(value) else "0"
    if isinstance(value, list):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    escaped = "".join(
        c if c.isprintable() and c not in '"\\' else f"\\u{ord(c):04x}" for c in value
    )
    return '"' + escaped.replace("\\ud", "\\u00d") + '"'


toml_documents = st.dictionaries(
    st.sampled_from(KEYS), toml_scalars | st.lists(toml_scalars, max_size=3), max_size=6
).map(lambda d: "".join(f"{k} = {_toml_value(v)}\n" for k, v in d.items()))


@settings(max_examples=150, deadline=None, suppress_health_check=FIXTURES)
@given(document=st.binary(max_size=80) | toml_documents.map(str.encode))
def test_any_config_file_loads_or_says_what_is_wrong(tmp_path: Path, document: bytes) -> None:
    path = tmp_path / "config.toml"
    path.write_bytes(document)
    try:
        config = load_config(config_path=path, env={})
    except ConfigError as exc:
        message = str(exc)
        assert message and "\n" not in message and "Traceback" not in message
        return
    assert config.base_url is None or isinstance(config.base_url, str)
    assert isinstance(config.language, str) and config.language in ("mn", "en")
    assert 0 < config.request_timeout_s <= 300


@pytest.mark.parametrize(
    "document",
    [b'base_url = "\xff"\n', b"state_dir = 5\n", b'state_dir = "a\\u0000b"\n',
     b'state_dir = "/dev/null/x"\n', b"request_timeout = true\n"],
)  # fmt: skip
def test_the_cli_reports_a_bad_config_in_one_line(
    outbox: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    document: bytes,
) -> None:
    monkeypatch.delenv("QRPOS_STATE_DIR")  # the file's state_dir counts
    monkeypatch.chdir(tmp_path)  # a relative state_dir would land here
    bad = tmp_path / "bad.toml"
    bad.write_bytes(document)
    before = outbox.read_bytes()
    code = main(["--config", str(bad), "outbox", "list"])
    _, err = capsys.readouterr()
    assert code == 1 and err.count("\n") == 1 and err.startswith("qrpos: "), err
    assert outbox.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.toml", "empty.toml", "state"]


# --- a corrupted or truncated outbox -------------------------------------------------------

damage = st.one_of(
    st.tuples(st.just("truncate"), st.integers(0, 20_000), st.just(b"")),
    st.tuples(st.just("overwrite"), st.integers(0, 20_000), st.binary(min_size=1, max_size=64)),
)


@settings(max_examples=60, deadline=None, suppress_health_check=FIXTURES)
@given(hurt=damage)
def test_a_damaged_outbox_is_reported_and_kept_as_it_is(
    outbox: Path, capsys: pytest.CaptureFixture[str], hurt: tuple[str, int, bytes]
) -> None:
    kind, offset, data = hurt
    original = outbox.read_bytes()
    offset = offset % max(1, len(original))
    damaged = (
        original[:offset]
        if kind == "truncate"
        else original[:offset] + data + original[offset + len(data) :]
    )
    outbox.write_bytes(damaged)
    for side in (outbox.with_name(outbox.name + "-wal"), outbox.with_name(outbox.name + "-shm")):
        side.unlink(missing_ok=True)
    try:
        capsys.readouterr()
        code = main(["outbox", "list", "--all"])
        _, err = capsys.readouterr()
        assert "Traceback" not in err
        assert code in (0, 1), err
        if code == 1:
            # the log's own line may come first; the command's answer is the last line
            assert err.splitlines()[-1].startswith("qrpos: the outbox"), err
        try:
            ledger = Ledger.open(outbox)
        except LedgerError as exc:
            assert "kept" in str(exc) or "outbox" in str(exc)
            assert outbox.read_bytes() == damaged  # kept for inspection, not "repaired"
            return
        try:
            if not ledger.integrity_ok:
                assert "kept" in ledger.integrity_message
        finally:
            ledger.close()
        if not ledger.integrity_ok:
            assert outbox.read_bytes() == damaged
    finally:
        outbox.write_bytes(original)


# --- a full disk during a commit -------------------------------------------------------------


@settings(max_examples=12, deadline=None, suppress_health_check=FIXTURES)
@given(
    amounts=st.lists(st.integers(1, spec.AMOUNT_MAX_MNT), min_size=1, max_size=4),
    room=st.integers(0, 6),
)
def test_a_full_disk_refuses_new_sales_and_keeps_the_stored_ones(
    outbox: Path, asgi_client: TerminalClient, sandbox: Sandbox, amounts: list[int], room: int
) -> None:
    async def attempt() -> None:
        taken_before = {tx.id for tx in sandbox.transactions()}
        ledger = Ledger.open(outbox)
        try:
            desk = ChargeDesk(ledger, asgi_client, policy=RetryPolicy.testing())
            before = desk.listing.intents(include_final=True)
            pages = ledger.read(lambda c: c.execute("PRAGMA page_count").fetchone()[0])
            # SQLite's own quota: the database may grow by a few pages only; ballast fills
            # them, then `room` pages' worth is freed, so the disk fills at a drawn moment
            ledger.read(lambda c: c.execute(f"PRAGMA max_page_count = {pages + 8}"))
            ledger.write(lambda c: c.execute("CREATE TABLE IF NOT EXISTS ballast (b BLOB)"))
            with contextlib.suppress(LedgerError):
                for _ in range(64):
                    ledger.write(lambda c: c.execute("INSERT INTO ballast VALUES (zeroblob(900))"))
            ledger.write(
                lambda c: c.execute(
                    "DELETE FROM ballast WHERE rowid IN (SELECT rowid FROM ballast LIMIT ?)",
                    (room,),
                )
            )
            for amount in amounts:
                wallet = sandbox.create_wallet(spec.AMOUNT_MAX_MNT)
                try:
                    await desk.charge(amount, wallet.qr_token, deadline_s=2)
                except LedgerError as exc:
                    assert "full" in str(exc) and "nothing stored was lost" in str(exc)
                    event("disk full")
                except UnresolvedChargeExists:
                    event(
                        "earlier sale kept unresolved"
                    )  # an earlier sale's outcome could not be written: it waits, kept
            assert desk.listing.intents(include_final=True)[: len(before)] == before
        finally:
            ledger.close()
        # space again: every charge the service took is settled from what was stored
        ledger = Ledger.open(outbox)
        try:
            desk = ChargeDesk(ledger, asgi_client, policy=RetryPolicy.testing())
            await desk.recover(deadline_s=2)
            assert desk.listing.unresolved() == []
            known = {v.transaction_id for v in desk.listing.intents(include_final=True)}
        finally:
            ledger.close()
        taken = {tx.id for tx in sandbox.transactions()} - taken_before
        assert taken <= known, "the service took a charge the outbox does not know"

    asyncio.run(attempt())
    with sqlite3.connect(outbox) as conn:
        assert conn.execute("PRAGMA quick_check").fetchone()[0] == "ok"
