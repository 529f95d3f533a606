"""Werewolf metrics over the tables from ``toolkit.record.load.load``, each with its 95% interval and, where
a random player would score above zero, its chance level.

Units nested in games (votes, checks, actions) get cluster-bootstrap intervals (``cluster_rate``); per-game
proportions get Wilson intervals. ``by`` groups rows by any column of the unit table: for votes and night
actions ``spec``/``role``/``side`` are the acting seat's, ``day`` and ``round`` (``first``/``revote``) the
ballot's; for games any column of the games frame passed in (e.g. run parameters from
``toolkit.record.load.games_with_params``).
"""

from __future__ import annotations

import json
import zlib

import numpy as np
import pandas as pd

from toolkit.analysis.intervals import bootstrap_ci, cluster_mean, cluster_rate, groups, proportion
from toolkit.werewolf.engine.roles import removing_kinds, special_roles

SPECIAL = special_roles()  # every registered special role (Guard, Witch, Seer, Doctor, Hunter, ...)
N_BOOT = 2000


def _side(role: pd.Series) -> pd.Series:
    return np.where(role == "Werewolf", "werewolves", "village")


def _rate_rows(units: pd.DataFrame, by: list[str] | None, hit: str = "hit", chance: str | None = None,
               **extra) -> list[dict]:
    rows = []
    for key, g in groups(units, by):
        per = g.groupby("game_id").agg(k=(hit, "sum"), n=(hit, "size"),
                                       **({"c": (chance, "sum")} if chance else {}))
        rows.append({**key, **extra, **cluster_rate(per["k"], per["n"], per["c"] if chance else None,
                                                    n_boot=N_BOOT)})
    return rows


# ------------------------------------------------------------------ games
def win_rates(games: pd.DataFrame, by: list[str] | None = None) -> pd.DataFrame:
    """Share of games each side won, per group (Wilson; draws and errors listed when they happen)."""
    rows = []
    for key, group in groups(games, by):
        for side in ("village", "werewolves", "draw", "error"):
            k = int((group["winner"] == side).sum())
            if side in ("draw", "error") and k == 0:
                continue
            rows.append(proportion(k, len(group), **key, side=side))
    return pd.DataFrame(rows)


def player_games(games: pd.DataFrame, players: pd.DataFrame) -> pd.DataFrame:
    """One row per seat per decided game: spec, role, side, won (its side won), survived, days."""
    decided = games[games["winner"].isin(["village", "werewolves"])]
    cols = [c for c in games.columns if c not in players.columns or c == "game_id"]
    out = players.merge(decided[cols], on="game_id")
    out["won"] = out["side"] == out["winner"]
    out["survived"] = out["survived"].astype(bool)
    return out


def role_win_rates(games: pd.DataFrame, players: pd.DataFrame, by: list[str] | None = None) -> pd.DataFrame:
    """Win rate per seat-game, by ``by`` (default ``spec`` and ``role``); cluster-bootstrap intervals over
    games (two wolves of one model in one game are one outcome, not two)."""
    pg = player_games(games, players)
    pg["hit"] = pg["won"].astype(int)
    return pd.DataFrame(_rate_rows(pg, by or ["spec", "role"]))


def win_margin_speed(games: pd.DataFrame, players: pd.DataFrame, by: list[str] | None = None) -> pd.DataFrame:
    """Dominance of wins, as the Kaggle Game Arena werewolf harness defines it (kaggle-environments,
    ``envs/werewolf/eval/metrics.py``, ``get_margin_of_win``/``get_speed_of_win``), over won seat-games:

    - margin of win = living members of the winning side at the end / members of that side;
    - speed of win = 1 / days the game lasted.

    Means per group (default ``spec`` and ``side``) with cluster-bootstrap intervals over games."""
    pg = player_games(games, players)
    won = pg[pg["won"]].copy()
    if won.empty:
        return pd.DataFrame(columns=[*(by or ["spec", "side"]), "metric", "n", "n_games", "mean", "ci_low",
                                     "ci_high"])
    side = pg.groupby(["game_id", "side"])["survived"].agg(["sum", "size"])
    won = won.join((side["sum"] / side["size"]).rename("margin"), on=["game_id", "side"])
    won["speed"] = 1.0 / pd.to_numeric(won["days"], errors="coerce").clip(lower=1)
    rows = []
    for key, g in groups(won, by or ["spec", "side"]):
        for metric in ("margin", "speed"):
            rows.append({**key, "metric": f"{metric}_of_win", **cluster_mean(g[metric], g["game_id"])})
    return pd.DataFrame(rows)


