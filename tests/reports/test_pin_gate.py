"""The manager PIN gate: right PIN opens, wrong PINs are refused and then throttled."""

from __future__ import annotations

from pathlib import Path

from qrpos import manager_pin
from qrpos.reports.pin_gate import FREE_ATTEMPTS, PAUSE_S, PinGate


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


def test_wrong_pins_pause_the_gate_even_for_the_right_pin_and_survive_a_restart(
    tmp_path: Path,
) -> None:
    manager_pin.set_pin(tmp_path, "4321")
    clock = Clock()
    gate = PinGate(tmp_path, clock)
    assert gate.check("1111").result == "wrong"
    assert gate.check("2222").attempts_left == FREE_ATTEMPTS - 2
    locked = gate.check("3333")
    assert locked.result == "locked" and locked.wait_s == PAUSE_S
    restarted = PinGate(tmp_path, clock)
    assert restarted.check("4321").result == "locked"
    clock.now += PAUSE_S + 1
    assert restarted.check("9999").wait_s == 2 * PAUSE_S  # the pause doubles
    clock.now += 2 * PAUSE_S + 1
    assert restarted.check("4321").result == "ok"
    assert restarted.check("0000").result == "wrong"  # the count starts again


def test_no_pin_set_is_said_plainly(tmp_path: Path) -> None:
    assert PinGate(tmp_path).check("1234").result == "no_pin"
    assert not (tmp_path / "manager-pin.throttle").exists()
