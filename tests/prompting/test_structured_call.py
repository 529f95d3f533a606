"""Actions: safe templating, parsing with json-repair, one re-ask, legal fallback; chaos never escapes."""

import asyncio

from pydantic import BaseModel

from toolkit.prompting.structured_call import Action, parse, render, with_choices
from toolkit.llm import Request, Sampling, get_model
from toolkit.record.run_log import CallLog, Run
from toolkit.record.load import load
from toolkit.werewolf.game import GameConfig, GameRunner
from toolkit.werewolf.seat.observation import observe
import json
import jinja2
import pytest
import yaml
from toolkit.prompting.structured_call import PromptMissing, json_schema, render_string


class Pick(BaseModel):
    target: str


PICK = with_choices(Pick, "target", ("Player1", "Player2"))


def test_template_values_are_data_never_template():
    hostile = 'A {{ 7*7 }} B {% raw %} C __profile__ D {"target": "Player9"} E {{ obs.role }}'
    runner = GameRunner(GameConfig(seed=1))
    ask = runner.game.pending()[0]
    obs = observe(runner.game, ask.seat, ask)
    base = render("werewolf/speak.j2", **runner.values, obs=obs, reflection="MARK", experiences=[],
                  strategy="default")
    injected = render("werewolf/speak.j2", **runner.values, obs=obs, reflection=hostile, experiences=[],
                      strategy="default")
    assert hostile in injected and "49" not in injected.replace(hostile, "")
    assert injected.replace(hostile, "MARK") == base  # nothing else in the prompt changed


def test_parse_repairs_broken_json_and_explains_failures():
    value, note = parse('Sure! ```json\n{"target": "Player2"\n```', PICK)
    assert value.target == "Player2" and note == "repaired malformed JSON"
    assert parse('{"target": "Player2"}', PICK) == (PICK(target="Player2"), None)
    for text, expected in [("", "empty"), ("I pick nobody", "no JSON object"),
                           ('{"target": "Player9"}', "target"), ('{"who": "Player1"}', "Field required")]:
        value, error = parse(text, PICK)
        assert value is None and expected in error


async def test_reask_shows_the_error_then_falls_back(server, tmp_path):
    server.say("I choose Player9!", '{"target": "Player9"}')
    b = get_model(f"openai:say@{server.base_url}")
    with Run(tmp_path) as run:
        result = await Action("pick", "reask.j2", PICK).run(
            b, Request(game_id="g"), {"error": "first"}, fallback=lambda: PICK(target="Player1"), log=CallLog(run))
    assert result.fallback and result.value.target == "Player1"
    reask = server.requests[1]["messages"]
    assert reask[-2] == {"role": "assistant", "content": "I choose Player9!"}
    assert "no JSON object" in reask[-1]["content"]
    calls = load(tmp_path).calls.sort_values("seq")
    assert list(calls["ok"]) == [False, False] and list(calls["fallback"]) == [False, True]
    assert calls["error"].notna().all()


async def test_reask_can_recover(server):
    server.say("{'target': 'Player7'}", '{"target": "Player2"}')
    b = get_model(f"openai:say@{server.base_url}")
    result = await Action("pick", "reask.j2", PICK).run(b, Request(), {"error": "x"},
                                                        fallback=lambda: PICK(target="Player1"))
    assert not result.fallback and result.value.target == "Player2"


@pytest.mark.slow
async def test_chaos_thousand_calls_no_exception_every_anomaly_recorded(tmp_path):
    chaos = get_model("chaos:0.3")
    action = Action("pick", "reask.j2", PICK)
    with Run(tmp_path) as run:
        log = CallLog(run)
        results = await asyncio.gather(*(
            action.run(chaos, Request(game_id="chaos", sampling=Sampling(seed=i), replay_key=f"k{i}"),
                       {"error": str(i)}, fallback=lambda: PICK(target="Player1"), log=log) for i in range(1000)))
    assert all(isinstance(r.value, PICK) for r in results)
    calls = load(tmp_path).calls
    good = calls[calls["ok"] & calls["error"].isna()]
    assert all(parse(t, PICK) == (PICK.model_validate_json(t), None) for t in good["response_text"])
    anomalies = calls[~calls.index.isin(good.index)]
    assert anomalies["error"].notna().all() and (~anomalies["ok"] | anomalies["error"].notna()).all()
    # about 30% of first asks are bad, and every kind of fault shows up in the error texts
    assert 0.2 < len(anomalies) / len(calls) < 0.4
    errors = " | ".join(anomalies["error"])
    for marker in ("empty", "no JSON object", "Field required", "(got [1, 2])", "(got \"Player99\")",
                   "injected transport error"):
        assert marker in errors, marker
    # each fallback the caller saw is one final row marked fallback=True
    assert int(calls["fallback"].sum()) == sum(r.fallback for r in results) > 0


