"""``toolkit import kaggle`` against replays a hostile or broken exporter writes: each is refused in one line, exit
code 2, with nothing written (no run folder, no results folder); a replay given twice is imported once. The named
cases go through the command line; hypothesis then mutates one node of a real Kaggle replay (any path, any JSON
value, NaN and infinities included) and the checker must accept it or refuse it with one ``FileError`` line,
never trip on it."""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytest.importorskip("kaggle_environments", reason="needs kaggle-environments (make test installs it, --no-deps)")

from toolkit.core.files import FileError  # noqa: E402
from toolkit.werewolf.kaggle import importer  # noqa: E402

# kaggle-environments is the interop extra's (as in test_kaggle_import.py): out of the fast tier, in make test
pytestmark = pytest.mark.interop


@pytest.fixture(scope="module")
def base():
    from toolkit.werewolf.kaggle import harness

    return harness.play("default7", 1)


def import_kaggle(replays: Path, out: Path, timeout: float = 300):
    env = {**os.environ, "PYTHONPATH": os.getcwd()}
    return subprocess.run([sys.executable, "-m", "toolkit", "import", "kaggle", str(replays), "--out", str(out)],
                          capture_output=True, text=True, timeout=timeout, env=env)


def error_lines(stderr: str) -> list[str]:
    # kaggle-environments prints its own warning about an optional module (pyspiel) when imported: not ours
    return [line for line in stderr.splitlines() if line.strip() and "spiel" not in line]


CASES = {
    "seed Infinity": lambda r: json.dumps(r).replace('"seed": 1', '"seed": Infinity', 1),
    "seed NaN": lambda r: json.dumps(r).replace('"seed": 1', '"seed": NaN', 1),
    "seed a float": lambda r: json.dumps(r).replace('"seed": 1', '"seed": 1.5', 1),
    "deep nesting": lambda r: '{"info": ' + "[" * 100_000 + "]" * 100_000 + ', "configuration": {}}',
    "info a list": lambda r: json.dumps({**r, "info": [r["info"]]}),
    "info a string": lambda r: json.dumps({**r, "info": "GAME_END"}),
    "moderator log a mapping": lambda r: json.dumps({**r, "info": {**r["info"], "MODERATOR_OBSERVATION": {"a": 1}}}),
    "an entry's json_str not an object": lambda r: json.dumps({**r, "info": {**r["info"], "MODERATOR_OBSERVATION": [
        [{"data_type": "ChatDataEntry", "json_str": "[1, 2]"}]]}}),
    "agent id a number": lambda r: json.dumps({**r, "configuration": {**r["configuration"], "agents": [
        {**a, "agent_id": 7} for a in r["configuration"]["agents"]]}}),
    "GAME_END a string": lambda r: json.dumps({**r, "info": {**r["info"], "GAME_END": "x"}}),
}
SAYS = {"seed Infinity": "Infinity is not JSON", "seed NaN": "NaN is not JSON", "deep nesting": "nested more than",
        "seed a float": "configuration.seed", "info a list": "info:", "info a string": "info:",
        "moderator log a mapping": "MODERATOR_OBSERVATION", "an entry's json_str not an object": "json_str",
        "agent id a number": "agent_id", "GAME_END a string": "GAME_END"}


@pytest.mark.parametrize("case", list(CASES))
def test_a_bad_replay_is_one_line_exit_2_and_nothing_written(case, base, tmp_path):
    replays = tmp_path / "replays"
    replays.mkdir()
    (replays / "good.json").write_text(json.dumps(base))  # a good replay beside it is not imported either
    (replays / "z.json").write_text(CASES[case](copy.deepcopy(base)))
    done = import_kaggle(replays, tmp_path / "results")
    lines = error_lines(done.stderr)
    assert done.returncode == 2 and len(lines) == 1 and "Traceback" not in done.stderr, done.stderr[-3000:]
    assert "z.json" in lines[0] and SAYS[case] in lines[0], lines[0]
    assert not (tmp_path / "results").exists()


def test_a_replay_given_twice_is_imported_once(base, tmp_path):
    replays = tmp_path / "replays"
    replays.mkdir()
    for name in ("a.json", "copy-of-a.json"):
        (replays / name).write_text(json.dumps(base))
    done = import_kaggle(replays, tmp_path / "results")
    assert done.returncode == 0, done.stderr[-2000:]
    assert "copy-of-a.json is the same game as a.json" in done.stdout and "imported 1 game" in done.stdout
    again = import_kaggle(replays, tmp_path / "results")  # the same folder imported again: nothing new
    assert again.returncode == 0 and "nothing to import" in again.stdout, again.stdout
    assert len(list((tmp_path / "results").iterdir())) == 1  # one run, holding the game once
    differs = json.loads(json.dumps(base))
    differs["configuration"]["agents"][0]["display_name"] = "another"
    (replays / "copy-of-a.json").write_text(json.dumps(differs))  # one id, two different replays: refused
    refused = import_kaggle(replays, tmp_path / "other")
    assert refused.returncode == 2 and "two different replays" in error_lines(refused.stderr)[0]
    assert not (tmp_path / "other").exists()


