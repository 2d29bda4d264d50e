"""The shop owner's screens: history, reversal (PIN-protected), end of day.

`menu.OwnerMenuScreen(services)` is the entry point the kiosk pushes; each screen it opens
is given an `OwnerContext` (services, history cache, PIN gate, VAT follow-up) and never
knows the menu. The words are `qrpos.present.owner`'s, shared with the CLI.
"""
