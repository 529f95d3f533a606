"""Presets: the role counts and every rule flag of a game, loaded from YAML files."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from toolkit.core.files import FileError, did_you_mean, load_file, models_block, one_line
from toolkit.core.werewolf_names import ROLES
from toolkit.werewolf.engine import votes
from toolkit.werewolf.engine.discussions import REGISTRY as DISCUSSIONS
from toolkit.werewolf.engine.roles import REGISTRY, special_roles

__all__ = ["PRESETS_DIR", "Preset", "ROLES", "SPECIAL_ROLES", "available_presets", "load_preset", "preset_models"]

PRESETS_DIR = Path(__file__).with_name("presets")

SPECIAL_ROLES = special_roles()  # the shipped special roles (side_kill's "gods"), from their modules
Reveal = Literal["no_reveal", "team", "role"]  # how much a death announces (Kaggle's RevealLevel, same names)


class Preset(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    roles: dict[str, int]
    guard_no_repeat: bool = False
    witch_one_potion_per_night: bool = False
    witch_no_self_save: bool = False
    doctor_self_save: bool = False  # Kaggle: Doctor allow_self_save
    doctor_consecutive_saves: bool = True  # Kaggle: Doctor allow_consecutive_saves
    seer_learns: Literal["side", "role"] = "side"  # Kaggle: Seer reveal_level team | role
    night_reveal: Reveal = "no_reveal"  # Kaggle: night_elimination_reveal_level
    exile_reveal: Reveal = "no_reveal"  # Kaggle: day_exile_reveal_level
    # a split wolf vote: the latest proposal among the tied | nobody (Kaggle no_elected) | a draw (Kaggle random)
    wolf_tie: Literal["last_proposal", "none", "random"] = "last_proposal"
    # sequential: the wolves propose in seat order, each seeing the earlier proposals; simultaneous: all at once,
    # shown together (Kaggle: werewolf_night_vote_protocol SequentialVoting | SimultaneousMajority)
    wolf_vote: Literal["sequential", "simultaneous"] = "sequential"
    wolf_order: Literal["fixed", "rotate", "random"] = "fixed"  # a sequential wolf vote's first wolf: first_to_vote
    speech_order: Literal["rotate", "fixed", "random"] = "rotate"  # Kaggle: first_to_speak
    speech_rounds: int = Field(1, ge=1, le=5)  # Kaggle: RoundRobinDiscussion max_rounds, ParallelDiscussion ticks
    # how the day's talk goes: a protocol of toolkit.werewolf.engine.discussions (round_robin, parallel, bid_turn,
    # bid_round, or one registered there); docs/werewolf.md's table says what each does
    discussion: str = "round_robin"
    speech_turns: int = Field(8, ge=1, le=50)  # bid_turn: at most this many speeches a day (Kaggle: max_turns)
    bid_result: Literal["public", "private"] = "public"  # the bids and who won shown to all (bid_result_public)
    # a bid_turn tie: the first by name (A-Z; Kaggle SimpleBiddingProtocol) | urgency (UrgencyBiddingProtocol: a
    # seat named in the last speech, then the one who has spoken least, then seat order)
    bid_tie: Literal["name", "urgency"] = "name"
    # how the day votes and what a tie does: declarations of toolkit.werewolf.engine.votes (simultaneous or
    # sequential, Kaggle's SimultaneousMajority | SequentialVoting; none, revote or random), or ones registered there
    day_vote: str = "simultaneous"
    vote_order: Literal["fixed", "rotate", "random"] = "fixed"  # Kaggle: first_to_vote (sequential day votes only)
    vote_tie: str = "none"
    # a day voter may abstain (Kaggle's vote -1; a missing answer counts as one): abstentions are not counted
    vote_abstain: bool = False
    self_vote: bool = False  # a day voter may vote for themselves (Kaggle: the day's targets are all the living)
    last_words: bool = False
    win_rule: Literal["side_kill", "parity"] = "side_kill"
    protect_and_save: Literal["survive", "die"] = "survive"  # victim both protected and saved on one night
    max_days: int = Field(10, ge=1)
    # What a seat's failed decision (no usable answer: a transport failure, answers cut at the token limit, two
    # invalid answers) costs it: ``fallback`` (a seeded legal decision stands in; the game goes on), ``forfeit``
    # (Kaggle's Game Arena: the seat's side loses at once), ``eliminate_after:N`` (TextArena's: the seat's Nth
    # failed decision removes it at the next nightfall). The runner applies it (toolkit.werewolf.game).
    error_policy: str = "fallback"
    # Named models, as a sweep's or tournament's ``models:`` block (one function, core.files.model_spec): a spec
    # given for a game of this preset (play --model/--seat, a notebook's model, wolf_model, seats, a sweep's cell,
    # a tournament's models) that equals a name stands for its spec: {o4-high: {spec: SPEC, reasoning_effort: high}}.
    # The tables record the spec, parameters included.
    models: dict[str, str] = Field(default_factory=dict)

    @field_validator("models", mode="before")
    @classmethod
    def _models(cls, value: object) -> object:
        from toolkit.llm.spec import parse_spec, spec_params

        out = models_block(value)
        for name, spec in out.items():
            if not isinstance(spec, str) or not spec.strip():
                raise ValueError(f"{name}: a model is a spec string or {{spec: SPEC, NAME: VALUE}}, not {spec!r}")
            parse_spec(spec)
            spec_params(spec)  # provider parameters checked here, when the preset is read
        return out

    @field_validator("roles", "max_days", mode="before")
    @classmethod
    def _whole_numbers(cls, value: object) -> object:
        """A count is a whole number: ``Werewolf: true`` would otherwise count as one wolf, ``2.7`` as an error
        far from the file."""
        for key, count in (value.items() if isinstance(value, dict) else [("max_days", value)]):
            if isinstance(count, bool) or not isinstance(count, int):
                raise ValueError(f"{key}: a count must be a whole number, not {count!r}")
        return value

    @model_validator(mode="before")
    @classmethod
    def _old_reveal_flag(cls, data: object) -> object:
        """``reveal_roles_on_death: true`` (presets and recorded games before the two reveal levels) reads as
        both levels ``role``."""
        if isinstance(data, dict) and "reveal_roles_on_death" in data:
            data = dict(data)
            level = "role" if data.pop("reveal_roles_on_death") else "no_reveal"
            data.setdefault("night_reveal", level)
            data.setdefault("exile_reveal", level)
        return data

    @field_validator("discussion", "day_vote", "vote_tie")
    @classmethod
    def _declared(cls, name: str, info) -> str:
        """A protocol or vote option is one its registry holds (one line naming the choices otherwise)."""
        registry = {"discussion": DISCUSSIONS, "day_vote": votes.REGISTRY, "vote_tie": votes.TIES}[info.field_name]
        if name not in registry:
            raise ValueError(f"unknown {info.field_name} {name!r}{did_you_mean(name, list(registry))}; choose one of "
                             f"{', '.join(registry)}")
        return name

    @field_validator("error_policy", mode="before")
    @classmethod
    def _error_policy(cls, value: object) -> str:
        return format_policy(*parse_error_policy(value))

    @field_validator("roles")
    @classmethod
    def _known_roles(cls, roles: dict[str, int]) -> dict[str, int]:
        for role, count in roles.items():
            if role not in REGISTRY:
                raise ValueError(f"unknown role {role!r}{did_you_mean(role, list(REGISTRY))}; "
                                 f"roles are {', '.join(REGISTRY)}")
            if count < 0:
                raise ValueError(f"{role}: a count cannot be negative ({count})")
        if sum(roles.values()) > 30:
            raise ValueError(f"{sum(roles.values())} players; at most 30 seats")
        if roles.get("Werewolf", 0) < 1:
            raise ValueError("a game needs at least one Werewolf")
        if sum(roles.values()) - roles["Werewolf"] < 1:
            raise ValueError("a game needs at least one player on the village side")
        return roles

    @property
    def n_players(self) -> int:
        return sum(self.roles.values())

    @property
    def seats(self) -> list[str]:
        return [f"Player{i}" for i in range(1, self.n_players + 1)]

    def role_list(self) -> list[str]:
        return [role for role in REGISTRY for _ in range(self.roles.get(role, 0))]


def preset_models(presets: list[str | Path]) -> dict[str, str]:
    """The named models of these presets (``Preset.models``) in one mapping; a name two presets give different
    specs is refused (one line): a study's model must be the same model in every preset it plays."""
    out: dict[str, str] = {}
    for name in presets:
        for short, spec in load_preset(name).models.items():
            if out.setdefault(short, spec) != spec:
                raise FileError(f"models: {short} is {one_line(out[short], 80)} in one preset and "
                                f"{one_line(spec, 80)} in {name}; give it one spec (or two names)")
    return out


