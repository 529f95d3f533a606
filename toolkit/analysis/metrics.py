"""Werewolf metrics over the tables from ``toolkit.record.load.load``, each with its 95% interval and, where
a random player would score above zero, its chance level.

Units nested in games (votes, checks, actions) get cluster-bootstrap intervals (``cluster_rate``); per-game
proportions get Wilson intervals. ``by`` groups rows by any column of the unit table: for votes and night
actions ``spec``/``role``/``side`` are the acting seat's, ``day`` and ``round`` (``first``/``revote``) the
ballot's; for games any column of the games frame passed in (e.g. run parameters from
``toolkit.record.load.games_with_params``).
"""

from __future__ import annotations

import functools
import weakref
import zlib

import numpy as np
import pandas as pd

from toolkit.analysis.bars import BARS, game_rules
from toolkit.analysis.intervals import bootstrap_ci, cluster_mean, cluster_rate, groups, proportion
from toolkit.werewolf.engine.roles import removing_kinds, special_roles

SPECIAL = special_roles()  # every registered special role (Guard, Witch, Seer, Doctor, Hunter, ...)
N_BOOT = 2000


def _side(role: pd.Series) -> pd.Series:
    return np.where(role == "Werewolf", "werewolves", "village")


def rate_rows(units: pd.DataFrame, by: list[str] | None, hit: str = "hit", chance: str | None = None,
              random: str | None = None, **extra) -> list[dict]:
    """Per group: the cluster-bootstrap rate, with ``chance`` (the bar: the best information-free strategy's
    expected hits per unit) its lift and interval, and with ``random`` the uniformly random legal answer's
    expected rate on the same units (a point: where a random player sits)."""
    rows = []
    for key, g in groups(units, by):
        per = g.groupby("game_id", observed=True).agg(k=(hit, "sum"), n=(hit, "size"),  # (a category: its games)
                                       **({"c": (chance, "sum")} if chance else {}))
        row = {**key, **extra, **cluster_rate(per["k"], per["n"], per["c"] if chance else None, n_boot=N_BOOT)}
        if random:
            row["random"] = float(g[random].mean()) if len(g) else float("nan")
        rows.append(row)
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
    # every games column but the game's configuration (JSON text, ~1.7 KB a game that no per-seat metric reads:
    # copied to each of its seats it was 1.2 GB per call at 100,000 games, the report's largest spike)
    cols = [c for c in games.columns if (c not in players.columns or c == "game_id") and c != "config"]
    out = players.merge(decided[cols], on="game_id")
    out["won"] = out["side"] == out["winner"]
    out["survived"] = out["survived"].astype(bool)
    return out


def role_win_rates(games: pd.DataFrame, players: pd.DataFrame, by: list[str] | None = None) -> pd.DataFrame:
    """Win rate per seat-game, by ``by`` (default ``spec`` and ``role``); cluster-bootstrap intervals over
    games (two wolves of one model in one game are one outcome, not two)."""
    pg = player_games(games, players)
    pg["hit"] = pg["won"].astype(int)
    return pd.DataFrame(rate_rows(pg, by or ["spec", "role"]))


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
            rows.append({**key, "metric": f"{metric}_of_win", **cluster_mean(g[metric], g["game_id"], bounds=(0, 1))})
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
    return pd.DataFrame(rate_rows(pg, by or ["spec", "role"]))


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


# ------------------------------------------------------------------ shared joins
_SHARED: dict[tuple, tuple[list, pd.DataFrame]] = {}


def shared(func):
    """``func`` of some frames computed once while they live: called again with the same frame objects (the
    report cuts each condition's tables once and a dozen metrics ask for the same join of its events and
    players), it returns the first result, which callers read and never change. An entry goes when one of
    its frames is collected."""

    @functools.wraps(func)
    def once(*frames: pd.DataFrame | None) -> pd.DataFrame:
        key = (func.__qualname__, *map(id, frames))
        held = _SHARED.get(key)
        if held is not None and all(r() is f for r, f in zip(held[0], frames)):
            return held[1]
        out = func(*frames)

        def gone(_ref, key=key) -> None:
            if key in _SHARED and _SHARED[key][0] is refs:
                del _SHARED[key]

        refs = [weakref.ref(f, gone) if f is not None else (lambda: None) for f in frames]
        _SHARED[key] = (refs, out)
        return out

    return once


