"""``python -m toolkit tournament``: plan and run a tournament file."""

from __future__ import annotations

import argparse

from toolkit.cli.common import add_cap_arguments, endpoints_line, show
from toolkit.study.executors import EXECUTORS, help_text

DESCRIPTION = None


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", help="a tournament YAML file (models, presets, design; see "
                        "experiments/tournaments/example.yaml)")
    parser.add_argument("--plan", action="store_true", help="print the schedule's balance, size and the expected "
                        "interval width of every model's rating per side; run nothing")
    parser.add_argument("--village-rate", type=float, metavar="P", help="with --plan: the village win rate to size "
                        "the study at (from a pilot of your own; default: the preset's measured rate)")
    parser.add_argument("--pilot", type=int, metavar="N", help="with --plan: play the first N planned games of each "
                        "preset now (offline models only) and size the study at their village win rate")
    parser.add_argument("--difference", type=float, default=0.6, metavar="LOGITS", help="with --plan: the true "
                        "difference between two models whose detection power is printed (default: 0.6 logits)")
    parser.add_argument("--workers", type=int, default=1, help="cells (adaptive: batches of a round's games) run "
                        "at once (default: 1)")
    parser.add_argument("--executor", choices=list(EXECUTORS), default="local", help=help_text())
    parser.add_argument("--scheduler", metavar="ADDRESS", help="a running Dask scheduler's address, e.g. "
                        "tcp://HOST:8786 (with --executor dask; default: a LocalCluster)")
    parser.add_argument("--out", "--results", dest="out", default="results", metavar="DIR",
                        help="results root, as every command's --out; cells go to DIR/<name>/<cell>/ (default: "
                        "results; --results is its old name)")
    parser.add_argument("--adaptive", action="store_true", help="run the file as an adaptive tournament (as if it "
                        "said design: adaptive): rounds go where comparisons are undecided, the run stops when all "
                        "are decided at the family-wise error rate, with intervals valid under that stopping")
    parser.add_argument("--max-games", type=_positive, metavar="N",
                        help="adaptive: stop after N games (a cap only ends "
                        "the run earlier; a rerun with a higher cap continues)")
    parser.add_argument("--batch-games", type=_positive, metavar="N", help="adaptive, with workers: a round's games "
                        "are handed out in batches of at most N (default 8; a side-swapped pair never split)")
    parser.add_argument("--compare", metavar="DIR", help="adaptive: add the verdicts of a fixed run's results "
                        "folder beside the adaptive ones in adaptive.md")
    parser.add_argument("--export", metavar="DIR", help="afterwards, write the complete games' tables (no calls) "
                        "to DIR as one Parquet file per table")
    add_cap_arguments(parser, "the tournament (all cells, every run of it)")


def run(args: argparse.Namespace) -> int:
    import sys
    from pathlib import Path

    from toolkit.cli.preflight import check_executor, check_settings
    from toolkit.core.files import one_line
    from toolkit.core.collector import for_many_games
    from toolkit.study.tournament import export_tables, load_tournament, run_tournament

    check_executor(args)  # a Dask scheduler's address: the study runs there
    check_settings()  # the TOOLKIT_* settings, before anything is written
    if args.workers == 1:  # this process plays the games: the collector set for it (workers forked from it would
        for_many_games()  # inherit the setting, which a study's pool workers do not take: toolkit.core.collector)
    try:
        if args.adaptive or _design(args.file) == "adaptive":
            return _run_adaptive(args)
        if args.plan:
            return _plan(args)
        summary = run_tournament(args.file, results_root=args.out, workers=args.workers, executor=args.executor,
                                 scheduler=args.scheduler, max_usd=args.max_usd, max_tokens=args.max_tokens,
                                 at_cap=args.at_cap)
    except (ValueError, FileNotFoundError) as exc:
        show(f"error: {one_line(exc)}", file=sys.stderr)
        return 2
    if args.export:
        spec = load_tournament(args.file)
        for path in export_tables(Path(args.out) / spec["name"], args.export):
            show(path)
    from toolkit.cli.sweep import cell_state, cells_line

    cols = [c for c in ("cell_id", cell_state(summary), "games", "village_win_rate", "error") if c in summary.columns]
    show(summary[cols].to_string(index=False))
    if (line := endpoints_line(Path(args.out) / load_tournament(args.file)["name"])) is not None:
        show(line)
    return cells_line(summary)


