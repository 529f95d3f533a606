"""A tournament file is checked like every file a user writes: unknown keys refused with a hint, types and
ranges checked, a name that could leave the results folder refused; the CLI says so in one line, exit 2,
before anything is written."""

import pytest

from toolkit.cli import main
from toolkit.core.files import FileError
from toolkit.study.tournament import load_tournament

GOOD = "name: t\nmodels: [heuristic, random]\npresets: [classic7]\n"


@pytest.mark.parametrize("extra, message", [
    ("modles: [x]\n", "modles.*did you mean 'models'"),
    ("design: swiss\n", "design"),
    ("half_width: 2\n", "half_width"),
    ("games: -3\n", "games"),
])
def test_mistakes_are_named(tmp_path, extra, message):
    path = tmp_path / "t.yaml"
    path.write_text(GOOD + extra)
    with pytest.raises(FileError, match=message):
        load_tournament(path)


def test_a_name_that_leaves_the_results_folder_is_refused(tmp_path):
    path = tmp_path / "t.yaml"
    path.write_text(GOOD.replace("name: t", "name: ../../escaped"))
    with pytest.raises(FileError, match="name"):
        load_tournament(path)


def test_a_good_file_keeps_only_what_it_says(tmp_path):
    path = tmp_path / "t.yaml"
    path.write_text(GOOD + "design: pairs\nreflection: true\n")
    assert load_tournament(path) == {"name": "t", "models": ["heuristic", "random"], "presets": ["classic7"],
                                     "design": "pairs", "reflection": True}


def test_the_cli_says_it_in_one_line_and_writes_nothing(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    path = tmp_path / "t.yaml"
    path.write_text(GOOD + "modles: [x]\n")
    assert main(["tournament", str(path), "--results", str(tmp_path / "res")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error:") and "modles" in err[0]
    assert not (tmp_path / "res").exists()


def test_a_model_spec_that_cannot_work_is_refused_before_anything_runs(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    path = tmp_path / "t.yaml"
    path.write_text("name: t\nmodels: [heuristic, nonsense:x]\npresets: [classic7]\ngames: 4\n")
    with pytest.raises(FileError, match="models: unknown model spec 'nonsense:x'"):
        load_tournament(path)
    assert main(["tournament", str(path), "--results", str(tmp_path / "res")]) == 2
    assert "nonsense:x" in capsys.readouterr().err and not (tmp_path / "res").exists()


def test_a_missing_file_or_a_folder_is_named_once(tmp_path):
    """"no such tournament file", not "... tournament file file" (what the code before said)."""
    with pytest.raises(FileError, match=r"t\.yaml: no such tournament file$"):
        load_tournament(tmp_path / "t.yaml")
    with pytest.raises(FileError, match=r"is a folder; expected a tournament file \(YAML\)$"):
        load_tournament(tmp_path)
