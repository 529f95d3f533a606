"""One endpoint's limits, and what its answers have taught about them: the arithmetic every gate shares, whether it
keeps the figures in its own process (``toolkit.llm.gate``) or shares them with every process of a study
(``toolkit.llm.shared_limits``).

``Limits`` is what is known up front: the most requests in flight (``max_connections``), requests per minute
(``rpm``) and tokens per minute (``tpm``), from a spec (``?max_connections=N&rpm=N&tpm=N``) or the settings.
``State`` is what is learned, as TCP learns a path's capacity: ``window`` requests may be in flight now. It starts
at ``START`` and, while requests wait for a slot and the endpoint answers without a 429, doubles every round
trip (one more per answer, "slow start") up to the first 429; then it grows by one per window of answers
(additive increase). A 429 halves it, once per round trip (answers to requests sent before the last cut do not
cut again), and its ``Retry-After`` holds every new request until that time (without one: an exponential backoff
with jitter, ``rate_limited``). ``rpm`` and ``tpm`` are token
buckets refilled continuously, as providers enforce them, with half a second's worth of burst (``BURST_S``) and
3% below the stated rate (``MARGIN``); a request is charged its estimated tokens when it is sent and corrected by
its reported usage when it answers.

Times are ``time.time()`` seconds (one clock for every process of a machine, and roughly for a cluster's).
"""

from __future__ import annotations

import math
import random
import struct
from dataclasses import astuple, dataclass
from typing import NamedTuple

START = 64  # requests in flight a new endpoint is allowed before its answers say more
SHARED_START = 4  # the same for a study whose processes share the figures (``shared_limits``): what every worker
# starts at once reaches the endpoint before any answer, its x-ratelimit-* headers or 429s, can say how much it
# takes (24 first requests against a limit of 6 in flight: 18 429s); slow start doubles it per round trip
BURST_S = 0.5  # a rate bucket holds this many seconds of its rate: half the second providers allow, so requests
# that reach the endpoint bunched (sent apart, delayed on the way) still find its bucket with room
MARGIN = 0.97  # a stated rate is kept 3% below: the jitter of sending never crosses the endpoint's own bucket
BACKOFF_START_S, BACKOFF_MAX_S = 0.5, 30.0  # after 429s without Retry-After (the 90 s deadline still sees ~10 asks)
_JITTER = random.Random()  # its own generator: the global one's sequence (a seeded caller's) is left alone


@dataclass(frozen=True)
class Limits:
    max_connections: int = 4096  # never more in flight, whatever is learned
    rpm: float | None = None
    tpm: float | None = None
    adaptive: bool = True  # learn the window from answers and 429s; False: always max_connections

    def lower(self, other: "Limits") -> "Limits":
        """The stricter of two models' limits for one endpoint."""
        def least(a, b):
            return b if a is None else a if b is None else min(a, b)

        return Limits(min(self.max_connections, other.max_connections), least(self.rpm, other.rpm),
                      least(self.tpm, other.tpm), self.adaptive and other.adaptive)


class Ticket:
    """One request's place at the gate: its slot, when it was sent, the tokens it was charged."""

    __slots__ = ("slot", "sent_at", "tokens")

    def __init__(self, slot: int, sent_at: float, tokens: int):
        self.slot, self.sent_at, self.tokens = slot, sent_at, tokens


@dataclass
class State:
    window: float  # requests allowed in flight now
    ssthresh: float  # below it the window doubles per round trip, above it grows by one
    cut_at: float = 0.0  # when the window was last halved
    resume_at: float = 0.0  # no request starts before this (a Retry-After)
    requests: float = 0.0  # the rpm bucket
    tokens: float = 0.0  # the tpm bucket
    stamp: float = 0.0  # when the buckets were last refilled
    busy_at: float = 0.0  # when a request last waited for a slot (the window was what bound)
    counted_at: float = 0.0  # when the requests in flight were last counted (shared_limits)
    backoff: float = 0.0  # seconds the last 429 without Retry-After held new requests (0: none since an answer)
    rate_limited: int = 0  # 429s seen by every process
    in_flight: int = 0  # requests in flight (a hint where slots are locks: see shared_limits)
    rpm_told: float = 0.0  # requests a minute the endpoint said it allows (x-ratelimit-limit-requests; 0: unsaid)
    tpm_told: float = 0.0  # tokens a minute it said (x-ratelimit-limit-tokens)

    FORMAT = struct.Struct("<10d2q2d")

    def pack(self) -> bytes:
        return self.FORMAT.pack(*astuple(self))

    @classmethod
    def unpack(cls, data: bytes) -> "State":
        return cls(*cls.FORMAT.unpack(data))

    @property
    def limit(self) -> int:
        return max(1, int(self.window))