def role_adjusted_wins(games: pd.DataFrame, players: pd.DataFrame, by: list[str] | None = None) -> pd.DataFrame:
    """The outcome of each seat-game against what its role wins on average (in the games passed, all models
    together): ``rate`` = the group's win rate, ``baseline`` = the mean, over its seat-games, of its role's
    win rate, ``adjusted`` = rate − baseline with an interval from the same resampled games. Unconditional
    (every seat-game, won or lost), so unlike margin and speed of win it does not reward a model whose few
    wins are early lucky ones; per ``spec`` and ``side`` by default. The role baseline is estimated from
    the same games (as in role-baseline scoring, e.g. Republic of Agents)."""
    pg = player_games(games, players)
    pg["hit"] = pg["won"].astype(int)
    pg["base"] = pg.groupby("role")["hit"].transform("mean")
    rows = []
    for key, g in groups(pg, by or ["spec", "side"]):
        per = g.groupby("game_id").agg(k=("hit", "sum"), n=("hit", "size"), c=("base", "sum"))
        r = cluster_rate(per["k"], per["n"], per["c"], n_boot=N_BOOT)
        rows.append({**key, "k": r["k"], "n": r["n"], "n_games": r["n_games"], "rate": r["rate"],
                     "baseline": r["chance"], "adjusted": r["lift"], "ci_low": r["lift_ci_low"],
                     "ci_high": r["lift_ci_high"], "method": r["method"]})
    return pd.DataFrame(rows)


def ksr(games: pd.DataFrame, players: pd.DataFrame, by: list[str] | None = None) -> pd.DataFrame:
    """KSR (the Kaggle harness's key-role survival rate, ``get_ksr``/``get_ksr_for_role``): the share of
    seat-games in which the seat survived to the end, per ``spec`` and ``role`` by default."""
    pg = player_games(games, players)
    pg["hit"] = pg["survived"].astype(int)
    return pd.DataFrame(_rate_rows(pg, by or ["spec", "role"]))


def key_role_survival(players: pd.DataFrame, by: list[str] | None = None) -> pd.DataFrame:
    """Per special role (``SPECIAL``: Guard, Witch, Seer, Doctor, Hunter), the share of games it survived: k / n
    with k the games the role's seat was alive at the end (Wilson: one seat per game)."""
    rows = []
    special = players[players["role"].isin(SPECIAL)]
    for key, g in groups(special, (by or []) + ["role"]):
        rows.append(proportion(int(g["survived"].astype(bool).sum()), len(g), **key))
    return pd.DataFrame(rows)


def per_game_costs(games: pd.DataFrame, by: list[str] | None = None) -> pd.DataFrame:
    """Mean calls, tokens, cost and fallbacks per game, with bootstrap intervals (games are independent).
    An unknown cost is left out of its mean, not counted as zero."""
    rows = []
    for key, g in groups(games, by):
        for metric in ("n_calls", "prompt_tokens", "completion_tokens", "cost_usd", "n_fallbacks"):
            values = pd.to_numeric(g[metric], errors="coerce")
            low, high = bootstrap_ci(values)
            rows.append({**key, "metric": metric, "n": int(values.notna().sum()), "mean": float(values.mean()),
                         "ci_low": low, "ci_high": high})
    return pd.DataFrame(rows)