# ------------------------------------------------------------------ who was alive when
@shared
def annotate(events: pd.DataFrame, players: pd.DataFrame) -> pd.DataFrame:
    """Events with the actor's and target's role/side/spec and, for each event, how many players and how
    many werewolves were alive just before it (from the death and elimination events)."""
    p = players[["game_id", "seat", "role", "spec"]]
    ev = events[events["game_id"].isin(set(p["game_id"]))].sort_values(["game_id", "seq"]).reset_index(drop=True)
    # the seats' roles joined on the key columns alone, then set as columns: a merge of the whole events frame
    # copied every column (the speeches' text too), twice; a left merge keeps the rows' order and count (one
    # players row per seat), so the columns are the same
    actor = ev[["game_id", "actor", "target"]].merge(p.rename(columns={"seat": "actor"}), on=["game_id", "actor"],
                                                     how="left")
    target = actor[["game_id", "target"]].merge(
        p[["game_id", "seat", "role"]].rename(columns={"seat": "target", "role": "target_role"}),
        on=["game_id", "target"], how="left")
    if not len(actor) == len(target) == len(ev):
        raise ValueError("players: a seat is listed twice in a game")
    # Series of the same RangeIndex as ev, dtypes as the merges made them (the key columns too: a key held as
    # categories, as a summary's batch of events holds them, comes out of a join with the players as text)
    ev["game_id"], ev["actor"], ev["target"] = target["game_id"], actor["actor"], target["target"]
    ev["role"], ev["spec"], ev["target_role"] = actor["role"], actor["spec"], target["target_role"]
    del actor, target
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
@shared
def votes(events: pd.DataFrame, players: pd.DataFrame, games: pd.DataFrame | None = None) -> pd.DataFrame:
    """One row per day ballot: voter's spec/role/side, ``round`` (``first`` or ``revote``), target, ``hit``
    (the target is a werewolf), ``abstain`` (no target), and, from the legal choices this voter had under the
    game's rules (``games``' presets: ``self_vote`` adds the voter's own seat, ``vote_abstain`` an
    abstention; a revote's candidates are the first round's leaders; without ``games`` neither flag):

    - ``chance``: the bar (``bars.BARS["vote_accuracy"]``), a uniformly random candidate other than the voter,
      never an abstention: wolves among the other candidates / other candidates;
    - ``random``: a uniformly random legal answer, given that it named someone (what ``vote_accuracy`` scores):
      wolves among the candidates / candidates; ``random_irp`` the same with an abstention counted as a miss
      (what ``irp`` scores): wolves among the candidates / (candidates + 1 if abstaining is legal);
    - ``choices`` (legal answers, an abstention included) and ``forced`` (one legal answer: not a decision,
      so the accuracy metrics leave it out)."""
    return ruled_votes(events, players, lambda ids: game_rules(games, ids))


