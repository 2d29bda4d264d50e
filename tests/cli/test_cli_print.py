"""`qrpos print`: a test slip, a copy of a sale's slip with its ДДТД once issued, the
queue; run as the installer runs it, a process against the sandbox over loopback."""

from __future__ import annotations

import io
from datetime import UTC, datetime, timedelta
from pathlib import Path

from PIL import Image

from headless import cli_environment, qrpos
from qrpos import spec
from qrpos.peripherals.render import PAPER_DOTS, png_bytes
from qrpos.peripherals.slip import sale_slip
from qrpos.present.i18n import set_language
from qrpos.service import TerminalClient, Transaction
from qrpos.simulator import Sandbox, TerminalCredentials


def test_a_test_slip_is_previewed_without_any_printer(tmp_path: Path) -> None:
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "QRPOS_LANGUAGE": "mn"}
    done = qrpos(env, "print", "test", "--preview", str(tmp_path / "test.png"))
    assert done.returncode == 0, done.stderr
    assert "test.png" in done.stdout and "зурлаа" in done.stdout
    image = Image.open(tmp_path / "test.png")
    assert image.width == PAPER_DOTS[58]


def test_a_test_slip_prints_on_the_configured_printer(tmp_path: Path) -> None:
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "QRPOS_LANGUAGE": "en"}
    (tmp_path / "config.toml").write_text('[printer]\ndevice = "off"\npaper_mm = 80\n')
    env["QRPOS_CONFIG"] = str(tmp_path / "config.toml")
    env["QRPOS_PRINTER"] = f"file:{tmp_path}/lp0"  # the variable wins over the file
    done = qrpos(env, "print", "test")
    assert done.returncode == 0, done.stderr
    data = (tmp_path / "lp0").read_bytes()
    assert data.startswith(b"\x1b@") and b"\x1dv0\x00" + bytes([72, 0]) in data  # 80 mm


def test_without_a_printer_or_with_a_dead_one_the_command_says_so(tmp_path: Path) -> None:
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "QRPOS_LANGUAGE": "en"}
    done = qrpos(env, "print", "test")
    assert done.returncode == 1 and "no printer is set" in done.stderr
    assert "QRPOS_PRINTER" in done.stderr and "--preview" in done.stderr
    done = qrpos({**env, "QRPOS_PRINTER": "tcp:127.0.0.1:9"}, "print", "test")
    assert done.returncode == 1 and "does not answer" in done.stderr, done.stderr
    assert "Traceback" not in done.stderr and "Errno" not in done.stderr
    done = qrpos({**env, "QRPOS_PRINTER": "lpt1"}, "print", "test")
    assert done.returncode == 1 and "usb:VID:PID" in done.stderr
    done = qrpos({**env, "QRPOS_LANGUAGE": "mn"}, "print", "test")
    assert done.returncode == 1 and "принтер тохируулаагүй" in done.stderr


def reprints(tx: Transaction, before: datetime, after: datetime) -> list[bytes]:
    """The copies `qrpos print receipt` may have drawn between `before` and `after` (the
    copy says when, to the second)."""
    out = []
    at = before.replace(microsecond=0)
    while at <= after:
        out.append(png_bytes(sale_slip(tx, reprint_at=at), 58))
        at += timedelta(seconds=1)
    return out


