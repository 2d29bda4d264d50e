"""A person running `qrpos charge` or `qrpos outbox resolve` on a sale whose outcome is
being checked sees where it stands while it lasts, in the kiosk's language, with the
seconds since the sale began; a sale answered at once prints no progress at all."""

from __future__ import annotations

import re

import pytest

from headless import qrpos
from qrpos.simulator import Sandbox

STEP = {
    "en": re.compile(r"^sale #1: .*(Sending again|Checking the payment|Looking).* \(\d+:\d\d\)$"),
    "mn": re.compile(r"^борлуулалт #1: .* \(\d+:\d\d\)$"),
}


@pytest.mark.parametrize("language", ["en", "mn"])
def test_a_long_charge_says_what_it_is_doing_while_it_lasts(
    cli_env: dict[str, str], sandbox: Sandbox, language: str
) -> None:
    env = {**cli_env, "QRPOS_LANGUAGE": language}
    wallet = sandbox.create_wallet(100_000)
    sandbox.arm_fault("error_before_commit", count=1000, operation="charge")
    done = qrpos(env, "charge", "--amount", "700", "--token", wallet.qr_token, "--deadline", "6")
    assert done.returncode == 3, done.stderr
    steps = [line for line in done.stderr.splitlines() if STEP[language].match(line)]
    assert len(steps) >= 2, done.stderr
    seconds = [int(m) * 60 + int(s) for m, s in re.findall(r"\((\d+):(\d\d)\)$", "\n".join(steps))]
    assert seconds == sorted(seconds)
    # the service heals: `outbox resolve` goes on from there, saying so too, and settles it
    sandbox.clear_faults()
    resolved = qrpos(env, "outbox", "resolve", "--deadline", "30")
    assert resolved.returncode == 0, resolved.stderr
    assert any(STEP[language].match(line) for line in resolved.stderr.splitlines()), resolved
    assert len(sandbox.transactions()) == 1


def test_a_sale_answered_at_once_prints_no_progress(
    cli_env: dict[str, str], sandbox: Sandbox
) -> None:
    wallet = sandbox.create_wallet(100_000)
    done = qrpos(cli_env, "charge", "--amount", "700", "--token", wallet.qr_token)
    assert done.returncode == 0, done.stderr
    assert not any(STEP["en"].match(line) for line in done.stderr.splitlines()), done.stderr


def test_a_retry_s_warnings_stay_out_of_a_persons_way_unless_asked_for(
    cli_env: dict[str, str], sandbox: Sandbox
) -> None:
    """The log's warnings (a transport failure and its exception's name) are for a log;
    a person at a command reads the progress lines, and `--log-level warning` brings the
    log back."""
    wallet = sandbox.create_wallet(100_000)
    sandbox.arm_fault("drop_after_commit", count=1, operation="charge")
    argv: tuple[str, ...] = ("charge", "--amount", "700", "--token", wallet.qr_token)
    quiet = qrpos(cli_env, *argv)
    assert quiet.returncode == 0, quiet.stderr
    assert " WARNING " not in quiet.stderr and "Error" not in quiet.stderr, quiet.stderr
    sandbox.arm_fault("drop_after_commit", count=1, operation="charge")
    wallet = sandbox.create_wallet(100_000)
    argv = ("charge", "--amount", "700", "--token", wallet.qr_token, "--log-level", "warning")
    loud = qrpos(cli_env, *argv)
    assert loud.returncode == 0 and " WARNING qrpos.service" in loud.stderr, loud.stderr
