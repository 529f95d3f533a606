"""The werewolf domain: play games, recorded into a run (``toolkit.record``), under a preset of the rules.

    from toolkit.werewolf import GameConfig, play_games

The rules are ``engine/`` (pure: ``rules.Game``, the presets, one module per role), a seat's view and decisions
``seat/``, the offline players ``players/``, the runner ``game.py``. Names here are imported when first used."""

from __future__ import annotations

from toolkit.core.lazy import face

_WHERE = {
    "GameConfig": "toolkit.werewolf.game",
    "SeatConfig": "toolkit.werewolf.game",
    "GameResult": "toolkit.werewolf.game",
    "play_game": "toolkit.werewolf.game",
    "play_games": "toolkit.werewolf.game",
    "Preset": "toolkit.werewolf.engine.preset",
    "load_preset": "toolkit.werewolf.engine.preset",
    "available_presets": "toolkit.werewolf.engine.preset",
}
__all__ = sorted(_WHERE)
__getattr__, __dir__ = face(__name__, _WHERE)