# ------------------------------------------------------------------ who was alive when
def annotate(events: pd.DataFrame, players: pd.DataFrame) -> pd.DataFrame:
    """Events with the actor's and target's role/side/spec and, for each event, how many players and how
    many werewolves were alive just before it (from the death and elimination events)."""
    p = players[["game_id", "seat", "role", "spec"]]
    ev = events[events["game_id"].isin(set(p["game_id"]))].sort_values(["game_id", "seq"]).copy()
    ev = ev.merge(p.rename(columns={"seat": "actor", "role": "role", "spec": "spec"}), on=["game_id", "actor"],
                  how="left")
    ev = ev.merge(p[["game_id", "seat", "role"]].rename(columns={"seat": "target", "role": "target_role"}),
                  on=["game_id", "target"], how="left")
    ev["side"] = np.where(ev["role"].isna(), None, _side(ev["role"]))
    ev["target_side"] = np.where(ev["target_role"].isna(), None, _side(ev["target_role"]))
    died = ev["kind"].isin(removing_kinds()).astype(int)
    wolf_died = died * (ev["target_role"] == "Werewolf").astype(int)
    ev["_d"], ev["_w"] = died, wolf_died
    dead_before = ev.groupby("game_id")["_d"].cumsum() - died
    wolves_dead_before = ev.groupby("game_id")["_w"].cumsum() - wolf_died
    size = players.groupby("game_id").size()
    wolves = players[players["role"] == "Werewolf"].groupby("game_id").size().reindex(size.index, fill_value=0)
    ev["alive"] = ev["game_id"].map(size).to_numpy() - dead_before.to_numpy()
    ev["wolves_alive"] = ev["game_id"].map(wolves).to_numpy() - wolves_dead_before.to_numpy()
    return ev.drop(columns=["_d", "_w"]).reset_index(drop=True)


# ------------------------------------------------------------------ votes
def votes(events: pd.DataFrame, players: pd.DataFrame) -> pd.DataFrame:
    """One row per day ballot: voter's spec/role/side, ``round`` (``first`` or ``revote``), target, ``hit``
    (the target is a werewolf), ``chance`` (the share of werewolves among the candidates this voter
    could pick: every other living player in a first round, the tied players other than the voter in a
    revote), ``choices`` (how many candidates) and ``forced`` (one legal choice: a tied voter in a two-way
    revote — not a decision, so the accuracy metrics leave it out) and ``abstain`` (no target: a preset with
    ``vote_abstain``; not a ballot on anyone, so ``vote_accuracy`` leaves it out)."""
    ev = annotate(events, players)
    v = ev[ev["kind"] == "vote"].copy()
    v["round"] = np.where(v["phase"].astype(str) == "day_revote", "revote", "first")
    v["hit"] = (v["target_role"] == "Werewolf").astype(int)
    voter_wolf = (v["role"] == "Werewolf").astype(int)
    v["chance"] = (v["wolves_alive"] - voter_wolf) / (v["alive"] - 1).clip(lower=1)
    revote = v[v["round"] == "revote"]
    if len(revote):
        first = v[v["round"] == "first"]
        counts = first.groupby(["game_id", "day", "target"]).size().rename("c").reset_index()
        top = counts.groupby(["game_id", "day"])["c"].transform("max")
        leaders = counts[counts["c"] == top].merge(
            players[["game_id", "seat", "role"]].rename(columns={"seat": "target"}), on=["game_id", "target"])
        leaders["wolf"] = (leaders["role"] == "Werewolf").astype(int)
        cand = leaders.groupby(["game_id", "day"]).agg(n_cand=("target", "size"), wolves_cand=("wolf", "sum"))
        leader_set = set(zip(leaders["game_id"], leaders["day"], leaders["target"]))
        idx = revote.index
        r = revote.join(cand, on=["game_id", "day"])
        own = np.array([(g, d, a) in leader_set for g, d, a in zip(r["game_id"], r["day"], r["actor"])])
        n_c = r["n_cand"].to_numpy(float) - own
        w_c = r["wolves_cand"].to_numpy(float) - own * voter_wolf.loc[idx].to_numpy()
        v.loc[idx, "chance"] = np.where(n_c > 0, w_c / np.maximum(n_c, 1), np.nan)
        v.loc[idx, "choices"] = n_c
    v["choices"] = v["choices"] if "choices" in v.columns else np.nan
    v["choices"] = v["choices"].fillna(v["alive"] - 1)
    v["forced"] = v["choices"] <= 1
    v["abstain"] = v["target"].isna()
    return v[["game_id", "seq", "day", "round", "actor", "spec", "role", "side", "target", "target_role",
              "hit", "chance", "choices", "forced", "abstain", "alive", "wolves_alive"]].reset_index(drop=True)


