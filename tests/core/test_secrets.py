"""Redaction of secret values (by name, by key shape, inside URLs) and URL masking."""

import json

import pytest

from toolkit.core.secrets import is_secret_name, mask_url, redact, redact_obj, register
from hypothesis import given, settings
from hypothesis import strategies as st
from toolkit.core.secrets import (MASK, Redactor, mask_url_credentials, secret_values)


@pytest.mark.parametrize("name,secret", [
    ("OPENAI_API_KEY", True), ("GITHUB_PAT", True), ("DB_PASS", True), ("MYSQL_PASSWORD", True),
    ("HF_TOKEN", True), ("AWS_SECRET_ACCESS_KEY", True), ("SERVICE_CREDENTIALS", True),
    ("PATH", False), ("PWD", False), ("OLDPWD", False), ("SSH_AUTH_SOCK", False), ("HOME", False),
    ("LANG", False), ("KEYBOARD_LAYOUT", False), ("PATCH_LEVEL", False)])
def test_secret_names(name, secret):
    assert is_secret_name(name) is secret


def test_values_of_secret_names_and_key_shapes_are_masked_everywhere():
    env = {"GITHUB_PAT": "not-a-known-shape-123", "DB_PASS": "hunter2-long", "PATH": "/usr/bin",
           "INNOCENT": "sk-abcdefghijklmnopqrstuvwx", "SHORT_KEY": "1"}
    text = ("pat=not-a-known-shape-123 pass=hunter2-long path=/usr/bin short=1 key=sk-abcdefghijklmnopqrstuvwx "
            "aws=AKIAABCDEFGHIJKLMNOP gh=ghp_abcdefghijklmnopqrstuvwxyz0123 slack=xoxb-1234567890-abc")
    out = redact(text, env)
    assert "not-a-known-shape-123" not in out and "hunter2-long" not in out and "sk-abc" not in out
    assert "[redacted GITHUB_PAT]" in out and "[redacted DB_PASS]" in out
    assert "AKIA" not in out and "ghp_" not in out and "xoxb-" not in out
    assert "path=/usr/bin" in out and "short=1" in out  # not secrets; too short to mask by value


def test_json_escaped_values_and_nested_objects():
    env = {"API_TOKEN": 'quote"and\\backslash-123'}
    dumped = json.dumps({"obs": f"token is {env['API_TOKEN']}"})
    assert env["API_TOKEN"] not in redact(dumped, env) and 'quote\\"and' not in redact(dumped, env)
    assert redact_obj({"a": [f"x {env['API_TOKEN']}", 3, None]}, env) == {"a": ["x [redacted API_TOKEN]", 3, None]}


def test_private_key_blocks_and_url_credentials():
    key = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n-----END OPENSSH PRIVATE KEY-----"
    assert redact(f"cat id_ed25519:\n{key}\ndone", {}) == "cat id_ed25519:\n[redacted key]\ndone"
    out = redact("remote https://bob:s3cretpw@git.example.com/r.git and https://tok123456@github.com/x", {})
    assert "s3cretpw" not in out and "tok123456" not in out and "git.example.com/r.git" in out
    assert redact("x", {"BASE_URL": "http://u:longpassword@h/v1"}) == "x"
    assert "longpassword" not in redact("got longpassword", {"BASE_URL": "http://u:longpassword@h/v1"})


def test_registered_values():
    register("a-spec-given-key-987")
    assert redact("the key a-spec-given-key-987", {}) == "the key [redacted registered]"


@pytest.mark.parametrize("url,masked", [
    ("http://user:pw@localhost:8000/v1", "http://***:***@localhost:8000/v1"),
    ("https://TOKEN@github.com/a/b.git", "https://***@github.com/a/b.git"),
    ("http://h:1/v1?api_key=abc&model=m", "http://h:1/v1?api_key=***&model=m"),
    ("http://localhost:8000/v1", "http://localhost:8000/v1"),
    (None, None)])
def test_mask_url(url, masked):
    assert mask_url(url) == masked


SEEDED = settings(derandomize=True, database=None, deadline=None, max_examples=200)

# Secret values from an alphabet no mask label uses ("[redacted NAME]", "[redacted key]", "***"), so a value
# found in the output can only be one that was not masked.
VALUES = st.text("0123456789qwz-.%/\"\\", min_size=6, max_size=14).filter(lambda v: v.strip("-./%") != "")
NAMES = st.sampled_from(["API_KEY", "DB_PASS", "GITHUB_PAT", "HF_TOKEN", "CLIENT_SECRET", "HOME", "LANG", "PATH",
                         "DATABASE_URL"])
