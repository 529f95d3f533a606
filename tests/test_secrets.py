"""Redaction of secret values (by name, by key shape, inside URLs) and URL masking."""

import json

import pytest

from toolkit.secrets import is_secret_name, mask_url, redact, redact_obj, register


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
