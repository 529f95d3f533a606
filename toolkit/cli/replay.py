"""``python -m toolkit replay``: re-run a logged game from its recorded answers, or fork it."""

from __future__ import annotations

import argparse

from toolkit.cli.common import Transcript, plural, run_config, show

DESCRIPTION = None


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("dir", help="results folder holding the game")
    parser.add_argument("--game", required=True, help="game_id to replay")
    parser.add_argument("--fork-at", type=int, metavar="SEQ", help="replay up to this event seq, then let --model play")
    parser.add_argument("--model", default="heuristic", help="spec that plays after --fork-at")
    parser.add_argument("--out", default="results/replays", metavar="DIR",
                        help="where the replayed run is written (default: results/replays)")
    parser.add_argument("--quiet", action="store_true", help="no transcript, only the result lines")


def run(args: argparse.Namespace) -> int:
    import asyncio

    from toolkit.cli.preflight import check_spec, out_folder, results_folder
    from toolkit.core.files import FileError
    from toolkit.record.run_log import Run
    from toolkit.werewolf.replay import EVENT_FIELDS, event_tuple, recorded_game, replay_game

    results_folder(args.dir)
    if args.fork_at is not None:
        if args.fork_at < 0:
            raise FileError(f"--fork-at must be 0 or more, got {args.fork_at}")
        check_spec(args.model)
    recorded_game(args.dir, args.game)  # says which games there are when the id is wrong
    out_folder(args.out)
    with Run(args.out, "replay", config=run_config(args)) as run:
        result, recorded = asyncio.run(replay_game(args.dir, args.game, run, args.fork_at, args.model,
                                                   None if args.quiet else Transcript()))
    new = [event_tuple(e) for e in result.events]
    show(f"winner: {result.winner} ({result.win_reason.splitlines()[0]}) after {plural(result.days, 'day')}")
    if args.fork_at is None:
        same = new == recorded
        show(f"replayed {len(new)} events: {'identical to the recording' if same else 'DIFFERENT from the recording'}")
        if not same:
            i = next((i for i, (a, b) in enumerate(zip(new, recorded)) if a != b), min(len(new), len(recorded)))
            show(f"first difference at event {i} (recorded {len(recorded)} events, replayed {len(new)}):\n"
                  f"  recorded {dict(zip(EVENT_FIELDS, recorded[i])) if i < len(recorded) else '(none)'}\n"
                  f"  replayed {dict(zip(EVENT_FIELDS, new[i])) if i < len(new) else '(none)'}")
            return 1
    else:
        same = sum(1 for a, b in zip(new[: args.fork_at], recorded[: args.fork_at]) if a == b)
        show(f"forked at event {args.fork_at} ({same} recorded events reproduced), then {args.model} played on")
    return 0
