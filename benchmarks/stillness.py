"""How still are the phones in front of this camera? The frame stack, on recorded frames.

    python benchmarks/stillness.py FOLDER [FOLDER ...]   # consecutive frames, in name order
    python benchmarks/stillness.py --synthetic           # the field set's still and hand-held
                                                         # phones (what the test suite runs)

The decoder's further passes read the mean of the recent frames of the phone in view
(`qrpos.scanner.stack`: each tile of a new frame moved onto the mean by its own shift,
refused where it then differs beyond the sensor's noise). What that is worth in a shop
depends on how phones move there (on the counter or a stand, held up in a hand) and on
whether the tiles follow them. Record a few seconds of frames on the till (a Pi camera:
`rpicam-still --timelapse 33 -t 5000 -o f%04d.jpg`; a USB webcam: `ffmpeg -f v4l2 -i
/dev/video0 -t 5 f%04d.png`), of a phone held up and of one lying still, one folder each,
and run this on the folders: it prints, per folder, how many frames went into the mean on
each frame (what most of its tiles hold), and the share of frames whose mean had 2 frames
or more (the share the stack can help on).
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from collections.abc import Iterable
from pathlib import Path

from qrpos.scanner.frames import Frame
from qrpos.scanner.stack import DEPTH, FrameStack


def stack_sizes(frames: Iterable[Frame]) -> list[int]:
    """How many frames the stack's mean was of, on each frame in turn."""
    stack = FrameStack()
    sizes = []
    for frame in frames:
        stack.add(frame)
        sizes.append(len(stack))
    return sizes


def report(name: str, sizes: list[int]) -> None:
    counts = Counter(sizes)
    share = sum(n for size, n in counts.items() if size >= 2) / max(1, len(sizes))
    spread = " ".join(f"{size}:{counts.get(size, 0)}" for size in range(1, DEPTH + 1))
    print(
        f"{name:<40} {len(sizes):>6} frames   averaged {share:6.1%}   frames in the mean {spread}"
    )


def _synthetic(count: int) -> list[tuple[str, list[int]]]:
    from scenes.fieldscenes import field_set, render_field

    scenes = field_set(count, half="tune")
    still: list[int] = []
    hand: list[int] = []
    for scene in scenes:
        still += stack_sizes(render_field(scene.at_frame(i)) for i in range(6))
        hand += stack_sizes(render_field(scene.in_hand(i)) for i in range(6))
    return [("field set, phone held still", still), ("field set, phone in a hand", hand)]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folders", nargs="*", type=Path, help="folders of consecutive frames")
    parser.add_argument(
        "--synthetic",
        action="store_true",
        help="the field set's still and hand-held phones instead of recorded frames",
    )
    parser.add_argument("--count", type=int, default=2, help="synthetic scenes per condition")
    args = parser.parse_args(argv)
    if not args.folders and not args.synthetic:
        parser.error("name a folder of recorded frames, or --synthetic")
    rows: list[tuple[str, list[int]]] = _synthetic(args.count) if args.synthetic else []
    if args.folders:
        from qrpos.scanner.replay import image_files, read_image

        for folder in args.folders:
            files = image_files([folder])
            if not files:
                print(f"{folder}: no images", file=sys.stderr)
                return 1
            rows.append((str(folder), stack_sizes(read_image(f) for f in files)))
    for name, sizes in rows:
        report(name, sizes)
    return 0


if __name__ == "__main__":
    sys.exit(main())
