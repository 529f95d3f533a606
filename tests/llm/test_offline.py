"""The offline backends as backends: ``sample_from_schema`` (every sample validates against the schema it came
from), ``ScriptedBackend`` (decisions, answers, default), ``ChaosBackend`` (each fault kind has its shape) and
the random backend's determinism. Validation uses the independent ``jsonschema`` package."""

import asyncio
import json
import random
from typing import Literal, Optional

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, Field

from toolkit.prompting.structured_call import with_choices
from toolkit.core.files import FileError
from toolkit.llm import LLMError, Request, Sampling, get_model
from toolkit.llm.offline import CHAOS_KINDS, ChaosBackend, RandomBackend, ScriptedBackend, sample_from_schema

SEEDED = settings(derandomize=True, database=None, deadline=None, max_examples=150)


def valid(instance, schema):
    import jsonschema  # here: its import takes ~3 s (rfc3987_syntax builds parsers), paid by every collection

    jsonschema.validate(instance, schema, cls=jsonschema.Draft202012Validator)
    return True


# ------------------------------------------------------------------ sample_from_schema
NAMES = st.sampled_from(["a", "b", "target", "speech", "n"])
WORDS = st.text("abcxyz", min_size=1, max_size=5)


def leaf():
    bounded_int = st.tuples(st.integers(-50, 50), st.integers(0, 40)).map(
        lambda t: {"type": "integer", "minimum": t[0], "maximum": t[0] + t[1]})
    bounded_num = st.tuples(st.floats(-100, 100), st.floats(0, 50)).map(
        lambda t: {"type": "number", "minimum": t[0], "maximum": t[0] + t[1]})
    return st.one_of(
        st.lists(WORDS, min_size=1, max_size=5, unique=True).map(lambda xs: {"enum": xs}),
        WORDS.map(lambda x: {"const": x}),
        st.sampled_from([{"type": "string"}, {"type": "boolean"}, {"type": "null"}, {"type": "integer"},
                         {"type": "number"}, {}, {"type": "integer", "minimum": 3},
                         {"type": "integer", "maximum": 8}]),
        bounded_int, bounded_num)


def grow(children):
    return st.one_of(
        st.dictionaries(NAMES, children, max_size=4).map(
            lambda props: {"type": "object", "properties": props, "required": sorted(props)}),
        children.map(lambda item: {"type": "array", "items": item}),
        st.lists(children, min_size=1, max_size=3).map(lambda opts: {"anyOf": [*opts, {"type": "null"}]}))


SCHEMAS = st.recursive(leaf(), grow, max_leaves=12)


@SEEDED
@given(schema=SCHEMAS, seed=st.integers(0, 2**32))
@pytest.mark.slow
def test_every_sample_validates_against_its_schema(schema, seed):
    value = sample_from_schema(schema, random.Random(seed))
    assert valid(value, schema)
    assert sample_from_schema(schema, random.Random(seed)) == value  # the same rng draws the same value


@SEEDED
@given(defs=st.dictionaries(st.sampled_from(["Role", "Seat", "Vote"]), leaf(), min_size=1, max_size=3),
       seed=st.integers(0, 2**32))
@pytest.mark.slow
def test_refs_resolve_through_the_root_defs(defs, seed):
    """``$ref`` (bare, or inside ``anyOf``) is looked up in the root schema's ``$defs`` at any depth."""
    names = sorted(defs)
    schema = {"$defs": defs, "type": "object", "required": ["x", "y", "z"], "properties": {
        "x": {"$ref": f"#/$defs/{names[0]}"},
        "y": {"type": "array", "items": {"$ref": f"#/$defs/{names[-1]}"}},
        "z": {"anyOf": [{"$ref": f"#/$defs/{n}"} for n in names] + [{"type": "null"}]}}}
    assert valid(sample_from_schema(schema, random.Random(seed)), schema)


class Vote(BaseModel):
    target: str
    reason: str = ""
    confidence: float = Field(ge=0, le=1)
    rounds: int = Field(ge=1, le=3)
    tags: list[Literal["bluff", "hunch"]] = []
    backup: Optional[str] = None


@pytest.mark.parametrize("choices, allow_none", [(("Player1",), False), (("Player1", "Player2", "Player3"), True),
                                                 ((), False)])
@pytest.mark.slow
def test_pydantic_made_schemas_sample_to_values_pydantic_accepts(choices, allow_none):
    """What the random backend and the test server rely on: a sample of a with_choices model is a legal answer."""
    model = with_choices(Vote, "target", choices, allow_none)
    schema = model.model_json_schema()
    rng = random.Random(5)
    seen = set()
    for _ in range(60):
        value = sample_from_schema(schema, rng)
        assert valid(value, schema)
        seen.add(model.model_validate(value).target)
    expected = set(choices or ("__none__",)) | ({None} if allow_none else set())
    assert seen == expected  # every legal choice (and the pass) is drawn, nothing else


