"""Frame sources, byte-exact QR decoders, token rules and the scan loop.

Nothing here imports picamera2 until the Pi camera is chosen, and nothing imports
Textual: events come from worker threads and the UI marshals them itself.
"""

from qrpos.scanner.decoders import (
    DECODER_NAMES,
    DEFAULT_DECODER,
    Decoder,
    DecoderUnavailable,
    ZbarDecoder,
    ZxingDecoder,
    make_decoder,
)
from qrpos.scanner.events import ScanEvent, ScanRefused, ScanStats, TokenRead
from qrpos.scanner.frames import CameraUnavailable, Frame, FrameSource, to_grey
from qrpos.scanner.loop import ScanLoop
from qrpos.scanner.picamera import PiCameraSource
from qrpos.scanner.replay import ReplaySource
from qrpos.scanner.sources import (
    SOURCE_NAMES,
    CameraCheck,
    ChosenAtOpen,
    open_source,
    probe_camera,
)
from qrpos.scanner.tokens import Refusal, RefusalCode, ScannedToken, classify, shorten
from qrpos.scanner.virtual import VirtualPhone
from qrpos.scanner.webcam import WebcamSource

__all__ = [
    "DECODER_NAMES",
    "DEFAULT_DECODER",
    "SOURCE_NAMES",
    "CameraCheck",
    "CameraUnavailable",
    "ChosenAtOpen",
    "Decoder",
    "DecoderUnavailable",
    "Frame",
    "FrameSource",
    "PiCameraSource",
    "Refusal",
    "RefusalCode",
    "ReplaySource",
    "ScanEvent",
    "ScanLoop",
    "ScanRefused",
    "ScanStats",
    "ScannedToken",
    "TokenRead",
    "VirtualPhone",
    "WebcamSource",
    "ZbarDecoder",
    "ZxingDecoder",
    "classify",
    "make_decoder",
    "open_source",
    "probe_camera",
    "shorten",
    "to_grey",
]