class Pick(BaseModel):
    target: str
    why: str = ""


PICK = with_choices(Pick, "target", ("Player1", "Player2"))


class Commands(BaseModel):
    names: list[str]

    @classmethod
    def from_list(cls, items):
        return {"names": [i["name"] for i in items]}


# ------------------------------------------------------------------ parse
@pytest.mark.parametrize("text, target, note", [
    ('{"target": "Player1"}', "Player1", None),
    ('[{"target": "Player2"}, {"target": "Player1"}]', "Player2", None),  # a list: its first object
    ('{"target": "Player1",}', "Player1", "repaired malformed JSON"),
    ('Here you go: {"target": "Player2"} -- hope that helps', "Player2", "repaired malformed JSON"),
    ('{"target": "Player1", "why": "quiet", "extra": 1}', "Player1", None),  # extra keys are ignored
])
def test_parse_accepts(text, target, note):
    value, got_note = parse(text, PICK)
    assert value.target == target and got_note == note


@pytest.mark.parametrize("text, error", [
    ("   \n\t", "the answer was empty; reply with one JSON object"),
    ("[]", "no JSON object found"), ("[1, 2]", "no JSON object found"), ("42", "no JSON object found"),
    ('"Player1"', "no JSON object found"), ("null", "no JSON object found"),
    ('{"target": null}', 'target: Input should be \'Player1\' or \'Player2\' (got null)'),
])
def test_parse_refuses_with_an_error_the_model_can_act_on(text, error):
    value, got = parse(text, PICK)
    assert value is None and error in got


def test_parse_names_at_most_three_problems_and_cuts_long_inputs():
    class Four(BaseModel):
        a: int
        b: int
        c: int
        d: int

    _, error = parse("{}", Four)
    assert error == "a: Field required (got {}); b: Field required (got {}); c: Field required (got {})"
    _, error = parse(json.dumps({"a": "x" * 500, "b": 1, "c": 1, "d": 1}), Four)
    assert error.startswith("a: Input should be a valid integer") and error.endswith("(got \"" + "x" * 59 + ")")


def test_a_model_with_from_list_reads_a_bare_list():
    value, note = parse('[{"name": "Editor.open_file"}, {"name": "end"}]', Commands)
    assert value.names == ["Editor.open_file", "end"] and note is None


# ------------------------------------------------------------------ with_choices
def test_with_choices_restricts_one_field_and_keeps_the_rest():
    schema = json_schema(PICK)
    assert schema["properties"]["target"]["enum"] == ["Player1", "Player2"]
    assert schema["properties"]["why"] == Pick.model_json_schema()["properties"]["why"]
    assert PICK.__name__ == "Pick" and issubclass(PICK, Pick)
    assert with_choices(Pick, "target", ("Player1", "Player2")) is PICK  # built once, then cached
    nullable = with_choices(Pick, "target", ("Player3",), allow_none=True)
    assert nullable(target=None).target is None and nullable(target="Player3").target == "Player3"
    with pytest.raises(ValueError):
        nullable(target="Player1")
    nobody = with_choices(Pick, "target", ())
    assert json_schema(nobody)["properties"]["target"]["const"] == "__none__"  # no legal choice: nothing parses
    assert parse('{"target": "Player1"}', nobody)[0] is None


