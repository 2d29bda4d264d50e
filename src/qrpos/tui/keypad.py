"""The USB numeric keypad, read as the cashier means it.

A keypad has digits, Enter, ``+ - * / .`` and NumLock, but no Esc and often no
Backspace, so its spare keys do that work: ``+`` confirms, ``-`` deletes a digit,
``/`` cancels (or clears the amount), ``*`` types ``00`` and ``.`` types ``000``. With
NumLock off the keys arrive as navigation keys; those are mapped back to digits.

A keyboard (or a programmable POS keypad) adds the quick prices: F3 to F11 charge the
owner's set prices 1 to 9, F12 the last amount again.
"""

from __future__ import annotations

from enum import Enum

from textual import events

from qrpos.quick_prices import slot_of_key


class KeypadAction(Enum):
    """What a key press means on the kiosk."""

    DIGITS = "digits"
    DELETE = "delete"
    CLEAR = "clear"
    CONFIRM = "confirm"
    CANCEL = "cancel"
    #: one of the owner's quick prices (the slot, "1".."9", in the action's text)
    QUICK = "quick"
    #: the last amount again
    REPEAT = "repeat"


#: the actions that start an amount: typed on a result, they begin the next sale
STARTS_AMOUNT = frozenset({KeypadAction.DIGITS, KeypadAction.QUICK, KeypadAction.REPEAT})


_NUMLOCK_OFF = {
    "insert": "0",
    "end": "1",
    "down": "2",
    "pagedown": "3",
    "left": "4",
    "right": "6",
    "home": "7",
    "up": "8",
    "pageup": "9",
}

_KEYS: dict[str, tuple[KeypadAction, str]] = {
    "enter": (KeypadAction.CONFIRM, ""),
    "plus": (KeypadAction.CONFIRM, ""),
    "backspace": (KeypadAction.DELETE, ""),
    "minus": (KeypadAction.DELETE, ""),
    "delete": (KeypadAction.CLEAR, ""),
    "escape": (KeypadAction.CANCEL, ""),
    "slash": (KeypadAction.CANCEL, ""),
    "asterisk": (KeypadAction.DIGITS, "00"),
    "full_stop": (KeypadAction.DIGITS, "000"),
    "comma": (KeypadAction.DIGITS, "000"),
    "f12": (KeypadAction.REPEAT, ""),
}


def keypad_action(event: events.Key) -> tuple[KeypadAction, str] | None:
    """The meaning of `event`, or None for keys the keypad does not have."""
    key = event.key
    if len(key) == 1 and key.isascii() and key.isdigit():
        return KeypadAction.DIGITS, key
    if key in _NUMLOCK_OFF:
        return KeypadAction.DIGITS, _NUMLOCK_OFF[key]
    slot = slot_of_key(key)
    if slot is not None:
        return KeypadAction.QUICK, str(slot)
    return _KEYS.get(key)