def vote_accuracy(events: pd.DataFrame, players: pd.DataFrame, by: list[str] | None = None,
                  side: str | None = "village", forced: bool = False, abstentions: bool = False) -> pd.DataFrame:
    """Share of ballots cast on a werewolf by ``side``'s voters (default the village), with its chance
    level, the lift over chance and cluster-bootstrap intervals for both (resampling games).

    Formula: rate = Σ hits / Σ ballots; chance = Σ_b (wolves among ballot b's candidates / candidates) /
    Σ ballots; lift = rate − chance. With ``by=["round"]`` first-round and revote ballots are separate.
    Forced ballots (one legal choice) are left out unless ``forced``, and abstentions (no target) unless
    ``abstentions`` (the Kaggle harness counts both, an abstention as a miss).
    Per voter over every day this is the Kaggle Game Arena harness's IRP (kaggle-environments,
    ``envs/werewolf/eval/loaders.py``, ``GameResult.iterate_voting_mini_game``: 1 when a villager-team
    vote targets a werewolf)."""
    v = votes(events, players)
    v = v if forced else v[~v["forced"]]
    v = v if abstentions else v[~v["abstain"]]
    if side:
        v = v[v["side"] == side]
    return pd.DataFrame(_rate_rows(v, by, chance="chance"))


def irp(events: pd.DataFrame, players: pd.DataFrame, by: list[str] | None = None) -> pd.DataFrame:
    """IRP, identification precision (Kaggle Game Arena werewolf harness): over every day ballot of a
    village-side voter, the share that targets a werewolf; per ``spec`` by default, with chance and lift.
    Every ballot counts, forced ones and abstentions (a miss) included, as the harness counts them
    (``vote_accuracy`` leaves both out)."""
    return vote_accuracy(events, players, by or ["spec"], forced=True, abstentions=True)


EXILE_DRAWS = 5_000  # simulated votes per kind of voting day (``_day_key``) for the exile chance levels


def preset_field(games: pd.DataFrame, name: str, default: object) -> pd.Series:
    """A rule flag of each game's own preset (the games row's config: a preset not shipped, e.g. an imported
    game's, is there too), else of the shipped preset of that name, else ``default``; indexed by game_id."""
    from toolkit.werewolf.engine.preset import load_preset

    def one(row: pd.Series) -> object:
        try:
            return json.loads(row["config"])["preset"][name]
        except (KeyError, TypeError, ValueError):
            try:
                return getattr(load_preset(row["preset"]), name)
            except (TypeError, ValueError):
                return default

    if games.empty:
        return pd.Series(dtype=object, index=pd.Index([], name="game_id"))
    return games.set_index("game_id").apply(one, axis=1)


def _vote_rule(games: pd.DataFrame | None, ids) -> pd.Series:
    """The preset's ``vote_tie`` rule per game (``none`` when the games or their preset are not known)."""
    rule = pd.Series("none", index=pd.Index(sorted(set(ids)), name="game_id"), dtype=object)
    if games is not None and "preset" in games.columns:
        rule.update(preset_field(games, "vote_tie", "none").dropna())
    return rule


def _tally(ballots: np.ndarray, n: int) -> np.ndarray:
    """(draws, voters) ballots as indices → (draws, n) votes per candidate."""
    offset = n * np.arange(len(ballots))[:, None]
    return np.bincount((ballots + offset).ravel(), minlength=n * len(ballots)).reshape(len(ballots), n)


