"""One list of model specs: built-in backends in toolkit/llm/providers.py (imported only when named), the
players above the model layer through entry points, so a spec means the same whatever was imported first.
The fresh interpreters here are real subprocesses of this venv (its installed entry points)."""

import asyncio
import json
import subprocess
import sys
from pathlib import Path

import pytest

from toolkit.llm import Backend, Completion, LLMError, Model, Request, get_model
from toolkit.llm.offline import ScriptedBackend
from toolkit.llm.registry import find, known_specs, prefixes
from toolkit.llm.spec import GROUP

ROOT = Path(__file__).resolve().parents[2]


def fresh(code: str, tmp_path: Path) -> str:
    """Run code in a new interpreter (cwd tmp_path, this checkout first on the path); its stdout."""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=tmp_path,
                         env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT), "HOME": str(tmp_path)})
    assert out.returncode == 0, out.stderr
    return out.stdout


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    """A results folder holding one heuristic game (for replay:DIR)."""
    from toolkit.record.run_log import Run
    from toolkit.werewolf.game import GameConfig, play_game

    folder = tmp_path_factory.mktemp("recorded")
    with Run(folder) as run:
        asyncio.run(play_game(GameConfig(seed=2, max_days=1), run))
    return folder


@pytest.mark.slow
def test_players_above_the_model_layer_work_in_an_interpreter_that_imported_only_the_model_layer(tmp_path,
                                                                                                  recorded):
    code = f"""
import sys, toolkit.llm
before = sorted(m for m in sys.modules if m.startswith(("toolkit.werewolf", "toolkit.record", "openai")))
from toolkit.llm import get_model
models = [get_model(s) for s in ("heuristic", "mixed", "replay:{recorded}")]
print(before, [m.name for m in models], [type(m.backend).__module__ for m in models])
"""
    before, names, modules = fresh(code, tmp_path).rsplit("] [", 2)
    assert before == "[" and "'openai'" not in before  # nothing above the layer, no SDK, before the lookup
    assert names == f"'heuristic', 'mixed', 'replay:{recorded.name}'"
    assert modules == ("'toolkit.werewolf.players.heuristic', 'toolkit.werewolf.players.mixed', "
                       "'toolkit.llm.offline']\n")


def observation() -> dict:
    """A real werewolf observation: the first ask of seed 4's classic7 night."""
    from toolkit.werewolf.engine.preset import load_preset
    from toolkit.werewolf.engine.rules import Game
    from toolkit.werewolf.seat.observation import observe

    game = Game(load_preset("classic7"), seed=4)
    ask = game.pending()[0]
    return observe(game, ask.seat, ask)


@pytest.mark.slow
def test_a_scripted_default_heuristic_answers_the_same_whatever_was_imported_first(tmp_path):
    script = tmp_path / "s.yaml"
    script.write_text("default: heuristic\n")
    (tmp_path / "obs.json").write_text(json.dumps(observation()))
    ask = f"""
import asyncio, json
from toolkit.llm import Request, Sampling, get_model
obs = json.load(open("obs.json"))
call = asyncio.run(get_model("scripted:{script}").generate(
    Request(messages=[{{"role": "user", "content": "x"}}], observation=obs, sampling=Sampling(seed=9), replay_key="k")))
print(json.dumps([call.error, call.completion and call.completion.model, call.text]))
"""
    only_llm = json.loads(fresh("import toolkit.llm\n" + ask, tmp_path))
    game_first = json.loads(fresh("import toolkit.werewolf.game\n" + ask, tmp_path))
    assert only_llm == game_first
    error, model, text = only_llm
    assert error is None and model == "scripted:s.yaml+heuristic" and "target" in json.loads(text)


def test_import_toolkit_llm_loads_no_backend_sdk(tmp_path):
    out = fresh("import sys, toolkit.llm; print(sorted(m for m in sys.modules if m.split('.')[0] == 'openai' "
                "or m in ('toolkit.llm.offline', 'toolkit.llm.llama_server', 'toolkit.llm.openai_backend')))", tmp_path)
    assert out.strip() == "[]"


def test_the_known_specs_list_built_in_and_installed_ones():
    assert {"openai", "local", "random", "scripted", "chaos", "heuristic", "mixed", "replay"} <= set(prefixes())
    for usage in ("openai:MODEL", "scripted:PATH", "chaos:RATE", "replay:DIR", "heuristic", "mixed", "random"):
        assert usage in known_specs()
    assert find("nonsense") is None and GROUP == "toolkit.models"


def test_a_backend_is_a_backend_subclass_with_capabilities_declared():
    class Bare:
        model = "bare"

        async def complete(self, request):
            return Completion("x", self.model)

    with pytest.raises(TypeError, match="must subclass toolkit.llm.Backend"):
        Model("bare", Bare())
    defaults = Backend()
    assert (defaults.base_url, defaults.free, defaults.cacheable, defaults.roles) == (None, False, False, None)
    assert defaults.unused("g1") == []
    with pytest.raises(NotImplementedError):
        asyncio.run(defaults.complete(Request()))
    assert get_model("random").backend.free and get_model("openai:m@http://127.0.0.1:9/v1").backend.cacheable
    assert get_model("openai:m@http://127.0.0.1:9/v1").base_url == "http://127.0.0.1:9/v1"


def test_a_scripted_backend_tells_its_unused_decisions_per_game(tmp_path):
    script = tmp_path / "d.yaml"
    script.write_text("decisions:\n  - {day: 1, action: vote, seat: Player2, target: Player3}\n"
                      "  - {day: 2, action: vote, seat: Player2, target: Player4}\n")
    backend = ScriptedBackend(script)
    obs = {"day": 1, "action": "vote", "seat": "Player2"}
    completion = asyncio.run(backend.complete(Request(observation=obs, game_id="g1")))
    assert json.loads(completion.text) == {"target": "Player3"}
    assert backend.unused("g1") == [f"{script} decision #2 (day 2 vote Player2)"]
    assert len(backend.unused("g2")) == 2  # another game used none of them
    with pytest.raises(LLMError, match="default is error"):
        asyncio.run(backend.complete(Request(observation={**obs, "day": 3}, game_id="g1")))