def ruled_votes(events: pd.DataFrame, players: pd.DataFrame, rules) -> pd.DataFrame:
    """``votes`` with each game's rules from ``rules(game ids)`` (``bars.game_rules``' frame, indexed by game
    id): a caller that reads the games a batch at a time keeps their rules, not their configs."""
    ev = annotate(events, players)
    v = ev[ev["kind"] == "vote"].copy()
    rules = rules(v["game_id"])
    self_vote = v["game_id"].map(rules["self_vote"]).fillna(False).astype(bool).to_numpy()
    abstain_ok = v["game_id"].map(rules["vote_abstain"]).fillna(False).astype(bool).to_numpy()
    v["round"] = np.where(v["phase"].astype(str) == "day_revote", "revote", "first")
    v["hit"] = (v["target_role"] == "Werewolf").astype(int)
    voter_wolf = (v["role"] == "Werewolf").astype(int).to_numpy()
    # first round: every living player is a candidate, the voter among them
    n_all = v["alive"].to_numpy(float)
    w_all = v["wolves_alive"].to_numpy(float)
    own = np.ones(len(v))
    revote = (v["round"] == "revote").to_numpy()
    if revote.any():
        first = v[v["round"] == "first"]
        counts = first.dropna(subset=["target"]).groupby(["game_id", "day", "target"]).size().rename("c").reset_index()
        top = counts.groupby(["game_id", "day"])["c"].transform("max")
        leaders = counts[counts["c"] == top].merge(
            players[["game_id", "seat", "role"]].rename(columns={"seat": "target"}), on=["game_id", "target"])
        leaders["wolf"] = (leaders["role"] == "Werewolf").astype(int)
        cand = leaders.groupby(["game_id", "day"]).agg(n_cand=("target", "size"), wolves_cand=("wolf", "sum"))
        leader_set = set(zip(leaders["game_id"], leaders["day"], leaders["target"]))
        r = v[revote].join(cand, on=["game_id", "day"])
        n_all[revote] = r["n_cand"].to_numpy(float)
        w_all[revote] = r["wolves_cand"].to_numpy(float)
        own[revote] = [(g, d, a) in leader_set for g, d, a in zip(r["game_id"], r["day"], r["actor"])]
    n_other = n_all - own
    w_other = w_all - own * voter_wolf
    n_cand = np.where(self_vote, n_all, n_other)
    w_cand = np.where(self_vote, w_all, w_other)
    with np.errstate(invalid="ignore", divide="ignore"):
        v["chance"] = np.where(n_other > 0, w_other / np.maximum(n_other, 1), np.nan)
        v["random"] = np.where(n_cand > 0, w_cand / np.maximum(n_cand, 1), np.nan)
        v["random_irp"] = np.where(n_cand + abstain_ok > 0, w_cand / np.maximum(n_cand + abstain_ok, 1), np.nan)
    v["candidates"], v["wolf_candidates"] = n_all, w_all  # the living (or tied) players, the voter among them
    v["choices"] = n_cand + abstain_ok
    v["forced"] = v["choices"] <= 1
    v["abstain"] = v["target"].isna()
    return v[["game_id", "seq", "day", "round", "actor", "spec", "role", "side", "target", "target_role",
              "hit", "chance", "random", "random_irp", "candidates", "wolf_candidates", "choices", "forced",
              "abstain", "alive",
              "wolves_alive"]].reset_index(drop=True)


def vote_accuracy(events: pd.DataFrame, players: pd.DataFrame, by: list[str] | None = None,
                  side: str | None = "village", forced: bool = False, abstentions: bool = False,
                  games: pd.DataFrame | None = None) -> pd.DataFrame:
    """Share of ballots cast on a werewolf by ``side``'s voters (default the village), against the bar (a
    uniformly random other candidate, never oneself, never abstaining: ``chance``), the lift over it and
    cluster-bootstrap intervals for both (resampling games); ``random`` = what uniformly random legal ballots
    score on the same ballots. ``games`` gives each game's rules (``self_vote``, ``vote_abstain``).

    Formula: rate = Σ hits / Σ ballots; chance = Σ_b (wolves among ballot b's other candidates / other
    candidates) / Σ ballots; lift = rate − chance. With ``by=["round"]`` first-round and revote ballots are
    separate. Forced ballots (one legal answer) are left out unless ``forced``, and abstentions (no target)
    unless ``abstentions`` (the Kaggle harness counts both, an abstention as a miss; the random player's
    level then counts its abstentions too).
    Per voter over every day this is the Kaggle Game Arena harness's IRP (kaggle-environments,
    ``envs/werewolf/eval/loaders.py``, ``GameResult.iterate_voting_mini_game``: 1 when a villager-team
    vote targets a werewolf)."""
    return ballot_accuracy(votes(events, players, games), by, side, forced, abstentions)


def ballot_accuracy(ballots: pd.DataFrame, by: list[str] | None = None, side: str | None = "village",
                    forced: bool = False, abstentions: bool = False) -> pd.DataFrame:
    """``vote_accuracy`` from the ballots ``votes`` made (all of them, or the rows of some games at a time put
    together: every column is per ballot, so a study too large to hold its events computes them a batch of
    games at a time, as ``toolkit.study.experiments.cell_summary`` does)."""
    v = ballots if forced else ballots[~ballots["forced"]]
    v = v if abstentions else v[~v["abstain"]]
    if side:
        v = v[v["side"] == side]
    metric = "irp" if abstentions else "vote_accuracy"
    return pd.DataFrame(rate_rows(v, by, chance="chance", random="random_irp" if abstentions else "random",
                                   bar=BARS[metric]))


