"""qrpos: a Raspberry Pi point-of-sale kiosk that charges meal-benefit wallets by QR code."""

__version__ = "0.1.0"
