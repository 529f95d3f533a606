"""``python -m toolkit play``: one werewolf game, its transcript and its tables."""

from __future__ import annotations

import argparse
import logging
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from toolkit.cli.common import (CAPPED, ENDPOINT_DOWN, Transcript, add_cap_arguments, endpoints_line, pairs, plural,
                                 run_config, show)

DESCRIPTION = "Play one werewolf game; print the transcript and write its tables."
PRESETS = Path(__file__).resolve().parents[1] / "werewolf" / "engine" / "presets"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from toolkit.llm.registry import spec_names
    from toolkit.werewolf.engine.discussions import REGISTRY as DISCUSSIONS

    presets = sorted(p.stem for p in PRESETS.glob("*.yaml"))  # read here without importing the engine
    parser.add_argument("--preset", default="classic7", help=f"one of {presets} or a YAML path")
    parser.add_argument("--seed", type=int, default=0, help="seeds the roles and every random choice (default 0)")
    parser.add_argument("--model", default="heuristic", help=f"spec for every seat ({spec_names()})")
    parser.add_argument("--seat", action="append", metavar="SEAT=SPEC",
                      help="a seat's own spec, e.g. Player3=random (repeatable)")
    parser.add_argument("--roles", metavar="SEAT=ROLE,...", help="fix the roles instead of shuffling")
    parser.add_argument("--reflection", action=argparse.BooleanOptionalAction, default=False,
                      help="players reflect each day (a summary and a role guess per seat)")
    parser.add_argument("--experience", action="store_true", help="read the lessons earlier runs left in "
                      "OUT/experience/pool.jsonl and add this game's (with --reflection)")
    parser.add_argument("--discussion", choices=list(DISCUSSIONS), metavar="NAME",
                        help="how the day's talk goes (default: the preset's): " + "; ".join(
                            f"{d.name}: {d.summary}" for d in DISCUSSIONS.values()).replace("%", "%%"))
    parser.add_argument("--max-days", type=int, metavar="N", help="end as a draw after N days (default: the preset's)")
    parser.add_argument("--temperature", type=float, metavar="T", help="sampling temperature for LLM seats (0-2)")
    parser.add_argument("--keep-going", action="store_true",
                      help="a call the endpoint failed (timeout, 429 or 5xx after its retries) is the seat's failed "
                           "decision: a fallback the error policy judges, as Kaggle plays (the games row says so); "
                           "by default the game waits for the endpoint. Either way an endpoint that gives no "
                           "answer for TOOLKIT_ENDPOINT_DEADLINE_S (90 s; at least 1.5 x TOOLKIT_TIMEOUT_S) is "
                           "down: the game stops unfinished, exit code 4")
    parser.add_argument("--error-policy", metavar="POLICY",
                      help="what a seat's failed decision costs it: fallback (a seeded legal decision), forfeit "
                           "(its side loses, as Kaggle's Game Arena), eliminate_after:N (removed after N, as "
                           "TextArena); default: the preset's (fallback)")
    parser.add_argument("--out", default="results", metavar="DIR",
                      help="results folder; the run goes to DIR/play-<time>-<id>/ (default: results)")
    parser.add_argument("--quiet", action="store_true", help="no transcript, only the result lines")
    add_cap_arguments(parser, "the game")


def check_play(args: argparse.Namespace) -> tuple[dict[str, str], dict[str, str] | None]:
    """Everything ``play`` needs, checked before anything is created. Returns (seats, roles)."""
    import math

    from toolkit.cli.preflight import check_spec, out_folder
    from toolkit.core.files import FileError, did_you_mean, load_scripted, one_line
    from toolkit.llm import parse_spec
    from toolkit.werewolf.engine.preset import load_preset
    from toolkit.werewolf.engine.rules import Game
    from toolkit.werewolf.game import GameConfig, rules_text

    preset = load_preset(args.preset)
    # a name of the preset's models: block stands for its spec (what is checked, recorded and played)
    args.model = preset.models.get(args.model, args.model)
    if args.max_days is not None and args.max_days < 1:
        raise FileError(f"--max-days must be at least 1, got {args.max_days}")
    if args.temperature is not None and not (math.isfinite(args.temperature) and 0 <= args.temperature <= 2):
        raise FileError(f"--temperature must be between 0 and 2, got {args.temperature}")
    seats = {seat: preset.models.get(spec, spec) for seat, spec in pairs(args.seat or [], "--seat").items()}
    for seat in seats:
        if seat not in preset.seats:
            raise FileError(f"--seat {seat}: no such seat in {preset.name}{did_you_mean(seat, preset.seats)}; "
                            f"seats are {preset.seats[0]}..{preset.seats[-1]}")
    roles = pairs([args.roles], "--roles") if args.roles is not None else None  # "" is refused, not ignored
    specs = {seat: seats.get(seat, args.model) for seat in preset.seats}
    for spec in dict.fromkeys([args.model, *seats.values()]):
        check_spec(spec, preset.seats, "--seat" if spec != args.model else "--model")
    if roles is None:  # the first scripted file with roles fixes them (as the game reads it)
        for spec in specs.values():
            kind, arg = parse_spec(spec)
            if kind == "scripted" and (script := load_scripted(arg)).roles:
                roles = dict(script.roles)
                break
    try:
        Game(preset, args.seed, roles)
    except ValueError as exc:
        raise FileError(f"{'--roles' if args.roles is not None else 'roles'}: {one_line(exc)}") from None
    # every clause of the rules has its prompt file (a plug-in's discussion or role may lack it): PromptMissing
    # in one line now, not once the run folder is made (it held only runs.parquet, a run with no game)
    rules_text(GameConfig(preset=preset, max_days=args.max_days, discussion=args.discussion).resolved_preset())
    if args.error_policy is not None:
        from toolkit.werewolf.engine.preset import parse_error_policy

        try:
            parse_error_policy(args.error_policy)
        except ValueError as exc:
            raise FileError(f"--error-policy: {exc}") from None
    out_folder(args.out)
    return seats, roles