# What a cell's summary keeps of its ballots (``day_vote_counts``): per game, round and day.
DAY_VOTES = ["game_id", "round", "day", "hits", "ballots", "chance", "random", "random_n"]


def day_vote_counts(ballots: pd.DataFrame) -> pd.DataFrame:
    """The village's decided ballots (not forced, naming someone) counted per game, round and day: ``hits``,
    ``ballots``, the sums of their ``chance`` and ``random`` and how many ``random`` are known. What
    ``day_vote_accuracy`` needs, a few numbers a game where the ballots are a row each: a study too large to
    hold its ballots counts them a batch of games at a time (``toolkit.study.experiments.cell_summary``)."""
    v = ballots[~ballots["forced"].astype(bool) & ~ballots["abstain"].astype(bool)
                & (ballots["side"].astype(object) == "village")]
    per = v.groupby(["round", "day", "game_id"], observed=True, sort=False).agg(
        hits=("hit", "sum"), ballots=("hit", "size"), chance=("chance", "sum"), random=("random", "sum"),
        random_n=("random", "count")).reset_index()
    return per[DAY_VOTES].astype({"hits": "int32", "ballots": "int32", "random_n": "int32"})


def day_vote_accuracy(counts: pd.DataFrame) -> pd.DataFrame:
    """``ballot_accuracy(ballots, ["round", "day"])`` from ``day_vote_counts`` of the ballots (of all their
    games, or of batches of games put together): the same rates, chance levels and cluster-bootstrap
    intervals (each game's hits, ballots and chance summed in the same order); ``random`` (the mean over the
    group's ballots) summed per game first, equal to within rounding."""
    rows = []
    for key, g in groups(counts, ["round", "day"]):
        per = g.sort_values("game_id", kind="stable")  # as groupby("game_id") orders them (a category: its order)
        row = {**key, "bar": BARS["vote_accuracy"],
               **cluster_rate(per["hits"], per["ballots"], per["chance"], n_boot=N_BOOT)}
        known = int(g["random_n"].sum())
        row["random"] = float(g["random"].sum() / known) if known else float("nan")
        rows.append(row)
    return pd.DataFrame(rows)


def irp(events: pd.DataFrame, players: pd.DataFrame, by: list[str] | None = None,
        games: pd.DataFrame | None = None) -> pd.DataFrame:
    """IRP, identification precision (Kaggle Game Arena werewolf harness): over every day ballot of a
    village-side voter, the share that targets a werewolf; per ``spec`` by default, with the bar and lift.
    Every ballot counts, forced ones and abstentions (a miss) included, as the harness counts them
    (``vote_accuracy`` leaves both out)."""
    return vote_accuracy(events, players, by or ["spec"], forced=True, abstentions=True, games=games)


EXILE_DRAWS = 5_000  # simulated votes per kind of voting day (``_day_key``) for the exile chance levels


def _tally(ballots: np.ndarray, n: int) -> np.ndarray:
    """(draws, voters) ballots as indices → (draws, n) votes per candidate."""
    offset = n * np.arange(len(ballots))[:, None]
    return np.bincount((ballots + offset).ravel(), minlength=n * len(ballots)).reshape(len(ballots), n)


