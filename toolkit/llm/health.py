"""An endpoint's health, shared by every game and decision that asks one model: the endpoint's failures are
not the model's.

A call that got no answer from an HTTP endpoint (a timeout, a 429 or a 5xx after its retries, a dropped
connection, a malformed body: ``endpoint_fault``) is the endpoint's, never a decision of the seat. The decision
waits for the endpoint and asks again (``EndpointHealth.wait``: ``Retry-After`` honoured) while the endpoint has
answered something within its deadline; past it the endpoint is dead and ``EndpointDown`` stops every decision on it
at once, in flight or not (``EndpointHealth.generate``).

A stall is the endpoint failing while its games wait for it: a call that gave up after its retries, or requests
that failed (a timeout, a 429, a 5xx, a transport error) with no answer for the request timeout or a third of the
deadline, whichever is shorter. Each stall is one warning (a line on stderr) and one count in the endpoints table,
until the endpoint answers again. A slow answer still within its timeout is no stall, however long it takes; nor
is a 429 now and then that the next answers follow (a gate finding the endpoint's limit).

The deadline counts the time since the endpoint last answered (any answer, a truncated one too) while it was
asked: ``TOOLKIT_ENDPOINT_DEADLINE_S`` seconds (90 by default), never less than 1.5 times the request timeout
(``TOOLKIT_TIMEOUT_S``), so that a slow model that answers within its timeout is never taken for dead. A game on
a dead endpoint therefore stops within the deadline of the endpoint's last answer, whatever its length and
however many games share the endpoint. A permanent refusal (an HTTP 4xx other than 429: a bad key, an unknown
model) kills the endpoint at once. An offline backend (no ``base_url``: scripted, replay, chaos) has no
endpoint: its failures stay the model's.

A process whose stderr nobody reads (a sweep's or a tournament's cell kernel) names a file in
``TOOLKIT_ENDPOINT_LINES``: each stall line is appended to it too, and the study relays it to its own stderr
(``toolkit.study.sweep``).
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
import weakref
from collections import Counter
from typing import Any

from toolkit.core.printable import plural
from toolkit.core.secrets import mask_url_credentials, redact
from toolkit.llm.gate import stalled, waited
from toolkit.llm.model import Attempt, Call, Model, now
from toolkit.llm.request import SCHEMA_REFUSED

log = logging.getLogger(__name__)  # a warning: on stderr whatever --quiet says (the CLI's last-resort handler)
DEFAULT_DEADLINE_S = 90.0
PERMANENT = ("http_error",)  # a refusal that waiting cannot cure
MODEL_KINDS = ("injected",)  # faults a test backend injects as the model's, by design
ANSWERS = ("truncated", SCHEMA_REFUSED)  # attempts rows the endpoint answered: no failure of the endpoint
LINES_ENV = "TOOLKIT_ENDPOINT_LINES"  # a file each stall line is appended to as well (a study's cell kernel)


class EndpointDown(Exception):
    """An endpoint gave no answer within its deadline (or refused for good): every game on it stops
    unfinished (a rerun resumes it). The message is the one line saying which endpoint and why."""


def deadline_s(timeout_s: float, refuse: bool = False) -> float:
    """The endpoint's deadline: ``TOOLKIT_ENDPOINT_DEADLINE_S`` (90 s by default), at least 1.5 × the timeout.
    ``refuse``: a deadline set below that is a ValueError (the commands' check, before anything is written);
    otherwise (a model given a longer timeout in Python) it is raised to it, with a warning."""
    raw = os.environ.get("TOOLKIT_ENDPOINT_DEADLINE_S")
    try:
        chosen = float(raw) if raw else DEFAULT_DEADLINE_S
    except ValueError:
        raise ValueError(f"TOOLKIT_ENDPOINT_DEADLINE_S={raw!r} is not a number of seconds") from None
    if not chosen > 0:
        raise ValueError(f"TOOLKIT_ENDPOINT_DEADLINE_S={raw!r} must be above 0")
    if raw and chosen < 1.5 * timeout_s:  # set so (the default is raised without a word)
        said = (f"TOOLKIT_ENDPOINT_DEADLINE_S={raw} is below 1.5 x the request timeout ({timeout_s:g} s, "
                "TOOLKIT_TIMEOUT_S): a slow answer within its timeout would be taken for a dead endpoint")
        if refuse:
            raise ValueError(f"{said}; set it to {1.5 * timeout_s:g} or more, or a shorter TOOLKIT_TIMEOUT_S")
        log.warning(f"{said}; raised to {1.5 * timeout_s:g} s")
    return max(chosen, 1.5 * timeout_s)


def endpoint_fault(model: Model, call: Call) -> bool:
    """The call got no answer, and the endpoint (not the model) is to blame: an HTTP endpoint gave none."""
    if call.completion is not None or model.base_url is None:
        return False
    return not call.attempts or call.attempts[-1].error_kind not in MODEL_KINDS


class EndpointHealth:
    """One model's endpoint as every game of the process sees it (``health_of``)."""

    def __init__(self, name: str, deadline: float, endpoint: str | None = None):
        self.name, self.deadline, self.endpoint = name, deadline, endpoint
        self.asking = 0  # decisions in progress on the endpoint (their waits included)
        self.heard = time.monotonic()  # the last answer, or when the endpoint was asked after being idle
        self.dead: str | None = None
        self.stalls = 0  # stalls seen (a stall: failures with no answer in between)
        self._stalled = False
        self._failed: Counter[str] = Counter()  # the failed requests since the last answer, by kind
        self._live: list[list[Call]] = []  # the calls in progress (their failed attempts so far)

    def begin(self) -> None:
        if self.dead is not None:
            raise EndpointDown(self.dead)
        if self.asking == 0:
            self.heard = max(self.heard, time.monotonic())
        self.asking += 1

    def end(self) -> None:
        self.asking -= 1

    def answered(self) -> None:
        self.heard, self._stalled = time.monotonic(), False
        self._failed.clear()

    def seen(self, seconds: float) -> str:
        """What the endpoint did for ``seconds`` since its last answer, in a few words: the kinds of the failed
        requests of the calls done and in progress (a 429 to every request is said so), or, none failed yet, how
        many calls it left unanswered."""
        kinds = self._failures()
        n, seconds = sum(kinds.values()), round(seconds, 1)
        if n and set(kinds) == {"rate_limit"}:
            return f"answered 429 to every request for {seconds:g} s ({n} requests)"
        if n and set(kinds) == {"timeout"}:
            return f"no answer for {seconds:g} s ({n} requests timed out)"
        if n:
            return (f"no answer for {seconds:g} s ({n} failed requests: "
                    + ", ".join(f"{c} {k}" for k, c in kinds.most_common()) + ")")
        if self._live:  # none failed yet (a loop too busy to see their timeouts): the calls it left waiting
            return f"no answer for {seconds:g} s ({plural(len(self._live), 'call')} unanswered)"
        return f"no answer for {seconds:g} s"

    def _failures(self) -> Counter[str]:
        """The failed requests since the last answer, of the calls done and in progress, by kind."""
        kinds = Counter(self._failed)
        for held in self._live:
            kinds.update(a.error_kind for a in (held[0].attempts if held else ()) if a.error_kind not in ANSWERS)
        return kinds

    def failing(self, quiet: float) -> None:
        """A request failed, or ``quiet`` seconds passed since the last answer: a stall begins when both hold
        (requests failed and no answer came for ``quiet``). Silence alone (a slow answer within its timeout) is
        none, nor a failure the endpoint's next answers follow within ``quiet``."""
        silent = time.monotonic() - self.heard
        if not self._stalled and self.dead is None and silent >= quiet and self._failures():
            self.stalled(self.seen(silent))

    def left(self) -> float:
        return self.heard + self.deadline - time.monotonic()

    def kill(self, why: str) -> str:
        """Declare the endpoint dead (once; its line on stderr): every decision on it raises ``EndpointDown``."""
        if self.dead is None:
            self.dead = (f"endpoint {self.name} is down: {why}; every game on it stopped unfinished "
                         "(a rerun resumes them)")
            log.warning(self.dead, extra={"endpoint_down": True})  # a caller that says it itself filters it out
            self._tell(down=self.dead)
        return self.dead

    async def generate(self, model: Model, request: Any, settle: bool = True) -> Call:
        """``model.generate(request, settle=settle)``, cut short when the endpoint's deadline passes meanwhile
        (then a call that got no answer: the attempts it failed so far, and one of kind ``deadline``; in the ledger
        as ``cut`` says). Awaited in the caller's task, not in a task of its own (a task and a wait a call fewer):
        a timer looks at the endpoint meanwhile."""
        if self.dead is not None:
            raise EndpointDown(self.dead)
        t0, held = time.perf_counter(), []
        quiet = min(model.config.timeout_s, self.deadline / 3)  # failing and silent this long while asked: a stall
        self._live.append(held)
        try:
            call, out = (await self._watched(model.generate(request, held, settle, lambda: self.failing(quiet)),
                                             quiet, held) if self.left() > 0 else (None, False))
            if call is None:  # the deadline passed
                return self._cut(model, request, held, t0, out, settle)
            if call.completion is not None:
                self.answered()
            else:
                self._failed.update(a.error_kind for a in call.attempts if a.error_kind not in ANSWERS)
            return call
        finally:
            self._live.remove(held)

    async def _watched(self, answer: Any, quiet: float, held: list[Call]) -> tuple[Call | None, bool]:
        """``await answer``, looking at the endpoint at each quiet mark meanwhile (requests failed with no answer
        for ``quiet``: a stall) until a stall is said, then at its deadline. (None, whether a request of the call
        was out) when the deadline passed (the endpoint dead, or silent for its deadline): ``answer`` is cancelled
        then."""
        loop, task = asyncio.get_running_loop(), asyncio.current_task()
        cancelling = task.cancelling() if hasattr(task, "cancelling") else 0  # Python 3.11's cancel counts
        cut: list[bool] = []  # at the cut: whether a request was out (read before the cancel ends it)

        def look() -> None:
            nonlocal timer
            if self.left() > 0 and self.dead is None:
                self.failing(quiet)  # requests failed meanwhile: a stall (later failures say it themselves)
                timer = loop.call_later(self._until(quiet), look)
            else:
                cut.append(bool(held and held[0].sending))
                task.cancel()

        timer = loop.call_later(self._until(quiet), look)
        try:
            call = await answer
        except asyncio.CancelledError:
            # ours (the deadline), unless the task was cancelled from outside too (asyncio.timeout's rule)
            if not cut or (hasattr(task, "uncancel") and task.uncancel() > cancelling):
                raise
            return None, cut[0]
        finally:
            timer.cancel()
        if cut:  # the cancel was taken for something else below (a timeout of its own): cut all the same
            if hasattr(task, "uncancel"):
                task.uncancel()
            return None, cut[0]
        return call, False

    def _until(self, quiet: float) -> float:
        """Seconds to the next look at the endpoint: the quiet mark (and every ``quiet`` seconds after: a later
        answer may have moved it) until a stall is said; then only the deadline."""
        silent = time.monotonic() - self.heard
        until = self.left() if self._stalled else min(self.left(), quiet - silent if silent < quiet else quiet)
        return max(until, 0.0)

    def _cut(self, model: Model, request: Any, held: list[Call], t0: float, out: bool, settle: bool) -> Call:
        """The call the endpoint's deadline cut short (``out``: a request of it was out then): its failed requests
        kept, and one of kind ``deadline``."""
        call = held[0] if held else Call(request, model.spec, model.name, model.base_url, now())
        unknown = out or any(a.error_kind == "timeout" for a in call.attempts)
        why = self.dead or self.kill(self.seen(self.deadline))
        ms = (time.perf_counter() - t0) * 1000
        call.completion, call.error, call.latency_ms = None, why, ms  # every failed request kept
        call.attempts.append(Attempt(len(call.attempts) + 1, "deadline", None, why, ms, sent=out))
        cut(call, unknown, settle)
        return call

    def stalled(self, why: str) -> None:
        """The line on stderr that a stall began (once per stall: until the endpoint answers again)."""
        if not self._stalled:
            self._stalled, self.stalls = True, self.stalls + 1
            line = (f"endpoint {self.name}: {why}; its games wait for it, at most {self.deadline:g} s from its last "
                    "answer (TOOLKIT_ENDPOINT_DEADLINE_S)")
            log.warning(line)
            self._tell()
            if path := os.environ.get(LINES_ENV):  # for the study that runs this process, to say on its stderr
                try:
                    with open(path, "a", encoding="utf-8") as f:
                        f.write(redact(" ".join(line.split())) + "\n")
                except OSError as exc:
                    log.warning(f"{LINES_ENV}={path}: {exc}")

    def _tell(self, down: str | None = None) -> None:
        """The stall (or the death) in the endpoints rows of the runs open (``toolkit.llm.gate.stalled``)."""
        if self.endpoint is not None:
            try:
                stalled(self.endpoint, down)
            except RuntimeError:  # no event loop running: no gate, no row to count it in
                pass

    def judge(self, call: Call) -> str:
        """The endpoint's failure in a few words; ``EndpointDown`` when the endpoint is dead or the failure is a
        permanent refusal (which kills it)."""
        last = call.attempts[-1] if call.attempts else None
        kind = last.error_kind if last else "error"
        why = f"{kind}: {(call.error or '').splitlines()[0][:200] if call.error else 'no answer'}"
        if kind in PERMANENT:
            raise EndpointDown(self.kill(why))
        if self.dead is not None:
            raise EndpointDown(self.dead)
        return why

    async def wait(self, call: Call) -> None:
        """After the endpoint's failure: wait before asking again (its ``Retry-After`` is honoured by the gate),
        or raise ``EndpointDown`` when the endpoint is dead."""
        why = self.judge(call)
        self.stalled(f"no answer ({why})")
        # the endpoint's Retry-After is honoured by its gate (toolkit.llm.gate), which holds the re-ask until then
        pause, t0 = min(2.0, max(self.left(), 0.0)), time.monotonic()
        try:
            await asyncio.sleep(pause)
        finally:
            if self.endpoint is not None:
                waited(self.endpoint, time.monotonic() - t0)
        if self.left() <= 0:
            raise EndpointDown(self.kill(f"{self.seen(self.deadline)} (the last failure: {why[:120]})"))


def cut(call: Call, unknown: bool, settle: bool) -> None:
    """The ledger of a call the deadline cut. ``unknown``: a request of it was out at the cut, or one timed out (sent,
    never answered): the provider may bill it, its outcome is never known, and it stays pending at its estimate
    (as a call in flight at a kill; toolkit.llm.budget). Otherwise every request it sent was answered with a
    refusal (a 429, a 5xx) or none left (queued at the gate, in a backoff): it is settled at 0, now or by the
    caller that settles it after writing its row (``settle=False``)."""
    if unknown:
        call.ticket = None
    elif settle:
        call.settle()


_HEALTH: "weakref.WeakKeyDictionary[Model, EndpointHealth]" = weakref.WeakKeyDictionary()


def health_of(model: Model) -> EndpointHealth:
    """The health of ``model``'s endpoint, shared by every game holding the same model object."""
    health = _HEALTH.get(model)
    if health is None:
        health = _HEALTH[model] = EndpointHealth(mask_url_credentials(model.spec), deadline_s(model.config.timeout_s),
                                                 model.base_url)
    return health


def revive(models: Any) -> None:
    """Forget what was learnt about these models' endpoints (a new study asks them afresh)."""
    for model in models:
        _HEALTH.pop(model, None)