def _simulate_day(wolf: np.ndarray, village: np.ndarray, wolf_targets: np.ndarray, rule: str,
                  rng: np.random.Generator, draws: int = EXILE_DRAWS) -> tuple[float, float, float]:
    """One voting day with the village voters' ballots uniformly random among the other living players and
    the wolves' first-round ballots as cast. ``wolf``: which living players are wolves; ``village``: the
    indices of the village voters; ``wolf_targets``: the wolves' ballots (indices). The engine's tie rule:
    ``none`` exiles nobody, ``random`` picks a leader at random, ``revote`` votes again among the leaders
    (every living voter at random among the leaders other than itself; a second tie exiles nobody).
    Returns P(a wolf is exiled), E[village ballots for the exiled wolf · 1{a wolf is exiled}] and
    E[village ballots · 1{a wolf is exiled}] (both rounds)."""
    n, v = len(wolf), len(village)
    pick = rng.integers(0, n - 1, (draws, v))
    pick += pick >= village[None, :]  # skip the voter itself
    village_votes = _tally(pick, n)
    counts = village_votes + np.bincount(wolf_targets, minlength=n)[None, :]
    leaders = counts == counts.max(axis=1, keepdims=True)
    n_lead = leaders.sum(axis=1)
    # P(each living player is exiled) per draw, and the village ballots cast (1 or 2 rounds)
    exiled = np.where((n_lead == 1)[:, None], leaders, 0.0)
    ballots = np.full(draws, float(v))
    hits_first = village_votes.astype(float)
    hits_second = np.zeros((draws, n))
    tied = n_lead > 1
    if rule == "random":
        exiled = np.where(tied[:, None], leaders / n_lead[:, None], exiled)
    elif rule == "revote" and tied.any():
        lead = leaders[tied]
        keys = rng.random((len(lead), n, n))  # (draws, voter, candidate): argmax of random keys = uniform pick
        allowed = lead[:, None, :] & ~np.eye(n, dtype=bool)[None]
        second = np.where(allowed, keys, -1.0).argmax(axis=2)  # every living player votes again
        counts2 = _tally(second, n)
        leaders2 = counts2 == counts2.max(axis=1, keepdims=True)
        exiled[tied] = np.where((leaders2.sum(axis=1) == 1)[:, None], leaders2, 0.0)
        hits_second[tied] = _tally(second[:, ~wolf], n)
        ballots[tied] += v
    wolf_out = exiled[:, wolf].sum(axis=1)
    hits = ((hits_first + hits_second) * exiled * wolf[None, :]).sum(axis=1)
    return float(wolf_out.mean()), float(hits.mean()), float((ballots * wolf_out).mean())


def _day_key(wolf: np.ndarray, targets: list[int], rule: str) -> tuple | None:
    """What a voting day's chance levels depend on, with the players renumbered (wolves first, then the
    villagers the wolves voted for, in order, then the others — random voters do not tell villagers apart):
    (living, wolves, tie rule, the wolves' ballots). Days with the same key share one simulation."""
    if len(wolf) < 2 or min(targets) < 0 or wolf.all():
        return None
    wolf_seats = list(np.flatnonzero(wolf))
    voted = [t for i, t in enumerate(targets) if wolf[i] and not wolf[t]]
    order = wolf_seats + list(dict.fromkeys(voted)) + [i for i in range(len(wolf)) if not wolf[i] and i not in voted]
    new = {old: i for i, old in enumerate(order)}
    return len(wolf), len(wolf_seats), rule, tuple(new[targets[i]] for i in wolf_seats)


def exile_chance(events: pd.DataFrame, players: pd.DataFrame, games: pd.DataFrame | None = None) -> pd.DataFrame:
    """Per voting day (``game_id``, ``day``), what village voters voting uniformly at random would achieve,
    the wolves' first-round ballots as cast (``EXILE_DRAWS`` seeded simulated votes per kind of day —
    days that differ only in who sits where share one simulation, ``_day_key`` —, the preset's tie rule from
    ``games``; without ``games`` a tie exiles nobody): ``p_wolf_exiled`` (the chance level of
    ``voting_success``) and ``vss_chance`` = E[village ballots for the exiled wolf; a wolf exiled] /
    E[village ballots; a wolf exiled], the chance level of VSS per ballot of the day (with it the random
    player's expected lift on VSS is 0 although VSS is conditional on the exile). In a revote the
    simulation cannot know how the wolves would have voted among other leaders, so it lets them vote at
    random too (exact for random wolves)."""
    v = votes(events, players)
    first = v[v["round"] == "first"].sort_values(["game_id", "day", "seq"])
    rule = _vote_rule(games, first["game_id"]).to_dict()
    gid, day = first["game_id"].to_numpy(), first["day"].to_numpy()
    actor, target = first["actor"].to_numpy(), first["target"].to_numpy()
    wolves = (first["side"] == "werewolves").to_numpy()
    starts = np.flatnonzero(np.r_[True, (gid[1:] != gid[:-1]) | (day[1:] != day[:-1])]) if len(gid) else []
    rows, done = [], {}
    for a, b in zip(starts, np.r_[starts[1:], len(gid)]):
        seats = list(actor[a:b])  # every living player votes in the first round
        index = {s: i for i, s in enumerate(seats)}
        wolf = wolves[a:b]
        targets = [index.get(t, -1) for t in target[a:b]]
        key = _day_key(wolf, targets, rule.get(gid[a], "none"))
        if key is not None and key not in done:
            n, w, tie, wolf_targets = key
            rng = np.random.default_rng(zlib.crc32(repr(key).encode()))
            p, hits, ballots = _simulate_day(np.arange(n) < w, np.arange(w, n), np.array(wolf_targets, int), tie, rng)
            done[key] = (p, hits / ballots if ballots > 0 else 0.0)
        rows.append((gid[a], day[a], *done.get(key, (np.nan, np.nan))))
    return pd.DataFrame(rows, columns=["game_id", "day", "p_wolf_exiled", "vss_chance"])