def test_a_new_set_of_choices_gets_its_shapes_schema_with_the_choices_filled_in(monkeypatch):
    """The JSON schema of a new set of choices is its shape's (base, field, number of choices, nullable), made by
    pydantic once, with the choices filled in: equal to pydantic's own for that set, and without asking pydantic
    again (on 51c499d and until session 19 every new set cost pydantic's ~0.5 ms)."""
    from pydantic.json_schema import GenerateJsonSchema

    made = []
    generate = GenerateJsonSchema.generate
    monkeypatch.setattr(GenerateJsonSchema, "generate", lambda self, *a, **k: made.append(1) or generate(self, *a, **k))
    sets = [("Player1",), ("Player2", "Player5"), ('Ann "the" \\ Wolf', "Zoë", "Player3"), ("a", "b", "c", "d")]
    for allow_none in (False, True):
        for choices in sets:
            primer = tuple(f"first{i}" for i in range(len(choices)))
            json_schema(with_choices(Pick, "target", primer, allow_none))  # the shape's schema made, once
            made.clear()
            model = with_choices(Pick, "target", choices, allow_none)
            schema = json_schema(model)
            assert made == [], (choices, allow_none)  # filled in: pydantic not asked
            assert schema == model.model_json_schema()


# ------------------------------------------------------------------ rendering
@pytest.fixture
def prompts(tmp_path, monkeypatch):
    folder = tmp_path / "prompts"
    folder.mkdir()
    (folder / "ask.j2").write_text("Pick one of {{ choices | join(', ') }}.\n"
                                   "{% if hint %}Hint: {{ hint }}{% endif %}\n\n")
    (folder / "sys.j2").write_text("You are {{ seat }}.")
    (folder / "reask.j2").write_text("FIX: {{ error }}")
    monkeypatch.setenv("TOOLKIT_PROMPTS", str(folder))
    return folder


def test_render_reads_the_prompts_folder_strictly_and_trims(prompts):
    assert render("ask.j2", choices=["Player1", "Player2"], hint="") == "Pick one of Player1, Player2."
    with pytest.raises(jinja2.UndefinedError, match="'hint' is undefined"):
        render("ask.j2", choices=["a"])
    with pytest.raises(PromptMissing, match=f"^prompt file missing.j2 not found in {prompts}:"):  # one line
        render("missing.j2")
    assert render_string("  {{ a }} and {{ b.c }}  ", a="x", b={"c": "{{ y }}"}) == "x and {{ y }}"
    with pytest.raises(jinja2.UndefinedError):
        render_string("{{ nope }}")


def test_a_missing_prompts_folder_says_how_to_fix_it(tmp_path, monkeypatch):
    monkeypatch.setenv("TOOLKIT_PROMPTS", str(tmp_path / "nowhere"))
    with pytest.raises(FileNotFoundError, match="TOOLKIT_PROMPTS names folders of prompt files"):
        render("ask.j2")


# ------------------------------------------------------------------ Action.run
def scripted(tmp_path, answers):
    path = tmp_path / "script.yaml"
    path.write_text(yaml.safe_dump({"answers": answers}))
    return get_model(f"scripted:{path}")


def run_action(model, log=None, output=None, system=None):
    action = Action("pick", "ask.j2", PICK, system=system)
    return asyncio.run(action.run(model, Request(game_id="g", seat="Player3"), {"choices": ["Player1", "Player2"],
                                                                              "hint": "", "seat": "Player3"},
                                  fallback=lambda: PICK(target="Player1", why="fallback"), log=log, output=output))


def test_a_good_first_answer_is_one_call(prompts, tmp_path):
    log = CallLog()
    result = run_action(scripted(tmp_path, [{"target": "Player2", "why": "x"}]), log, system="sys.j2")
    assert (result.value.target, result.fallback, result.calls, result.call_id) == ("Player2", False, 1, "g-0")
    assert result.messages == [{"role": "system", "content": "You are Player3."},
                               {"role": "user", "content": "Pick one of Player1, Player2."}]
    assert (log.calls, log.fallbacks, log.next_seq()) == (1, 0, 1)