def fresh(limits: Limits, now: float, start: int = START) -> State:
    """The figures of an endpoint not heard from yet: a window of ``start`` (``SHARED_START`` where a study's
    processes share it)."""
    start = min(start, limits.max_connections) if limits.adaptive else limits.max_connections
    return State(window=start, ssthresh=limits.max_connections, requests=_capacity(limits.rpm),
                 tokens=_capacity(limits.tpm), stamp=now)


def _capacity(per_minute: float | None) -> float:
    return math.inf if per_minute is None else max(1.0, per_minute / 60 * BURST_S)


def rates(s: State, limits: Limits) -> tuple[float | None, float | None]:
    """The requests and tokens a minute kept to: the stricter of the spec's and what the endpoint said."""
    def least(stated: float | None, told: float) -> float | None:
        return stated if not told else told if stated is None else min(stated, told)

    return least(limits.rpm, s.rpm_told), least(limits.tpm, s.tpm_told)


def refill(s: State, limits: Limits, now: float) -> None:
    elapsed = max(0.0, now - s.stamp)
    s.stamp = now
    rpm, tpm = rates(s, limits)
    if rpm is not None:
        s.requests = min(_capacity(rpm), s.requests + elapsed * rpm * MARGIN / 60)
    if tpm is not None:
        s.tokens = min(_capacity(tpm), s.tokens + elapsed * tpm * MARGIN / 60)


def rate_wait(s: State, limits: Limits, now: float, tokens: int) -> float:
    """Seconds before a request of ``tokens`` may start as far as Retry-After and the rates go (0: now)."""
    refill(s, limits, now)
    wait = max(0.0, s.resume_at - now)
    rpm, tpm = rates(s, limits)
    if rpm is not None and s.requests < 1:
        wait = max(wait, (1 - s.requests) * 60 / (rpm * MARGIN))
    if tpm is not None:
        need = min(tokens, _capacity(tpm))  # a request larger than the burst goes when the bucket is full
        if s.tokens < need:
            wait = max(wait, (need - s.tokens) * 60 / (tpm * MARGIN))
    return wait


def take(s: State, tokens: int) -> None:
    """A request starts: one request and its estimated tokens from the buckets (tokens may go into debt)."""
    s.requests -= 1
    s.tokens -= tokens
    s.in_flight += 1


def answered(s: State, limits: Limits, sent_at: float | None, estimated: int = 0, used: int | None = None) -> None:
    """An answer to a request sent at ``sent_at``: its tokens corrected; the window grows if a request waited for
    a slot while this one was out (None: unknown, it grows)."""
    if used is not None and rates(s, limits)[1] is not None:  # a stated or a told (x-ratelimit) tpm
        s.tokens += estimated - used
    s.backoff = 0.0  # it answers again: the next 429 without Retry-After starts the backoff afresh
    if not limits.adaptive or s.window >= limits.max_connections:
        return
    if sent_at is not None and s.busy_at < sent_at:
        return  # the window did not bind: an answer says nothing about a larger one
    s.window = min(limits.max_connections, s.window + (1 if s.window < s.ssthresh else 1 / s.limit))