def vss(events: pd.DataFrame, players: pd.DataFrame, by: list[str] | None = None,
        games: pd.DataFrame | None = None) -> pd.DataFrame:
    """VSS, voting success score (Kaggle Game Arena werewolf harness, ``iterate_voting_mini_game``): on the
    days a werewolf was exiled, the share of village-side ballots cast for that werewolf; per ``spec`` by
    default. Ballots of both rounds of such a day count, forced ones included, as the harness counts every
    vote of the day.

    VSS is **conditional on the outcome** (only days the village succeeded), so random voters score high on
    it (0.65 in classic7): their ballots are what exiled that wolf. Its ``chance`` is therefore not the
    share of wolves among the candidates but what random village ballots score on the days they exile a
    wolf (``exile_chance``: simulated votes of each day, the wolves' ballots as cast, the preset's tie rule
    from ``games``). Read ``vote_accuracy`` and ``voting_success`` beside it."""
    v = votes(events, players)
    v = v[v["side"] == "village"]
    ev = annotate(events, players)
    exiled = ev[(ev["kind"] == "elimination") & (ev["target_role"] == "Werewolf")][["game_id", "day", "target"]]
    v = v.merge(exiled.rename(columns={"target": "exiled"}), on=["game_id", "day"])
    v["hit"] = (v["target"] == v["exiled"]).astype(int)
    v = v.drop(columns="chance").merge(exile_chance(events, players, games)[["game_id", "day", "vss_chance"]],
                                       on=["game_id", "day"], how="left")
    return pd.DataFrame(_rate_rows(v, by or ["spec"], chance="vss_chance", conditional="days a wolf was exiled"))


def voting_success(events: pd.DataFrame, players: pd.DataFrame, by: list[str] | None = None,
                   games: pd.DataFrame | None = None) -> pd.DataFrame:
    """Share of voting days on which a werewolf was exiled: days with a wolf's elimination / days with a
    vote (cluster bootstrap over games; a tie that eliminates nobody counts as a day without success).
    ``chance`` = the probability that village voters voting at random exile a wolf that day (the wolves'
    ballots as cast; ``exile_chance``). ``by`` may name any column of the vote events (e.g. ``preset``
    after a merge) or ``village_spec``, the model holding most village seats that day."""
    days = events[events["kind"] == "vote"][["game_id", "day"]].drop_duplicates()
    ev = annotate(events, players)
    exiled = ev[ev["kind"] == "elimination"][["game_id", "day", "target_role"]]
    days = days.merge(exiled, on=["game_id", "day"], how="left")
    days["hit"] = (days["target_role"] == "Werewolf").astype(int)
    days = days.merge(exile_chance(events, players, games)[["game_id", "day", "p_wolf_exiled"]],
                      on=["game_id", "day"], how="left")
    village = players[players["side"] == "village"].groupby("game_id")["spec"].agg(lambda s: s.mode().iloc[0])
    days["village_spec"] = days["game_id"].map(village)
    return pd.DataFrame(_rate_rows(days, by, chance="p_wolf_exiled"))


