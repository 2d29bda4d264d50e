"""The manager PIN gate: right PIN opens, wrong PINs are refused and then throttled, and
the pause lasts its real seconds however NTP steps a Pi's wall clock or it reboots."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from qrpos import manager_pin
from qrpos.reports.pin_gate import FREE_ATTEMPTS, MAX_PAUSE_S, PAUSE_S, PinGate, Reading


class Clock:
    """A boot, its step-proof seconds and a wall clock a test can step apart."""

    def __init__(self) -> None:
        self.boot = "boot-1"
        self.up = 100.0
        self.wall = 1_000_000.0

    def __call__(self) -> Reading:
        return Reading(self.boot, self.up, self.wall)

    def run(self, seconds: float) -> None:
        """Real time passes: both clocks move together."""
        self.up += seconds
        self.wall += seconds

    def reboot(self, saved_wall: float) -> None:
        """A Pi boots on its last saved time: a new boot id, the boot clock from zero."""
        self.boot, self.up, self.wall = self.boot + "'", 0.0, saved_wall


def lock(tmp_path: Path, clock: Clock) -> PinGate:
    manager_pin.set_pin(tmp_path, "4321")
    gate = PinGate(tmp_path, clock)
    for wrong in ("1111", "2222", "3333")[:FREE_ATTEMPTS]:
        gate.check(wrong)
    assert gate.wait_s() == PAUSE_S
    return gate


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
    clock.run(PAUSE_S + 1)
    assert restarted.check("9999").wait_s == 2 * PAUSE_S  # the pause doubles
    clock.run(2 * PAUSE_S + 1)
    assert restarted.check("4321").result == "ok"
    assert restarted.check("0000").result == "wrong"  # the count starts again


def test_a_wall_clock_stepped_forward_by_hours_does_not_open_the_gate(tmp_path: Path) -> None:
    clock = Clock()
    gate = lock(tmp_path, clock)
    clock.wall += 5 * 3600  # NTP finds the real time
    assert gate.check("4321").result == "locked"
    assert gate.wait_s() == PAUSE_S


def test_a_wall_clock_stepped_back_by_hours_does_not_hold_the_gate_for_hours(
    tmp_path: Path,
) -> None:
    clock = Clock()
    gate = lock(tmp_path, clock)
    clock.wall -= 5 * 3600
    clock.run(PAUSE_S)
    assert gate.check("4321").result == "ok"


def test_a_reboot_serves_the_pause_again_at_most_never_resets_it(tmp_path: Path) -> None:
    clock = Clock()
    gate = lock(tmp_path, clock)
    saved = clock.wall - 3 * 3600  # booted on a time saved hours before
    clock.reboot(saved)
    assert gate.check("4321").result == "locked"
    assert gate.wait_s() == PAUSE_S
    clock.run(PAUSE_S)
    assert gate.check("4321").result == "ok"


@pytest.fixture(scope="module")
def locked_state(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A state dir as `lock` leaves it on a fresh `Clock`: the PIN set, three wrong PINs
    tried, the gate paused (made once: scrypt makes each PIN checked cost tens of ms)."""
    folder = tmp_path_factory.mktemp("locked")
    lock(folder, Clock())
    return folder


@settings(max_examples=200, deadline=None)
@given(
    steps=st.lists(
        st.tuples(
            st.floats(0, 2 * MAX_PAUSE_S),  # real seconds that pass
            st.floats(-86_400, 86_400),  # a wall-clock step with them
            st.booleans(),  # a reboot
        ),
        max_size=6,
    )
)
def test_the_pause_never_exceeds_its_length_nor_ends_before_its_real_seconds(
    locked_state: Path, steps: list[tuple[float, float, bool]]
) -> None:
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        # the state `lock` leaves, each example on a copy of its own: the gate keeps
        # nothing in memory, so this is the locked gate (without its four scrypt hashes)
        for kept in locked_state.iterdir():
            shutil.copy2(kept, folder)
        clock = Clock()
        gate = PinGate(Path(folder), clock)
        assert gate.wait_s() == PAUSE_S
        #: the real seconds still owed: exact on one boot; a reboot may owe the pause again
        owed_at_most = owed_at_least = PAUSE_S
        for seconds, step, reboot in steps:
            if reboot:
                clock.reboot(clock.wall + step)
                gate.wait_s()  # the kiosk starts and looks at the gate
                owed_at_least, owed_at_most = 0.0, PAUSE_S
            else:
                clock.wall += step
            clock.run(seconds)
            owed_at_most = max(0.0, owed_at_most - seconds)
            owed_at_least = max(0.0, owed_at_least - seconds)
            left = gate.wait_s()
            assert owed_at_least - 1e-6 <= left <= owed_at_most + 1e-6


def test_no_pin_set_is_said_plainly(tmp_path: Path) -> None:
    assert PinGate(tmp_path).check("1234").result == "no_pin"
    assert not (tmp_path / "manager-pin.throttle").exists()