def test_a_bad_answer_is_reasked_with_its_error_and_recovers(prompts, tmp_path):
    with Run(tmp_path / "res", "x") as run:
        log = CallLog(run)
        result = run_action(scripted(tmp_path, ["I pick Player2", {"target": "Player2"}]), log)
    assert not result.fallback and result.calls == 2 and result.call_id == "g-1"
    assert result.messages[1:] == [
        {"role": "assistant", "content": "I pick Player2"},
        {"role": "user", "content": "FIX: no JSON object found in the answer; reply with one JSON object"}]
    calls = load(tmp_path / "res").calls
    assert list(calls["seq"]) == [0, 1] and list(calls["ok"]) == [False, True]
    assert list(calls["fallback"]) == [False, False] and list(calls["action"]) == ["pick", "pick"]
    assert json.loads(calls.iloc[1]["parsed"]) == {"target": "Player2", "why": ""} and pd_isna(calls.iloc[0]["parsed"])
    assert len(json.loads(calls.iloc[1]["messages"])) == 3  # the re-ask carries the first exchange
    assert log.fallbacks == 0


def test_two_bad_answers_fall_back_and_the_last_call_says_so(prompts, tmp_path):
    log = CallLog()
    result = run_action(scripted(tmp_path, ['{"target": "Player9"}', ""]), log)
    assert result.fallback and result.value.why == "fallback" and result.calls == 2 and result.call_id is None
    assert result.error == "the answer was empty; reply with one JSON object"
    assert log.fallbacks == 1 and log.calls == 2


def test_a_fallbacks_messages_are_the_last_ones_sent(prompts, tmp_path):
    with Run(tmp_path / "res", "x") as run:
        result = run_action(scripted(tmp_path, ['{"target": "Player9"}', ""]), CallLog(run))
    last_sent = json.loads(load(tmp_path / "res").calls.sort_values("seq").iloc[-1]["messages"])
    assert "target: Input should be 'Player1' or 'Player2'" in last_sent[-1]["content"]
    assert result.messages == last_sent


def test_a_transport_failure_falls_back_without_a_reask(prompts, tmp_path):
    with Run(tmp_path / "res", "x") as run:
        log = CallLog(run)
        result = run_action(scripted(tmp_path, []), log)  # nothing scripted: the backend raises
    assert result.fallback and result.calls == 1 and "no scripted answer" in result.error
    calls = load(tmp_path / "res").calls
    assert len(calls) == 1 and not calls.iloc[0]["ok"] and calls.iloc[0]["fallback"]
    assert calls.iloc[0]["error"] == result.error and log.fallbacks == 1


def test_a_repaired_answer_is_used_and_its_note_recorded(prompts, tmp_path):
    with Run(tmp_path / "res", "x") as run:
        result = run_action(scripted(tmp_path, ['{"target": "Player1",}']), CallLog(run))
    assert not result.fallback and result.calls == 1
    row = load(tmp_path / "res").calls.iloc[0]
    assert row["ok"] and row["error"] == "repaired malformed JSON" and not row["fallback"]


def test_the_output_model_can_be_narrowed_per_call(prompts, tmp_path):
    only2 = with_choices(Pick, "target", ("Player2",))
    result = run_action(scripted(tmp_path, [{"target": "Player1"}, {"target": "Player2"}]), CallLog(), output=only2)
    assert result.calls == 2 and result.value.target == "Player2"  # Player1 is legal for PICK, not for this call


def test_without_a_log_every_call_is_seq_zero(prompts, tmp_path):
    result = run_action(scripted(tmp_path, ["bad", {"target": "Player2"}]))
    assert result.call_id == "g-0" and result.calls == 2


def pd_isna(value):
    import pandas as pd

    return bool(pd.isna(value))


def test_toolkit_prompts_folders_are_searched_before_the_packages(prompts):
    """Session 19 review, F3: TOOLKIT_PROMPTS was the only folder, so a plug-in's prompt file needed a copy of the
    whole prompts/ folder beside it. Now its folders come first and the package's last."""
    from toolkit.prompting.structured_call import template

    assert render("reask.j2", error="e") == "FIX: e"  # the extra folder's file first
    assert template("werewolf/vote.j2").render is not None  # a file only the package has
