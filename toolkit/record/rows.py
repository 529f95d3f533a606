"""One row class per table, each column with its type and a one-line description: the tables' contract.
``toolkit.record.tables`` derives the table names and column orders from them, the run log writes only these
rows, and docs/tables.md is generated from them (``python -m toolkit.record.rows > docs/tables.md``). Ids join
the tables: ``run_id`` (runs), ``game_id`` (games, players, events, beliefs, calls), ``session_id`` (sessions,
tool_calls, calls), ``call_id`` (calls, attempts, beliefs).

Rows are plain dataclasses (slots, keyword-only): making one costs about a microsecond, and a column that is
not declared is refused (``TypeError``); ``Row.of`` builds one from a dict and refuses unknown keys by name.
"""

from __future__ import annotations

import dataclasses
import operator
import sys
from dataclasses import dataclass, field
from typing import Any, ClassVar


def column(doc: str, default: Any = None) -> Any:
    """A column: its description (one line, for docs/tables.md) and its default (None: not known)."""
    return field(default=default, metadata={"doc": doc})


def key(doc: str) -> Any:
    """A column every row must give (an id the tables join on, or the row's place)."""
    return field(metadata={"doc": doc})


@dataclass(slots=True, kw_only=True)
class Row:
    """A row of the table ``TABLE``."""

    TABLE: ClassVar[str] = ""

    def values(self) -> dict[str, Any]:
        """The row as {column: value}, in the table's column order."""
        names = COLUMNS[type(self)]
        return dict(zip(names, _GETTERS[type(self)](self)))

    @classmethod
    def of(cls, values: dict[str, Any]) -> "Row":
        """A row from a dict; an unknown key is an error that names it and the table's columns."""
        unknown = [k for k in values if k not in COLUMNS[cls]]
        if unknown:
            raise TypeError(f"{cls.TABLE}: unknown column{'s' if len(unknown) > 1 else ''} "
                            f"{', '.join(map(repr, unknown))}; columns are {', '.join(COLUMNS[cls])}")
        return cls(**values)


@dataclass(slots=True, kw_only=True)
class RunRow(Row):
    """One run: a process's batch of games or sessions, written to one folder."""

    TABLE: ClassVar[str] = "runs"
    run_id: str = key("the run's id (``<experiment>-<date>-<time>-<hex>``), also its folder's name")
    experiment: str = column("what the run is for, as its caller named it (``adhoc`` by default)")
    started_at: str = column("when the run opened (ISO 8601, UTC, milliseconds)")
    git_sha: str | None = column("the toolkit's git commit, null outside a git checkout")
    toolkit_version: str = column("the toolkit's version")
    config: str = column("the run's parameters as JSON (secrets masked); the sweep's grid values are here")
    seed: int | None = column("the run's base seed, where it has one")
    params: str | None = column("the provider parameters of each model spec the run plays, as JSON "
                                "``{spec: {name: value}}``; null when none has any")


@dataclass(slots=True, kw_only=True)
class GameRow(Row):
    """One game, written when it ends."""

    TABLE: ClassVar[str] = "games"
    game_id: str = key("the game's id (``g<seed>-<hex>``)")
    run_id: str = key("the run it belongs to")
    seed: int = column("the game's seed (role shuffle, random players, fallbacks)")
    preset: str = column("the preset's name (roles, rules)")
    winner: str = column("``village``, ``werewolves``, ``draw`` (the day limit), or ``error`` (the win_reason says)")
    win_reason: str = column("why the game ended, in words (for an error: the exception or the failing seat)")
    days: int = column("the day the game ended on")
    n_calls: int = column("model calls made, re-asks and reflections included")
    prompt_tokens: int = column("prompt tokens over all calls (estimated where a backend gives no usage)")
    completion_tokens: int = column("completion tokens over all calls (estimated where a backend gives no usage)")
    cost_usd: float | None = column("the price of all calls in US dollars; null when any call's price is unknown")
    n_fallbacks: int = column("decisions that ended on the seeded legal fallback (no usable answer)")
    wall_s: float = column("seconds from the first event to the end")
    config: str = column("JSON of what ``toolkit replay`` needs to set the same game up again")
    n_events: int | None = column("events rows the game wrote (``load`` calls a game with fewer incomplete: its "
                                  "event log was truncated); null in results written before it was kept")
    error_policy: str | None = column("what a failed decision cost the seat: ``fallback``, ``forfeit`` (its side "
                                      "lost: the win_reason says ``forfeit``), ``eliminate_after:N``")
    degraded: bool | None = column("a seat's decisions were mostly (more than half) not its model's: fallbacks for "
                                   "invalid or truncated answers, or for the endpoint under ``on_endpoint_failure: "
                                   "fallback``; ratings leave such games out by default; null in results written "
                                   "before it was kept")
    degraded_why: str | None = column("the degraded seats and why (``Player3: 5 of 6 decisions fell back``)")
    on_endpoint_failure: str | None = column("what the endpoint's failures did: ``wait`` (the game waited for the "
                                             "endpoint; none was the seat's) or ``fallback`` (the seat played on "
                                             "with fallbacks, judged by the error policy)")
    endpoint_fallbacks: int | None = column("decisions that fell back for the endpoint's failure (only under "
                                            "``on_endpoint_failure: fallback``)")