def _plan(args: argparse.Namespace) -> int:
    """``--plan``: the schedule's balance and size, and the expected width of every rating; nothing is run."""
    from toolkit.study.tournament import balance, expected_widths, pilot_rates, plan_from_file, spread

    spec, plan = plan_from_file(args.file)
    games = plan["game"].nunique()
    show(f"{spec['name']}: {games} games in {plan['cell'].nunique()} cells")
    show(balance(plan).to_string())
    rate = args.village_rate
    if rate is not None and not 0 < rate < 1:
        raise ValueError(f"--village-rate must be between 0 and 1, got {rate}")
    fitted = None
    if args.pilot:
        pilot = pilot_rates(plan, args.pilot)
        for preset, (p, n, _) in pilot.items():
            show(f"pilot {preset}: the village won {p:.3f} of {n} decided games (degraded ones left out)")
        rate = {preset: p for preset, (p, _, _) in pilot.items()}
        fitted = {preset: f for preset, (_, _, f) in pilot.items()}
    widths, pairs = expected_widths(plan, rate, difference=args.difference, strengths=fitted)
    for preset, part in widths.groupby("preset", sort=False):
        show(f"\n{preset}: sized at P(village wins) = {part['p_village'].iloc[0]:.3f} "
              f"({part['source'].iloc[0]})")
    at = "the pilot's fitted strengths" if fitted else "equal models"
    show(f"\nExpected 95% half-width of each rating (logits, {at} at that rate):")
    show(widths.drop(columns=["p_village", "source"]).to_string(index=False, float_format="{:.2f}".format))
    models = list(dict.fromkeys(plan["spec"]))
    show("\nThe same at other gaps between the strongest and the weakest model (evenly spaced, both sides): "
         "models that differ carry less information per game")
    for gap in (0.0, 0.5, 1.0, 2.0):
        w = expected_widths(plan, rate, difference=args.difference, strengths=spread(models, gap))[0]
        show(f"  gap {gap:g} logits: rating half-width {w['half_width'].mean():.2f} on average, "
             f"{w['half_width'].max():.2f} at most")
    if len(pairs):
        show("\nBetween two models on a side: the half-width of their difference, the smallest true "
              "difference detected with 80% power after Holm's correction over the table's pairs, and the "
              f"power at a true difference of {args.difference:g} logits (benchmarks/plan_power.py checks "
              "these by simulation):")
        show(pairs.drop(columns=["p_village"]).to_string(index=False, float_format="{:.2f}".format))
    return 0


def _design(path: str) -> str | None:
    from toolkit.study.tournament import load_tournament

    return load_tournament(path).get("design")


def _run_adaptive(args: argparse.Namespace) -> int:
    from toolkit.study.adaptive import adaptive_spec, design_of, run_adaptive
    from toolkit.study.tournament import export_tables, village_rate

    spec = adaptive_spec(args.file)
    if args.plan:
        from toolkit.analysis.sequential import fixed_games, max_games

        designs, comps = design_of(spec)
        d0 = next(iter(designs.values()))
        show(f"{spec['name']}: adaptive, {len(comps)} head-to-head comparisons in side-swapped pairs at "
             f"family-wise alpha {d0.alpha:g}, power {d0.power:g} at {d0.delta:g} logits a side")
        for preset, d in designs.items():
            show(f"  {preset}: village rate {d.p_village:.3f} ({village_rate(preset, spec.get('village_rate'))[1]}), "
                 f"{d.looks_text()} per comparison, fixed design {d.n_fixed} pairs")
        show(f"The fixed design of the same error and power: {fixed_games(designs, comps)} games; this one stops "
             f"when its comparisons are decided, at most {max_games(designs, comps)} games "
             "(benchmarks/sequential_tournament.py)")
        for c in comps:
            show(f"  {c.preset}: {c.a} vs {c.b}")
        return 0
    if args.workers < 1:
        raise ValueError(f"--workers must be at least 1, got {args.workers}")
    status = run_adaptive(spec, results_root=args.out, max_games=args.max_games, max_usd=args.max_usd,
                          max_tokens=args.max_tokens, at_cap=args.at_cap, workers=args.workers,
                          executor=args.executor, scheduler=args.scheduler,
                          **({"batch_games": args.batch_games} if args.batch_games else {}))
    report = status.folder / "adaptive.md"
    if args.compare:
        from toolkit.analysis.adaptive_report import compare_designs
        from toolkit.record.load import load

        report.write_text(report.read_text() + "\n" + compare_designs(status.coordinator, load(args.compare)))
    if args.export:
        for p in export_tables(status.folder, args.export):
            show(p)
    if (line := endpoints_line(status.folder)) is not None:
        show(line)
    show(f"{spec['name']}: stopped ({status.stopped}) after {status.games} games; {status.coordinator.decided} of "
         f"{len(status.coordinator.comps)} comparisons decided; report: {report}")
    import sys

    from toolkit.cli.common import CAPPED, ENDPOINT_DOWN

    if status.stopped.startswith("endpoint down: "):
        show(f"stopped: {status.stopped.removeprefix('endpoint down: ')}", file=sys.stderr)
        return ENDPOINT_DOWN
    return CAPPED if status.stopped.startswith("spending cap") else 0


def _positive(text: str) -> int:
    """A game cap of at least one game (0 or less would write an empty run)."""
    import argparse
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number of games ≥ 1, got {text!r}")
    return int(text)
