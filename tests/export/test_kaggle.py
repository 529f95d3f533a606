"""The Kaggle export read by Kaggle's own code (kaggle-environments 1.33.2, installed with --no-deps: its
werewolf loader needs only pandas and tqdm): ``GameResult`` over every exported example game gives this
toolkit's IRP, VSS and KSR exactly, count for count."""

import json
from collections import defaultdict
from pathlib import Path

import pytest

from toolkit.analysis import metrics as A
from tests.export.conftest import example_game
from toolkit.export import kaggle
from toolkit.record.load import load

loaders = pytest.importorskip("kaggle_environments.envs.werewolf.eval.loaders",
                              reason="the interop extra (kaggle-environments) is not installed")
from kaggle_environments.envs.werewolf.game import records  # noqa: E402
from kaggle_environments.envs.werewolf.game.consts import Team  # noqa: E402

pytestmark = pytest.mark.interop

EXAMPLES = Path(__file__).resolve().parents[2] / "results" / "examples"


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    results = load(EXAMPLES)
    out = tmp_path_factory.mktemp("kaggle")
    paths = kaggle.write(results, out)
    return results, paths


def kaggle_counts(paths, monkeypatch=None):
    """IRP and VSS (agent -> [hits, ballots]) and KSR ((agent, role) -> [survived, seat-games]) as Kaggle's
    loader computes them (its metrics module averages exactly these lists; it needs jax, so it is not run)."""
    irp, vss, ksr = defaultdict(lambda: [0, 0]), defaultdict(lambda: [0, 0]), defaultdict(lambda: [0, 0])
    for path in paths:
        game = loaders.GameResult(json.loads(path.read_text()))
        irp_rows, vss_rows = game.iterate_voting_mini_game()
        for table, rows in ((irp, irp_rows), (vss, vss_rows)):
            for agent, score in rows:
                table[agent][0] += score
                table[agent][1] += 1
        for p in game.players:
            ksr[(p.agent.display_name, p.role.name)][0] += int(p.alive)
            ksr[(p.agent.display_name, p.role.name)][1] += 1
    return dict(irp), dict(vss), dict(ksr)


def toolkit_counts(frame, keys):
    return {tuple(r[k] for k in keys) if len(keys) > 1 else r[keys[0]]: [int(r["k"]), int(r["n"])]
            for r in frame.to_dict("records")}


def test_kaggle_loader_reproduces_irp_vss_and_ksr_exactly(exported, monkeypatch):
    results, paths = exported
    assert len(paths) == len(results.games) == 1746  # every example game was decided
    # Kaggle's ROLE_TO_TEAM knows Villager, Werewolf, Seer, Doctor: the toolkit's Guard and Witch are villagers
    monkeypatch.setitem(loaders.ROLE_TO_TEAM, "GUARD", Team.VILLAGERS)
    monkeypatch.setitem(loaders.ROLE_TO_TEAM, "WITCH", Team.VILLAGERS)
    irp, vss, ksr = kaggle_counts(paths)
    assert irp == toolkit_counts(A.irp(results.events, results.players), ["spec"])
    assert vss == toolkit_counts(A.vss(results.events, results.players), ["spec"])
    assert ksr == toolkit_counts(A.ksr(results.games, results.players), ["spec", "role"])
    assert set(irp) == {"random", "mixed", "heuristic"} and min(n for _, n in irp.values()) > 5000


def test_without_guard_and_witch_in_its_role_table_kaggle_drops_their_ballots(exported, capsys):
    """Why the reader must extend ROLE_TO_TEAM: unextended, the loader warns and the counts fall short."""
    results, paths = exported
    irp, _, _ = kaggle_counts(paths[:50])
    ids = {p.stem for p in paths[:50]}
    sub = A.irp(results.events[results.events["game_id"].isin(ids)],
                results.players[results.players["game_id"].isin(ids)])
    assert sum(n for _, n in irp.values()) < int(sub["n"].sum())
    assert "Unknown role 'Guard'" in capsys.readouterr().out


def test_entries_validate_against_kaggles_record_models(exported):
    """The moderator entries parse as Kaggle's own pydantic DataEntry types of the same name."""
    _, paths = exported
    replay = json.loads(paths[0].read_text())
    seen = set()
    for step in replay["info"]["MODERATOR_OBSERVATION"]:
        for entry in step:
            model = getattr(records, entry["data_type"], None)
            if model is None:
                assert entry["data_type"] == "dict"
                continue
            event = json.loads(entry["json_str"])
            if entry["data_type"] in ("DayExileElectedDataEntry", "WerewolfNightEliminationDataEntry"):
                event["data"] = {k: v for k, v in event["data"].items() if not k.endswith(("role_name", "team_name"))}
            model.model_validate(event["data"])
            seen.add(entry["data_type"])
    assert {"DayExileVoteDataEntry", "ChatDataEntry", "WerewolfNightEliminationDataEntry"} <= seen
    assert [a["display_name"] for a in replay["configuration"]["agents"]] == \
        [p["agent"]["display_name"] for p in replay["info"]["GAME_END"]["all_players"]]


def test_no_content_leaves_speech_out(exported, tmp_path):
    results, _ = exported
    gid = results.games["game_id"].iloc[0]
    path, = kaggle.write(results, tmp_path, content=False, game_ids=[gid])
    text = path.read_text()
    speeches = results.events[(results.events["game_id"] == gid) & (results.events["kind"] == "speech")]["text"]
    assert len(speeches) and not any(s in text for s in speeches if len(s) > 12)
    assert json.loads(text)["info"]["GAME_END"]["winner_team"] in ("Villagers", "Werewolves")


@pytest.mark.browser
def test_kaggles_own_visualizer_renders_an_exported_game_offline(exported, tmp_path):
    """``export kaggle --html``: the game injected into the visualizer page the wheel ships, opened in headless
    Chromium with the network refused; it draws the seats (by model spec) and steps through the events."""
    sync_api = pytest.importorskip("playwright.sync_api")
    results, paths = exported
    game = example_game()
    page_path, = kaggle.write_html([p for p in paths if p.stem == game], tmp_path)
    specs = set(results.players[results.players["game_id"] == game]["spec"])
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=[
            "--no-sandbox", "--headless", "--disable-gpu", "--disable-background-networking"])
        page = browser.new_page(viewport={"width": 1300, "height": 900})
        page.route("http*://**", lambda route: route.abort())  # offline: its web fonts cannot load
        page.goto(page_path.as_uri())
        # it plays on by itself: wait until a moderator line and every seat's model are on screen, taking the text
        # in the same check (a later read may see another step; from file:// its day scene's textures are
        # refused by CORS and the page goes blank when the first day begins)
        wanted = ["ALIVE", "MODERATOR", *sorted(specs)]
        text = page.wait_for_function("(wanted) => { const t = document.body.innerText; "
                                      "return wanted.every(w => t.includes(w)) ? t : false; }", arg=wanted,
                                      timeout=120_000).json_value()
        page.screenshot(path=str(tmp_path / "kaggle.png"))
        browser.close()
    assert all(spec in text for spec in specs) and "MODERATOR" in text, (specs, text[:600])
