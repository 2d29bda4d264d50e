"""The Textual kiosk app. The only package that may import Textual.

Kept free of imports so that `qrpos.present.i18n` and friends load without Textual.
"""