def test_anyof_weighs_each_option_by_the_values_it_allows():
    """A nullable enum of 3 choices: each choice and the pass are equally likely (1/4), not null 1/2."""
    schema = {"anyOf": [{"enum": ["a", "b", "c"]}, {"type": "null"}]}
    rng = random.Random(0)
    draws = [sample_from_schema(schema, rng) for _ in range(4000)]
    for value in ("a", "b", "c", None):
        assert 0.21 < draws.count(value) / len(draws) < 0.29, value


def test_bounds_outside_the_default_range_are_respected():
    rng = random.Random(1)
    for schema in ({"type": "integer", "minimum": 20}, {"type": "integer", "maximum": -5},
                   {"type": "number", "minimum": 5.0}):
        for _ in range(20):
            assert valid(sample_from_schema(schema, rng), schema)


def test_array_length_limits_and_tuples_are_respected():
    class M(BaseModel):
        pair: tuple[int, str]
        some: list[int] = Field(min_length=3, max_length=4)

    schema = M.model_json_schema()
    rng = random.Random(2)
    for _ in range(10):
        M.model_validate(sample_from_schema(schema, rng))


def test_discriminated_unions_are_sampled():
    class A(BaseModel):
        kind: Literal["a"]
        x: int

    class B(BaseModel):
        kind: Literal["b"]
        y: str

    class M(BaseModel):
        u: A | B = Field(discriminator="kind")

    schema = M.model_json_schema()
    M.model_validate(sample_from_schema(schema, random.Random(3)))


# ------------------------------------------------------------------ the random backend
def test_random_backend_answers_depend_on_seed_key_and_length_only():
    schema = {"type": "object", "properties": {"n": {"type": "integer", "minimum": 0, "maximum": 10**6}}}
    b = RandomBackend()

    def answer(seed=1, key="k", messages=1, game="g"):
        r = Request(messages=[{"role": "user", "content": "x"}] * messages, schema=schema,
                    sampling=Sampling(seed=seed), replay_key=key, game_id=game)
        return asyncio.run(b.complete(r)).text

    assert answer() == answer(game="other")  # who asks does not change the draw
    assert len({answer(), answer(seed=2), answer(key="j"), answer(messages=2)}) == 4  # each input does
    free_text = asyncio.run(b.complete(Request(sampling=Sampling(seed=1)))).text
    assert free_text[0].isupper() and free_text.endswith(".") and 3 <= len(free_text[:-1].split()) <= 10


# ------------------------------------------------------------------ the scripted backend
def scripted(tmp_path, data, name="s.yaml"):
    path = tmp_path / name
    path.write_text(yaml.safe_dump(data))
    return ScriptedBackend(path)


def ask(backend, game="g", **obs):
    return asyncio.run(backend.complete(Request(game_id=game, observation=obs or None)))


def test_decisions_match_day_action_seat_once_each_per_game(tmp_path):
    b = scripted(tmp_path, {"decisions": [
        {"day": "1", "action": "vote", "seat": "Player2", "target": "Player5"},
        {"day": 1, "action": "vote", "target": None},  # any seat's day-1 vote
        {"action": "speak", "speech": "I am the seer."}]})
    assert json.loads(ask(b, day=1, action="vote", seat="Player2").text) == {"target": "Player5"}
    # the first decision is used up in this game: the seat-less one answers next, then nothing is left
    assert json.loads(ask(b, day=1, action="vote", seat="Player2").text) == {"target": None}
    with pytest.raises(LLMError, match=r"no scripted answer for \{'day': 1, 'action': 'vote', 'seat': 'Player2'\}"):
        ask(b, day=1, action="vote", seat="Player2")
    # the speech is answered (the first decision matched day "1" in the file to day 1 asked)
    assert json.loads(ask(b, day=3, action="speak", seat="Player7").text) == {"speech": "I am the seer."}
    # another game starts with every decision unused
    assert json.loads(ask(b, "g2", day=1, action="vote", seat="Player2").text) == {"target": "Player5"}


def test_answers_are_served_in_order_per_context_then_the_default(tmp_path):
    b = scripted(tmp_path, {"answers": ["first", {"target": "Player1"}], "default": "random"})
    assert ask(b, "a").text == "first" and ask(b, "b").text == "first"
    assert json.loads(ask(b, "a").text) == {"target": "Player1"}
    after = asyncio.run(b.complete(Request(game_id="a", schema={"enum": ["x", "y"]}, sampling=Sampling(seed=1))))
    assert after.model == "scripted:s.yaml+random" and json.loads(after.text) in ("x", "y")