def test_a_changed_replay_of_an_imported_game_is_left_out_with_a_warning(base, tmp_path):
    """A replay whose game id is imported already but whose content changed: one warning line on stderr naming
    the file, the id and the run kept (before, a note on stdout said only 'already imported'); the same replay
    again is a note, and a run written before digests were kept gets a note that says it was not compared."""
    replays = tmp_path / "replays"
    replays.mkdir()
    (replays / "a.json").write_text(json.dumps(base))
    assert import_kaggle(replays, tmp_path / "results").returncode == 0
    (run,) = (tmp_path / "results").iterdir()
    gid = f"kaggle-{base.get('id') or 'a'}"
    assert json.loads((run / importer.DIGESTS).read_text())[gid]["file"] == "a.json"
    same = import_kaggle(replays, tmp_path / "results")
    assert same.returncode == 0 and f"a.json ({gid}) is already imported in {run}: left out" in same.stdout
    assert error_lines(same.stderr) == []
    differs = json.loads(json.dumps(base))
    differs["configuration"]["agents"][0]["display_name"] = "another"
    (replays / "a.json").write_text(json.dumps(differs))
    changed = import_kaggle(replays, tmp_path / "results")
    assert changed.returncode == 0, changed.stderr[-2000:]
    assert changed.stdout.splitlines()[-1] == ("nothing new to import; 1 replay left out: it differs from the one "
                                               "imported under its id")  # before: 'nothing to import', as if kept
    assert error_lines(changed.stderr) == [
        f"warning: a.json ({gid}) DIFFERS from the replay of that game id imported in {run}: the imported game is "
        "kept and this replay is left out (remove that run, or import into another --out, to import this one)"]
    assert list((tmp_path / "results").iterdir()) == [run]
    (run / importer.DIGESTS).unlink()  # a run imported before digests were kept
    older = import_kaggle(replays, tmp_path / "results")
    assert older.returncode == 0 and "its content is not compared" in older.stdout and not error_lines(older.stderr)


def test_a_folder_or_a_fifo_in_place_of_the_digests_is_one_line_exit_2(base, tmp_path):
    """An imported run's ``kaggle-replays.json`` replaced by a folder or a FIFO: one line naming it, exit 2, nothing
    written (before, a folder was taken for a run imported before digests were kept, so a changed replay was not
    compared, and the read of a FIFO waited for a writer for ever)."""
    replays = tmp_path / "replays"
    replays.mkdir()
    (replays / "a.json").write_text(json.dumps(base))
    assert import_kaggle(replays, tmp_path / "results").returncode == 0
    (run,) = (tmp_path / "results").iterdir()
    digests, before = run / importer.DIGESTS, sorted(run.iterdir())
    for plant in (digests.mkdir, lambda: os.mkfifo(digests)):
        digests.rmdir() if digests.is_dir() else digests.unlink()
        plant()
        done = import_kaggle(replays, tmp_path / "results", timeout=120)
        says = f"error: {digests}: not a regular file (an import keeps its replays' digests there); remove it"
        assert done.returncode == 2 and error_lines(done.stderr) == [says], done.stderr
        assert list((tmp_path / "results").iterdir()) == [run] and sorted(run.iterdir()) == before


def paths(node, prefix=()):
    """Every path into a JSON value (the moderator log's entries parsed, as the importer reads them)."""
    yield prefix
    if isinstance(node, dict):
        for k, v in node.items():
            yield from paths(v, (*prefix, k))
    elif isinstance(node, list):
        for i, v in enumerate(node[:3]):
            yield from paths(v, (*prefix, i))


def replaced(node, path, value):
    if not path:
        return value
    node = copy.copy(node)
    node[path[0]] = replaced(node[path[0]], path[1:], value)
    return node


VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True, allow_infinity=True) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=6)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_any_one_node_replaced_is_accepted_or_refused_in_one_line(base, data):
    path = data.draw(st.sampled_from(sorted(set(paths(base)) - {()}, key=str)))
    replay = replaced(base, path, data.draw(VALUES))
    with tempfile.TemporaryDirectory() as folder:
        (Path(folder) / "r.json").write_text(json.dumps(replay))  # NaN and infinities as Python writes them
        try:
            games = importer.check(folder)
        except FileError as exc:
            assert "\n" not in str(exc) and str(exc).startswith(folder), str(exc)
        else:
            assert len(games) == 1


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_any_one_node_of_a_moderator_event_replaced_is_accepted_or_refused_in_one_line(base, data):
    log = [(i, j) for i, step in enumerate(base["info"]["MODERATOR_OBSERVATION"]) for j in range(len(step))]
    i, j = data.draw(st.sampled_from(log))
    entry = base["info"]["MODERATOR_OBSERVATION"][i][j]
    event = json.loads(entry["json_str"])
    path = data.draw(st.sampled_from(sorted(set(paths(event)) - {()}, key=str)))
    changed = {**entry, "json_str": json.dumps(replaced(event, path, data.draw(VALUES)))}
    replay = replaced(base, ("info", "MODERATOR_OBSERVATION", i, j), changed)
    with tempfile.TemporaryDirectory() as folder:
        (Path(folder) / "r.json").write_text(json.dumps(replay))
        try:
            importer.check(folder)
        except FileError as exc:
            assert "\n" not in str(exc) and str(exc).startswith(folder), str(exc)