KEY_SHAPES = st.sampled_from(["sk-" + "A" * 20, "sk-proj-" + "b1" * 10, "ghp_" + "C" * 24, "github_pat_" + "d" * 22,
                              "AKIA" + "E" * 16, "xoxb-" + "1" * 12, "hf_" + "f" * 24, "AIza" + "g" * 35,
                              "glpat-" + "h" * 20,
                              "-----BEGIN RSA PRIVATE KEY-----\nMIIx\n-----END RSA PRIVATE KEY-----"])
FILLER = st.text("abc XYZ:/@._-\n{}\"'", max_size=12)


@st.composite
def env_and_text(draw):
    env = draw(st.dictionaries(NAMES, st.one_of(VALUES, st.just("short"), VALUES.map(lambda v: f"http://u:{v}@h/x")),
                               max_size=4))
    pieces = draw(st.lists(st.one_of(FILLER, st.sampled_from(sorted(env.values()) or ["none"]), KEY_SHAPES,
                                     VALUES.map(lambda v: f"https://bob:{v}@git.example.com/r"),
                                     st.sampled_from(sorted(env.values()) or ["none"]).map(
                                         lambda v: json.dumps({"v": v}))), max_size=8))
    return env, "".join(pieces)


@SEEDED
@given(case=env_and_text())
@pytest.mark.slow
def test_the_redactor_and_redact_agree_and_leave_no_secret(case):
    env, text = case
    out = Redactor(env)(text)
    assert out == redact(text, env)
    for value in secret_values(env):
        assert value not in out, value
        assert json.dumps(value)[1:-1] not in out, value  # nor as it appears inside a JSON string


@SEEDED
@given(text=FILLER, shape=KEY_SHAPES)
def test_key_shapes_are_masked_whatever_surrounds_them(text, shape):
    out = redact(f"{text} {shape} {text}", {})
    assert out == f"{redact(text, {})} [redacted key] {redact(text, {})}"


@SEEDED
@given(user=st.text("abcdefgh", min_size=1, max_size=6), pw=st.text("abcdef0123456789-_.~!$", min_size=1, max_size=12),
       host=st.sampled_from(["h", "example.org:8443", "10.0.0.1"]), path=st.sampled_from(["", "/v1", "/a/b.git"]))
@pytest.mark.slow
def test_url_masking_removes_exactly_the_credentials(user, pw, host, path):
    url = f"https://{user}:{pw}@{host}{path}"
    assert mask_url(url) == f"https://{MASK}:{MASK}@{host}{path}"
    assert redact(f"see {url} now", {}) == f"see https://{MASK}:{MASK}@{host}{path} now"
    assert mask_url(f"https://{host}{path}") == f"https://{host}{path}"


def test_a_url_with_an_email_user_name_loses_its_password():
    url = "ftp://me@mail.example.com:hunter2-pw@files.example.com/x"
    assert "hunter2-pw" not in mask_url(url)
    assert "hunter2-pw" not in redact(f"fetch {url}", {})


def test_mask_url_masks_token_like_query_values_only():
    url = "https://h/v1?model=m&API_KEY=abc&sig=zz&page=2&auth_token=t#frag"
    assert mask_url(url) == "https://h/v1?model=m&API_KEY=***&sig=***&page=2&auth_token=***#frag"
    assert mask_url("https://h/v1?model=m&page=2") == "https://h/v1?model=m&page=2"
    assert mask_url("") == "" and mask_url("not a url") == "not a url"


def test_mask_url_credentials_leaves_plain_text_and_emails_alone():
    for text in ("mail me at bob@example.com", "a://b", "no scheme user:pw@host"):
        assert mask_url_credentials(text) == text
    assert mask_url_credentials("postgres://app:pw@db/x and https://tok@h/y") == "postgres://***:***@db/x and https://***@h/y"


def test_a_password_only_url_loses_its_password():
    assert mask_url("redis://:cachepw-123@cache:6379/0") == "redis://***:***@cache:6379/0"
    assert "cachepw-123" not in redact("connect redis://:cachepw-123@cache:6379/0", {})