@dataclass(slots=True, kw_only=True)
class PlayerRow(Row):
    """One seat of one game, written when the game ends."""

    TABLE: ClassVar[str] = "players"
    game_id: str = key("the game")
    seat: str = key("the seat's name (``Player1``...)")
    role: str = column("its role (Werewolf, Villager, Seer, Witch, Guard)")
    side: str = column("``village`` or ``werewolves``")
    spec: str = column("the model spec that played it (``heuristic``, ``openai:gpt-4o-mini``...)")
    reflection: bool = column("whether the seat reflected (notes and beliefs)")
    experience: bool = column("whether the seat was given lessons from earlier games")
    strategy: str | None = column("the seat's strategy (``honest``...), null for the default")
    survived: bool = column("alive at the end")
    death_day: int | None = column("the day it died, null if it survived")
    death_cause: str | None = column("``werewolves``, ``poison``, ``vote``, ``disqualified`` (the error policy "
                                     "eliminate_after)...; null if it survived")
    errors: int | None = column("the seat's decisions that ended on the fallback (no usable answer: transport "
                                "failures, truncations, invalid answers), reflections not counted")


@dataclass(slots=True, kw_only=True)
class EventRow(Row):
    """One thing that happened in a game, as the rules emitted it."""

    TABLE: ClassVar[str] = "events"
    game_id: str = key("the game")
    seq: int = key("its place in the game's events, from 0")
    day: int = column("the day (night 1 comes before day 1's speeches)")
    phase: str = column("``night``, ``dawn``, ``day_speech``, ``day_vote``... (when it happened)")
    kind: str = column("what happened: ``speech``, ``vote``, ``hunt_proposal``, ``death``, ``elimination``...")
    actor: str | None = column("the seat that acted, null for the moderator")
    target: str | None = column("the seat acted on, null when there is none (or a pass)")
    text: str = column("the event as the players who see it read it")
    visibility: str = column("who sees it: ``public``, ``werewolves``, ``moderator`` or one seat's name")
    fallback: bool = column("the actor's decision was the seeded fallback, not the model's answer")


