"""A sale's window on the service's clock, over random clock histories (hypothesis).

A pure model of the three clocks: the kiosk's boot clock (never steps), its wall clock
(NTP steps it by hours, both ways, and a reboot lands it anywhere) and the service's clock
(jumps both ways; after going back it stamps commits at its high-water mark until it has
caught up). Measurements go through the ledger's own `next_reading`, `measured_for` and
`spanning`, and the window through `window_for`, exactly as the resolver and the look-up
use them. Two invariants:

* **never missed**: a measured window always contains the sale's commit stamp (else a
  charged sale could be judged "not charged");
* **never stretched by the kiosk's clock**: while the service's clock never jumps, the
  window is the sale's own span plus `settle_s` and the margin, however NTP stepped the
  kiosk's clock before, during the look-ups, or back and forth between them, and whatever
  time an earlier reboot landed the wall clock on (behind or ahead). (Windows
  stretched by a step, or to the latest time ever seen, let an open sale of one price own
  and "explain" every later row of that price: the campaign's misattributed sale.)
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from hypothesis import given, settings
from hypothesis import strategies as st

from qrpos.ledger.clockreading import DATE_RESOLUTION_S, ClockReading, next_reading
from qrpos.ledger.policy import RetryPolicy
from qrpos.ledger.states import IntentRow, IntentState, Moment
from qrpos.ledger.windows import measured_for, own_offsets, spanning, window_for

POLICY = RetryPolicy()
HOUR = 3600.0


@dataclass
class Clocks:
    """The three clocks at one instant (`up` is the boot clock)."""

    boot: str = "boot-1"
    up: float = 1_000.0
    #: wall − boot clock: NTP's steps move it
    frame: float = 1.79e9
    #: service clock − boot clock: the service's jumps move it
    service: float = 1.79e9 + 37.0
    #: the service's high-water mark: commits are stamped no earlier
    mark: float = 0.0
    reading: ClockReading | None = None

    @property
    def wall(self) -> float:
        return self.up + self.frame

    @property
    def server(self) -> float:
        return self.up + self.service

    def moment(self) -> Moment:
        return Moment(self.wall, self.boot, self.up)

    def advance(self, seconds: float) -> None:
        self.up += seconds
        self.mark = max(self.mark, self.server)

    def measure(self) -> float:
        """A response's `Date` read against the wall clock: server − wall."""
        self.mark = max(self.mark, self.server)
        offset = self.server - self.wall
        self.reading = next_reading(
            self.reading, offset, self.wall, POLICY.window_margin_s, self.boot, self.up
        )
        return offset


# one event of the clocks' history: ("wait", s) | ("step", s) | ("jump", s) | ("measure", 0)
#: | ("reboot", wall frame change)
_wait = st.tuples(st.just("wait"), st.floats(1.0, 900.0))
_step = st.tuples(
    st.just("step"), st.one_of(st.floats(-6 * HOUR, -60.0), st.floats(60.0, 6 * HOUR))
)
_jump = st.tuples(st.just("jump"), st.one_of(st.floats(-900.0, -150.0), st.floats(150.0, 900.0)))
_measure = st.tuples(st.just("measure"), st.just(0.0))
_reboot = st.tuples(st.just("reboot"), st.floats(-30 * 86_400.0, 0.0))
#: a reboot onto a wall clock ahead too (an RTC set wrong), for the never-stretched check
_any_reboot = st.tuples(st.just("reboot"), st.floats(-30 * 86_400.0, 30 * 86_400.0))


def _seen_jumps(events: list[tuple[str, float]]) -> list[tuple[str, float]]:
    """The kiosk measures the service's clock after each of its jumps (but the last, which
    the sale itself may meet), and after each reboot. Unknowable, so not drawn: two jumps
    nobody measured between them, and a jump back across a reboot before the new boot
    measured anything (how long the kiosk was off, and so how far the service's mark ran
    on, is not known) — a known limit, written in docs/ledger.md."""
    seen: list[tuple[str, float]] = []
    for at, event in enumerate(events):
        seen.append(event)
        if (event[0] == "jump" and at < len(events) - 1) or event[0] == "reboot":
            seen.append(("measure", 0.0))
    return seen


def _apply(clocks: Clocks, event: tuple[str, float]) -> None:
    kind, value = event
    if kind == "wait":
        clocks.advance(value)
    elif kind == "step":
        clocks.frame += value
    elif kind == "jump":
        clocks.mark = max(clocks.mark, clocks.server)
        clocks.service += value
    elif kind == "reboot":
        # a Pi boots on its last saved time, off by anything; the boot clock starts again,
        # and the 30 s it has been up have passed for the service too
        clocks.boot = f"{clocks.boot}+"
        clocks.frame += clocks.up + value
        clocks.service += clocks.up
        clocks.up = 30.0
        clocks.mark = max(clocks.mark, clocks.server)
    else:
        clocks.measure()