def _simulate_day(wolf: np.ndarray, village: np.ndarray, wolf_targets: np.ndarray, rule: str,
                  rng: np.random.Generator, draws: int = EXILE_DRAWS, self_vote: bool = False,
                  abstain: bool = False) -> tuple[float, float, float]:
    """One voting day with the village voters' ballots uniformly random among their legal answers (the other
    living players; the voter too under ``self_vote``; an abstention under ``abstain``) and the wolves'
    first-round ballots as cast. ``wolf``: which living players are wolves; ``village``: the indices of the
    village voters; ``wolf_targets``: the wolves' ballots (indices, −1 an abstention). The engine's tie rule:
    ``none`` exiles nobody, ``random`` picks a leader at random (every candidate when no vote counted),
    ``revote`` votes again among the leaders (every living voter at random among its legal answers there; a
    second tie, or no vote counted, exiles nobody).
    Returns P(a wolf is exiled), E[village ballots for the exiled wolf · 1{a wolf is exiled}] and
    E[village ballots · 1{a wolf is exiled}] (both rounds, abstentions included)."""
    n, v = len(wolf), len(village)
    m = n - (not self_vote)  # candidates per voter
    raw = rng.integers(0, m + abstain, (draws, v))
    pick = raw + ((raw >= village[None, :]) if not self_vote else 0)
    pick = np.where(raw == m, n, pick)  # index n: an abstention
    village_votes = _tally(pick, n + 1)[:, :n]
    cast = wolf_targets[wolf_targets >= 0]
    counts = village_votes + np.bincount(cast, minlength=n)[None, :]
    leaders = counts == counts.max(axis=1, keepdims=True)
    n_lead = leaders.sum(axis=1)
    counted = counts.sum(axis=1) > 0
    exiled = np.where((n_lead == 1)[:, None], leaders, 0.0)
    ballots = np.full(draws, float(v))
    hits_first = village_votes.astype(float)
    hits_second = np.zeros((draws, n))
    tied = n_lead > 1
    if rule == "random":
        exiled = np.where(tied[:, None], leaders / n_lead[:, None], exiled)
    elif rule == "revote" and (tied & counted).any():
        tied = tied & counted
        lead = leaders[tied]
        allowed = lead[:, None, :] & (np.ones((n, n), bool) if self_vote else ~np.eye(n, dtype=bool))[None]
        allowed = np.concatenate([allowed, np.full((len(lead), n, 1), abstain)], axis=2)
        keys = rng.random((len(lead), n, n + 1))  # (draws, voter, answer): argmax of random keys = uniform pick
        second = np.where(allowed, keys, -1.0).argmax(axis=2)  # every living player votes again
        counts2 = _tally(second, n + 1)[:, :n]
        leaders2 = counts2 == counts2.max(axis=1, keepdims=True)
        exiled[tied] = np.where(((leaders2.sum(axis=1) == 1) & (counts2.sum(axis=1) > 0))[:, None], leaders2, 0.0)
        hits_second[tied] = _tally(second[:, ~wolf], n + 1)[:, :n]
        ballots[tied] += v
    wolf_out = exiled[:, wolf].sum(axis=1)
    hits = ((hits_first + hits_second) * exiled * wolf[None, :]).sum(axis=1)
    return float(wolf_out.mean()), float(hits.mean()), float((ballots * wolf_out).mean())


def _day_key(wolf: np.ndarray, targets: list[int], rule: str, self_vote: bool = False,
             abstain: bool = False) -> tuple | None:
    """What a voting day's chance levels depend on, with the players renumbered (wolves first, then the
    villagers the wolves voted for, in order, then the others — random voters do not tell villagers apart):
    (living, wolves, tie rule, self votes, abstentions, the wolves' ballots, −1 an abstention). Days with the
    same key share one simulation."""
    if len(wolf) < 2 or wolf.all() or not wolf.any():
        return None
    wolf_seats = list(np.flatnonzero(wolf))
    voted = [t for i, t in enumerate(targets) if wolf[i] and t >= 0 and not wolf[t]]
    order = wolf_seats + list(dict.fromkeys(voted)) + [i for i in range(len(wolf)) if not wolf[i] and i not in voted]
    new = {old: i for i, old in enumerate(order)}
    return (len(wolf), len(wolf_seats), rule, bool(self_vote), bool(abstain),
            tuple(new[targets[i]] if targets[i] >= 0 else -1 for i in wolf_seats))


