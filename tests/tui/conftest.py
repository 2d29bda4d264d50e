"""Fixtures of the kiosk tests (the harness itself is in kiosk_harness.py)."""

from kiosk_harness import kiosk

__all__ = ["kiosk"]
