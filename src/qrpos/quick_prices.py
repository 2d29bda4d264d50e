"""Quick prices: up to nine amounts the owner sets up (a canteen's set menus), each
charged by one key on the amount screen (F3 to F11).

They live in the state dir (`quick-prices.json`), replaced atomically with
`write_private`, so a power cut leaves the old list or the new one. A missing file means
no quick prices; a damaged one is reported (`QuickPriceError`) and read as none by the
kiosk, which never charges a price it cannot read whole.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from pathlib import Path

from qrpos import spec
from qrpos.errors import QrposError
from qrpos.said import Said, os_reason, say
from qrpos.statedir import write_private

PRICES_FILE = "quick-prices.json"
#: slots 1..SLOTS; slot n is charged by the key F(n + 2)
SLOTS = 9
#: a label is what fits beside the amount on the amount screen's price list
LABEL_MAX = 16
#: the mode of the prices file: not a secret, readable by the owner's tools
PRICES_MODE = 0o644

log = logging.getLogger("qrpos.prices")


class QuickPriceError(QrposError, ValueError):
    """A quick price cannot be set or read; the message says why."""


@dataclass(frozen=True)
class QuickPrice:
    """One set-up price: its slot (1..9), its amount in ₮ and a short label."""

    slot: int
    amount: int
    label: str = ""

    @property
    def key(self) -> str:
        """The key that charges it, as printed on screen and in the README."""
        return key_of(self.slot)


def key_of(slot: int) -> str:
    """The function key of `slot` (1 → "F3" … 9 → "F11")."""
    return f"F{slot + 2}"


def slot_of_key(key: str) -> int | None:
    """The slot a Textual key name charges ("f3" → 1 … "f11" → 9), or None."""
    if len(key) < 2 or key[0] != "f" or not key[1:].isdigit():
        return None
    slot = int(key[1:]) - 2
    return slot if 1 <= slot <= SLOTS else None


def checked(slot: int, amount: int, label: str = "") -> QuickPrice:
    """`QuickPrice(slot, amount, label)` when each part is acceptable, else QuickPriceError."""
    if not 1 <= slot <= SLOTS:
        raise QuickPriceError(
            say(
                "prices.slot_range",
                "a quick price's slot is 1 to {high}, not {slot}",
                high=SLOTS,
                slot=slot,
            )
        )
    if not spec.AMOUNT_MIN_MNT <= amount <= spec.AMOUNT_MAX_MNT:
        raise QuickPriceError(
            say(
                "prices.amount_range",
                "a price is {amount_min} to {amount_max}, not {amount}",
                amount_min=spec.AMOUNT_MIN_MNT,
                amount_max=spec.AMOUNT_MAX_MNT,
                amount=amount,
            )
        )
    label = " ".join(label.split())
    if len(label) > LABEL_MAX or not label.isprintable():
        raise QuickPriceError(
            say(
                "prices.label_long",
                "a label is at most {count} printable characters",
                count=LABEL_MAX,
            )
        )
    return QuickPrice(slot, amount, label)


def _damaged(path: Path, detail: str) -> Said:
    """The file is there but not whole (the detail stays in the log's English)."""
    return say(
        "prices.damaged",
        "the quick prices in {path} are damaged ({detail})",
        path=str(path),
        detail=Said.plain(detail),
    )


def load_prices(state_dir: Path) -> dict[int, QuickPrice]:
    """The prices set up on this kiosk, by slot ({} when none). Raises QuickPriceError
    when the file exists but cannot be read whole."""
    path = state_dir / PRICES_FILE
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except OSError as exc:  # the reason in words, not "[Errno 13] …"
        raise QuickPriceError(
            say(
                "prices.cannot_read",
                "the quick prices in {path} cannot be read: {why}",
                path=str(path),
                why=os_reason(exc),
            )
        ) from exc
    except ValueError as exc:
        raise QuickPriceError(_damaged(path, "not JSON")) from exc
    try:
        if not isinstance(data, dict) or not isinstance(data.get("prices"), list):
            raise ValueError("no price list")
        prices: dict[int, QuickPrice] = {}
        for entry in data["prices"]:
            slot, amount, label = entry["slot"], entry["amount"], entry.get("label", "")
            if not all(type(n) is int for n in (slot, amount)) or not isinstance(label, str):
                raise ValueError(f"a price of the wrong type: {entry!r}")
            if slot in prices:
                raise ValueError(f"slot {slot} twice")
            prices[slot] = checked(slot, amount, label)
    except (ValueError, KeyError, TypeError) as exc:  # QuickPriceError too
        raise QuickPriceError(_damaged(path, str(exc))) from exc
    return prices


def save_prices(state_dir: Path, prices: dict[int, QuickPrice]) -> None:
    """Replace the kiosk's quick prices with `prices` (atomically)."""
    entries = [
        {"slot": p.slot, "amount": p.amount, "label": p.label}
        for p in sorted(prices.values(), key=lambda p: p.slot)
    ]
    body = json.dumps({"prices": entries}, ensure_ascii=False, indent=1) + "\n"
    write_private(state_dir, PRICES_FILE, body.encode("utf-8"), mode=PRICES_MODE)
    log.info("quick prices saved: %d set", len(entries))


def set_price(state_dir: Path, slot: int, amount: int, label: str = "") -> QuickPrice:
    """Set up slot `slot` (replacing what it held); returns the stored price."""
    price = checked(slot, amount, label)
    prices = load_prices(state_dir)
    prices[slot] = price
    save_prices(state_dir, prices)
    return price


def clear_price(state_dir: Path, slot: int) -> bool:
    """Empty slot `slot`; True when it held a price."""
    prices = load_prices(state_dir)
    held = prices.pop(slot, None) is not None
    if held:
        save_prices(state_dir, prices)
    return held


class QuickPriceBook:
    """The kiosk's view of its quick prices: read again only when the file changed (one
    `stat` per look, so `qrpos prices set` reaches a running kiosk at its next amount
    screen). A file that cannot be read counts as no prices, logged once per change."""

    def __init__(self, state_dir: Path) -> None:
        self.state_dir = state_dir
        self._prices: dict[int, QuickPrice] = {}
        self._seen: tuple[int, int] | None = None
        #: why the prices could not be read, or None
        self.problem: str | None = None

    def _stamp(self) -> tuple[int, int]:
        try:
            st = (self.state_dir / PRICES_FILE).stat()
        except OSError:
            return (0, -1)
        return (st.st_mtime_ns, st.st_size)

    def prices(self) -> dict[int, QuickPrice]:
        """The prices by slot, as the file holds them now."""
        stamp = self._stamp()
        if stamp != self._seen:
            self._seen = stamp
            try:
                self._prices, self.problem = load_prices(self.state_dir), None
            except QuickPriceError as exc:
                log.error("%s", exc)
                self._prices, self.problem = {}, str(exc)
        return dict(self._prices)

    def set(self, slot: int, amount: int, label: str = "") -> QuickPrice:
        return set_price(self.state_dir, slot, amount, label)

    def clear(self, slot: int) -> bool:
        return clear_price(self.state_dir, slot)
