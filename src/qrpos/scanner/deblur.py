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
3. **undone** (`deblur`): the line's spectrum is a sinc of the frequency along it; the filter
   divides by it where it is well above the noise (`NOISE_TO_SIGNAL`) and gives up where
   it is not, folded with a 3x3 box's spectrum (the deconvolved noise smoothed, as
   `passes.smooth` would, at no cost).

On the field set's tuning half (2026-11-26), with the pass in the order searched for it:
`thumb+motion_blur` within 6 frames 95 -> 100 % for a still phone, 92.5 -> 100 % in a hand;
every pass on the first frame 94.6 -> 95.4 % over the half. The direction comes out within
about 15° of the drawn smear's on lengths of 7-12 px (tests), poorer on the 3-5 px smears
of a phone swung in tilted, where deblurring seldom reads what the other passes miss.
numpy's FFT only (the camera path loads no OpenCV), on the frame's centre up to
`DEBLUR_MAX`, done a band at a time: about 4 ms and 4 MB at its peak here.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from qrpos.scanner.frames import Frame
from qrpos.scanner.pixels import centre_box

#: rows and columns `deblur` takes from the frame's centre, at most (a 640x480 frame
#: keeps its 480 rows and the middle 512 columns: a code is rarely at the very side)
DEBLUR_MAX = (512, 512)
#: side of the centre square the motion is measured on
MEASURE_SIDE = 256
#: the smear lengths `motion` considers (pixels): from what the lens's own blur hides to
#: two modules of a large code
LENGTHS = np.arange(2.0, 16.01, 0.25)
#: the Wiener filter's noise-to-signal ratio: where the line's spectrum is weaker than
#: about its square root, the filter stops amplifying (the field set's tuning half within
#: 6 frames: 0.01 and 0.03 read alike, give or take a scene; 0.1 read fewer still phones)
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
    top, left, _, _ = centre_box(frame.shape, (side + 2, side + 2))  # a pixel around it
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


#: rows and columns of the spectrum `deblur` transforms at a time: its scratch stays a few
#: hundred kilobytes beside the one spectrum it keeps (complex64, about 1 MB at 480x512);
#: the whole-array FFT took 12 MB at its peak, more than any other pass
_CHUNK = 64


def _gain(fy: _F64, fx: _F64, length: float, theta: float) -> _F64:
    """The filter over these frequencies (cycles a pixel): the line's spectrum divided out
    where it stands above the noise, times a 3x3 box's spectrum. (1 + NSR) keeps the mean:
    a flat frame comes back as it was."""
    line: Any = np.sinc(length * (fx * np.cos(theta) + fy * np.sin(theta)))
    box = ((1 + 2 * np.cos(2 * np.pi * fy)) / 3) * ((1 + 2 * np.cos(2 * np.pi * fx)) / 3)
    gain: _F64 = line * box * (1 + NOISE_TO_SIGNAL) / (line * line + NOISE_TO_SIGNAL)
    return gain


def deblur(frame: Frame) -> Frame:
    """The frame's centre (`DEBLUR_MAX`) with the smear `motion` measures taken back.

    The 2-D FFT is done by hand, a band at a time (rows, then columns: forward, filtered
    and back, then rows), into one complex64 spectrum, so the pass's memory is that
    spectrum and a band, not numpy's whole-array temporaries."""
    top, left, ch, cw = centre_box(frame.shape, DEBLUR_MAX)
    crop = frame[top : top + ch, left : left + cw]
    if min(ch, cw) < 8:
        return np.ascontiguousarray(crop)
    length, theta = motion(crop)
    spectrum = np.empty((ch, cw // 2 + 1), np.complex64)
    for r in range(0, ch, _CHUNK):
        spectrum[r : r + _CHUNK] = np.fft.rfft(crop[r : r + _CHUNK], axis=1)
    # float64 already (no copy); numpy 2's stubs say only "floating"
    fy = np.fft.fftfreq(ch, 1.0).astype(np.float64, copy=False)[:, None]
    fx_all = np.fft.rfftfreq(cw, 1.0).astype(np.float64, copy=False)
    for c in range(0, spectrum.shape[1], _CHUNK):
        band = np.fft.fft(spectrum[:, c : c + _CHUNK], axis=0)
        band *= _gain(fy, fx_all[None, c : c + _CHUNK], length, theta)
        spectrum[:, c : c + _CHUNK] = np.fft.ifft(band, axis=0)
    out = np.empty((ch, cw), np.uint8)
    for r in range(0, ch, _CHUNK):
        rows = np.fft.irfft(spectrum[r : r + _CHUNK], n=cw, axis=1)
        rows += 0.5
        np.clip(rows, 0, 255, out=rows)
        out[r : r + _CHUNK] = rows
    return out