async def test_a_copy_of_a_sale_carries_its_vat_receipt_once_issued(
    tmp_path: Path,
    live_url: str,
    sandbox: Sandbox,
    terminal: TerminalCredentials,
    http_client: TerminalClient,
) -> None:
    set_language("en")
    env = cli_environment(tmp_path, live_url, terminal)
    tx_id = sandbox.seed_charge(
        terminal.username,
        12_500,
        datetime.now(UTC) - timedelta(hours=2),
        vat_status=spec.VatStatus.PENDING,
    )
    before = datetime.now(UTC)
    done = qrpos(env, "print", "receipt", tx_id, "--preview", str(tmp_path / "pending.png"))
    after = datetime.now(UTC)
    assert done.returncode == 0, done.stderr
    [pending] = [tx async for tx in http_client.iter_transactions() if tx.id == tx_id]
    assert pending.vat_status is spec.VatStatus.PENDING
    assert (tmp_path / "pending.png").read_bytes() in reprints(pending, before, after)

    sandbox.settle_vat()
    env["QRPOS_PRINTER"] = f"file:{tmp_path}/lp0"
    before = datetime.now(UTC)
    done = qrpos(env, "print", "receipt", tx_id, "--preview", str(tmp_path / "issued.png"))
    after = datetime.now(UTC)
    assert done.returncode == 0, done.stderr
    [issued] = [tx async for tx in http_client.iter_transactions() if tx.id == tx_id]
    assert issued.vat_status is spec.VatStatus.ISSUED and issued.vat_receipt_id
    assert (tmp_path / "issued.png").read_bytes() in reprints(issued, before, after)
    assert "VAT receipt (ДДТД)" in sale_slip(issued).plain()
    assert issued.vat_receipt_id in sale_slip(issued).plain()
    # and on the printer itself
    assert qrpos(env, "print", "receipt", tx_id).returncode == 0
    assert (tmp_path / "lp0").read_bytes().startswith(b"\x1b@")

    # the service away: the copy is printed as the history cache last saw it
    env["QRPOS_BASE_URL"] = "http://127.0.0.1:9"
    done = qrpos(env, "print", "receipt", tx_id, "--preview", str(tmp_path / "cached.png"))
    assert done.returncode == 0, done.stderr
    assert "as the history cache last saw it" in done.stdout
    image = Image.open(io.BytesIO((tmp_path / "cached.png").read_bytes()))
    assert image.width == PAPER_DOTS[58]


def test_a_sale_nobody_knows_is_not_printed(
    tmp_path: Path, live_url: str, terminal: TerminalCredentials
) -> None:
    env = cli_environment(tmp_path, live_url, terminal)
    done = qrpos(env, "print", "receipt", "tx_nosuchsale0001", "--preview", str(tmp_path / "x"))
    assert done.returncode == 1 and "no sale tx_nosuchsale0001" in done.stderr, done.stderr
    assert not (tmp_path / "x").exists()
    env["QRPOS_BASE_URL"] = "http://127.0.0.1:9"
    done = qrpos(env, "print", "receipt", "tx_nosuchsale0001")
    assert done.returncode == 3 and "cannot be reached" in done.stderr, done.stderr
    done = qrpos(env, "print", "queue")
    assert done.returncode == 0 and "nothing has been printed yet" in done.stdout


async def test_a_reversed_sale_gets_no_sale_slip(
    tmp_path: Path,
    live_url: str,
    sandbox: Sandbox,
    terminal: TerminalCredentials,
    http_client: TerminalClient,
) -> None:
    """`qrpos print receipt TX` of a sale whose money went back (REVERSED on the service)
    refuses, as the owner's history screen does: a "sale, thank you" slip would say it was
    paid (found by a review of issue 47's "one definition": it printed, exit 0)."""
    env = cli_environment(tmp_path, live_url, terminal)
    env["QRPOS_PRINTER"] = f"file:{tmp_path}/lp0"
    tx_id = sandbox.seed_charge(terminal.username, 12_500, datetime.now(UTC) - timedelta(hours=1))
    assert qrpos(env, "print", "receipt", tx_id).returncode == 0  # while it stands
    printed = (tmp_path / "lp0").read_bytes()
    await http_client.reverse(tx_id)
    done = qrpos(env, "print", "receipt", tx_id, "--preview", str(tmp_path / "copy.png"))
    assert done.returncode == 1, done.stdout + done.stderr
    assert f"{tx_id} is not a completed sale" in done.stderr, done.stderr
    assert not (tmp_path / "copy.png").exists()
    assert qrpos(env, "print", "receipt", tx_id).returncode == 1
    assert (tmp_path / "lp0").read_bytes() == printed  # nothing more reached the printer
