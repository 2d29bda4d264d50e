"""The generated test set: QR scenes made with segno and OpenCV, rendered once per run.

A scene is rendered once however many pytest-xdist workers run the suite: its PNG is
kept in a folder every worker of this run shares, named by the scene's own repr, and
written under a file lock (the first worker to need it renders it, the others read it).
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import cv2
import pytest

from qrpos.scanner import make_decoder
from qrpos.scanner.decoders import DECODER_NAMES, Decoder
from qrpos.scanner.frames import Frame, to_grey
from qrpos.scanner.synthetic import Scene, render_scene

#: the scene generators live beside the benchmarks (benchmarks/scenes), not in the wheel
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))


def shared_folder(tmp_path_factory: pytest.TempPathFactory, name: str) -> Path:
    """A folder of this run that every xdist worker sees (a worker's own base temp is
    one level below the run's); without xdist, a folder of the session's own."""
    if os.environ.get("PYTEST_XDIST_WORKER"):
        folder = tmp_path_factory.getbasetemp().parent / name
        folder.mkdir(exist_ok=True)
        return folder
    return tmp_path_factory.mktemp(name)


@contextmanager
def locked(path: Path) -> Iterator[None]:
    """Hold an exclusive lock on `path` (made if missing) for the block's length."""
    with path.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


@pytest.fixture(scope="session")
def scene_file(tmp_path_factory: pytest.TempPathFactory) -> Callable[[Scene], Path]:
    """Render a scene to a PNG once per run and return its path."""
    folder = shared_folder(tmp_path_factory, "qr-scenes")
    cache: dict[Scene, Path] = {}

    def render(scene: Scene) -> Path:
        if scene not in cache:
            # the repr holds every field (payloads as bytes, floats exactly): two scenes
            # share a name only if they are the same scene
            name = hashlib.sha256(repr(scene).encode()).hexdigest()[:24]
            path = folder / f"scene-{name}.png"
            with locked(folder / f"scene-{name}.lock"):
                if not path.exists():
                    # written aside and renamed: a reader never sees half a PNG
                    part = folder / f"scene-{name}.part.png"
                    assert cv2.imwrite(str(part), render_scene(scene))
                    part.replace(path)
            cache[scene] = path
        return cache[scene]

    return render


@pytest.fixture(scope="session")
def scene_frame(scene_file: Callable[[Scene], Path]) -> Callable[[Scene], Frame]:
    """The greyscale frame of a scene, as read back from its PNG (what replay sees)."""
    cache: dict[Scene, Frame] = {}

    def frame(scene: Scene) -> Frame:
        if scene not in cache:
            image = cv2.imread(str(scene_file(scene)))
            assert image is not None, scene_file(scene)  # OpenCV 4.10+ says it may be None
            cache[scene] = to_grey(image)
        return cache[scene]

    return frame


@pytest.fixture(scope="session", params=DECODER_NAMES)
def decoder(request: pytest.FixtureRequest) -> Decoder:
    """Each decoder in turn."""
    return make_decoder(str(request.param))
