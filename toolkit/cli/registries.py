"""The docs' tables of plug-ins, generated from the registries that declare them (the roles, the event kinds of the
engine and the roles, the decisions, the discussion protocols, the day votes and their tie rules, the kinds of
execution environment, the exporters, the model providers). Each table sits in its page between ``<!-- registry:NAME
-->`` and ``<!-- /registry:NAME -->``; ``python -m toolkit.cli.registries`` rewrites them in place, and
tests/test_docs.py checks that the pages hold what the registries say."""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Callable

DOCS = Path(__file__).resolve().parents[2] / "docs"


def _table(header: tuple[str, ...], rows: list[tuple[str, ...]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + " --- |" * len(header)]
    return "\n".join(lines + ["| " + " | ".join(cell.replace("|", "/") for cell in row) + " |" for row in rows])


def event_kinds() -> str:
    from toolkit.werewolf.engine import roles
    from toolkit.werewolf.engine.events import ENGINE, MODERATOR

    owner = {k.name: "engine" for k in ENGINE}
    for name, role in roles.REGISTRY.items():
        for k in role.events:
            owner.setdefault(k.name, name)
    rows = [(f"`{k.name}`", owner[k.name], f"`{k.decision}`" if k.decision else "—",
             "moderator `dict`" if k.kaggle == MODERATOR else f"`{k.kaggle[0]}` ({k.kaggle[1]})",
             f"`{k.kaggle_action}`" if k.kaggle_action else "—", k.view, "yes" if k.removes else "")
            for k in roles.event_kinds().values()]
    return _table(("kind", "declared by", "decision", "Kaggle entry", "Kaggle action", "HTML view", "removes"),
                  rows)


def roles() -> str:
    from toolkit.werewolf.engine import roles

    return _table(("role", "side", "its decisions", "asked at night", "its loss ends a `side_kill` game"),
                  [(f"`{r.name}`", r.side, ", ".join(f"`{a}`" for a in r.actions) or "—",
                    "yes" if r.night_order is not None else "", "yes" if r.special else "")
                   for r in roles.REGISTRY.values()])


def decisions() -> str:
    """Every decision a seat may be asked for (the engine's, then each role's): what a scripted file's ``action``
    names, and the fields its answer gives."""
    from toolkit.werewolf.engine import roles
    from toolkit.werewolf.seat.decisions import ACTIONS, decision, role_decisions

    asked: dict[str, list[str]] = {a: ["every seat (the engine)"] for a in ACTIONS}
    for name, role in roles.REGISTRY.items():
        for a in role.actions:
            asked.setdefault(a, []).append(name)
    return _table(("action", "asked of", "the answer"),
                  [(f"`{a}`", ", ".join(asked[a]),
                    ", ".join(f"`{f}`" for f in decision(a).output.model_fields if f != "thought"))
                   for a in [*ACTIONS, *role_decisions()]])


def exporters() -> str:
    from toolkit.export import EXPORTERS

    return _table(("format", "what is written", "read back by (tested in `tests/export/`)"),
                  [(f"`{e.name}`", e.writes or e.summary, e.read_by) for e in EXPORTERS.values()])


def providers() -> str:
    """The shipped providers (built in, then installed entry points; not those a process registered)."""
    from toolkit.llm.providers import PROVIDERS
    from toolkit.llm.spec import installed, installed_names

    shipped = [(p, "the built-in list") for name, p in PROVIDERS.items() if name in PROVIDERS.builtin]
    shipped += [(installed(name), "entry point") for name in installed_names() if name not in PROVIDERS.builtin]
    return _table(("spec", "what answers", "found through", "token counts"),
                  [(", ".join(f"`{u.strip()}`" for u in p.usage.split(",")), p.about, found,
                    "measured" if p.real_usage else "estimated") for p, found in shipped])


def discussions() -> str:
    from toolkit.werewolf.engine.discussions import REGISTRY

    return _table(("discussion", "the day's talk", "its own decisions", "Kaggle's protocol"),
                  [(f"`{d.name}`", d.summary, ", ".join(f"`{a}`" for a in d.decisions) or "—",
                    f"`{d.kaggle}`" if d.kaggle else "—") for d in REGISTRY.values()])


def votes() -> str:
    from toolkit.werewolf.engine.votes import REGISTRY, TIES

    return _table(("option", "value", "what it does", "Kaggle's name"),
                  [(f"`{option}`", f"`{d.name}`", d.summary, f"`{d.kaggle}`" if d.kaggle else "—")
                   for option, registry in (("day_vote", REGISTRY), ("vote_tie", TIES)) for d in registry.values()])


def environments() -> str:
    from toolkit.agent.environments.kinds import KINDS

    return _table(("kind", "what it is", "confines the commands"),
                  [(f"`{k.name}`", k.summary, "yes" if k.confined else "**no**") for k in KINDS.values()])


# table name -> (the page it is on, its generator)
TABLES: dict[str, tuple[str, Callable[[], str]]] = {
    "roles": ("werewolf.md", roles),
    "event-kinds": ("werewolf.md", event_kinds),
    "decisions": ("werewolf.md", decisions),
    "discussions": ("werewolf.md", discussions),
    "votes": ("werewolf.md", votes),
    "exporters": ("exports.md", exporters),
    "environments": ("environments.md", environments),
    "providers": ("models.md", providers),
}


def block(name: str, body: str) -> str:
    return f"<!-- registry:{name} -->\n{body}\n<!-- /registry:{name} -->"


def pattern(name: str) -> re.Pattern:
    return re.compile(rf"<!-- registry:{re.escape(name)} -->.*?<!-- /registry:{re.escape(name)} -->", re.S)


def current(docs: Path = DOCS) -> dict[str, tuple[str, str]]:
    """name -> (what the page holds between its markers, what the registry says now)."""
    out = {}
    for name, (page, make) in TABLES.items():
        found = pattern(name).search((docs / page).read_text(encoding="utf-8"))
        out[name] = (found.group(0) if found else "", block(name, make()))
    return out


def write(docs: Path = DOCS) -> list[str]:
    """Rewrite every table in place; the names of the tables that changed."""
    changed = []
    for name, (page, make) in TABLES.items():
        path = docs / page
        text = path.read_text(encoding="utf-8")
        new = pattern(name).sub(lambda _: block(name, make()), text)
        if new != text:
            path.write_text(new, encoding="utf-8")
            changed.append(name)
    return changed


if __name__ == "__main__":
    from toolkit.cli.common import show

    names = write()
    show(f"updated: {', '.join(names)}" if names else "the docs' tables are up to date", file=sys.stderr)