def exile_chance(events: pd.DataFrame, players: pd.DataFrame, games: pd.DataFrame | None = None) -> pd.DataFrame:
    """Per voting day (``game_id``, ``day``), what village voters answering uniformly at random among their
    legal answers would achieve, the wolves' first-round ballots (abstentions included) as cast
    (``EXILE_DRAWS`` seeded simulated votes per kind of day — days that differ only in who sits where share
    one simulation, ``_day_key`` —, the preset's tie rule, ``self_vote`` and ``vote_abstain`` from ``games``;
    without ``games`` a tie exiles nobody and neither is allowed): ``p_wolf_exiled`` (the chance level of
    ``voting_success``, with its Monte-Carlo standard error ``p_mc_se``) and ``vss_chance`` = E[village
    ballots for the exiled wolf; a wolf exiled] / E[village ballots; a wolf exiled], the chance level of VSS
    per ballot of the day (with it the random player's expected lift on VSS is 0 although VSS is conditional
    on the exile). In a revote the simulation cannot know how the wolves would have voted among other leaders,
    so it lets them vote at random too (exact for random wolves)."""
    v = votes(events, players)
    first = v[v["round"] == "first"].sort_values(["game_id", "day", "seq"])
    rules = game_rules(games, first["game_id"])
    tie, self_vote, abstain = (rules[c].to_dict() for c in ("vote_tie", "self_vote", "vote_abstain"))
    gid, day = first["game_id"].to_numpy(), first["day"].to_numpy()
    actor, target = first["actor"].to_numpy(), first["target"].to_numpy()
    wolves = (first["side"] == "werewolves").to_numpy()
    starts = np.flatnonzero(np.r_[True, (gid[1:] != gid[:-1]) | (day[1:] != day[:-1])]) if len(gid) else []
    rows, done = [], {}
    for a, b in zip(starts, np.r_[starts[1:], len(gid)]):
        seats = list(actor[a:b])  # every living player votes in the first round (an abstention is a vote row)
        index = {s: i for i, s in enumerate(seats)}
        wolf = wolves[a:b]
        targets = [index.get(t, -1) if isinstance(t, str) else -1 for t in target[a:b]]
        g = gid[a]
        key = _day_key(wolf, targets, str(tie.get(g, "none")), self_vote.get(g, False), abstain.get(g, False))
        if key is not None and key not in done:
            n, w, rule, sv, ab, wolf_targets = key
            rng = np.random.default_rng(zlib.crc32(repr(key).encode()))
            p, hits, ballots = _simulate_day(np.arange(n) < w, np.arange(w, n), np.array(wolf_targets, int), rule,
                                             rng, self_vote=sv, abstain=ab)
            done[key] = (p, float(np.sqrt(p * (1 - p) / EXILE_DRAWS)), hits / ballots if ballots > 0 else 0.0)
        rows.append((g, day[a], *done.get(key, (np.nan, np.nan, np.nan))))
    return pd.DataFrame(rows, columns=["game_id", "day", "p_wolf_exiled", "p_mc_se", "vss_chance"])


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
    return pd.DataFrame(rate_rows(v, by or ["spec"], chance="vss_chance", conditional="days a wolf was exiled",
                                   bar=BARS["vss"]))


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
    return pd.DataFrame(rate_rows(days, by, chance="p_wolf_exiled", bar=BARS["voting_success"]))


# ------------------------------------------------------------------ night actions
def _death_seq(ev: pd.DataFrame) -> dict[tuple[str, str], int]:
    """(game_id, seat) → the seq of the event that removed it (a seat absent never died)."""
    dead = ev[ev["kind"].isin(removing_kinds()) & ev["target"].notna()]
    return dead.groupby(["game_id", "target"])["seq"].min().to_dict()


def _protections(ev: pd.DataFrame, kind: str, games: pd.DataFrame | None) -> pd.DataFrame:
    """A protector's choices (``protect``: the Guard, ``heal``: the Doctor) on nights the wolves killed, with
    two exact levels from the legal answers it had: the protector may pass, may protect itself (the Doctor
    only under ``doctor_self_save``), may not protect last night's choice again under ``guard_no_repeat`` /
    without ``doctor_consecutive_saves`` — unless that player has died since (then nothing is removed):

    - ``random``: a uniformly random legal answer (passing one of them) protects the victim: 1{victim legal}
      / (legal players + 1);
    - ``chance``: the bar, protecting itself whenever that is legal (the victim is the protector), else a
      uniformly random legal player: 1{victim legal} / legal players."""
    protects = ev[ev["kind"] == kind].sort_values(["game_id", "seq"]).copy()
    protects["last"] = protects.groupby("game_id")["target"].shift()
    kills = ev[ev["kind"] == "kill"][["game_id", "day", "target"]].rename(columns={"target": "victim"})
    protects = protects.merge(kills, on=["game_id", "day"], how="inner")
    rules = game_rules(games, protects["game_id"])
    if kind == "protect":
        self_ok = np.ones(len(protects), bool)
        no_repeat = protects["game_id"].map(rules["guard_no_repeat"]).fillna(False).astype(bool).to_numpy()
    else:
        self_ok = protects["game_id"].map(rules["doctor_self_save"]).fillna(False).astype(bool).to_numpy()
        no_repeat = ~protects["game_id"].map(rules["doctor_consecutive_saves"]).fillna(True).astype(bool).to_numpy()
    died = _death_seq(ev)
    last_alive = np.array([isinstance(last, str) and died.get((g, last), np.inf) > seq
                           for g, last, seq in zip(protects["game_id"], protects["last"], protects["seq"])], bool)
    blocked = no_repeat & last_alive
    blocked_self = blocked & (protects["last"] == protects["actor"]).to_numpy()
    legal = protects["alive"].to_numpy(float) - (~self_ok) - (blocked & ~(~self_ok & blocked_self))
    victim = protects["victim"].to_numpy()
    is_self = victim == protects["actor"].to_numpy()
    reachable = ~(blocked & (protects["last"].to_numpy() == victim)) & (self_ok | ~is_self)
    self_legal = self_ok & ~blocked_self
    protects["hit"] = (protects["target"] == protects["victim"]).astype(int)
    protects["random"] = reachable / np.maximum(legal + 1, 1)
    protects["chance"] = np.where(self_legal, is_self.astype(float), reachable / np.maximum(legal, 1))
    return protects


