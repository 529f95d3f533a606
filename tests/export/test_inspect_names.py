"""Inspect logs as `inspect view` lists them: the grid's variables first in the task arguments (the constant
settings came first and cut the varying ones off) and a log named after its seats' specs
(``toolkit/heuristic+random``; it was ``toolkit/mixed``, the name of a real spec). The helpers the Inspect
export builds its logs with, without Inspect itself (tests/export/test_inspect.py reads real logs)."""

import json

from toolkit.core.secrets import Redactor
from toolkit.export.common import conditions, varying_keys
from toolkit.export.inspect_log import _spec


def run(wolf: str) -> dict:
    return {"run_id": wolf, "config": json.dumps({"cell": "c", "model": "heuristic", "preset": "classic7",
                                                  "reflection": False, "wolf_model": wolf})}


def test_the_grid_variables_lead_the_task_arguments():
    runs = [run("random"), run("heuristic")]
    varying = varying_keys(runs)
    assert varying == {"wolf_model"}
    args = conditions([runs[0]], Redactor(), varying)
    assert list(args)[0] == "wolf_model" and args == {"wolf_model": "random", "cell": "c", "reflection": False,
                                                      "model": "heuristic", "preset": "classic7"}


def test_a_log_is_named_after_its_seats_specs():
    assert _spec(["random", "heuristic", "heuristic"], Redactor()) == "toolkit/heuristic+random"
    assert _spec(["mixed"], Redactor()) == "toolkit/mixed"
