"""Decode benchmark: the kiosk's pipeline against plain `pyzbar.decode`, in the same run.

On a generated set of camera-like scenes (segno + OpenCV: sizes, angles, perspective,
blur, glare, low contrast, noise, dark-mode screens) at 640x480 and 1280x720, it prints
per-frame decode time (median, p95) and detection rate (exact bytes read) for:

- kiosk/<engine>: what the scan loop runs: greyscale conversion + `make_decoder()`
  (QR only, inverted codes, raw bytes), for each installed engine;
- baseline: `pyzbar.decode` on the full colour frame (all symbologies, zbar defaults).

    python benchmarks/decode.py            # 150 scenes per size
    python benchmarks/decode.py --quick    # 12 scenes per size (the test suite runs this)

Then the hard set (`scenes.hardscenes`: glare bands, moiré, motion and focus blur,
30-45° tilt, a dim screen, dark mode, a finger, a small far code, cracks, and combinations)
at 640x480, per condition, for the plain pass alone (the decoder before issue 13) and the
kiosk's decoder with its further passes: on the first frame the phone shows up in, with
every pass on that one frame, and within 6 consecutive frames (sensor noise differs) with
the per-frame budget as the scan loop runs it. Detection is exact bytes; a false token is
any other string a decoder returns.

Targets (issue 4): detection >= 98 %, kiosk median <= 1/3 of the baseline's, < 3 ms per
640x480 frame on the development machine. Issue 13: hard set >= 95 %, 0 false tokens,
median <= 3 ms at 640x480.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from pyzbar import pyzbar

from hardset import hard_set_report  # a sibling script in benchmarks/
from qrpos.scanner import DecoderUnavailable, make_decoder, to_grey
from qrpos.scanner.synthetic import Scene, render_scene

SIZES = ((640, 480), (1280, 720))
TOKEN_CHARS = "ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz0123456789-_"


@dataclass
class Result:
    name: str
    size: str
    times_ms: list[float]
    hits: int
    total: int

    @property
    def median(self) -> float:
        return statistics.median(self.times_ms)

    @property
    def p95(self) -> float:
        ordered = sorted(self.times_ms)
        return ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))]

    @property
    def rate(self) -> float:
        return self.hits / self.total


def generated_set(count: int, width: int, height: int, seed: int) -> list[Scene]:
    """`count` realistic scenes: a phone held 10-30 cm from the camera, one token each."""
    rnd = random.Random(seed)
    scenes = []
    for i in range(count):
        fraction = rnd.uniform(0.3, 0.7)
        token = "vqr_" + "".join(rnd.choice(TOKEN_CHARS) for _ in range(rnd.choice((24, 32, 48))))
        scenes.append(
            Scene(
                payloads=(token.encode(),),
                width=width,
                height=height,
                qr_fraction=fraction,
                angle_deg=rnd.uniform(-25, 25),
                tilt=rnd.uniform(0.0, 0.2),
                # defocus scales with the code: a small code is a far one, less blurred
                blur=rnd.choice((0.0, 0.5, 1.0)) * fraction / 0.5,
                glare=rnd.choice((0.0, 0.0, 0.0, 0.4)),
                contrast=rnd.choice((1.0, 1.0, 0.7, 0.45)),
                noise=rnd.uniform(1.0, 8.0),
                dark_mode=rnd.random() < 0.25,
                offset=(rnd.uniform(-0.1, 0.1), rnd.uniform(-0.08, 0.08)),
                seed=seed * 100_000 + i,
            )
        )
    return scenes


def measure(
    name: str,
    size: str,
    frames: list[tuple[bytes, np.ndarray]],
    fn: Callable[[np.ndarray], list[bytes]],
) -> Result:
    fn(frames[0][1])  # warm-up: library loading is not a per-frame cost
    times, hits = [], 0
    for expected, image in frames:
        started = time.perf_counter()
        found = fn(image)
        times.append((time.perf_counter() - started) * 1000.0)
        hits += expected in found
    return Result(name, size, times, hits, len(frames))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a small set, for the test suite")
    parser.add_argument("--count", type=int, help="scenes per frame size (default 150)")
    parser.add_argument("--seed", type=int, default=4)
    parser.add_argument("--hard-count", type=int, help="hard scenes per condition (default 30)")
    parser.add_argument("--hard-only", action="store_true", help="only the hard set")
    args = parser.parse_args(argv)
    count = args.count or (12 if args.quick else 150)
    hard_count = args.hard_count or (3 if args.quick else 30)
    if args.hard_only:
        return hard_set_report(hard_count, quick=args.quick)

    engines = {}
    for engine in ("zxing", "zbar"):
        try:
            engines[engine] = make_decoder(engine)
        except DecoderUnavailable as exc:
            print(f"(skipping {engine}: {exc})")
    default = make_decoder().name

    def baseline(image: np.ndarray) -> list[bytes]:
        return [d.data for d in pyzbar.decode(image)]

    results: list[Result] = []
    for width, height in SIZES:
        size = f"{width}x{height}"
        frames = [
            (s.payloads[0], render_scene(s)) for s in generated_set(count, width, height, args.seed)
        ]
        for engine, decoder in engines.items():
            label = f"kiosk/{engine}" + (" (default)" if engine == default else "")
            results.append(
                measure(label, size, frames, lambda im, d=decoder: d.decode(to_grey(im)))
            )
        results.append(measure("baseline pyzbar.decode", size, frames, baseline))

    print(f"decode benchmark: {count} generated scenes per size, seed {args.seed}")
    head = ("pipeline", "size", "median ms", "p95 ms", "detected", "vs baseline")
    print(f"{head[0]:<26}{head[1]:>10}{head[2]:>11}{head[3]:>9}{head[4]:>10}{head[5]:>13}")
    # only detection decides the exit code: timings on a shared machine are shown, not judged
    detection_ok = True
    for r in results:
        base = next(b for b in results if b.size == r.size and b.name.startswith("baseline"))
        ratio = r.median / base.median
        print(
            f"{r.name:<26}{r.size:>10}{r.median:>11.2f}{r.p95:>9.2f}{r.rate:>9.1%}{ratio:>12.2f}x"
        )
    for r in results:
        if not r.name.endswith("(default)"):
            continue
        base = next(b for b in results if b.size == r.size and b.name.startswith("baseline"))
        ratio = r.median / base.median
        detection_ok &= r.rate >= 0.98
        checks = [
            (f"detection {r.rate:.1%} >= 98%", r.rate >= 0.98),
            (f"median {ratio:.2f}x baseline <= 0.33x", ratio <= 1 / 3),
        ]
        if r.size == "640x480":
            checks.append((f"median {r.median:.2f} ms < 3 ms", r.median < 3.0))
        for text, passed in checks:
            print(f"target {r.size}: {text}: {'met' if passed else 'MISSED'}")
    print()
    hard_ok = hard_set_report(hard_count, quick=args.quick) == 0
    return 0 if (detection_ok or args.quick) and hard_ok else 1


if __name__ == "__main__":
    sys.exit(main())
