"""`qrpos doctor`'s table: one check's line (name, status, detail, fix) and the table an
installer reads, folded to the console's width in the current language."""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum

from qrpos.present.i18n import t, t_or


class Status(StrEnum):
    """How one check came out."""

    OK = "ok"
    WARN = "warn"
    FAIL = "FAIL"
    SKIP = "skip"


@dataclass(frozen=True)
class Check:
    """One line of the table: what was checked, how it went, and what to do."""

    name: str
    status: Status
    detail: str
    fix: str = ""

    def to_json(self) -> dict[str, str]:
        """The line as a JSON object for `qrpos doctor --json`."""
        return {"check": self.name, "status": str(self.status), "detail": self.detail,
                "fix": self.fix}  # fmt: skip


_COMMAND = re.compile(r"\bqrpos(?: (?:--)?[a-z][a-z-]*)+")
_NBSP = "\u00a0"


def check_name(check: Check) -> str:
    """The check's name in the current language (the JSON keeps the stable name)."""
    return t_or(f"doctor.name.{check.name}", check.name)


def render_table(checks: list[Check], columns: int = 80) -> str:
    """The installer's table in the current language: check, result, detail, and the fix
    under a failed line, each folded under its column to fit `columns` (a Pi's console
    has 80)."""
    import textwrap

    def word(status: Status) -> str:
        return t(f"cli.doctor.status.{status.name.lower()}")

    width = max(len(check_name(c)) for c in checks)
    status_width = max(len(word(s)) for s in Status)
    hang = " " * (width + status_width + 4)

    def fold(text: str, first: str) -> list[str]:
        width = max(columns, len(hang) + 20)
        # a command an installer types stays on one line when a line can hold it
        whole = _COMMAND.sub(
            lambda m: m[0].replace(" ", _NBSP) if len(m[0]) <= width - len(hang) else m[0],
            text,
        )
        return [
            line.replace(_NBSP, " ")
            for line in textwrap.wrap(
                whole,
                width=width,
                initial_indent=first,
                subsequent_indent=hang,
                break_long_words=False,
                break_on_hyphens=False,
            )
        ] or [first.rstrip()]

    lines = []
    for c in checks:
        lines += fold(c.detail, f"{check_name(c):<{width}}  {word(c.status):<{status_width}}  ")
        if c.fix and c.status in (Status.FAIL, Status.WARN, Status.SKIP):
            lines += fold(t("cli.doctor.fix", fix=c.fix), hang)
    return "\n".join(lines)