@dataclass(slots=True, kw_only=True)
class CallRow(Row):
    """One model call (a re-ask is a call of its own), good or bad. Built from a ``toolkit.llm.Call``."""

    TABLE: ClassVar[str] = "calls"
    call_id: str = key("``<game_id or session_id>-<seq>``")
    run_id: str | None = column("the run")
    game_id: str | None = column("the game, for a player's call")
    session_id: str | None = column("the agent session, for an engineer's call")
    seq: int = column("the order the call was asked in, within its game or session, from 0")
    seat: str | None = column("the seat that asked")
    role: str | None = column("the seat's role (or the agent's role)")
    day: int | None = column("the game's day")
    phase: str | None = column("the game's phase")
    action: str | None = column("the action asked: ``speak``, ``vote``, ``hunt``, ``reflect``, an agent step...")
    spec: str = column("the model spec the call went through")
    model: str = column("the model that answered, as its backend names it")
    base_url: str | None = column("the endpoint, credentials masked; null for offline backends")
    temperature: float | None = column("the sampling temperature asked for, null for the backend's default")
    messages: str = column("the messages sent, as JSON")
    response_text: str | None = column("the answer as sent (with native tool calls: JSON of content and tool_calls)")
    parsed: str | None = column("the validated answer as JSON, null when it could not be used")
    ok: bool = column("the answer was valid")
    error: str | None = column("why the answer could not be used, or the transport error")
    attempts: int = column("requests made: failed ones plus the one that answered (0 for a cache hit)")
    fallback: bool = column("the last call of a decision that ended on the fallback")
    latency_ms: float = column("milliseconds from asking to the answer, retries included")
    prompt_tokens: int | None = column("prompt tokens (estimated where usage_estimated)")
    completion_tokens: int | None = column("completion tokens (estimated where usage_estimated)")
    cached_tokens: int | None = column("prompt tokens the server served from its prompt cache, where it says")
    usage_estimated: bool | None = column("the token counts are estimated, not reported by the server")
    cost_usd: float | None = column("the call's price in US dollars, null when unknown")
    cache_hit: bool = column("answered without a request: from the toolkit's response cache, or replayed from the "
                             "record of the same game left unfinished by an earlier run (cost 0)", False)
    started_at: str = column("when the call was asked (ISO 8601, UTC)")
    replay_key: str | None = column("``<preset>/<seed>/<seat>/d<day>/<phase>/<action>``: what a replay matches on")
    finish_reason: str | None = column("why the answer ended, as the endpoint said: ``stop``, ``length`` (cut at "
                                       "the token limit: a truncated answer, never used), ``tool_calls``; null "
                                       "where unknown")
    reasoning_tokens: int | None = column("hidden reasoning tokens, where the endpoint reports them (billed as "
                                          "output; OpenAI counts them inside completion_tokens)")
    reasoning: str | None = column("the reasoning text, where the endpoint sends it (``reasoning_content``)")
    params: str | None = column("the spec's provider parameters as JSON (``{\"reasoning_effort\": \"high\"}``), "
                                "null for none")
    request_key: str | None = column("a hash of the question (spec, replay_key, sampling, messages): what a "
                                     "resumed study replays an unfinished game's answers by")


@dataclass(slots=True, kw_only=True)
class AttemptRow(Row):
    """One failed request of a call (a retry that answered leaves one row per failure before it)."""

    TABLE: ClassVar[str] = "attempts"
    call_id: str = key("the call")
    attempt: int = key("which request of the call, from 1")
    error_kind: str = column("``rate_limit``, ``timeout``, ``server``, ``connection``... (how it failed)")
    status_code: int | None = column("the HTTP status, null without a response")
    error: str = column("the error message")
    latency_ms: float = column("milliseconds until it failed")


@dataclass(slots=True, kw_only=True)
class BeliefRow(Row):
    """One seat's guess at another seat's role, from one reflection."""

    TABLE: ClassVar[str] = "beliefs"
    game_id: str = key("the game")
    seq: int = key("the seq of the next event: where in the game the guess was made")
    day: int = column("the day")
    phase: str = column("the phase")
    seat: str = column("the seat that guessed")
    about: str = column("the seat guessed about (another living seat)")
    guessed_role: str = column("the role guessed")
    confidence: float = column("how sure, 0 to 1")
    call_id: str | None = column("the reflection call the guess came from")


@dataclass(slots=True, kw_only=True)
class SessionRow(Row):
    """One engineer agent session, written when it ends."""

    TABLE: ClassVar[str] = "sessions"
    session_id: str = key("the session's id")
    run_id: str = key("the run")
    task: str = column("the task given to the agent")
    spec: str = column("the model spec that drove it")
    steps: int = column("steps taken")
    ended_by: str = column("``end``, ``max_steps``, ``wall_clock``, ``budget``, ``disk``, ``eval_git``, ``stopped``, "
                           "``error`` or ``interrupted`` (Ctrl-C or a cancellation)")
    success: bool | None = column("the task's check passed; null without a check")
    cost_usd: float | None = column("the price of the session's calls in US dollars, null when unknown")
    wall_s: float = column("seconds from start to end")


@dataclass(slots=True, kw_only=True)
class ToolCallRow(Row):
    """One tool call of an agent session."""

    TABLE: ClassVar[str] = "tool_calls"
    session_id: str = key("the session")
    step: int | None = key("the step that made it")
    tool: str = column("the tool's name (``editor.view``, ``terminal.run``...)")
    args: str | None = column("its arguments as JSON (secrets masked)")
    ok: bool = column("the tool succeeded")
    error: str | None = column("the start of its output when it failed (500 characters)")
    duration_ms: float = column("milliseconds it ran")
    output_chars: int = column("characters of output (after masking)")
    truncated: bool = column("the output was cut to fit the model's view")
    exit_code: int | None = column("a shell command's exit status (null: another tool, or none: killed)")
    signal: int | None = column("the signal that ended the command (its status 128+N), else null")
    timed_out: bool | None = column("the command was killed at its timeout (or the session's wall clock)")
    killed_by: str | None = column("what of the sandbox ended or hindered it: `timeout`, `memory` (a kill by the "
                                   "session's memory bound) or `processes` (a fork its process bound refused)")
    output_bytes: int | None = column("bytes of output the command made")
    dropped_chars: int | None = column("characters of it not shown to the model (from the middle: head and tail "
                                       "kept)")
    cpu_s: float | None = column("CPU seconds of its processes (bash's `times`), null where unknown")