def available_presets() -> list[str]:
    return sorted(p.stem for p in PRESETS_DIR.glob("*.yaml"))


ERROR_POLICIES = ("fallback", "forfeit", "eliminate_after")


def parse_error_policy(value: object) -> tuple[str, int]:
    """``fallback``, ``forfeit``, ``eliminate_after:N`` or ``{eliminate_after: N}`` → (kind, N); N is 0 for the
    first two. A ValueError (one line) for anything else."""
    if isinstance(value, dict) and len(value) == 1:
        (kind, n), = value.items()
        value = f"{kind}:{n}"
    kind, _, n = str(value).strip().partition(":") if isinstance(value, str) else (None, "", "")
    if kind in ("fallback", "forfeit") and not n:
        return kind, 0
    if kind == "eliminate_after" and n.strip().isdigit() and int(n) >= 1:
        return kind, int(n)
    raise ValueError(f"error_policy must be fallback, forfeit or eliminate_after:N (N failed decisions, at least "
                     f"1), not {value!r}")


def format_policy(kind: str, n: int) -> str:
    return f"{kind}:{n}" if kind == "eliminate_after" else kind


@lru_cache(maxsize=64)
def load_preset(name_or_path: str | Path) -> Preset:
    path = Path(name_or_path)
    if not path.suffix:
        path = PRESETS_DIR / f"{name_or_path}.yaml"
    if not path.exists():
        raise ValueError(f"no preset {name_or_path!r}{did_you_mean(str(name_or_path), available_presets())}; "
                         f"presets are {available_presets()} or a YAML path")

    return load_file(path, Preset, "preset")
