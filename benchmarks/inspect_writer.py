"""Where the Inspect export's time goes: our part (building each game's ``EvalSample`` and the ``EvalLog``) beside
Inspect's (``write_eval_log``), and within Inspect's, its ``condense_sample`` (which ``write_eval_log`` calls on
every sample: attachments, the message pool, a dump of the whole sample and two walks over it) apart from the rest
(serialising and zipping). CPU seconds of this process, tables already loaded, logs of at most
``inspect_log.MAX_SAMPLES`` games as the export writes them; the ``.eval`` format and the ``.json`` one side by
side. ``--against REV`` also builds the samples with the exporter of git revision REV, in the same run, and checks
that both give the same samples (their JSON equal). The last lines: the whole export's rate in either format, and
the rate if our part cost nothing (Inspect's writer alone bounds the export); and that ``read_eval_log`` opens what
was written.

    python benchmarks/inspect_writer.py RESULTS_DIR [--games 1000] [--against REV]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def cpu(fn):
    start = time.process_time()
    out = fn()
    return out, time.process_time() - start


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("results", help="a results folder of werewolf games with their calls")
    parser.add_argument("--games", type=int, default=1000, help="games to write (the first N)")
    parser.add_argument("--against", metavar="REV", help="also build the samples with the exporter at git revision REV")
    args = parser.parse_args(argv)
    warnings.simplefilter("ignore")
    from inspect_ai.log import condense_sample, read_eval_log, write_eval_log

    import toolkit.analysis  # noqa: F401  (what eval_log's headline imports: once, not timed)
    from toolkit.core.secrets import Redactor
    from toolkit.export import inspect_log
    from toolkit.export.common import by_key, records
    from toolkit.record.load import load

    results = load(args.results)
    games = records(results.games.iloc[:args.games])
    ids = {g["game_id"] for g in games}
    players, events, calls = (by_key(t[t["game_id"].isin(ids)], "game_id") for t in
                              (results.players, results.events, results.calls))
    runs = {str(r["run_id"]): r for r in records(results.runs)}
    n = len(games)
    parts = [games[i:i + inspect_log.MAX_SAMPLES] for i in range(0, n, inspect_log.MAX_SAMPLES)]

    def build(module):
        mask, logs = Redactor(), []
        for part in parts:
            samples = [module.game_sample(g, players.get(g["game_id"], []), events.get(g["game_id"], []),
                                          calls.get(g["game_id"], []), True, mask) for g in part]
            specs = [p["spec"] for g in part for p in players.get(g["game_id"], [])]
            run_id = str(part[0].get("run_id"))
            logs.append(module.eval_log("werewolf", samples, module._spec(specs, mask),
                                        [runs.get(run_id, {"run_id": run_id})], mask))
        return logs

    with inspect_log._no_gc(), tempfile.TemporaryDirectory() as tmp:
        if args.against:
            from export_speed import module_at

            old_logs, old = cpu(lambda: build(module_at(args.against, "toolkit/export/inspect_log.py")))
        logs, ours = cpu(lambda: build(inspect_log))
        if args.against:
            same = all(a.model_dump_json() == b.model_dump_json() for x, y in zip(old_logs, logs)
                       for a, b in zip(x.samples, y.samples))
            del old_logs
        _, condense = cpu(lambda: [condense_sample(s) for log in logs for s in log.samples])
        written = {}
        for fmt in ("eval", "json"):
            paths = [Path(tmp) / f"part{k}.{fmt}" for k in range(len(logs))]
            _, written[fmt] = cpu(lambda: [write_eval_log(log, str(p)) for log, p in zip(logs, paths)])
            sizes = sum(p.stat().st_size for p in paths)
            opened = sum(len(read_eval_log(str(p)).samples or []) for p in paths)
            print(f"write_eval_log .{fmt:4s}: {written[fmt]:7.2f} s CPU  {n / written[fmt]:7.1f} games/s  "
                  f"{sizes / n / 1024:6.1f} KB a game; read_eval_log opens {opened} of {n} samples", flush=True)
    print(f"games {n}, samples' events {sum(len(s.events) for log in logs for s in log.samples)}")
    if args.against:
        print(f"ours at {args.against} (samples and logs built): {old:7.2f} s CPU  {n / old:7.1f} games/s; "
              f"{'the same samples (JSON equal)' if same else 'SAMPLES DIFFER'}")
    print(f"ours (samples and logs built):        {ours:7.2f} s CPU  {n / ours:7.1f} games/s")
    print(f"Inspect's condense_sample alone:      {condense:7.2f} s CPU  {n / condense:7.1f} games/s "
          f"({condense / written['eval']:.0%} of its .eval writer)")
    print(f"Inspect's writer, the rest (.eval):   {written['eval'] - condense:7.2f} s CPU")
    for label, build_cost in ([(args.against, old)] if args.against else []) + [("today", ours)]:
        for fmt in ("eval", "json"):
            both = build_cost + written[fmt]
            print(f"export .{fmt:4s} ({label}): ours + Inspect's {both:7.2f} s CPU  {n / both:7.1f} games/s; "
                  f"Inspect's share {written[fmt] / both:.0%}")
    print(f"if our part cost nothing (.eval):     {n / written['eval']:7.1f} games/s at most (goal 100)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
