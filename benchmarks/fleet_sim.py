"""The fleet model's world (SimPy): the business day, the kiosks running qrpos's real
decisions, the gateway's bucket and other merchants. `benchmarks/fleet.py` runs it and
prints the table; its docstring says what is modelled and how it is aggregated.
"""

from __future__ import annotations

import math
import random
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field

import simpy

from qrpos import spec
from qrpos.ledger.policy import RetryPolicy
from qrpos.reports.vat_watch import SALE_YIELD_S, FollowPolicy, Pressure
from qrpos.service.contact import PROBE_QUIET_S, probe_due
from qrpos.simulator.faults import TokenBucket

H = 3600.0
#: (from hour, to hour, seconds between a kiosk's sales, other merchants' rps)
DAY: tuple[tuple[float, float, float, float], ...] = (
    (9.0, 11.5, 900.0, 20.0),
    (11.5, 13.5, 120.0, 30.0),
    (13.5, 17.5, 900.0, 20.0),
    (17.5, 19.5, 360.0, 25.0),
    (19.5, 21.0, 900.0, 15.0),
)
PEAK = (11.5 * H, 13.5 * H)
STORM = (12.5 * H, 12.5 * H + 300.0, 150.0)
REPORTS = (21.0 * H, 21.5 * H)
#: a sale holds the kiosk this long before its charge is sent (customer shows the phone)
PRESENT_S = 8.0
OWNER_LOOKS_PER_H = 0.25
OLD_PROBE_EVERY_S = 60.0
#: the fluid step, and the time constant of the sample's smoothed rate
DT = 0.1
TAU = 30.0


def issue_delay(rng: random.Random) -> float:
    """How long the tax authority takes to issue one receipt."""
    x = rng.random()
    if x < 0.70:
        return rng.uniform(5.0, 60.0)
    if x < 0.95:
        return rng.uniform(60.0, 1800.0)
    return rng.uniform(H, 4 * H)


@dataclass
class Scenario:
    """What is simulated (the defaults are the business day of the module docstring)."""

    kiosks: int
    policy: FollowPolicy
    passive_probe: bool
    sample: int = 400
    day: tuple[tuple[float, float, float, float], ...] = DAY
    storm: tuple[float, float, float] | None = STORM
    reports: bool = True
    owners: bool = True
    probes: bool = True
    others: bool = True
    fixed_issue_delay_s: float | None = None
    seed: int = 1

    @property
    def scale(self) -> float:
        return min(1.0, self.sample / self.kiosks)


@dataclass
class Tally:
    """Requests by kind and time, charges and what met a 429, receipt latencies."""

    sent: Counter[tuple[str, bool]] = field(default_factory=Counter)  # (kind, at peak)
    sales: int = 0
    sales_429: int = 0
    peak_sales: int = 0
    peak_sales_429: int = 0
    latencies: list[float] = field(default_factory=list)


