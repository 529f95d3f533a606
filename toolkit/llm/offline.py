"""Backends that need no network: ``random``, ``scripted:PATH``, ``chaos:RATE`` (listed in
``toolkit.llm.providers``), and ``ReplayBackend`` (its spec ``replay:DIR`` belongs to the results loader,
which hands it the recorded rows). The rule-based ``heuristic`` player lives with the game; a scripted
file's ``default: heuristic`` and chaos's good answers reach it through the registry.

All randomness comes from the request's seed, so a seeded game plays the same every time. Offline answers
cost nothing; their token counts are estimated (and flagged) by the model wrapper, so tables compare.
"""

from __future__ import annotations

import json
import random
from collections import defaultdict
from pathlib import Path
from typing import Any

from toolkit.core.files import ScriptedDecision, load_scripted
from toolkit.llm.backend import Backend
from toolkit.llm.spec import installed, missing_hint
from toolkit.llm.request import Completion, LLMError, Request

_WORDS = ("I", "think", "we", "should", "watch", "carefully", "nobody", "is", "safe", "yet", "let", "us",
          "listen", "before", "voting")


def _rng(request: Request, salt: str = "") -> random.Random:
    # A re-ask (more messages) draws afresh; the same request always draws the same.
    return random.Random(f"{request.sampling.seed}:{salt}:{request.replay_key or ''}:{len(request.messages)}")


def heuristic_player() -> Backend:
    """The rule-based ``heuristic`` player (defined by the game, found through the registry; a ValueError
    saying why when it is not installed, never a silent stand-in)."""
    provider = installed("heuristic")
    if provider is None:
        raise ValueError(f"the heuristic player is not installed{missing_hint()}")
    return provider.factory("", None)


def sample_from_schema(schema: dict[str, Any], rng: random.Random, root: dict[str, Any] | None = None) -> Any:
    """A random value that satisfies a (pydantic-made) JSON schema: enums, refs, anyOf, objects, arrays."""
    root = root or schema
    if "$ref" in schema:
        name = schema["$ref"].rsplit("/", 1)[-1]
        return sample_from_schema(root.get("$defs", {})[name], rng, root)
    if "enum" in schema:
        return rng.choice(schema["enum"])
    if "const" in schema:
        return schema["const"]
    if "anyOf" in schema or "oneOf" in schema:
        # Uniform over the legal values, null (a pass) included: an option weighs as many values as it allows.
        options = [root.get("$defs", {})[s["$ref"].rsplit("/", 1)[-1]] if "$ref" in s else s
                   for s in schema.get("anyOf") or schema["oneOf"]]
        weights = [len(s["enum"]) if "enum" in s else 1 for s in options]
        return sample_from_schema(rng.choices(options, weights)[0], rng, root)
    kind = schema.get("type", "string")
    if kind == "object":
        props = schema.get("properties", {})
        return {k: sample_from_schema(v, rng, root) for k, v in props.items()}
    if kind == "array":
        if "prefixItems" in schema:  # a fixed list: one item per position
            return [sample_from_schema(item, rng, root) for item in schema["prefixItems"]]
        low, high = schema.get("minItems", 0), schema.get("maxItems", max(2, schema.get("minItems", 0)))
        return [sample_from_schema(schema.get("items", {}), rng, root) for _ in range(rng.randint(low, high))]
    if kind in ("integer", "number"):  # a missing bound is taken 10 (or 1.0) away from the given one
        span = 10 if kind == "integer" else 1.0
        low, high = schema.get("minimum"), schema.get("maximum")
        low = low if low is not None else (high - span if high is not None else 0)
        high = high if high is not None else low + span
        return rng.randint(int(low), int(high)) if kind == "integer" else rng.uniform(low, high)
    if kind == "boolean":
        return rng.random() < 0.5
    if kind == "null":
        return None
    return " ".join(rng.choice(_WORDS) for _ in range(rng.randint(3, 10))).capitalize() + "."


class RandomBackend(Backend):
    """Legal random answers: every enum (e.g. legal targets) is sampled uniformly from the schema."""

    model = "random"
    free = True

    async def complete(self, request: Request) -> Completion:
        if request.schema is None:
            text = sample_from_schema({"type": "string"}, _rng(request))
        else:
            text = json.dumps(sample_from_schema(request.schema, _rng(request, "random")))
        return Completion(text, self.model)


