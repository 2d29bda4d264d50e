"""The generated test set's payloads and capture conditions (rendered by conftest.py)."""

from __future__ import annotations

from qrpos.scanner.synthetic import Scene

#: payload edge cases: every one must come back byte for byte
PAYLOADS: dict[str, bytes] = {
    "plain": b"vqr_7fK2mQ9xLp3Rt8Wz",
    "trailing_space": b"vqr_trail ",
    "trailing_newline": b"vqr_newline\n",
    "trailing_crlf": b"vqr_crlf\r\n",
    "leading_space": b" vqr_lead",
    "symbols": b"vqr_a+b/c=d%e~f%20==",
    "long": b"vqr_" + bytes(range(0x30, 0x7B)) * 4,
    "embedded_tab": b"vqr_tab\there\tx",
    "non_ascii_utf8": "vqr_Сайн_байна_уу_ö_✓_€".encode(),
    "terminal_escape": b"vqr_\x1b[2J\x1b]0;x\x07",
    "markup": b"vqr_[bold red]x[/]<b>",
    "url": b"https://example.mn/pay?x=1",
    "foreign_payment": b"00020101021226330014A000000615000101",
    "invalid_utf8": b"vqr_\xff\xfe\xc3",
    "latin1_byte": b"vqr_caf\xe9",
}

#: capture conditions: every decoder must read the plain token under each
CONDITIONS: dict[str, Scene] = {
    "frontal": Scene(),
    "small": Scene(qr_fraction=0.3),
    "large": Scene(qr_fraction=0.8),
    "hd_1280x720": Scene(width=1280, height=720, qr_fraction=0.35),
    "angle_20": Scene(angle_deg=20),
    "angle_45": Scene(angle_deg=45, qr_fraction=0.4),
    "upside_down": Scene(angle_deg=180),
    "perspective": Scene(tilt=0.22, angle_deg=-8),
    "blur": Scene(blur=1.3),
    "glare": Scene(glare=0.55, seed=3),
    "low_contrast": Scene(contrast=0.35),
    "noise": Scene(noise=12),
    "dark_mode": Scene(dark_mode=True),
    "dark_mode_tilted": Scene(dark_mode=True, tilt=0.15, angle_deg=12, blur=0.8),
    "off_centre": Scene(offset=(0.2, 0.1), qr_fraction=0.4),
}


def scene_for(payloads: list[bytes], base: Scene | None = None) -> Scene:
    """`base` (a frontal, mildly tilted phone by default) showing `payloads`."""
    base = base or Scene(tilt=0.08, angle_deg=5, noise=3, blur=0.5)
    return Scene(**{**base.__dict__, "payloads": tuple(payloads)})