def _seer_checks(ev: pd.DataFrame) -> pd.DataFrame:
    """The Seer's checks with ``random`` (a uniformly random other living player: living wolves / (living −
    1)) and ``chance``, the bar of a Seer that never rechecks: the wolves among the living players it has not
    checked / those players (every living player checked: a random one again)."""
    checks = ev[ev["kind"] == "check"].sort_values(["game_id", "seq"]).copy()
    checks["hit"] = (checks["target_role"] == "Werewolf").astype(int)
    checks["random"] = checks["wolves_alive"] / (checks["alive"] - 1).clip(lower=1)
    died = _death_seq(ev)
    seen: dict[tuple[str, str], list[tuple[str, bool]]] = {}
    bar = []
    for g, seer, target, wolf, seq, alive, wolves in zip(checks["game_id"], checks["actor"], checks["target"],
                                                         checks["hit"], checks["seq"], checks["alive"],
                                                         checks["wolves_alive"]):
        before = [(t, w) for t, w in seen.get((g, seer), []) if died.get((g, t), np.inf) > seq]
        others, bad = alive - 1 - len(before), wolves - sum(w for _, w in before)
        bar.append(bad / others if others > 0 else wolves / max(alive - 1, 1))
        if not any(t == target for t, _ in seen.get((g, seer), [])):
            seen.setdefault((g, seer), []).append((target, bool(wolf)))
    checks["chance"] = bar
    return checks


def _told_victims(ev: pd.DataFrame, poisons: pd.DataFrame) -> np.ndarray:
    """Per poison: how many living players other than the Witch she had been told were the wolves' victim (the
    announcement only she sees, ``Tonight the werewolves attacked X``, on this night or an earlier one, X still
    alive when she poisons). The wolves never attack a wolf, so each is a player she knows is not one."""
    told = ev[(ev["kind"] == "announcement") & ev["target"].notna() & ev["actor"].isna()
              & (ev["visibility"].astype(str) != "public")] if "visibility" in ev.columns else ev.iloc[:0]
    gone = ev[ev["kind"].isin(removing_kinds()) & ev["target"].notna()]
    gone_at = dict(zip(zip(gone["game_id"], gone["target"]), gone["seq"]))
    by_witch: dict[tuple, list[tuple[int, str]]] = {}
    for g, seat, seq, target in zip(told["game_id"], told["visibility"], told["seq"], told["target"]):
        by_witch.setdefault((g, seat), []).append((seq, target))
    out = np.zeros(len(poisons))
    for i, (g, witch, seq) in enumerate(zip(poisons["game_id"], poisons["actor"], poisons["seq"])):
        known = {t for s, t in by_witch.get((g, witch), ()) if s < seq and t != witch
                 and gone_at.get((g, t), np.inf) > seq}
        out[i] = len(known)
    return out


