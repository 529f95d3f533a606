"""Answer schemas as compact-JSON grammars for llama-server (``toolkit/llm/compact_grammar.py``). The grammar
text is checked here; tests/test_local_model.py checks that the real server takes it and that a whole game's
answers come back compact and valid."""

import json

import pytest

from toolkit.llm.compact_grammar import compact_grammar
from toolkit.llm.llama_server import LocalBackend
from toolkit.llm.request import Request
from toolkit.werewolf.seat.decisions import output_model


def test_a_vote_is_one_line_thought_first_with_the_legal_targets_only():
    grammar = compact_grammar(output_model("vote", ("Player1", "Player2"), False).model_json_schema())
    root = grammar.splitlines()[0]
    assert root == ('root ::= "{" "\\"thought\\"" ": " "\\"" char{0,300} "\\"" ", " "\\"target\\"" ": " '
                    '("\\"Player1\\"" | "\\"Player2\\"") "}"')
    assert grammar.splitlines()[1].startswith("char ::= ")
    passing = compact_grammar(output_model("protect", ("Player1",), True).model_json_schema())
    assert '"null"' in passing and "Player1" in passing


def test_a_reflection_names_every_other_seat_once_with_a_probability():
    schema = output_model("reflect", ("Player2", "Player3"), False, ("Werewolf", "Villager")).model_json_schema()
    root = compact_grammar(schema).splitlines()[0]
    assert root.index('"\\"Player2\\""') < root.index('"\\"Player3\\""') and root.count("Werewolf") == 2
    assert root.count('("0" ("." [0-9]{1,4})? | "1" (".0")?)') == 2 and "char{0,800}" in root


def test_a_speech_keeps_its_length_caps():
    grammar = compact_grammar(output_model("speak", (), False).model_json_schema())
    assert "char{0,300}" in grammar and "char{0,600}" in grammar and '"\\"speech\\""' in grammar


@pytest.mark.parametrize("schema, expected", [
    ({"const": 'a "quoted" \\ value'}, '"\\"a \\\\\\"quoted\\\\\\" \\\\\\\\ value\\""'),
    ({"enum": [1, None, True]}, '("1" | "null" | "true")'),
    ({"type": "number", "minimum": 0, "maximum": 1}, '("0" ("." [0-9]{1,4})? | "1" (".0")?)'),
    ({"enum": ["a\nb", "é"]}, r'("\"a\\nb\"" | "\"é\"")'),
    ({"type": "string", "minLength": 2, "maxLength": 10**6}, r'"\"" char{2,} "\""'),
    ({"type": ["string", "null"]}, '("\\"" char* "\\"" | "null")'),
    ({"type": "array", "items": {"type": "integer"}, "minItems": 1, "maxItems": 3},
     '"[" ("-"? ([0-9] | [1-9] [0-9]{0,15})) (", " ("-"? ([0-9] | [1-9] [0-9]{0,15}))){0,2} "]"'),
    ({"type": "array", "items": {"type": "boolean"}}, '"[" (("true" | "false") (", " ("true" | "false"))*)? "]"'),
    ({"type": "array", "prefixItems": [{"const": "a"}, {"const": "b"}], "minItems": 2, "maxItems": 2},
     '"[" "\\"a\\"" ", " "\\"b\\"" "]"'),
])
def test_values_are_written_as_json_literals(schema, expected):
    assert compact_grammar(schema).splitlines()[0] == f"root ::= {expected}"


@pytest.mark.parametrize("schema", [
    {"type": "object", "properties": {"x": {"$ref": "#/$defs/X"}}},
    {"type": "object"}, {"type": "string", "pattern": "^a$"}, {"allOf": [{"type": "string"}]}, {}, {"enum": []},
    {"type": "array", "prefixItems": [{"const": 1}], "maxItems": 3}, {"type": "array"}, {"type": "thing"}, "text",
    {"type": "string", "minLength": 5, "maxLength": 3}, {"type": "array", "items": {"type": "null"}, "minItems": 2,
                                                         "maxItems": 1},
])
def test_what_it_cannot_say_goes_to_the_server_as_a_schema(schema):
    assert compact_grammar(schema) is None


def test_the_local_backend_sends_a_grammar_where_it_can_and_the_schema_where_it_cannot():
    backend = LocalBackend("gemma-3-270m", "http://127.0.0.1:9/v1")
    vote = output_model("vote", ("Player1", "Player2"), False).model_json_schema()
    body = backend._body(Request(messages=[{"role": "user", "content": "vote"}], schema=vote))
    assert "response_format" not in body and body["grammar"].startswith("root ::= ")
    odd = {"type": "object", "properties": {"x": {"$ref": "#/$defs/X"}}, "$defs": {"X": {"type": "string"}}}
    body = backend._body(Request(messages=[{"role": "user", "content": "x"}], schema=odd))
    assert "grammar" not in body and body["response_format"]["json_schema"]["schema"] == odd
    off = LocalBackend("gemma-3-270m", "http://127.0.0.1:9/v1", compact_json=False)
    assert "grammar" not in off._body(Request(messages=[{"role": "user", "content": "vote"}], schema=vote))
    plain = backend._body(Request(messages=[{"role": "user", "content": "hi"}]))
    assert "grammar" not in plain and "response_format" not in plain
    assert json.dumps(body)  # the body stays plain JSON


@pytest.mark.parametrize("name, value", [("TOOLKIT_LOCAL_COMPACT_JSON", "maybe"), ("TOOLKIT_LOCAL_SAMPLERS", " ; "),
                                         ("TOOLKIT_LOCAL_CACHE_PROMPT", "sometimes")])
def test_a_bad_local_setting_is_refused_before_a_server_starts(monkeypatch, name, value):
    from toolkit.llm import llama_server
    from toolkit.llm import get_model

    def no_server():
        raise AssertionError("a server was started")
    monkeypatch.setattr(llama_server, "shared_url", no_server)
    monkeypatch.delenv("TOOLKIT_LOCAL_URL", raising=False)
    monkeypatch.setenv(name, value)
    with pytest.raises(ValueError, match=name):
        get_model("local")
