"""The pictures the goldens hold: every state of the customer's view, by name."""

from __future__ import annotations

from PIL import Image

from qrpos.peripherals.customer_picture import draw_view
from qrpos.present.customer import REASON_OUTCOMES, VIEW_KINDS, CustomerView, preview_view
from qrpos.scanner.synthetic import Scene, render_grey

SIZES = ((800, 480), (1920, 1080))
LANGUAGES = ("mn", "en")


def picture_states() -> dict[str, tuple[CustomerView, bool]]:
    """name -> (the view, with the camera beside it) for every kind the display shows,
    each not-paid reason apart, and the amount with the live camera view (in the current
    language: call it after choosing one)."""
    states: dict[str, tuple[CustomerView, bool]] = {}
    for kind in VIEW_KINDS:
        if kind == "not_paid":
            for reason in REASON_OUTCOMES:
                states[f"not_paid_{reason}"] = (preview_view(kind, reason=reason), False)
        else:
            states[kind] = (
                preview_view(kind, shop="Цайны газар №3" if kind == "idle" else ""),
                False,
            )
    states["pay_camera"] = (preview_view("pay"), True)
    return states


def synthetic_camera() -> Image.Image:
    """A camera frame of a phone showing a wallet pass (the demo's virtual phone's scene,
    without noise: the same pixels on every machine)."""
    scene = Scene(payloads=(b"vqr_DEMO0123456789abcdefABCDEF",), noise=0.0, seed=7, angle_deg=4.0)
    return Image.fromarray(render_grey(scene))


def draw(name: str, size: tuple[int, int]) -> Image.Image:
    """The golden's picture `name` at `size` in the current language."""
    view, camera = picture_states()[name]
    return draw_view(view, size, synthetic_camera() if camera else None)