@contextmanager
def said_once():
    """While a game plays: the "endpoint ... is down" warning of ``toolkit.llm.health`` is left to play's own
    "stopped on day N: ..." line, which says the same (stderr had the sentence twice)."""
    logger = logging.getLogger("toolkit.llm.health")
    drop = logging.Filter()
    drop.filter = lambda record: not getattr(record, "endpoint_down", False)  # type: ignore[method-assign]
    logger.addFilter(drop)
    try:
        yield
    finally:
        logger.removeFilter(drop)


def unused_decisions(runner: Any) -> list[str]:
    """Scripted decisions the game never asked for (e.g. for a seat that was dead by then)."""
    backends = {id(p.model.backend): p.model.backend for p in runner.players.values()}
    return [unused for backend in backends.values() for unused in backend.unused(runner.game_id)]


# Over 60 lines on purpose: the play command's steps in the order a user sees them (check, build, play, print).
def run(args: argparse.Namespace) -> int:
    import asyncio
    import os
    import sys

    from toolkit.cli.preflight import make_folder
    from toolkit.core.secrets import mask_url_credentials
    from toolkit.llm.budget import spending
    from toolkit.record.run_log import Run
    from toolkit.werewolf.experience import ExperiencePool
    from toolkit.werewolf.game import GameConfig, GameRunner

    seats, roles = check_play(args)
    make_folder(args.out)
    if args.experience and not args.reflection:
        show("warning: --experience without --reflection: lessons are read but none are added (a lesson is a "
              "player's reflection)", file=sys.stderr)
    config = GameConfig(preset=args.preset, seed=args.seed, model=args.model, seats=seats, roles=roles,
                        reflection=args.reflection, experience=args.experience, max_days=args.max_days,
                        discussion=args.discussion,
                        temperature=args.temperature, error_policy=args.error_policy)
    config.on_endpoint_failure = "fallback" if args.keep_going else "wait"
    models, budget = {}, None
    if args.max_usd is not None or args.max_tokens is not None:  # checked (prices known) before any folder
        from toolkit.llm import get_model
        from toolkit.llm.budget import Budget

        models = {spec: get_model(spec) for spec in dict.fromkeys([args.model, *seats.values()])}
        Budget(Path(args.out), args.max_usd, args.max_tokens, args.at_cap or "stop").check_prices(models.values())
    with Run(args.out, "play", config=run_config(args), seed=args.seed, specs=[args.model, *seats.values()]) as run:
        if args.experience:  # versioned by run: this game reads every earlier run's lessons, not its own
            config.experience_pool = ExperiencePool(os.path.join(args.out, "experience", "pool.jsonl"), run.run_id)
        budget = Budget.at(run.folder, args.max_usd, args.max_tokens, args.at_cap or "stop") if models else None
        runner = GameRunner(config, run, models=models, on_event=None if args.quiet else Transcript(),
                            budget=budget)
        with said_once(), spending(budget):  # each paid call in the ledger before it is sent, as in a study's
            result = asyncio.run(runner.play())
    for unused in unused_decisions(runner):
        show(f"warning: {unused} was never used", file=sys.stderr)
    endpoints = endpoints_line(run.folder)  # the endpoints' concurrency: peak, limit, 429s, time waited
    if result.winner == "interrupted":  # a dead endpoint: one line, on stderr too (seen under --quiet)
        if endpoints is not None:
            show(endpoints)
        show(f"stopped on day {result.days}: {mask_url_credentials(result.win_reason)}", file=sys.stderr)
        return ENDPOINT_DOWN
    if budget is not None and result.winner == "unfinished":
        if endpoints is not None:
            show(endpoints)
        show(f"stopped on day {result.days}: {budget.line(stopped=1)}")
        return CAPPED
    reason = mask_url_credentials(result.win_reason.splitlines()[0])
    show(f"winner: {result.winner} ({reason}) after {plural(result.days, 'day')}")
    if result.degraded:  # not a normal result: a seat's decisions were mostly fallbacks
        show(f"degraded: {'; '.join(f'{s}: {w}' for s, w in runner.degraded_seats().items())} (the result says "
             "little about the models; ratings leave it out)", file=sys.stderr)
    if budget is not None:
        show(budget.line())
    from toolkit.analysis.degeneracy import summary_line
    from toolkit.record.load import load

    show(f"tables: {run.folder}  (game {result.game_id}, {plural(result.log.calls, 'call')}, "
          f"{plural(result.log.fallbacks, 'fallback')})")
    show(summary_line(load(run.folder, complete_games=False)))
    if endpoints is not None:
        show(endpoints)
    return 1 if result.winner == "error" or result.degraded else 0
