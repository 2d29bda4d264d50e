"""The USB numeric keypad, read as the cashier means it.

A keypad has digits, Enter, ``+ - * / .`` and NumLock, but no Esc and often no
Backspace, so its spare keys do that work: ``+`` confirms, ``-`` deletes a digit,
``/`` cancels (or clears the amount), ``*`` types ``00`` and ``.`` types ``000``. With
NumLock off the keys arrive as navigation keys; those are mapped back to digits.
"""

from __future__ import annotations

from enum import Enum

from textual import events


class KeypadAction(Enum):
    """What a key press means on the kiosk."""

    DIGITS = "digits"
    DELETE = "delete"
    CLEAR = "clear"
    CONFIRM = "confirm"
    CANCEL = "cancel"


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
}


def keypad_action(event: events.Key) -> tuple[KeypadAction, str] | None:
    """The meaning of `event`, or None for keys the keypad does not have."""
    key = event.key
    if len(key) == 1 and key.isascii() and key.isdigit():
        return KeypadAction.DIGITS, key
    if key in _NUMLOCK_OFF:
        return KeypadAction.DIGITS, _NUMLOCK_OFF[key]
    return _KEYS.get(key)
