"""Is every public fact of a game in a prompt? An independent reader of rendered prompts.

``missing(prompt, events, game)`` reads the prompt's text back (the game record lines of
``prompts/werewolf/_record.j2`` and the speeches section of ``_base.j2``) and returns, for every public
event before the call that the prompt does not carry, a one-line description. It does not use the
observation code that built the prompt: it parses what the model would read. Speech text may be omitted
only where the prompt says so (the counts in "N speeches of day D omitted" must add up).

Used by tests/werewolf/test_game_record.py and benchmarks/ledger_completeness.py (through
``tests.werewolf.ledger_check``, which plays games with every prompt checked): a test oracle, so it lives with the
tests, not in the package.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from typing import Any, Callable

from toolkit.werewolf.engine import claims as claims_mod
from toolkit.werewolf.engine.rules import PUBLIC, Event
from toolkit.werewolf.engine.speech import clean_speech

MAX_SHOWN_SPEECH = 400  # a quoted speech may be cut to this (observation.MAX_MESSAGE_CHARS), marked " […]"

_ROUND = re.compile(r"^- Day (\d+) (vote|revote among ([^:]+)): (.*?)(?: ⇒ (.*))?\.$")
_DAWN = re.compile(r"^- Day (\d+) dawn: (.*) died last night\.$")
_LAST = re.compile(r"^- Day (\d+) last words of (\S+): «(.*)»$")
_SPEECH = re.compile(r"^- Day (\d+), (\S+): «(.*)»$")
_ACT = re.compile(r"^- Day (\d+): (.+)$")  # a role's public act (a Hunter's shot), its event's text
_NOW = re.compile(r"^- Now: (night|day) (\d+)\. Alive: ([^.]*)\.")
_OMITTED = re.compile(r"(\d+) (?:earlier )?speech(?:es)? of days? ([\d–, ]+) omitted")


def _days(spec: str) -> set[int]:
    out: set[int] = set()
    for part in spec.split(","):
        part = part.strip()
        if "–" in part:
            a, b = part.split("–")
            out |= set(range(int(a), int(b) + 1))
        elif part:
            out.add(int(part))
    return out


def _seat(name: str) -> str:
    return name.split(" (", 1)[0].strip()


class Reading:
    """What a prompt says, parsed."""

    def __init__(self, prompt: str):
        lines = prompt.splitlines()
        self.rounds: dict[int, list[dict[str, Any]]] = defaultdict(list)
        self.dawns: dict[int, list[str]] = {}
        self.last_words: dict[tuple[int, str], str] = {}
        self.acts: set[tuple[int, str]] = set()  # (day, text)
        self.speeches: Counter[tuple[int, str, str]] = Counter()
        self.omitted: list[tuple[int, set[int]]] = []
        self.role_claims: dict[str, set[str]] = defaultdict(set)
        self.findings: set[tuple[str, str, str]] = set()
        self.condensed: dict[str, Any] = {}
        self.now: tuple[str, int, list[str]] | None = None
        self.order: str | None = None
        for line in lines:
            self._line(line)

    def _line(self, line: str) -> None:
        if m := _ROUND.match(line):
            day, votes = int(m.group(1)), {}
            for group in filter(None, m.group(4).split("; ")):
                target, _, voters = group.partition(" ← ")
                for v in voters.split(", "):
                    votes[_seat(v)] = _seat(target)
            self.rounds[day].append({"revote": m.group(3) is not None, "votes": votes, "outcome": m.group(5),
                                     "candidates": m.group(3)})
        elif m := _DAWN.match(line):
            self.dawns[int(m.group(1))] = [] if m.group(2) == "nobody" else m.group(2).split(" and ")
        elif m := _LAST.match(line):
            self.last_words[(int(m.group(1)), m.group(2))] = m.group(3)
        elif m := _ACT.match(line):
            self.acts.add((int(m.group(1)), m.group(2)))
        elif m := _SPEECH.match(line):
            self.speeches[(int(m.group(1)), m.group(2), m.group(3))] += 1
        elif m := _NOW.match(line):
            self.now = (m.group(1), int(m.group(2)), m.group(3).split(", "))
        elif line.startswith("- Role claims: "):
            for part in line[len("- Role claims: "):].rstrip(".").split("; "):
                role, _, rest = part.partition(" claimed by ")
                self.role_claims[role] |= {_seat(s) for s in re.findall(r"Player\d+", rest)}
        elif line.startswith("- Claimed findings: "):
            for m2 in re.finditer(r"(Player\d+) called (Player\d+) (a werewolf|good)", line):
                self.findings.add((m2.group(1), m2.group(2), "werewolf" if m2.group(3) == "a werewolf" else "good"))
        elif line.startswith("- Days ") and "(condensed" in line:
            self.condensed["deaths"] = set(re.findall(r"(Player\d+(?: \(\w+\))?) \(night (\d+)\)", line))
            self.condensed["eliminated"] = set(re.findall(r"(Player\d+(?: \(\w+\))?) \(day (\d+)\)", line))
            quiet = re.search(r"nobody died on nights ([\d–, ]+)", line)
            ties = re.search(r"nobody eliminated on days ([\d–, ]+)", line)
            self.condensed["quiet"] = _days(quiet.group(1)) if quiet else set()
            self.condensed["ties"] = _days(ties.group(1)) if ties else set()
            span = re.match(r"- Days (\d+)–(\d+)", line)
            self.condensed["span"] = set(range(int(span.group(1)), int(span.group(2)) + 1))
        elif line.startswith("- Days ") and " votes (" in line:
            m2 = re.search(r"votes \((\d+) rounds, (\d+) of them revotes\)", line)
            self.condensed["rounds"], self.condensed["revotes"] = int(m2.group(1)), int(m2.group(2))
            self.condensed["votes"] = {(v, t): int(n) for v, t, n in re.findall(r"(Player\d+)→(Player\d+) ×(\d+)",
                                                                                  line)}
        elif re.match(r"^- Day \d+ speaking order: ", line):
            self.order = line
        if line.startswith("Speeches (") and line.endswith("):"):
            for m2 in _OMITTED.finditer(line):
                self.omitted.append((int(m2.group(1)), _days(m2.group(2))))


def missing(prompt: str, events: list[Event], reveal_roles: bool = False, roles: dict[str, str] | None = None,
            phase: str | None = None, shown_name: Callable[[str, str], str] | None = None) -> list[str]:
    """Descriptions of the public events in ``events`` that ``prompt`` does not carry (empty: complete)."""
    r = Reading(prompt)
    out: list[str] = []
    public = [e for e in events if e.visibility == PUBLIC]
    condensed_days = r.condensed.get("span", set())

    def name(seat: str, death: str = "night") -> str:
        if shown_name is not None:  # the game's own naming (Game.shown_name: its reveal levels)
            return shown_name(seat, death)
        return f"{seat} ({roles[seat]})" if reveal_roles and roles else seat

    # votes: the n-th round of a day is the n-th round line of that day
    round_no: Counter[int] = Counter()
    old_votes: Counter[tuple[str, str]] = Counter()
    old_rounds = old_revotes = 0
    speeches_by_day: Counter[int] = Counter()
    shown_by_day: Counter[int] = Counter()
    seen_round: set[tuple[int, int]] = set()
    for e in public:
        d = e.day
        old = d in condensed_days
        if e.kind == "announcement" and e.phase == "dawn":
            dead = [x.target for x in public if x.kind == "death" and x.day == d]
            if old:
                ok = (not dead and d in r.condensed["quiet"]) or (dead and all(
                    (name(s), str(d)) in r.condensed["deaths"] for s in dead))
            else:
                ok = d in r.dawns and sorted(r.dawns[d]) == sorted(name(s) for s in dead)
            if not ok:
                out.append(f"day {d} dawn: {dead or 'nobody'} died")
        elif e.kind == "death":
            ok = ((name(e.target), str(d)) in r.condensed["deaths"] if old
                  else name(e.target) in r.dawns.get(d, []))
            if not ok:
                out.append(f"death of {e.target} on night {d}")
        elif e.kind == "vote":
            n = round_no[d]
            if (d, n) not in seen_round:
                seen_round.add((d, n))
                if old:
                    old_rounds += 1
                    old_revotes += n > 0
            if old:
                old_votes[(e.actor, e.target)] += 1
            else:
                rounds = r.rounds.get(d, [])
                if len(rounds) <= n or rounds[n]["votes"].get(e.actor) != e.target or rounds[n]["revote"] != (n > 0):
                    out.append(f"day {d} {'revote' if n else 'vote'}: {e.actor}→{e.target}")
        elif e.kind == "announcement" and "Vote again among them" in e.text:
            candidates = e.text.split("tied between ", 1)[1].split(". Vote again")[0]
            n = round_no[d]
            round_no[d] += 1
            if not old:
                rounds = r.rounds.get(d, [])
                if (len(rounds) <= n + 1 or rounds[n]["outcome"] != "tie, revote"
                        or rounds[n + 1]["candidates"] != candidates):
                    out.append(f"day {d}: tie, revote among {candidates}")
        elif e.kind == "announcement" and "nobody is eliminated" in e.text:
            ok = d in r.condensed["ties"] if old else (
                bool(r.rounds.get(d)) and r.rounds[d][-1]["outcome"] == "tie, nobody eliminated")
            if not ok:
                out.append(f"day {d}: tie, nobody eliminated")
        elif e.kind == "elimination":
            ok = ((name(e.target, "exile"), str(d)) in r.condensed["eliminated"] if old else (
                bool(r.rounds.get(d)) and r.rounds[d][-1]["outcome"] == f"{name(e.target, 'exile')} eliminated"))
            if not ok:
                out.append(f"day {d}: {e.target} eliminated")
        elif e.kind == "speech" and e.phase == "last_words":
            if r.last_words.get((d, e.actor)) != clean_speech(e.text):
                out.append(f"day {d}: last words of {e.actor}")
        elif e.kind == "speech":
            speeches_by_day[d] += 1
            text = clean_speech(e.text, MAX_SHOWN_SPEECH)
            if r.speeches[(d, e.actor, text)] > 0:
                r.speeches[(d, e.actor, text)] -= 1
                shown_by_day[d] += 1
        elif e.kind == "announcement" and (e.text.startswith("Night ") and " falls" in e.text):
            if r.now is None or r.now[1] < d:
                out.append(f"night {d} began")
        elif e.kind == "announcement" and e.text.startswith(f"Day {d}: the living players are"):
            # the living list is carried by the deaths and eliminations; today's order while it matters
            if (r.now and r.now[1] == d and phase in ("day_speech", "day_vote", "day_revote")
                    and (r.order is None or e.text.rsplit("Speaking order: ", 1)[-1] not in r.order + ".")):
                out.append(f"day {d} speaking order")
        elif e.kind not in ("announcement", "speech"):  # a role's public act: its text, on its day
            if (d, e.text) not in r.acts:
                out.append(f"day {d}: {e.text}")
        else:
            out.append(f"unhandled public event kind {e.kind!r}: {e.text[:60]}")
        if e.kind == "speech":
            for speaker, kind, value in claims_mod.extract(e.actor, e.text):
                if kind == "role" and speaker not in r.role_claims.get(value, set()):
                    out.append(f"claim: {speaker} claimed {value}")
                elif kind in ("accuse", "clear") and (speaker, value, "werewolf" if kind == "accuse" else
                                                      "good") not in r.findings:
                    out.append(f"claim: {speaker} called {value} {kind}")
    if old_votes and (old_votes != Counter(r.condensed.get("votes", {}))
                      or (old_rounds, old_revotes) != (r.condensed.get("rounds"), r.condensed.get("revotes"))):
        out.append(f"condensed votes differ: {sorted(old_votes.items())} vs {r.condensed.get('votes')}")
    single: Counter[int] = Counter()
    spans = []
    for n, days in r.omitted:
        if len(days) == 1:
            single[next(iter(days))] += n
        else:
            spans.append((n, days))
    for d, total in speeches_by_day.items():
        hidden = total - shown_by_day[d]
        if single[d] == hidden and (hidden == 0 or not any(d in days for _, days in spans)):
            continue
        span = next(((n, days) for n, days in spans if d in days), None)
        if span and not single[d] and sum(speeches_by_day[x] - shown_by_day[x] for x in span[1]) == span[0]:
            continue
        out.append(f"day {d}: {hidden} speeches not shown, {single[d]} said to be omitted")
    return out
