"""Motion blur undone: a phone swung into view smears its code along one direction.

A phone moving while the sensor integrates is the code convolved with a short line, the
same line everywhere on the code. zxing-cpp binarizes before it looks for finders, and a
finder smeared over one or two modules no longer has its 1:1:3:1:1 runs, so the engine
never finds the code (the field set's `thumb+motion_blur` and `motion_perspective`
misses). Knowing the line, a Wiener filter takes most of the smear back:

1. **which way** (`motion`): a blurred image has less gradient energy along the motion
   than across it. A QR code's own edges run two ways at right angles and weigh about
   the same, so the direction of least energy in the structure tensor of the frame's
   centre is the motion's;
2. **how far**: the gradient along that direction of a sharp edge blurred by a line of
   length L is a box of width L, so its autocorrelation along the direction is lowest at
   a lag of L (a dip read to a quarter pixel, 2-16 pixels);
3. **undone** (`deblur`): the line's spectrum is a sinc across the direction; the filter
   divides by it where it is well above the noise (`NOISE_TO_SIGNAL`) and gives up where
   it is not, folded with a 3x3 box's spectrum (the deconvolved noise smoothed, as
   `passes.smooth` would, at no cost).

On the field set's tuning half this read every `thumb+motion_blur` scene (35 of 40
before, 38 with every other pass on six frames) and two `motion_perspective` ones; the
estimate's direction is within 12° of the true one on most long smears and poorer on
short ones (3-5 px), where it matters less. numpy's FFT only (the camera path loads no
OpenCV), on the frame's centre up to `DEBLUR_MAX`: sizes of small primes keep the FFT at
about 2 ms here where 480 rows cost twice as much.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

import numpy as np
import numpy.typing as npt

from qrpos.scanner.frames import Frame

#: rows and columns `deblur` takes from the frame's centre, at most (a 640x480 frame
#: keeps its 480 rows and the middle 512 columns: a code is rarely at the very side)
DEBLUR_MAX = (512, 512)
#: side of the centre square the motion is measured on
MEASURE_SIDE = 256
#: the smear lengths `motion` considers (pixels): from what the lens's own blur hides to
#: two modules of a large code
LENGTHS = np.arange(2.0, 16.01, 0.25)
#: the Wiener filter's noise-to-signal ratio: where the line's spectrum is weaker than
#: about its square root, the filter stops amplifying (chosen on the tuning half: 0.01
#: rings on JPEG, 0.1 undoes too little)
NOISE_TO_SIGNAL = 0.03

_F64 = npt.NDArray[np.float64]
_F32 = npt.NDArray[np.float32]


def motion(frame: Frame) -> tuple[float, float]:
    """The smear in `frame`'s centre: its length in pixels and its direction (radians,
    from the x axis towards y, in [0, pi)). A frame with no smear gives some short one."""
    h, w = frame.shape
    side = min(MEASURE_SIDE, h - 2, w - 2)
    if side < 8:
        return float(LENGTHS[0]), 0.0
    top, left = (h - side) // 2 - 1, (w - side) // 2 - 1
    centre = frame[top : top + side + 2, left : left + side + 2].astype(np.float32)
    gx = centre[1:-1, 2:] - centre[1:-1, :-2]
    gy = centre[2:, 1:-1] - centre[:-2, 1:-1]
    jxx, jyy, jxy = float(np.vdot(gx, gx)), float(np.vdot(gy, gy)), float(np.vdot(gx, gy))
    # the direction of most gradient energy, turned a right angle: the motion's
    theta = (0.5 * float(np.arctan2(2.0 * jxy, jxx - jyy)) + np.pi / 2) % np.pi
    along = gx * np.float32(np.cos(theta)) + gy * np.float32(np.sin(theta))
    along -= along.mean()
    spectrum = np.fft.rfft2(along)
    autocorrelation = np.fft.irfft2(spectrum.real**2 + spectrum.imag**2, s=along.shape)
    return float(LENGTHS[int(np.argmin(_along(autocorrelation, theta)))]), theta


def _along(periodic: _F64, theta: float) -> _F64:
    """`periodic` (wrapping around) at each of `LENGTHS` from the origin towards `theta`,
    bilinear between its pixels."""
    xs, ys = LENGTHS * np.cos(theta), LENGTHS * np.sin(theta)
    x0, y0 = np.floor(xs).astype(np.intp), np.floor(ys).astype(np.intp)
    fx, fy = xs - x0, ys - y0
    h, w = periodic.shape

    def at(y: npt.NDArray[np.intp], x: npt.NDArray[np.intp]) -> _F64:
        picked: _F64 = periodic[y % h, x % w]
        return picked

    out: _F64 = (at(y0, x0) * (1 - fx) + at(y0, x0 + 1) * fx) * (1 - fy)
    out += (at(y0 + 1, x0) * (1 - fx) + at(y0 + 1, x0 + 1) * fx) * fy
    return out


@lru_cache(maxsize=4)
def _spectrum_grid(h: int, w: int) -> tuple[_F64, _F64, _F64]:
    """Frequencies (cycles a pixel) of an (h, w) real FFT's rows and columns, and the
    spectrum of a 3x3 box over them (read-only: shared between calls)."""
    fy: _F64 = np.fft.fftfreq(h, 1.0)[:, None]
    fx: _F64 = np.fft.rfftfreq(w, 1.0)[None, :]
    box: _F64 = ((1 + 2 * np.cos(2 * np.pi * fy)) / 3) * ((1 + 2 * np.cos(2 * np.pi * fx)) / 3)
    for a in (fy, fx, box):
        a.flags.writeable = False
    return fy, fx, box


def _centre(shape: tuple[int, ...]) -> tuple[int, int, int, int]:
    """Top, left, height and width of the part of a frame `deblur` takes."""
    h, w = shape[0], shape[1]
    ch, cw = min(h, DEBLUR_MAX[0]), min(w, DEBLUR_MAX[1])
    return (h - ch) // 2, (w - cw) // 2, ch, cw


def deblur(frame: Frame) -> Frame:
    """The frame's centre (`DEBLUR_MAX`) with the smear `motion` measures taken back."""
    top, left, ch, cw = _centre(frame.shape)
    crop = frame[top : top + ch, left : left + cw]
    if min(ch, cw) < 8:
        return np.ascontiguousarray(crop)
    length, theta = motion(crop)
    fy, fx, box = _spectrum_grid(ch, cw)
    line: Any = np.sinc(length * (fx * np.cos(theta) + fy * np.sin(theta)))
    # (1 + NSR) keeps the mean: a flat frame comes back as it was
    gain = line * box * (1 + NOISE_TO_SIGNAL) / (line * line + NOISE_TO_SIGNAL)
    out = np.fft.irfft2(np.fft.rfft2(crop) * gain, s=(ch, cw))
    np.clip(out, 0, 255, out=out)
    return np.ascontiguousarray(out.astype(np.uint8))
