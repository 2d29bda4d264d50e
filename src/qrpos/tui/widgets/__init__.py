"""Widgets of the kiosk: they render state and post messages, never do I/O."""