# Over 60 lines for its docstring (22 lines, each metric's bar): the code is 39.
def night_actions(events: pd.DataFrame, players: pd.DataFrame, by: list[str] | None = None,
                  games: pd.DataFrame | None = None) -> pd.DataFrame:
    """Night actions that can fail, each with a cluster-bootstrap interval and, where one exists, the bar
    (``chance``: the best information-free strategy, named in ``bar``; ``bars.BARS``) and ``random`` (a
    uniformly random legal answer), both exact from the legal answers under each game's rules (``games``;
    without it the rule flags take their defaults):

    - ``seer_wolf_check_rate``: checks that found a werewolf; bar: never recheck (wolves among the living
      players not checked before / those players); random: living wolves / (living − 1).
    - ``guard_save_rate`` / ``doctor_save_rate``: nights the Guard / Doctor protected the wolves' actual
      target; bar: protect itself where the rules allow it (else a random legal player); random: passing is an
      answer, ``guard_no_repeat`` / ``doctor_consecutive_saves: false`` remove last night's choice while that
      player lives, ``doctor_self_save: false`` removes the Doctor.
    - ``witch_save_needed``: saves of a victim the guard had not protected (the save changed the outcome).
    - ``witch_poison_on_wolf``: poisons on a werewolf; bar: a uniformly random living player other than herself
      and the living players she was told the wolves attacked (tonight's victim and any earlier victim who
      survived: never a wolf), living wolves / (living − 1 − those); random: living wolves / (living − 1).
    - ``witch_save_night`` / ``witch_poison_night``: the mean night a potion was used (timing; lower is
      earlier), reported as a mean, not a rate.
    - ``hunter_shot_on_wolf``: a Hunter's shots (events ``shot``, at dawn or by day) on a werewolf; bar =
      random = living wolves / living (the dead Hunter picks among all the living); listed where a game had a
      shot.

    (The old ``witch_save_correct`` could not fail: wolves can only target the village side.)"""
    ev = annotate(events, players)
    rows = []
    rows += rate_rows(_seer_checks(ev), by, chance="chance", random="random", metric="seer_wolf_check_rate",
                       bar=BARS["seer_wolf_check_rate"])
    for kind, metric in (("protect", "guard_save_rate"), ("heal", "doctor_save_rate")):
        units = _protections(ev, kind, games)
        if len(units) or kind == "protect":
            rows += rate_rows(units, by, chance="chance", random="random", metric=metric, bar=BARS[metric])

    guarded = ev[ev["kind"] == "protect"][["game_id", "day", "target"]].rename(columns={"target": "guarded"})
    saves = ev[ev["kind"] == "save"].merge(guarded, on=["game_id", "day"], how="left")
    saves["hit"] = (saves["guarded"] != saves["target"]).astype(int)
    rows += rate_rows(saves, by, metric="witch_save_needed")

    poisons = ev[ev["kind"] == "poison"].copy()
    poisons["hit"] = (poisons["target_role"] == "Werewolf").astype(int)
    poisons["random"] = poisons["wolves_alive"] / (poisons["alive"] - 1).clip(lower=1)
    cleared = _told_victims(ev, poisons)
    poisons["chance"] = poisons["wolves_alive"] / (poisons["alive"] - 1 - cleared).clip(lower=1)
    rows += rate_rows(poisons, by, chance="chance", random="random", metric="witch_poison_on_wolf",
                       bar=BARS["witch_poison_on_wolf"])

    shots = ev[ev["kind"] == "shot"].copy()
    shots["hit"] = (shots["target_role"] == "Werewolf").astype(int)
    shots["chance"] = shots["random"] = shots["wolves_alive"] / shots["alive"].clip(lower=1)
    if len(shots):  # only games with a shot (a preset without a Hunter gets no empty row)
        rows += rate_rows(shots, by, chance="chance", random="random", metric="hunter_shot_on_wolf",
                           bar=BARS["hunter_shot_on_wolf"])
    table = pd.DataFrame(rows)
    timing = []
    for kind in ("save", "poison"):
        used = ev[ev["kind"] == kind]
        for key, g in groups(used, by):
            m = cluster_mean(g["day"], g["game_id"], bounds=(1, max(1, int(ev["day"].max()))))
            timing.append({**key, "metric": f"witch_{kind}_night", "k": None, "n": m["n"], "n_games": m["n_games"],
                           "rate": m["mean"], "ci_low": m["ci_low"], "ci_high": m["ci_high"]})
    return pd.concat([table, pd.DataFrame(timing)], ignore_index=True) if timing else table