def _sale_row(clocks: Clocks) -> IntentRow:
    wall = clocks.wall
    return IntentRow(
        id=1,
        idem_key="qrpos-k",
        token=None,
        token_sha256="0" * 64,
        token_tail="x",
        amount_mnt=4_500,
        state=IntentState.UNRESOLVED,
        charged=None,
        created_at=wall,
        first_sent_at=wall,
        last_sent_at=wall,
        last_end_at=wall,
        attempts=1,
        in_flight=0,
        maybe_sent=1,
        may_resend=0,
        next_try_at=None,
        clock_skew_s=None,
        last_status=None,
        last_detail=None,
        decline_code=None,
        if_absent=None,
        lookups=0,
        last_lookup_at=None,
        tx_id=None,
        tx_json=None,
        watching=0,
        resolved_at=None,
        last_unclear_end_at=wall,
        proof=None,
        skew_lo_s=None,
        skew_hi_s=None,
        answered_lookups=0,
        unclear_end_boot=clocks.boot,
        unclear_end_up=clocks.up,
        first_sent_boot=clocks.boot,
        first_sent_up=clocks.up,
    )


def _own_measurement(row: IntentRow, clocks: Clocks) -> IntentRow:
    """What the resolver and the look-up do with a `Date` of the sale's own exchanges."""
    before = clocks.reading
    offset = clocks.measure()
    framed = measured_for(row, offset, clocks.moment())
    lo, hi = spanning(row, before, POLICY, framed)
    return replace(row, skew_lo_s=lo, skew_hi_s=hi, clock_skew_s=offset)


def _sale(
    clocks: Clocks, duration_s: float, commit_at: float, replied: bool
) -> tuple[IntentRow, float, float, float]:
    """A sale sent now for `duration_s`, committed `commit_at` of the way through; returns
    its row (as the resolver leaves it), its commit stamp and its span on the service's
    clock."""
    clocks.advance(0.01)  # a sale is never sent at the very instant of a measurement
    row = _sale_row(clocks)
    start_server = clocks.server
    clocks.advance(duration_s * commit_at)
    stamp = max(clocks.mark, clocks.server)  # after going back: stamped at the mark
    clocks.mark = stamp
    clocks.advance(duration_s * (1 - commit_at))
    end_server = clocks.server
    wall = clocks.wall
    row = replace(
        row,
        last_sent_at=wall,
        last_end_at=wall,
        last_unclear_end_at=wall,
        unclear_end_up=clocks.up,
    )
    if replied:  # a 409 or a 5xx carried a Date: the sale's own measurement
        row = _own_measurement(row, clocks)
    return row, stamp, start_server, end_server


def _look_up(row: IntentRow, clocks: Clocks) -> IntentRow:
    """A look-up's `Date`: the sale's own measurement when it has one, the reading's too."""
    if own_offsets(row) is not None:
        return _own_measurement(row, clocks)
    clocks.measure()
    return row


@settings(max_examples=1000, deadline=None)
@given(
    before=st.lists(st.one_of(_wait, _step, _jump, _measure, _reboot), max_size=8).map(_seen_jumps),
    between=st.lists(st.one_of(_wait, _step, _jump, _measure), max_size=6).map(
        lambda events: _seen_jumps([*events, ("measure", 0.0)])
    ),
    duration=st.floats(0.0, 30.0),
    commit_at=st.floats(0.0, 1.0),
    replied=st.booleans(),
    lookups=st.integers(1, 3),
)
def test_a_measured_window_always_holds_the_sales_commit(
    before: list[tuple[str, float]],
    between: list[tuple[str, float]],
    duration: float,
    commit_at: float,
    replied: bool,
    lookups: int,
) -> None:
    clocks = Clocks()
    clocks.measure()
    for event in before:
        _apply(clocks, event)
    row, stamp, _, _ = _sale(clocks, duration, commit_at, replied)
    if before and before[-1][0] == "jump":
        clocks.measure()  # the jump the sale met is measured before the next one comes
    for _ in range(lookups):
        for event in between:
            _apply(clocks, event)
        clocks.advance(POLICY.settle_s)
        row = _look_up(row, clocks)
        window = window_for(row, POLICY, clocks.reading)
        if window.measured:
            assert window.start.timestamp() <= stamp <= window.end.timestamp(), (
                window,
                stamp,
            )


@settings(max_examples=1000, deadline=None)
@given(
    before=st.lists(st.one_of(_wait, _step, _measure, _any_reboot), max_size=8).map(_seen_jumps),
    between=st.lists(st.one_of(_wait, _step, _measure), max_size=6),
    duration=st.floats(0.0, 30.0),
    replied=st.booleans(),
    lookups=st.integers(1, 3),
)
def test_steps_of_the_kiosks_clock_never_stretch_a_window(
    before: list[tuple[str, float]],
    between: list[tuple[str, float]],
    duration: float,
    replied: bool,
    lookups: int,
) -> None:
    clocks = Clocks()
    clocks.measure()
    for event in before:
        _apply(clocks, event)
    row, stamp, start_server, end_server = _sale(clocks, duration, 0.5, replied)
    margin = POLICY.window_margin_s + DATE_RESOLUTION_S
    for _ in range(lookups):
        for event in between:
            _apply(clocks, event)
        clocks.advance(POLICY.settle_s)
        row = _look_up(row, clocks)
        window = window_for(row, POLICY, clocks.reading)
        assert window.measured
        assert window.start.timestamp() <= stamp <= window.end.timestamp()
        assert window.start.timestamp() >= start_server - margin - 1e-3, window
        assert window.end.timestamp() <= end_server + POLICY.settle_s + margin + 1e-3, window
