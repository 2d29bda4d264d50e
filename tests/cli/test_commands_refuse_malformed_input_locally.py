"""`qrpos charge` and `qrpos reverse` refuse malformed input before anything is stored or
sent: every code the kiosk's camera refuses, with the words the kiosk's screen says in
the configured language (`qrpos.present.outcome.refusal_words`), and a transaction id
that is not one, as usage errors (64)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from qrpos.present.i18n import set_language, t
from qrpos.present.outcome import refusal_words
from qrpos.scanner.tokens import REFUSAL_TEXT, RefusalCode


@pytest.mark.parametrize("language", ["mn", "en"])
@pytest.mark.parametrize(
    ("code", "refusal"),
    [
        ("https://example.com/pay?vqr_abc", RefusalCode.URL),
        ("000201010212", RefusalCode.FOREIGN_PAYMENT),
        ("VQR_uppercase0000", RefusalCode.NOT_A_TOKEN),
        ("hello", RefusalCode.NOT_A_TOKEN),
    ],
)
def test_a_code_that_is_not_a_token_is_refused_locally(
    tmp_path: Path, code: str, refusal: RefusalCode, language: str
) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("QRPOS_")}
    env["QRPOS_STATE_DIR"] = str(tmp_path / "state")
    env["QRPOS_LANGUAGE"] = language
    done = subprocess.run(
        [sys.executable, "-m", "qrpos.cli", "charge", "--amount", "500", "--token", code],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 64, done
    set_language(language)
    # the screen's words for this refusal, in the kiosk's language
    said = " ".join(done.stderr.split())  # the message as one line (it is folded to 80)
    assert refusal_words(str(refusal), REFUSAL_TEXT[refusal]) in said
    assert code not in done.stderr  # never repeated back
    assert not (tmp_path / "state").exists()  # nothing stored


@pytest.mark.parametrize("language", ["mn", "en"])
@pytest.mark.parametrize("tx_id", ["nonsense", "tx_", "tx_abc def", "tx_ü"])
def test_reverse_refuses_a_malformed_transaction_id_as_a_usage_error(
    tmp_path: Path, tx_id: str, language: str
) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("QRPOS_")}
    env["QRPOS_STATE_DIR"] = str(tmp_path / "state")
    env["QRPOS_LANGUAGE"] = language
    done = subprocess.run(
        [sys.executable, "-m", "qrpos.cli", "reverse", tx_id],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 64, done
    set_language(language)
    assert t("cli.usage.not_tx_id") in " ".join(done.stderr.split())  # folded to 80
    assert t("cli.usage.see_help", prog="qrpos reverse", message="").split()[-1] in done.stderr
    assert not (tmp_path / "state").exists()
