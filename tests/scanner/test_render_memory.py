"""The virtual phone renders its frames on the kiosk (the demo): a 640x480 frame must not
cost a dozen frame-sized float buffers at once. tracemalloc sees numpy's buffers."""

from __future__ import annotations

from qrpos.scanner.synthetic import Scene, render_grey

from .traced import traced_peak

#: one 640x480 float32 buffer
FRAME_F32 = 640 * 480 * 4
#: the rendering's peak, in such buffers: 11.3 before the in-place blend, blur and glare
#: and the narrower warp strips, 6.1 after (2026-11-26; the frames are bit for bit the same)
PEAK_BUFFERS = 7.0


def test_rendering_a_phone_frame_keeps_its_temporaries_few() -> None:
    scene = Scene(
        payloads=[b"vqr_" + b"A" * 40],
        width=640,
        height=480,
        qr_fraction=0.5,
        angle_deg=-3.0,
        tilt=0.08,
        blur=0.6,
        noise=3.0,
        glare=0.2,
        seed=1,
    )
    render_grey(scene)  # numpy's first-use caches are not the rendering's
    frame, peak = traced_peak(lambda: render_grey(scene))
    assert frame.shape == (480, 640)
    assert peak / FRAME_F32 < PEAK_BUFFERS, f"peak {peak / FRAME_F32:.1f} frame buffers"