def test_a_bare_list_is_the_answers_and_decisions_need_an_observation(tmp_path):
    b = scripted(tmp_path, ["one", "two"])
    assert [ask(b).text, ask(b).text] == ["one", "two"] and b.model == "scripted:s.yaml"
    d = scripted(tmp_path, {"decisions": [{"action": "vote", "target": "Player3"}], "answers": ["plain"],
                            "roles": {"Player1": "Seer"}}, "d.yaml")
    assert ask(d).text == "plain"  # no observation: decisions cannot match, answers serve
    assert d.roles == {"Player1": "Seer"}


@pytest.mark.parametrize("content, message", [
    ("default: sometimes\n", r"default: Input should be 'random', 'heuristic' or 'error'"),
    ("just a string\n",
     "a scripted file must be a mapping of answers, decisions, roles, draws, default; it holds a str"),
    ("answers: [unclosed\n", "invalid YAML at line 2"),
    ("decisions: [{action: speak, txt: hi}]\n", "decisions #1: unknown key 'txt'; keys are day, action, seat"),
    ("decisions: [{action: shout}]\n", "decisions #1.action"),
])
def test_bad_scripts_are_refused_when_read_by_the_one_schema(tmp_path, content, message):
    """The backend reads a script through the file schema the CLI checks with (toolkit.core.files): one
    parser, one error line naming the file."""
    path = tmp_path / "bad.yaml"
    path.write_text(content)
    with pytest.raises(FileError, match=message) as info:
        ScriptedBackend(path)
    assert f"{path}: " in str(info.value) and "\n" not in str(info.value)
    with pytest.raises(FileError, match="no such scripted file"):
        ScriptedBackend(tmp_path / "missing.yaml")


# ------------------------------------------------------------------ the chaos backend
PICK_SCHEMA = {"type": "object", "properties": {"target": {"enum": ["Player1", "Player2"]},
                                                "speech": {"type": "string"}}, "required": ["target", "speech"]}


def classify(text, good_keys):
    """Which fault a chaos answer is, from its text alone (independently of the backend's own bookkeeping)."""
    if text == "":
        return "empty"
    if text.startswith("Hmm"):
        return "prose"
    try:
        data = json.loads(text)
    except ValueError:
        return "truncated"
    if set(data) == {f"X_{k}" for k in good_keys}:
        return "wrong_keys"
    if set(data) == set(good_keys) and all(v == [1, 2] for v in data.values()):
        return "wrong_types"
    if data.get("target") == "Player99":
        return "illegal"
    return "good" if valid(data, PICK_SCHEMA) else "unknown"


def test_every_chaos_kind_has_its_shape_and_rate_one_is_always_bad():
    b = ChaosBackend(1.0)
    seen = {}
    for seed in range(300):
        r = Request(schema=PICK_SCHEMA, sampling=Sampling(seed=seed), replay_key="k")
        try:
            text = asyncio.run(b.complete(r)).text
            kind = classify(text, ["target", "speech"])
        except LLMError as exc:
            assert exc.kind == "injected" and "injected transport error" in str(exc)
            kind = "transport"
        seen[kind] = seen.get(kind, 0) + 1
    assert set(seen) == set(CHAOS_KINDS)  # every kind, and never a good answer or an unknown shape
    assert min(seen.values()) > 300 / len(CHAOS_KINDS) / 2  # roughly uniform over the kinds


def test_truncated_is_a_prefix_of_the_good_answer_and_rate_zero_is_the_inner_answer():
    good = RandomBackend()
    for seed in range(60):
        r = Request(schema=PICK_SCHEMA, sampling=Sampling(seed=seed), replay_key="t")
        clean = asyncio.run(ChaosBackend(0.0, inner=good).complete(r))
        assert clean.model == "chaos:0" and clean.text == asyncio.run(good.complete(r)).text
        try:
            bad = asyncio.run(ChaosBackend(1.0, inner=good).complete(r)).text
        except LLMError:
            continue
        if classify(bad, ["target", "speech"]) == "truncated":
            assert clean.text.startswith(bad) and 0 < len(bad) < len(clean.text)


@pytest.mark.slow
def test_chaos_is_reproducible_and_near_its_rate_through_the_wrapper():
    m = get_model("chaos:0.25")

    async def texts():
        out = []
        for seed in range(400):
            call = await m.generate(Request(schema=PICK_SCHEMA, sampling=Sampling(seed=seed), replay_key="r"))
            out.append(call.text if call.completion else f"error: {call.error}")
        return out

    first, second = asyncio.run(texts()), asyncio.run(texts())
    assert first == second
    bad = sum(1 for t in first if t.startswith("error") or classify(t, ["target", "speech"]) != "good")
    assert 0.17 < bad / len(first) < 0.33


def test_chaos_rate_outside_zero_to_one_is_refused():
    for rate in (-0.1, 1.5):
        with pytest.raises(ValueError, match="between 0 and 1"):
            ChaosBackend(rate)
    assert get_model("chaos").backend.rate == 0.3  # the documented default
