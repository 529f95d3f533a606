"""The agent's memory: one entry a step (thought, commands, observations), rendered into the step prompt
by ``prompts/agent/memory.j2``. Recent steps stay verbatim; older long observations are elided except the
last few editor views; the oldest steps are dropped when the whole is over the role's budget (and the prompt
says how many)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from toolkit.prompting.structured_call import render

ELIDE_AFTER = 400  # characters of an old observation kept verbatim (its head: half of it)
KEEP_EDITOR_VIEWS = 2
KEEP_RECENT = 3


@dataclass
class Entry:
    step: int
    thought: str
    commands: list[dict[str, Any]]
    observations: list[str] = field(default_factory=list)
    editor_view: bool = False


class Memory:
    def __init__(self, budget_chars: int):
        self.budget_chars = budget_chars
        self.entries: list[Entry] = []

    def __iter__(self):
        return iter(self.entries)

    def __len__(self) -> int:
        return len(self.entries)

    def __getitem__(self, i):
        return self.entries[i]

    def add(self, entry: Entry) -> Entry:
        self.entries.append(entry)
        return entry

    def render(self) -> str:
        entries = self.entries
        views = [i for i, e in enumerate(entries) if e.editor_view][-KEEP_EDITOR_VIEWS:]
        blocks = []
        for i, e in enumerate(entries):
            keep = i >= len(entries) - KEEP_RECENT or i in views
            observations = [{"text": o, "elided": 0} if keep or len(o) <= ELIDE_AFTER else
                            {"text": o[:ELIDE_AFTER // 2], "elided": len(o) - ELIDE_AFTER // 2} for o in e.observations]
            blocks.append(render("agent/memory_step.j2", step=e.step, thought=e.thought, observations=observations,
                                 commands=json.dumps(e.commands, ensure_ascii=False)))
        dropped = 0
        while len(blocks) > 1 and sum(len(b) for b in blocks) > self.budget_chars:
            blocks.pop(0)
            dropped += 1
        keep = max(self.budget_chars, ELIDE_AFTER)
        if blocks and len(blocks[-1]) > keep:  # the last step always stays (its head at least), shortened
            last = blocks[-1]
            blocks[-1] = f"{last[:keep]}\n[… {len(last) - keep} characters elided …]"
        return render("agent/memory.j2", dropped=dropped, blocks=blocks)
