"""The generated test set: QR scenes made with segno and OpenCV, rendered once per session."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import cv2
import pytest

from qrpos.scanner import make_decoder
from qrpos.scanner.decoders import DECODER_NAMES, Decoder
from qrpos.scanner.frames import Frame, to_grey
from qrpos.scanner.synthetic import Scene, render_scene


@pytest.fixture(scope="session")
def scene_file(tmp_path_factory: pytest.TempPathFactory) -> Callable[[Scene], Path]:
    """Render a scene to a PNG once per session and return its path."""
    folder = tmp_path_factory.mktemp("qr-scenes")
    cache: dict[Scene, Path] = {}

    def render(scene: Scene) -> Path:
        if scene not in cache:
            path = folder / f"scene{len(cache):03d}.png"
            assert cv2.imwrite(str(path), render_scene(scene))
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