@pytest.mark.parametrize("name, secret", [
    ("MONKEY", True),  # a word that ends with KEY counts (the documented rule)
    ("SLACK_BOT_TOKEN", True), ("session.cookie", True), ("x-api-key", True), ("REQUEST_SIGNATURE", True),
    ("AUTH", True), ("MYPASSPHRASE", True), ("KEYTIMEOUT", False), ("PASSWORD_STORE_DIR", False),
    ("password_store_dir", False), ("KEYBOARD", False), ("TOKENIZER_PATH", False), ("SECRETARY", False),
    ("", False)])
def test_names_are_judged_by_their_words(name, secret):
    assert is_secret_name(name) is secret


def test_secret_values_come_from_names_shapes_urls_and_registration():
    env = {"MY_TOKEN": "t-0123456789", "NOTES": "sk-" + "x" * 20, "DATABASE_URL": "postgres://app:dbpass99@db/x",
           "SHORT_KEY": "abc", "HOME": "/home/me", "EMPTY_TOKEN": ""}
    register("registered-value-42")
    register("tiny")  # too short to mask by value: ignored
    found = secret_values(env)
    assert found["t-0123456789"] == "MY_TOKEN" and found["sk-" + "x" * 20] == "NOTES"
    assert found["dbpass99"] == "DATABASE_URL" and found["registered-value-42"] == "registered"
    assert not {"abc", "/home/me", "", "tiny"} & set(found)


def test_longer_secrets_are_masked_before_the_secrets_inside_them():
    env = {"OUTER_TOKEN": "abcdef-123456", "INNER_TOKEN": "abcdef"}
    assert redact("x abcdef-123456 y abcdef", env) == "x [redacted OUTER_TOKEN] y [redacted INNER_TOKEN]"
    assert Redactor(env)("x abcdef-123456 y abcdef") == "x [redacted OUTER_TOKEN] y [redacted INNER_TOKEN]"


def test_a_redactor_of_texts_never_seen_twice_keeps_none_and_masks_alike(tmp_path):
    """A run's rows are new texts each (a prompt of kilobytes): its redactors keep none of them (on the code before,
    the last 1,024 rows' lines were kept, megabytes looked up and hashed for nothing) and mask what one that
    keeps them masks."""
    from toolkit.record.rows import EventRow
    from toolkit.record.run_log import Run

    env = {"OUTER_TOKEN": "abcdef-123456"}
    text = "x abcdef-123456 y sk-" + "a" * 30
    forgetful, keeping = Redactor(env, remember=0), Redactor(env)
    assert forgetful(text) == keeping(text) == "x [redacted OUTER_TOKEN] y [redacted key]"
    assert forgetful.done == {} and len(keeping.done) == 1
    with Run(tmp_path, "x") as run:
        for i in range(3):
            run.write(EventRow(game_id="g", seq=i, text=f"speech {i}"))
        assert run._redact_hot.done == {} and run._redact_all.done == {}


def test_redact_obj_keeps_types_and_masks_keys_too():
    env = {"API_KEY": "value-123456"}
    obj = {"value-123456": ("a value-123456", 1, 2.5), "n": [None, True, {"deep": "value-123456"}]}
    out = redact_obj(obj, env)
    assert out == {"[redacted API_KEY]": ("a [redacted API_KEY]", 1, 2.5),
                   "n": [None, True, {"deep": "[redacted API_KEY]"}]}
    assert isinstance(out["[redacted API_KEY]"], tuple) and redact("", env) == ""


def test_a_redactor_made_before_a_spec_is_parsed_masks_its_password():
    """A run begins (its Redactor reads the secrets) before a model is built from a spec with a URL password."""
    from toolkit.llm.spec import parse_spec

    mask = Redactor({})
    assert "pw-late-registered-1" in mask("echo pw-late-registered-1")
    parse_spec("openai:m@http://user:pw-late-registered-1@127.0.0.1:9/v1")
    assert mask("echo pw-late-registered-1") == "echo [redacted registered]"


def test_a_registered_value_nested_in_json_and_html_is_masked():
    value = "pässwort-nested-7"
    register(value)
    nested = value
    for _ in range(3):  # an answer's JSON in a message list in a row's JSON, ASCII-escaped
        nested = json.dumps({"x": nested})
    page = '<pre>{"a": "' + json.dumps(value)[1:-1] + '"}</pre>'
    for text in (json.dumps(nested), json.dumps(nested, ensure_ascii=False), page.replace('"', "&quot;")):
        assert "sswort-nested-7" not in redact(text, {}) and "sswort-nested-7" not in Redactor({})(text), text
