"""`qrpos decode IMAGE... [--json]`: what the kiosk would read from image files.

With --json, one JSON object per image and line::

    {"file": "a.png", "tokens": ["vqr_..."], "refused": [...], "error": null}

`tokens` holds every `vqr_` token found, exactly as read (JSON escapes, nothing stripped
or normalised). `refused` holds every other code: ``{"code", "reason", "text", "hex"}``
where `text` is the exact content when it is valid UTF-8 and null when it is not, and
`hex` is always the raw bytes, so invalid UTF-8 is reported, not repaired. `error` says
why a file could not be read.

Exit codes: 0 every image held at least one token, 2 some image held none, 1 some file
could not be read (the other files are still decoded).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from qrpos.cli.common import EXIT_LOCAL_ERROR, EXIT_OK, EXIT_REFUSED, fail
from qrpos.present.i18n import t
from qrpos.present.outcome import refusal_words
from qrpos.present.words import words
from qrpos.said import Said, say
from qrpos.scanner import (
    DECODER_NAMES,
    DecoderUnavailable,
    ScannedToken,
    classify,
    make_decoder,
    shorten,
)
from qrpos.scanner.replay import ImageUnreadable, image_files, read_image


def register(sub: Any) -> None:
    """Add `qrpos decode` to the command line."""
    p: argparse.ArgumentParser = sub.add_parser(
        "decode",
        help=t("help.decode.summary"),
        description=(t("help.decode.about")),
    )
    p.add_argument("images", nargs="+", type=Path, metavar="IMAGE", help=t("help.decode.images"))
    p.add_argument("--json", action="store_true", help=t("help.decode.json"))
    p.add_argument("--decoder", choices=DECODER_NAMES, help=t("help.decode.decoder"))
    p.set_defaults(func=run)


def decode_file(path: Path, decoder: Any) -> tuple[dict[str, Any], Said | None]:
    """The report for one image: tokens, refused codes, or the error reading it (in
    English, for `--json`; and as a `Said`, for a person)."""
    report: dict[str, Any] = {"file": str(path), "tokens": [], "refused": [], "error": None}
    said: Said | None = None
    if path.is_dir():
        said = say("image.no_images", "{path} holds no image files", path=str(path))
    else:
        try:
            frame = read_image(path)
        except ImageUnreadable as exc:
            said = exc.said
    if said is not None:
        report["error"] = said.english
        return report, said
    for raw in decoder.decode(frame):
        result = classify(raw)
        if isinstance(result, ScannedToken):
            report["tokens"].append(result.token)
            continue
        try:
            text: str | None = raw.decode("utf-8")
        except UnicodeDecodeError:
            text = None
        report["refused"].append(
            {"code": str(result.code), "reason": result.reason, "text": text, "hex": raw.hex()}
        )
    return report, None


def _human(report: dict[str, Any], error: Said | None) -> str:
    """One image's report in the configured language (`--json` keeps the English)."""
    lines = [f"{report['file']}:"]
    if error is not None:
        lines.append("  " + t("cli.decode.error", error=words(error)))
    # a terminal must not interpret what a QR holds: everything escaped
    lines += ["  " + t("cli.decode.token", token=shorten(tok, 200)) for tok in report["tokens"]]
    lines += [
        "  "
        + t(
            "cli.decode.refused",
            reason=refusal_words(r["code"], r["reason"]),
            text=shorten(bytes.fromhex(r["hex"])),
        )
        for r in report["refused"]
    ]
    if len(lines) == 1:
        lines.append("  " + t("cli.decode.nothing"))
    return "\n".join(lines)


def _expand(paths: list[Path]) -> list[Path]:
    # an empty folder is still reported (as unreadable), never silently skipped
    out: list[Path] = []
    for p in paths:
        out.extend(image_files([p]) or [p])
    return out


def run(args: argparse.Namespace) -> int:
    """Decode each image and print its report; the exit code sums up the worst."""
    try:
        decoder = make_decoder(args.decoder)
    except DecoderUnavailable as exc:
        return fail(exc)
    code = EXIT_OK
    for path in _expand(args.images):
        report, error = decode_file(path, decoder)
        if args.json:
            print(json.dumps(report, ensure_ascii=True))
        else:
            print(_human(report, error))
        if report["error"]:
            code = EXIT_LOCAL_ERROR
        elif not report["tokens"] and code == EXIT_OK:
            code = EXIT_REFUSED
    sys.stdout.flush()
    return code