def rate_limited(s: State, limits: Limits, now: float, sent_at: float | None, retry_after: float | None) -> None:
    """A 429: count it; an adaptive gate halves the window once per round trip and holds new requests for
    ``retry_after``. A 429 without ``Retry-After`` (None, or 0) holds them for a backoff that doubles with every round
    trip that meets a 429 (``BACKOFF_START_S`` to ``BACKOFF_MAX_S``, a random half of it taken off so that
    processes do not come back together) and ends with the next answer, and lets one request in flight until an
    answer (then slow start): an endpoint that refuses everything is asked a few times a minute, not hundreds."""
    s.rate_limited += 1
    if not limits.adaptive:
        return
    if retry_after:
        s.resume_at = max(s.resume_at, now + retry_after)
    if sent_at is not None and sent_at < s.cut_at:
        return
    flight = min(s.limit, s.in_flight) if s.in_flight > 0 else s.limit  # what the endpoint refused at (TCP's
    s.window = s.ssthresh = max(1.0, float(flight // 2))  # FlightSize/2), not a window far above it
    s.cut_at = now
    if not retry_after:  # none, or 0 ("now"), which an endpoint refusing everything says every time
        s.window = 1.0  # one probe at a time, then slow start back to the halved window (TCP after a timeout)
        s.backoff = min(BACKOFF_MAX_S, max(BACKOFF_START_S, 2 * s.backoff))
        s.resume_at = max(s.resume_at, now + s.backoff * (1 - _JITTER.random() / 2))


class Told(NamedTuple):
    """What an endpoint said of its limits in an answer's ``x-ratelimit-*`` headers (None: not said): its
    requests and tokens a minute, and what remains of them. (Its ``-reset-*`` headers, when the buckets are whole
    again, are not read: a bucket refilled continuously at the rate said, and never holding more than the
    endpoint says remains, already waits as long as they would say.)

    Providers say these per model (OpenAI does); the gate is per endpoint (base URL), as a spec's rates are: two
    models on one endpoint are kept to the lowest rate either has said (``told``), as to the stricter of two
    stated rates (``Limits.lower``), not to whichever answered last."""

    limit_requests: float | None = None
    remaining_requests: float | None = None
    limit_tokens: float | None = None
    remaining_tokens: float | None = None

    def news(self, s: State, limits: Limits) -> bool:
        """Whether it changes anything: a limit lower than any known yet, or less left than the buckets hold."""
        rpm, tpm = rates(s, limits)
        return bool(limits.adaptive and (
            (self.limit_requests and (not s.rpm_told or self.limit_requests < s.rpm_told))
            or (self.limit_tokens and (not s.tpm_told or self.limit_tokens < s.tpm_told))
            or (self.remaining_requests is not None and rpm is not None and self.remaining_requests < s.requests)
            or (self.remaining_tokens is not None and tpm is not None and self.remaining_tokens < s.tokens)))


def told(s: State, limits: Limits, now: float, *said: float | None) -> None:
    """An answer's ``x-ratelimit-*`` headers (``Told``'s fields in order): the rates it states are kept to from now
    on (``rates``; the lowest said, where the endpoint's models say different ones), and the buckets hold no more
    than it says remain (an adaptive gate only, as with 429s). A remaining count is as old as the answer's
    latency; it only ever lowers the bucket."""
    t = Told(*said)
    if not limits.adaptive:
        return
    refill(s, limits, now)
    if t.limit_requests:
        s.rpm_told = min(s.rpm_told or math.inf, float(t.limit_requests))
    if t.limit_tokens:
        s.tpm_told = min(s.tpm_told or math.inf, float(t.limit_tokens))
    refill(s, limits, now)  # a rate told for the first time: the bucket from infinite to its capacity
    rpm, tpm = rates(s, limits)
    if t.remaining_requests is not None and rpm is not None:
        s.requests = min(s.requests, float(t.remaining_requests))
    if t.remaining_tokens is not None and tpm is not None:
        s.tokens = min(s.tokens, float(t.remaining_tokens))


def clamp(s: State, limits: Limits) -> None:
    """Stricter limits for the endpoint (another model's): the window no wider than their ``max_connections``."""
    s.window = min(s.window, limits.max_connections)


CHANGES = {"answered": answered, "rate_limited": rate_limited, "clamp": clamp, "told": told}


@dataclass(frozen=True)
class Change:
    """What came back, as a change to the figures named in ``CHANGES`` (``op``) with its arguments after the state
    and the limits: a name and numbers, so a store in another process (a Dask scheduler) can apply it too."""

    op: str
    limits: Limits
    args: tuple = ()

    def __call__(self, s: State) -> None:
        CHANGES[self.op](s, self.limits, *self.args)
