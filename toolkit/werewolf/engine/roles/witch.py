"""The Witch: one antidote and one poison for the whole game. Told the wolves' victim while she holds the
antidote, she may save them (``witch_no_self_save``); then she may poison a player (``witch_one_potion_per_night``:
not on a night she saved). A poisoned player dies at dawn whatever protects them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from toolkit.werewolf.engine.events import EventKind
from toolkit.werewolf.engine.roles.base import Ask, Kill, Role


@dataclass
class Night:
    save_done: bool = False
    saved: bool = False
    poison_done: bool = False
    poisoned: str | None = None


@dataclass
class State:
    antidote: bool = True
    poison: bool = True


class Witch(Role):
    name = "Witch"
    colour, terminal_colour = "#16a085", "36"
    special = True
    night_order = 50
    actions = ("save", "poison")
    events = (EventKind("save", decision="save"), EventKind("poison", decision="poison"))  # Kaggle has no potions
    Night = Night
    State = State

    def night_asks(self, game: Any) -> list[Ask]:
        witch, wolves = game.living(self.name), game.role("Werewolf")
        if not witch or not wolves.done(game):
            return []
        w, n, state = witch[0], game.tonight(self.name), game.state_of(self.name)
        victim = wolves.victim(game)
        can_save = state.antidote and victim is not None and not (game.preset.witch_no_self_save and victim == w)
        if not n.save_done and can_save:
            return [Ask(w, "save", (victim,), can_pass=True)]
        if not n.poison_done and state.poison and not (n.saved and game.preset.witch_one_potion_per_night):
            return [Ask(w, "poison", tuple(s for s in game.alive if s != w), can_pass=True)]
        return []

    def act(self, game: Any, seat: str, action: str, target: str | None, fallback: bool) -> None:
        n, state = game.tonight(self.name), game.state_of(self.name)
        if action == "save":
            n.save_done = True
            if target is not None:
                n.saved, state.antidote = True, False
                game.emit("save", seat, target, f"You use your antidote on {target}.", seat, fallback)
            return
        n.poison_done = True
        if target is not None:
            n.poisoned, state.poison = target, False
            game.emit("poison", seat, target, f"You poison {target}.", seat, fallback)

    def after_hunt(self, game: Any, victim: str) -> None:
        witch = game.living(self.name)
        if witch and game.state_of(self.name).antidote:  # she is told the victim while she has the antidote
            game.emit("announcement", None, victim, f"Tonight the werewolves attacked {victim}.", witch[0])

    def shields(self, game: Any) -> list[tuple[str, str]]:
        if not game.tonight(self.name).saved:
            return []
        return [(game.role("Werewolf").victim(game), "save")]

    def night_kills(self, game: Any) -> list[Kill]:
        poisoned = game.tonight(self.name).poisoned
        return [Kill(poisoned, "poison")] if poisoned is not None else []

    def observe(self, game: Any, seat: str, ask: Ask) -> dict[str, Any]:
        state = game.state_of(self.name)
        obs: dict[str, Any] = {"antidote": state.antidote, "poison": state.poison}
        if ask.action == "save":
            obs["victim"] = ask.choices[0]
        if ask.action == "poison":
            obs["saved_tonight"] = game.tonight(self.name).saved
        return obs

    def private_lines(self, game: Any, seat: str, visible: list[Any]) -> list[str]:
        return ([f"Night {e.day}: you saved {e.target}." for e in visible if e.kind == "save"]
                + [f"Night {e.day}: you poisoned {e.target}." for e in visible if e.kind == "poison"])


ROLE = Witch()