class Fleet:
    """The simulated kiosks, the gateway and other merchants on one SimPy clock."""

    def __init__(self, sc: Scenario) -> None:
        self.sc = sc
        self.env = simpy.Environment(initial_time=sc.day[0][0] * H)
        self.rng = random.Random(sc.seed)
        random.seed(sc.seed)  # the jitter handed to RetryPolicy draws from the module's generator
        self.bucket = FluidBucket(spec.RATE_SUSTAINED_RPS, spec.RATE_BURST, lambda: self.env.now)
        self.sample_rate = 0.0  # the sample's requests/s, smoothed
        self.accept = 1.0  # the share of requests the gateway let through in the last step
        self._sample_sent = 0
        self.retry = RetryPolicy()
        self.tally = Tally()
        self.end = sc.day[-1][1] * H

    def at_peak(self) -> bool:
        return PEAK[0] <= self.env.now < PEAK[1]

    def send(self, kind: str) -> float | None:
        """One request through the gateway: None when it passes, else Retry-After."""
        self.tally.sent[(kind, self.at_peak())] += 1
        self._sample_sent += 1
        return None if self.rng.random() < self.accept else 1.0

    def sale_interval(self) -> float | None:
        for start, stop, every, _ in self.sc.day:
            if start * H <= self.env.now < stop * H:
                return every
        return None

    def others_rps(self) -> float:
        now = self.env.now
        if self.sc.storm and self.sc.storm[0] <= now < self.sc.storm[1]:
            return self.sc.storm[2]
        for start, stop, _, rps in self.sc.day:
            if start * H <= now < stop * H:
                return rps
        return 0.0

    def run(self) -> Tally:
        for i in range(min(self.sc.kiosks, self.sc.sample)):
            Kiosk(self, i)
        self.env.process(self.fluid())
        until = REPORTS[1] if self.sc.reports else self.end
        self.env.run(until=until)
        return self.tally

    def fluid(self) -> Iterator[simpy.Event]:
        """The rest of the fleet (the sample's mirror) and the other merchants."""
        mirror = 1.0 / self.sc.scale  # the sample and the fleet it stands for
        retries: dict[int, list[tuple[float, int]]] = {}
        step = 0
        while self.env.now < self.end or (self.sc.reports and self.env.now < REPORTS[1]):
            step += 1
            self.sample_rate += (self._sample_sent / DT - self.sample_rate) * DT / TAU
            self._sample_sent = 0
            chunks = [(self.sample_rate * mirror * DT, 0)]
            if self.sc.others:
                lam = self.others_rps() * DT
                fresh = max(0.0, self.rng.gauss(lam, math.sqrt(lam))) if lam > 0 else 0.0
                chunks += [(fresh, 1), *retries.pop(step, [])]
            demand = sum(a for a, _ in chunks)
            self.accept = self.bucket.draw(demand) / demand if demand > 0 else 1.0
            for amount, attempt in chunks[1:]:
                self.tally.sent[("others", self.at_peak())] += amount * self.sc.scale
                rejected = amount * (1.0 - self.accept)
                if rejected > 0 and attempt < self.retry.max_sends:
                    wait = self.retry.backoff_s(attempt, 1.0, jitter=random.random())
                    later = step + max(1, round(wait / DT))
                    retries.setdefault(later, []).append((rejected, attempt + 1))
            yield self.env.timeout(DT)


class FluidBucket(TokenBucket):
    """The sandbox's bucket, plus a bulk draw for the fluid parts of the model."""

    def draw(self, amount: float) -> float:
        """Take up to `amount` tokens now; returns how many were had."""
        if amount <= 0:
            return 0.0
        now = self._clock()
        self._tokens = min(float(self.burst), self._tokens + (now - self._last) * self.rate)
        self._last = now
        got = min(amount, self._tokens)
        self._tokens -= got
        return got


