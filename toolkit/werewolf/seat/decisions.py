"""The werewolf decisions, each a ``prompting.structured_call.Action`` with its own template in
``prompts/werewolf/``: the engine's own (speak, bid, vote, reflect) in the registry ``ACTIONS``, and every role's
(``Role.actions``: hunt, protect, verify, save, poison, shoot, or a plug-in role's) a targeted decision with the
template ``prompts/werewolf/<action>.j2``, declared by its role and nowhere else. Targeted actions get an
output model whose ``target`` is an enum of the legal targets (``null`` where passing is legal); a
reflection's beliefs are checked against the other living seats and the preset's roles.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any, Literal

from pydantic import AliasChoices, BaseModel, ConfigDict, Field, create_model, model_validator

from toolkit.prompting.structured_call import Action, with_choices
from toolkit.core.registry import Registry
from toolkit.werewolf.engine.roles import REGISTRY


def _thought_first(schema: dict[str, Any]) -> None:
    """The schema a model is shown lists every field as required, in order, so a constrained decoder writes
    the thought first, before the decision, as the prompt asks (a decoder puts optional fields after the
    required ones). Validation still accepts an answer without a thought."""
    schema["required"] = list(schema.get("properties", {}))


# Length caps are part of the schema, so a schema-constrained server cannot ramble past them.
class Speech(BaseModel):
    model_config = ConfigDict(json_schema_extra=_thought_first)

    thought: str = Field("", max_length=300, description="private reasoning, never shown to other players")
    speech: str = Field(..., max_length=600, description="what you say to everyone")


class Bid(BaseModel):
    """A bidding discussion's bid: how urgently this seat wants to speak next (Kaggle's BidAction amount)."""

    model_config = ConfigDict(json_schema_extra=_thought_first)

    thought: str = Field("", max_length=300, description="private reasoning, never shown to other players")
    bid: int = Field(..., ge=0, le=4, description="0 (listen) to 4 (must speak now)")


class Target(BaseModel):
    model_config = ConfigDict(json_schema_extra=_thought_first)

    thought: str = Field("", max_length=300, description="private reasoning, never shown to other players")
    target: str | None = Field(..., description="the chosen player, or null to pass where allowed")


class Belief(BaseModel):
    about: str = Field(..., description="another living player")
    role: str = Field(..., description="the role you think they have")
    confidence: float = Field(..., ge=0.0, le=1.0, description="how sure you are, 0 to 1")


class Reflection(BaseModel):
    """The seed's Reflect: a short summary, and a role guess with a confidence for every other living seat.

    ``reflection`` is accepted for ``summary`` (and read back as a property), so older answers and callers work.
    """

    model_config = ConfigDict(populate_by_name=True)

    summary: str = Field(..., max_length=800, validation_alias=AliasChoices("summary", "reflection"),
                         description="your private reading of the game: who is likely what, and why")
    beliefs: list[Belief] = Field(default_factory=list, description="one per other living player")

    @property
    def reflection(self) -> str:
        return self.summary


@lru_cache(maxsize=4096)
def reflection_model(about: tuple[str, ...], roles: tuple[str, ...]) -> type[Reflection]:
    """``Reflection`` whose beliefs must cover exactly the seats in ``about`` (the other living players),
    each once, with a role of the preset (``roles``). The JSON schema carries both as enums."""
    belief = create_model("Belief", __base__=Belief, about=(Literal[about] if about else Literal["__none__"], ...),
                          role=(Literal[roles], ...))

    def covers_every_seat(value: Any) -> Any:
        seen = [b.about for b in value.beliefs]
        if sorted(seen) != sorted(about):
            lacking = sorted(set(about) - set(seen))
            twice = sorted({s for s in seen if seen.count(s) > 1})
            raise ValueError("beliefs must name each other living player exactly once"
                             + (f"; missing {lacking}" if lacking else "") + (f"; repeated {twice}" if twice else ""))
        return value

    def one_per_seat_in_the_schema(schema: dict[str, Any]) -> None:
        # The schema a model is shown lists one belief per seat, in seat order (a constrained decoder and the
        # random player then give a valid answer by construction); validation accepts any order.
        schema["properties"]["beliefs"] = {
            "type": "array", "minItems": len(about), "maxItems": len(about),
            "description": "one per other living player",
            "prefixItems": [{"type": "object", "required": ["about", "role", "confidence"], "properties": {
                "about": {"const": seat}, "role": {"enum": list(roles)},
                "confidence": {"type": "number", "minimum": 0.0, "maximum": 1.0}}} for seat in about]}
        schema.pop("$defs", None)

    checked = create_model("Reflection", __base__=Reflection, beliefs=(list[belief], ...),
                           __validators__={"covers_every_seat": model_validator(mode="after")(covers_every_seat)})

    class Reflection_(checked):  # noqa: N801  (the schema's title stays "Reflection")
        model_config = ConfigDict(populate_by_name=True, title="Reflection",
                                  json_schema_extra=one_per_seat_in_the_schema)

    return Reflection_


# The decisions the engine asks every seat for; a role's own (``Role.actions``: hunt, protect, shoot, ...) each
# pick a seat and are made from the role's declaration by ``decision``.
ACTIONS: Registry[Action] = Registry("decision")
for _action in (Action("speak", "werewolf/speak.j2", Speech), Action("bid", "werewolf/bid.j2", Bid),
                Action("vote", "werewolf/vote.j2", Target), Action("reflect", "werewolf/reflect.j2", Reflection)):
    ACTIONS.register(_action)
ACTIONS.seal()


def decision(action: str) -> Action:
    """The action of a decision: the engine's own (``ACTIONS``), or a registered role's targeted decision (its
    template ``prompts/werewolf/<action>.j2``)."""
    if action in ACTIONS:
        return ACTIONS[action]
    if action in role_decisions():
        return _targeted(action)
    raise KeyError(f"no decision {action!r}: not one of {', '.join([*ACTIONS, *role_decisions()])}")


def role_decisions() -> tuple[str, ...]:
    """Every registered role's decisions, in the registry's order."""
    return tuple(dict.fromkeys(a for role in REGISTRY.values() for a in role.actions))


@lru_cache(maxsize=None)
def _targeted(action: str) -> Action:
    return Action(action, f"werewolf/{action}.j2", Target)


def output_model(action: str, choices: tuple[str, ...], can_pass: bool,
                 roles: tuple[str, ...] = ()) -> type[BaseModel]:
    """The output model for one request. For ``reflect``, ``choices`` are the other living seats and
    ``roles`` the preset's roles: given both, beliefs are validated against them."""
    base = decision(action).output
    if action == "reflect":
        return reflection_model(tuple(choices), tuple(roles)) if choices and roles else base
    if action in ("speak", "bid"):
        return base
    return with_choices(base, "target", choices, can_pass)