# ------------------------------------------------------------------ night actions
def _protects(ev: pd.DataFrame, games: pd.DataFrame | None) -> pd.DataFrame:
    """The guard's protections on nights the wolves killed, with the exact chance that a uniformly random
    legal answer protects the victim: the guard may pass (one more answer), may protect itself, and under
    ``guard_no_repeat`` may not protect last night's choice again (then the victim may be out of reach)."""
    protects = ev[ev["kind"] == "protect"].sort_values(["game_id", "seq"]).copy()
    protects["last"] = protects.groupby("game_id")["target"].shift()
    kills = ev[ev["kind"] == "kill"][["game_id", "day", "target"]].rename(columns={"target": "victim"})
    protects = protects.merge(kills, on=["game_id", "day"], how="inner")
    no_repeat = pd.Series(False, index=protects.index)
    if games is not None and "preset" in games.columns:
        flag = preset_field(games, "guard_no_repeat", False)
        no_repeat = protects["game_id"].map(flag).fillna(False).astype(bool)
    blocked = no_repeat & protects["last"].notna()
    candidates = protects["alive"] - blocked.astype(int)
    reachable = ~(blocked & (protects["last"] == protects["victim"]))
    protects["hit"] = (protects["target"] == protects["victim"]).astype(int)
    protects["chance"] = reachable.astype(float) / (candidates + 1).clip(lower=1)
    return protects


def night_actions(events: pd.DataFrame, players: pd.DataFrame, by: list[str] | None = None,
                  games: pd.DataFrame | None = None) -> pd.DataFrame:
    """Night actions that can fail, each with a cluster-bootstrap interval and, where one exists, chance:

    - ``seer_wolf_check_rate``: checks that found a werewolf; chance = living wolves / (living − 1).
    - ``guard_save_rate``: nights the guard protected the wolves' actual target; chance = the exact chance of
      a uniformly random legal answer (passing is an answer; with ``games``, the preset's
      ``guard_no_repeat`` removes last night's choice — without ``games`` no rule is assumed).
    - ``witch_save_needed``: saves of a victim the guard had not protected (the save changed the outcome).
    - ``witch_poison_on_wolf``: poisons on a werewolf; chance = living wolves / (living − 1).
    - ``witch_save_night`` / ``witch_poison_night``: the mean night a potion was used (timing; lower is
      earlier), reported as a mean, not a rate.
    - ``hunter_shot_on_wolf``: a Hunter's shots (events ``shot``, at dawn or by day) on a werewolf; chance =
      living wolves / living (the dead Hunter picks among all the living); listed where a game had a shot.

    (The old ``witch_save_correct`` could not fail: wolves can only target the village side.)"""
    ev = annotate(events, players)
    rows = []
    checks = ev[ev["kind"] == "check"].copy()
    checks["hit"] = (checks["target_role"] == "Werewolf").astype(int)
    checks["chance"] = checks["wolves_alive"] / (checks["alive"] - 1).clip(lower=1)
    rows += _rate_rows(checks, by, chance="chance", metric="seer_wolf_check_rate")

    rows += _rate_rows(_protects(ev, games), by, chance="chance", metric="guard_save_rate")

    guarded = ev[ev["kind"] == "protect"][["game_id", "day", "target"]].rename(columns={"target": "guarded"})
    saves = ev[ev["kind"] == "save"].merge(guarded, on=["game_id", "day"], how="left")
    saves["hit"] = (saves["guarded"] != saves["target"]).astype(int)
    rows += _rate_rows(saves, by, metric="witch_save_needed")

    poisons = ev[ev["kind"] == "poison"].copy()
    poisons["hit"] = (poisons["target_role"] == "Werewolf").astype(int)
    poisons["chance"] = (poisons["wolves_alive"]) / (poisons["alive"] - 1).clip(lower=1)
    rows += _rate_rows(poisons, by, chance="chance", metric="witch_poison_on_wolf")

    shots = ev[ev["kind"] == "shot"].copy()
    shots["hit"] = (shots["target_role"] == "Werewolf").astype(int)
    shots["chance"] = shots["wolves_alive"] / shots["alive"].clip(lower=1)
    if len(shots):  # only games with a shot (a preset without a Hunter gets no empty row)
        rows += _rate_rows(shots, by, chance="chance", metric="hunter_shot_on_wolf")
    table = pd.DataFrame(rows)
    timing = []
    for kind in ("save", "poison"):
        used = ev[ev["kind"] == kind]
        for key, g in groups(used, by):
            m = cluster_mean(g["day"], g["game_id"])
            timing.append({**key, "metric": f"witch_{kind}_night", "k": None, "n": m["n"], "n_games": m["n_games"],
                           "rate": m["mean"], "ci_low": m["ci_low"], "ci_high": m["ci_high"]})
    return pd.concat([table, pd.DataFrame(timing)], ignore_index=True) if timing else table
