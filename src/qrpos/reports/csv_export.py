"""The day's transactions as a CSV file, written while they stream in.

Written to a temporary file beside the target and renamed into place only when
complete (after an fsync of the file, and of its directory once renamed: the target is
often a USB stick pulled out soon after), so a failed export never leaves a half file
under the chosen name.
"""

from __future__ import annotations

import contextlib
import csv
import os
from collections.abc import Iterable
from pathlib import Path
from types import TracebackType
from typing import IO, Any

from qrpos.errors import QrposError
from qrpos.reports.localday import to_local
from qrpos.said import os_reason, say
from qrpos.service.models import Transaction
from qrpos.statedir import fsync_dir

COLUMNS = (
    "localTime",
    "id",
    "amountMNT",
    "status",
    "vatStatus",
    "vatReceiptID",
    "createdAt",
)


class ExportError(QrposError):
    """The CSV cannot be written; the message names the path and why."""


def spreadsheet_safe(value: Any) -> Any:
    """A text cell a spreadsheet would run as a formula (=, +, -, @, or a tab or carriage
    return before one) is written with a leading apostrophe; numbers stay numbers. Cells
    come from the service and from report files: neither is trusted to be plain text."""
    if isinstance(value, str) and value[:1] in ("=", "+", "-", "@", "\t", "\r"):
        return "'" + value
    return value


def _describe(path: Path, exc: OSError) -> ExportError:
    why = os_reason(exc)
    return ExportError(
        say("export.cannot_write", "cannot write {path}: {why}", path=str(path), why=why)
    )


class CsvExport:
    """A context manager: `write(tx)` per row, `finish(totals)` to append totals and
    publish; leaving the block without `finish` (an error) removes the partial file."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._tmp = path.with_name(f".{path.name}.partial")
        self._fh: IO[str] | None = None
        self._writer: csv.DictWriter[str] | None = None
        self.rows = 0

    def __enter__(self) -> CsvExport:
        if self.path.is_dir():
            raise ExportError(
                say(
                    "export.is_dir",
                    "{path} is a directory; name a file to write",
                    path=str(self.path),
                )
            )
        try:
            self._fh = self._tmp.open("w", encoding="utf-8", newline="")
        except OSError as exc:
            raise _describe(self.path, exc) from None
        self._writer = csv.DictWriter(self._fh, fieldnames=COLUMNS)
        self._writer.writeheader()
        return self

    def write(self, tx: Transaction) -> None:
        """Append one transaction."""
        assert self._writer is not None
        row = {
            "localTime": to_local(tx.created_at).strftime("%Y-%m-%d %H:%M:%S"),
            "id": spreadsheet_safe(tx.id),
            "amountMNT": tx.amount_mnt,
            "status": tx.status.value,
            "vatStatus": tx.vat_status.value if tx.vat_status else "",
            "vatReceiptID": spreadsheet_safe(tx.vat_receipt_id),
            "createdAt": spreadsheet_safe(tx.created_at_text),
        }
        try:
            self._writer.writerow(row)
        except OSError as exc:
            raise _describe(self.path, exc) from None
        self.rows += 1

    def finish(self, totals: Iterable[tuple[str, object]]) -> Path:
        """Append the day's totals (name, value rows) after a blank line, then publish."""
        assert self._fh is not None
        fh = self._fh
        out = csv.writer(fh)
        out.writerow([])
        out.writerows([spreadsheet_safe(cell) for cell in row] for row in totals)
        try:
            fh.flush()
            os.fsync(fh.fileno())
            fh.close()
            self._fh = None
            self._tmp.replace(self.path)
            fsync_dir(self.path.parent)  # the rename too: else a cut may bring none back
        except OSError as exc:
            raise _describe(self.path, exc) from None
        return self.path

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._fh is not None:
            self._fh.close()
            self._fh = None
            with contextlib.suppress(OSError):
                self._tmp.unlink()
