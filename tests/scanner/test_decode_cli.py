"""`qrpos decode IMAGE... --json` prints the exact strings, per image, for each decoder."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from qrpos.scanner.decoders import DECODER_NAMES
from qrpos.scanner.synthetic import Scene

from .qrset import PAYLOADS, scene_for
from .test_tokens import ACCEPTED, REFUSED


def _qrpos(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "qrpos.cli", *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


@pytest.fixture(scope="module")
def payload_images(scene_file: Callable[[Scene], Path]) -> dict[str, Path]:
    return {case: scene_file(scene_for([raw])) for case, raw in PAYLOADS.items()}


@pytest.mark.parametrize("decoder_name", DECODER_NAMES)
def test_decode_json_prints_exact_tokens_and_reports_refusals(
    payload_images: dict[str, Path], decoder_name: str
) -> None:
    cases = sorted(payload_images)
    done = _qrpos(
        "decode", "--json", "--decoder", decoder_name, *(str(payload_images[c]) for c in cases)
    )
    assert done.returncode == 2, done.stderr  # some images hold no token
    lines = done.stdout.splitlines()
    assert len(lines) == len(cases)
    for case, line in zip(cases, lines, strict=True):
        report = json.loads(line)
        raw = PAYLOADS[case]
        assert report["file"] == str(payload_images[case])
        assert report["error"] is None
        if case in ACCEPTED:
            assert report["tokens"] == [raw.decode("utf-8")], case
            assert report["refused"] == []
        else:
            assert report["tokens"] == []
            (refused,) = report["refused"]
            assert refused["code"] == REFUSED[case]
            assert bytes.fromhex(refused["hex"]) == raw
            # invalid UTF-8 is reported as null text plus the raw hex, never repaired
            expected_text = None if REFUSED[case] == "invalid_utf8" else raw.decode("utf-8")
            assert refused["text"] == expected_text


def test_decode_exits_0_when_every_image_holds_a_token(payload_images: dict[str, Path]) -> None:
    done = _qrpos("decode", "--json", str(payload_images["trailing_newline"]))
    assert done.returncode == 0
    assert json.loads(done.stdout)["tokens"] == ["vqr_newline\n"]


def test_decode_reports_an_unreadable_file_and_still_decodes_the_rest(
    payload_images: dict[str, Path], tmp_path: Path
) -> None:
    bogus = tmp_path / "notes.png"
    bogus.write_text("not an image")
    done = _qrpos("decode", "--json", str(bogus), str(payload_images["plain"]))
    assert done.returncode == 1
    first, second = (json.loads(line) for line in done.stdout.splitlines())
    assert "not an image" in first["error"] and first["tokens"] == []
    assert second["tokens"] == [PAYLOADS["plain"].decode()]
    assert "Traceback" not in done.stderr


def test_decode_without_json_escapes_what_the_code_holds(payload_images: dict[str, Path]) -> None:
    done = _qrpos("decode", str(payload_images["terminal_escape"]))
    assert done.returncode == 0
    assert "\x1b" not in done.stdout
    assert "vqr_\\x1b[2J" in done.stdout
