"""Ratings and error policies: what a study's ranking owes to how failures were scored.

The same failure (a seat that gave no usable answer) is scored differently across harnesses: a seeded legal
fallback (``fallback``, this toolkit's default), a loss for the erring side (``forfeit``, Kaggle's Game Arena)
or an elimination (``eliminate_after:N``, TextArena). MindGames showed that the choice can change a ranking
(the error-survival confound: a model that wins by outlasting its opponents' errors). Two checks:

- ``error_survival``: each model's rating per side on all decided games beside its rating on the games in which
  no decision fell back and nothing errored; a model whose rating moves is winning (or losing) on errors.
- ``policy_ratings``: the study's ratings under two policies side by side. A study played under several
  policies (``games.error_policy``) is rated per policy; a study played under one is rated as played and
  rescored under Kaggle's forfeit (``rescore_forfeit``: a game with a fallback ends at the first one, the
  erring seat's side losing), which needs no replay. (``eliminate_after`` changes the rest of a game, so it
  cannot be rescored: play the study under it.)

Both rate by side with ``toolkit.analysis.ratings`` (Bradley–Terry, intervals from the Laplace approximation),
so ``n`` is decided games and nothing is pooled across differing presets by these functions' callers.
"""

from __future__ import annotations

import pandas as pd

from toolkit.analysis.ratings import ratings

KEY = ["spec", "side"]


def _side_by_side(left: pd.DataFrame, right: pd.DataFrame, names: tuple[str, str]) -> pd.DataFrame:
    cols = ["rating", "ci_low", "ci_high", "n"]
    a = left.set_index(KEY)[cols].add_suffix(f"_{names[0]}")
    b = right.set_index(KEY)[cols].add_suffix(f"_{names[1]}")
    out = a.join(b, how="outer")
    out["shift"] = out[f"rating_{names[1]}"] - out[f"rating_{names[0]}"]
    return out.reset_index()


def clean_games(games: pd.DataFrame) -> pd.DataFrame:
    """The games in which no decision fell back, nothing errored and nobody forfeited."""
    fallbacks = pd.to_numeric(games.get("n_fallbacks", pd.Series(0, index=games.index)), errors="coerce").fillna(0)
    reason = games.get("win_reason", pd.Series("", index=games.index)).fillna("").astype(str)
    return games[(fallbacks == 0) & (games["winner"] != "error") & ~reason.str.startswith("forfeit")]


def error_survival(games: pd.DataFrame, players: pd.DataFrame) -> pd.DataFrame:
    """Ratings per model and side on all games (``_all``) and on the clean ones (``_clean``), with the
    ``shift`` between them (logits). Rows where only one of the two has a rating keep the other empty."""
    clean = clean_games(games)  # the check reads every game, degraded ones included (the ratings leave them out)
    return _side_by_side(ratings(games, players, by_side=True, include_degraded=True),
                         ratings(clean, players[players["game_id"].isin(clean["game_id"])], by_side=True),
                         ("all", "clean"))


def rescore_forfeit(games: pd.DataFrame, players: pd.DataFrame, events: pd.DataFrame) -> pd.DataFrame:
    """The games as Kaggle's forfeit would have scored them: a game with a fallback decision ends at its first
    one, and the side of the seat that made it loses (``win_reason`` says so); other games are as played."""
    out = games.copy()
    failed = events[events["fallback"].fillna(False).astype(bool) & events["actor"].notna()]
    first = failed.sort_values(["game_id", "seq"]).groupby("game_id").first()
    side = players.set_index(["game_id", "seat"])["side"]
    for game_id, row in first.iterrows():
        erring = side.get((game_id, row["actor"]))
        if erring is None:
            continue
        mask = out["game_id"] == game_id
        out.loc[mask, "winner"] = "village" if erring == "werewolves" else "werewolves"
        out.loc[mask, "win_reason"] = f"forfeit: {row['actor']} ({erring}) gave no usable answer (rescored)"
    return out


def policy_ratings(games: pd.DataFrame, players: pd.DataFrame, events: pd.DataFrame) -> tuple[pd.DataFrame, str]:
    """Ratings per model and side under two error policies, side by side, and a sentence saying which two."""
    played = games.get("error_policy", pd.Series(dtype=object)).dropna().unique()
    if len(played) >= 2:
        a, b = sorted(map(str, played))[:2]
        table = _side_by_side(*(ratings(games[games["error_policy"] == p],
                                        players[players["game_id"].isin(games.loc[games["error_policy"] == p,
                                                                                  "game_id"])], by_side=True)
                                for p in (a, b)), (a, b))
        return table, f"as played under {a} and under {b} (different games)"
    as_played = str(played[0]) if len(played) else "fallback"
    rescored = rescore_forfeit(games, players, events)
    table = _side_by_side(ratings(games, players, by_side=True), ratings(rescored, players, by_side=True),
                          ("played", "forfeit"))
    return table, (f"as played (under {as_played}) and the same games rescored under Kaggle's forfeit (the first "
                   "fallback loses the game for its side)")