@dataclass(slots=True, kw_only=True)
class EndpointRow(Row):
    """What one endpoint's concurrency gate (toolkit.llm.gate) did while a run was open, written when it closes:
    how far the run was from the endpoint's limits. The gate is the process's, so runs open at once in one process
    share their figures."""

    TABLE: ClassVar[str] = "endpoints"
    run_id: str = key("the run")
    endpoint: str = key("the endpoint's base URL, credentials masked")
    max_connections: int = column("the most requests in flight the gate allows (``TOOLKIT_MAX_CONNECTIONS`` or "
                                  "``?max_connections=N``)")
    limit: int = column("the limit the gate settled on by the end (halved on each 429, raised again by answers)")
    lowest_limit: int = column("the lowest limit the gate went down to during the run")
    peak_in_flight: int = column("the most requests in flight at once")
    requests: int = column("requests let through the gate (retries included)")
    rate_limited: int = column("429 answers seen")
    waited_s: float = column("seconds requests waited before they were sent, summed: at the gate (for a free slot "
                             "or a ``Retry-After``) and after a failure (a call's backoff or the endpoint's "
                             "``Retry-After``, capped at 60 s; a decision waiting to ask again)")
    stalls: int | None = column("times the endpoint failed while its games waited for it: a call gave up after its "
                                "retries, or requests failed (timeout, 429, 5xx, transport error) with no answer "
                                "for the request timeout or a third of the deadline, whichever is shorter; a slow "
                                "answer within its timeout is none (each a line on stderr: toolkit.llm.health); "
                                "null in runs written before")
    down: str | None = column("why the endpoint was declared dead (its games stopped as ``interrupted (endpoint)``);"
                              " null while it answered")


ROWS: tuple[type[Row], ...] = (RunRow, GameRow, PlayerRow, EventRow, CallRow, SessionRow, ToolCallRow, AttemptRow,
                               BeliefRow, EndpointRow)
COLUMNS: dict[type[Row], tuple[str, ...]] = {cls: tuple(f.name for f in dataclasses.fields(cls)) for cls in ROWS}
_GETTERS = {cls: operator.attrgetter(*names) for cls, names in COLUMNS.items()}


def undescribed(classes: tuple[type[Row], ...] = ROWS) -> list[str]:
    """``table.column`` for every column without a one-line description (and ``table`` for a table without one)."""
    # a class without a docstring gets the dataclass's generated one, its signature
    out = [cls.TABLE for cls in classes
           if not (cls.__doc__ or "").strip() or cls.__doc__.startswith(cls.__name__ + "(")]
    for cls in classes:
        for f in dataclasses.fields(cls):
            doc = f.metadata.get("doc", "")
            if not doc.strip() or "\n" in doc:
                out.append(f"{cls.TABLE}.{f.name}")
    return out


def reference() -> str:
    """docs/tables.md: every table, its columns, their types and descriptions."""
    out = ["# Tables", "",
           "<!-- Generated from toolkit/record/rows.py by `python -m toolkit.record.rows > docs/tables.md`;"
           " do not edit. -->", "",
           "Every run writes its rows to `<results>/<run_id>/<table>.jsonl` as they happen and compacts them to "
           "`<table>.parquet` when it closes; `toolkit.record.load.load(folder)` reads every run below a folder "
           "into one frame per table. Ids join the tables: `run_id`, `game_id`, `session_id`, `call_id`.", ""]
    for cls in ROWS:
        out += [f"## {cls.TABLE}", "", (cls.__doc__ or "").strip().replace("``", "`"), "",
                "| column | type | description |", "| --- | --- | --- |"]
        for f in dataclasses.fields(cls):
            kind = str(f.type).replace("|", "or")
            doc = f.metadata.get("doc", "").replace("``", "`").replace("|", "/")
            out.append(f"| `{f.name}` | {kind} | {doc} |")
        out.append("")
    return "\n".join(out)


if __name__ == "__main__":
    sys.stdout.write(reference())
