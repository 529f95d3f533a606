"""The werewolf actions (the seed's Speak, NighttimeWhispers: Hunt/Protect/Verify/Save/Poison, Reflect),
each a ``toolkit.actions.Action`` with its own template in ``prompts/werewolf/``. Targeted actions get an
output model whose ``target`` is an enum of the legal targets (``null`` where passing is legal).
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from toolkit.actions import Action, with_choices


# Length caps are part of the schema, so a schema-constrained server cannot ramble past them.
class Speech(BaseModel):
    thought: str = Field("", max_length=300, description="private reasoning, never shown to other players")
    speech: str = Field(..., max_length=600, description="what you say to everyone")


class Target(BaseModel):
    thought: str = Field("", max_length=300, description="private reasoning, never shown to other players")
    target: str | None = Field(..., description="the chosen player, or null to pass where allowed")


class Reflection(BaseModel):
    reflection: str = Field(..., max_length=800,
                            description="your private reading of the game: who is likely what, and why")


ACTIONS: dict[str, Action] = {
    "speak": Action("speak", "werewolf/speak.j2", Speech),
    "vote": Action("vote", "werewolf/vote.j2", Target),
    "hunt": Action("hunt", "werewolf/hunt.j2", Target),
    "protect": Action("protect", "werewolf/protect.j2", Target),
    "verify": Action("verify", "werewolf/verify.j2", Target),
    "save": Action("save", "werewolf/save.j2", Target),
    "poison": Action("poison", "werewolf/poison.j2", Target),
    "reflect": Action("reflect", "werewolf/reflect.j2", Reflection),
}


def output_model(action: str, choices: tuple[str, ...], can_pass: bool) -> type[BaseModel]:
    base = ACTIONS[action].output
    if action in ("speak", "reflect"):
        return base
    return with_choices(base, "target", choices, can_pass)