class ScriptedBackend(Backend):
    """Answers from a YAML/JSON file (its schema: ``toolkit.core.files.ScriptedFile``; a bad file is a
    ``FileError`` naming it).

    - ``answers: [...]`` (or a bare list): returned in order, per game or session.
    - ``decisions: [{day, action, seat, ...}]``: each is used once, for the first request whose
      observation matches its ``day``/``action``/``seat``; its remaining fields are the answer
      (``target: null`` passes). ``default: random|heuristic|error`` answers anything not listed.
    - ``roles: {seat: role}`` and ``draws: {"wolf_tie:2": seat, ...}`` are read by the game, not here.
    """

    MATCH_KEYS = ScriptedDecision.MATCH_KEYS
    free = True

    def __init__(self, path: str | Path):
        self.path = Path(path)
        script = load_scripted(self.path)
        self.model = f"scripted:{self.path.name}"
        self.answers = script.answers or []
        self.decisions = script.decisions
        self.roles = dict(script.roles or {})
        self.draws = dict(script.draws or {})
        default = script.default
        self.default = None if default == "error" else (RandomBackend() if default == "random"
                                                        else heuristic_player())
        self._next_answer: dict[str, int] = defaultdict(int)
        self._used: dict[str, set[int]] = defaultdict(set)

    def unused(self, context_id: str) -> list[str]:
        """The decisions never matched in this game or session (e.g. for a seat that was dead by then)."""
        return [f"{self.path} decision #{i + 1} (day {d.day} {d.action} {d.seat})"
                for i, d in enumerate(self.decisions) if i not in self._used.get(context_id, ())]

    async def complete(self, request: Request) -> Completion:
        ctx = request.context_id
        obs = request.observation or {}
        if self.decisions and obs:
            for i, decision in enumerate(self.decisions):
                if i in self._used[ctx]:
                    continue
                if decision.matches(obs):
                    self._used[ctx].add(i)
                    return Completion(json.dumps(decision.answer()), self.model)
        if self._next_answer[ctx] < len(self.answers):
            answer = self.answers[self._next_answer[ctx]]
            self._next_answer[ctx] += 1
            text = answer if isinstance(answer, str) else json.dumps(answer)
            return Completion(text, self.model)
        if self.default is not None:
            completion = await self.default.complete(request)
            completion.model = f"{self.model}+{completion.model}"
            return completion
        where = {k: obs.get(k) for k in self.MATCH_KEYS if k in obs}
        raise LLMError(f"{self.model}: no scripted answer for {where or 'this request'} and default is error")


class ReplayBackend(Backend):
    """Answers taken from an earlier run's ``calls`` rows, matched by the request's ``replay_key``.

    The n-th request with a given key gets the n-th recorded call with that key (re-asks included); a
    recorded failure is raised again, so fallbacks replay too. A call the endpoint failed while the game waited
    for it (no answer, not a fallback: ``toolkit.llm.health``) was no decision and is skipped: the game asked
    again, and the next row is its answer. ``rows`` are dicts with ``replay_key``, ``response_text``, ``error``
    and ``fallback``, in the order they were recorded.
    """

    free = True

    def __init__(self, rows: list[dict[str, Any]], name: str = "replay"):
        self.model = name
        self._recorded: dict[str, list[dict]] = defaultdict(list)
        for row in rows:
            if not isinstance(row.get("response_text"), str) and row.get("fallback") in (False,):  # numpy too
                continue  # the endpoint's failure, waited out (a fallback row is True, an old one's None/NaN)
            self._recorded[str(row.get("replay_key"))].append(row)
        self._served: dict[tuple[str, str], int] = defaultdict(int)

    async def complete(self, request: Request) -> Completion:
        key = str(request.replay_key)
        n = self._served[(request.context_id, key)]
        self._served[(request.context_id, key)] += 1
        rows = self._recorded.get(key, [])
        if n >= len(rows):
            raise LLMError(f"{self.model}: no recorded answer #{n + 1} for {key}")
        row = rows[n]
        text = row.get("response_text")
        if not isinstance(text, str):  # None, or NaN from a table: the recorded call got no answer
            raise LLMError(f"{self.model}: replayed failure: {row.get('error')}")
        return Completion(text, self.model)


CHAOS_KINDS = ("prose", "truncated", "wrong_keys", "wrong_types", "illegal", "empty", "transport")


class ChaosBackend(Backend):
    """At ``rate``, a bad answer of one of CHAOS_KINDS; otherwise a good one from ``inner``.

    For fault tests: prose without JSON, truncated JSON, wrong keys, wrong types, an illegal choice
    (a value outside the schema's enum), an empty string, or a raised transport error.
    """

    free = True

    def __init__(self, rate: float, inner: Any | None = None):
        if not 0.0 <= rate <= 1.0:
            raise ValueError(f"chaos:{rate}: the rate must be between 0 and 1")
        self.rate = rate
        self.model = f"chaos:{rate:g}"
        self.inner = inner
        self._heuristic = None

    def _good(self, request: Request):
        if self.inner is not None:
            return self.inner
        if (request.observation or {}).get("game"):
            self._heuristic = self._heuristic or heuristic_player()
            return self._heuristic
        return RandomBackend()

    async def complete(self, request: Request) -> Completion:
        rng = _rng(request, "chaos")
        good = await self._good(request).complete(request)
        if rng.random() >= self.rate:
            good.model = self.model
            return good
        kind = rng.choice(CHAOS_KINDS)
        if kind == "transport":  # a failure for good, as if the retries had run out
            raise LLMError(f"{self.model}: injected transport error", kind="injected")
        try:
            answer = json.loads(good.text)
        except ValueError:
            answer = {"answer": good.text}
        text = {
            "prose": "Hmm, let me think about this. I am not sure what to do here.",
            "truncated": good.text[: max(1, len(good.text) // 2)],
            "wrong_keys": json.dumps({f"X_{k}": v for k, v in answer.items()} if isinstance(answer, dict)
                                     else {"X": answer}),
            "wrong_types": json.dumps({k: [1, 2] for k in answer} if isinstance(answer, dict) else [1]),
            "illegal": json.dumps(_illegal(answer, request.schema)),
            "empty": "",
        }[kind]
        return Completion(text, self.model)


def _illegal(answer: Any, schema: dict[str, Any] | None) -> Any:
    """The answer with every enum-constrained field set to a value outside its enum."""
    if not isinstance(answer, dict) or not schema:
        return {"target": "Player99"}
    out = dict(answer)
    for name, prop in schema.get("properties", {}).items():
        options = prop.get("anyOf", [prop])
        if any("enum" in o or "$ref" in o for o in options):
            out[name] = "Player99"
    if out == answer:
        out = {**answer, **{k: "Player99" for k in answer}}
    return out
