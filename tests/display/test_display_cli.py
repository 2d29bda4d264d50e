"""`qrpos display test|preview` as the installer runs it (a process, no hardware but a
pseudo-terminal for a pole display), the `[customer_display]` settings and the doctor's
line for it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from PIL import Image
from virtual_pole import VirtualPole

from headless import qrpos
from qrpos.config import ConfigError, load_config
from qrpos.doctor import Status, check_customer_display
from qrpos.peripherals.pole import PoleModel, pole_frame
from qrpos.present import i18n


@pytest.fixture
def speaking_english() -> Iterator[None]:
    was = i18n.current_language()
    i18n.set_language("en")
    yield
    i18n.set_language(was)


def environment(tmp_path: Path, language: str = "en", **more: str) -> dict[str, str]:
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "QRPOS_LANGUAGE": language}
    env["QRPOS_STATE_DIR"] = str(tmp_path / "state")
    env["QRPOS_CONFIG"] = str(tmp_path / "config.toml")
    if not (tmp_path / "config.toml").exists():
        (tmp_path / "config.toml").write_text("")
    return {**env, **more}


def test_preview_draws_any_state_as_a_picture_without_hardware(tmp_path: Path) -> None:
    out = tmp_path / "paid.png"
    done = qrpos(environment(tmp_path), "display", "preview", "--state", "paid", "--png", str(out))
    assert done.returncode == 0, done.stderr
    assert str(out) in done.stdout
    with Image.open(out) as picture:
        assert picture.size == (800, 480)
        assert picture.convert("RGB").getpixel((5, 5)) == (0, 122, 51)  # paid's green
    big = tmp_path / "pay.png"
    done = qrpos(
        environment(tmp_path), "display", "preview", "--state", "pay", "--camera",
        "--size", "1920x1080", "--png", str(big),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    with Image.open(big) as picture:
        assert picture.size == (1920, 1080)


def test_preview_prints_a_pole_displays_lines_with_its_fallbacks(tmp_path: Path) -> None:
    done = qrpos(environment(tmp_path, "mn"), "display", "preview", "--state", "paid", "--text")
    assert done.returncode == 0, done.stderr
    assert "|ТӨЛСӨН      12,500 ₮|" in done.stdout  # ESC/POS draws Ө and ₮ itself
    (tmp_path / "config.toml").write_text('[customer_display]\nprotocol = "cd5220"\n')
    done = qrpos(environment(tmp_path, "mn"), "display", "preview", "--state", "paid", "--text")
    assert "|ТОЛСОН      12,500 T|" in done.stdout  # CD5220: the nearest letters


@pytest.mark.parametrize(
    "args",
    [
        ("display", "preview", "--state", "paid"),
        ("display", "preview", "--state", "gone", "--text"),
        ("display", "preview", "--state", "paid", "--text", "--size", "big"),
        ("display", "preview", "--state", "paid", "--text", "--amount", "0"),
        ("display", "preview", "--state", "paid", "--png", "a.png", "--text"),
        ("display",),
    ],
)
@pytest.mark.parametrize("language", ["en", "mn"])
def test_a_usage_error_is_one_message_and_exits_64(
    tmp_path: Path, args: tuple[str, ...], language: str
) -> None:
    """One message, folded to 80 columns (the lines after the first indented), ending in
    the pointer to --help."""
    done = qrpos(environment(tmp_path, language), *args)
    assert done.returncode == 64, done.stderr
    lines = done.stderr.rstrip("\n").splitlines()
    assert lines and "Traceback" not in done.stderr
    assert all(len(line) <= 80 for line in lines), lines
    assert all(line.startswith("  ") for line in lines[1:]), lines
    assert " ".join(done.stderr.split()).endswith("--help)"), done.stderr


def test_the_test_pattern_reaches_a_pole_display(tmp_path: Path) -> None:
    pole = VirtualPole(tmp_path / "ttyPOLE")
    try:
        env = environment(tmp_path, QRPOS_CUSTOMER_DISPLAY=f"vfd:{pole.path}@19200")
        done = qrpos(env, "display", "test")
        assert done.returncode == 0, done.stderr
        lines = ("0123456789ABCDEFGHIJ", "Test ӨөҮү ₮".ljust(20))
        pole.until(lambda: pole.frames() == [pole_frame(lines, PoleModel())])
    finally:
        pole.unplug()


def test_test_without_a_display_or_with_a_missing_one_says_so(tmp_path: Path) -> None:
    done = qrpos(environment(tmp_path), "display", "test")
    assert done.returncode == 1 and "no customer display is set" in done.stderr
    env = environment(tmp_path, QRPOS_CUSTOMER_DISPLAY=f"vfd:{tmp_path}/ttyGONE")
    done = qrpos(env, "display", "test")
    assert done.returncode == 1 and "cannot be opened" in done.stderr
    assert "Traceback" not in done.stderr
    done = qrpos(environment(tmp_path, QRPOS_CUSTOMER_DISPLAY="kms:HDMI-A-2"), "display", "test")
    assert done.returncode == 1 and "python3-picamera2" in done.stderr  # no pykms here


def test_the_setting_and_its_variable(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_text('[customer_display]\ndevice = "kms:HDMI-A-2"\nprotocol = "cd5220"\n')
    config = load_config(config_path=path, env={})
    assert config.customer_display == {"device": "kms:HDMI-A-2", "protocol": "cd5220"}
    config = load_config(config_path=path, env={"QRPOS_CUSTOMER_DISPLAY": "vfd:/dev/ttyUSB0"})
    assert config.customer_display["device"] == "vfd:/dev/ttyUSB0"
    assert load_config(config_path=None, env={"QRPOS_CONFIG": str(path)})
    path.write_text('customer_display = "kms:HDMI-A-2"\n')
    with pytest.raises(ConfigError):
        load_config(config_path=path, env={})


def test_the_doctors_line(tmp_path: Path, speaking_english: None) -> None:
    assert check_customer_display({}).status is Status.SKIP
    bad = check_customer_display({"device": "hdmi"})
    assert bad.status is Status.FAIL and bad.fix and "qrpos display test" in bad.fix
    pole = VirtualPole(tmp_path / "ttyPOLE")
    try:
        assert check_customer_display({"device": f"vfd:{pole.path}"}).status is Status.OK
        assert pole.received == b""  # the doctor opens the port, it shows nothing
    finally:
        pole.unplug()
    gone = check_customer_display({"device": f"vfd:{pole.path}"})
    assert gone.status is Status.FAIL and "cannot be opened" in gone.detail
    drm = tmp_path / "drm"
    (drm / "card1-HDMI-A-2").mkdir(parents=True)
    (drm / "card1-HDMI-A-2" / "status").write_text("disconnected\n")
    unplugged = check_customer_display({"device": "kms:HDMI-A-2"}, sys_drm=drm)
    assert unplugged.status is Status.FAIL and "no connected screen on HDMI-A-2" in unplugged.detail
    (drm / "card1-HDMI-A-2" / "status").write_text("connected\n")
    plugged = check_customer_display({"device": "kms:HDMI-A-2"}, sys_drm=drm)
    assert plugged.status is Status.FAIL and "pykms" in plugged.detail  # not on this machine


@pytest.mark.parametrize("connector", ["*", "HDMI-A-?", "[H]DMI-A-2", "*/../card1-HDMI-A-2"])
def test_the_doctor_reads_the_connector_named_not_a_pattern(
    tmp_path: Path, speaking_english: None, monkeypatch: pytest.MonkeyPatch, connector: str
) -> None:
    """The connector's name went into a glob: `kms:*` (or `HDMI-A-?`) found whichever
    screen was plugged in, and the doctor said OK for a connector the kiosk cannot open."""
    from qrpos.peripherals import display_port

    monkeypatch.setattr(display_port, "load_pykms", lambda: object())  # as on a Pi
    drm = tmp_path / "drm"
    (drm / "card1-HDMI-A-2").mkdir(parents=True)
    (drm / "card1-HDMI-A-2" / "status").write_text("connected\n")
    assert check_customer_display({"device": "kms:HDMI-A-2"}, sys_drm=drm).status is Status.OK
    line = check_customer_display({"device": f"kms:{connector}"}, sys_drm=drm)
    assert line.status is Status.FAIL and "no connected screen" in line.detail