class Kiosk:
    """One kiosk: sales, the VAT follower, the owner, the probe, the closing report."""

    def __init__(self, fleet: Fleet, index: int) -> None:
        self.fleet, self.env, self.sc = fleet, fleet.env, fleet.sc
        self.rng = random.Random(fleet.sc.seed * 100_003 + index)
        self.policy = fleet.sc.policy
        self.pending: list[tuple[float, float]] = []  # (charged at, issued at)
        self.last_poll: float | None = None
        self.pressure = Pressure()
        self.busy = False
        self.last_heard: float | None = None
        self.day_sales = 0
        #: when its recent charges went through (how busy the till is, for the policy)
        self.sold_at: list[float] = []
        self.replan = self.env.event()
        self.env.process(self.sales())
        self.env.process(self.follower())
        if self.sc.owners:
            self.env.process(self.owner())
        if self.sc.probes:
            self.env.process(self.probe())
        if self.sc.reports:
            self.env.process(self.closing_report())

    def wake(self) -> None:
        if not self.replan.triggered:
            self.replan.succeed()

    def send(self, kind: str) -> float | None:
        """A request of this kiosk; any answer, a 429 too, proves the service is there."""
        retry_after = self.fleet.send(kind)
        self.last_heard = self.env.now
        return retry_after

    def met_429(self, retry_after: float | None, *, poll: bool) -> None:
        before = self.pressure
        self.pressure = self.policy.rate_limited(
            before, self.env.now, retry_after, self.rng.random(), poll=poll
        )
        if self.pressure != before:
            self.wake()

    def sales(self) -> Iterator[simpy.Event]:
        tally = self.fleet.tally
        while self.env.now < self.fleet.end:
            every = self.fleet.sale_interval()
            yield self.env.timeout(self.rng.expovariate(1.0 / every) if every else 60.0)
            if not every or self.env.now >= self.fleet.end:
                continue
            self.busy = True
            yield self.env.timeout(PRESENT_S)
            peak, met = self.fleet.at_peak(), False
            for attempt in range(1, self.fleet.retry.max_sends + 1):
                retry_after = self.send("charge")
                if retry_after is None:
                    break
                met = True
                self.met_429(retry_after, poll=False)
                yield self.env.timeout(
                    self.fleet.retry.backoff_s(attempt, retry_after, jitter=random.random())
                )
            else:
                self.busy = False
                continue  # left unresolved; the ledger would settle it later
            self.busy = False
            self.day_sales += 1
            self.sold_at = [*self.sold_at[-20:], self.env.now]
            tally.sales += 1
            tally.sales_429 += met
            tally.peak_sales += peak
            tally.peak_sales_429 += met and peak
            delay = self.sc.fixed_issue_delay_s
            delay = issue_delay(self.rng) if delay is None else delay
            self.pending.append((self.env.now, self.env.now + delay))
            if len(self.pending) == 1:
                self.wake()

    def poll(self, kind: str) -> None:
        """One history page covers every pending receipt; what is issued shows up."""
        now = self.env.now
        self.last_poll = now
        retry_after = self.send(kind)
        if retry_after is not None:
            self.met_429(retry_after, poll=True)
            return
        self.pressure = self.policy.succeeded(self.pressure)
        still = []
        for charged, issued in self.pending:
            if issued <= now:
                self.fleet.tally.latencies.append(now - issued)
            else:
                still.append((charged, issued))
        self.pending = still

    def follower(self) -> Iterator[simpy.Event]:
        while True:
            starts = [charged for charged, _ in self.pending]
            window = self.policy.busy_window_s
            recent = sum(1 for t in self.sold_at if t >= self.env.now - window)
            due = self.policy.next_poll_at(
                starts, self.last_poll, self.pressure, self.rng.random(), recent_sales=recent
            )
            self.replan = self.env.event()
            if due is None:
                yield self.replan
                continue
            if due > self.env.now:
                yield self.env.timeout(due - self.env.now) | self.replan
                if self.replan.triggered:
                    continue
            while self.busy:  # the sale comes first
                yield self.env.timeout(SALE_YIELD_S)
            self.poll("poll")

    def owner(self) -> Iterator[simpy.Event]:
        while True:
            yield self.env.timeout(self.rng.expovariate(OWNER_LOOKS_PER_H / H))
            if self.fleet.sale_interval() and self.pressure.not_before <= self.env.now:
                self.poll("owner")
                self.wake()

    def probe(self) -> Iterator[simpy.Event]:
        yield self.env.timeout(self.rng.uniform(0, OLD_PROBE_EVERY_S))
        while self.env.now < self.fleet.end:
            heard = self.last_heard
            due = not self.sc.passive_probe or probe_due(heard, True, self.env.now, PROBE_QUIET_S)
            if due:
                self.send("probe")
            yield self.env.timeout(OLD_PROBE_EVERY_S)

    def closing_report(self) -> Iterator[simpy.Event]:
        yield self.env.timeout(max(0.0, REPORTS[0] - self.env.now) + self.rng.uniform(0, 1800))
        pages = max(1, math.ceil(self.day_sales / spec.LIST_LIMIT_MAX))
        for _ in range(pages):
            while self.send("report") is not None:
                yield self.env.timeout(self.fleet.retry.backoff_s(1, 1.0, jitter=random.random()))
