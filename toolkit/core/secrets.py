"""Secrets never leave the machine in a record: ``redact(text)`` masks the values of secrets found in the
parent environment (by name: ``*KEY*``, ``*TOKEN*``, ``*SECRET*``, ``*PASS*``, ``*PAT``, …), known key
shapes wherever they appear (``sk-…``, ``ghp_…``, ``github_pat_…``, ``AKIA…``, ``xox?-…``, ``hf_…``,
``AIza…``, ``glpat-…``, private-key blocks) and credentials inside URLs. ``mask_url(url)`` masks the
user:password part (and token-like query parameters) of one URL.

A secret's value is also masked in the forms a command can easily turn it into (``encoded_forms``): base64
(standard and URL-safe, at each of the three alignments it can have inside a longer encoded text, such as
``env | base64``), hex (lower and upper case), URL-encoding and reversed; ``redact`` also finds them in
base64 or hex wrapped over several lines (``base64`` wraps at 76 columns, ``xxd -p`` at 60).

``register_carried`` registers the secrets a model spec carries (a URL's password, a token in its query); the model
layer calls it on every spec it parses, so they are masked like the environment's in that process (a
``Redactor`` made earlier sees values registered later).

Used by the agent (tool outputs before they reach the model, trajectories, pull-request records), by the
record layer (tables), the response cache, sweeps (notebooks, statuses), the exports and the command line.
Values shorter than ``MIN_CHARS`` are not masked by value (masking "1" or "true" everywhere would garble every
output); key shapes are masked at any length they match.
"""

from __future__ import annotations

import base64
import functools
import html
import json
import os
import re
from typing import Any, Mapping
from urllib.parse import parse_qsl, quote, quote_plus, unquote, urlencode, urlsplit, urlunsplit

MIN_CHARS = 6
JSON_DEPTH = 4
# a name is a secret's when one of its _-separated words is, or ends with, one of these
SECRET_WORDS = ("KEY", "KEYS", "TOKEN", "TOKENS", "SECRET", "SECRETS", "PASS", "PASSWORD", "PASSWD", "PASSPHRASE",
                "PAT", "CREDENTIAL", "CREDENTIALS", "APIKEY", "PRIVATE", "COOKIE", "SIGNATURE", "AUTH")
NOT_SECRET_NAMES = {"PATH", "PWD", "OLDPWD", "SSH_AUTH_SOCK", "GPG_AGENT_INFO", "KEYTIMEOUT", "PASSWORD_STORE_DIR"}
KEY_SHAPES = re.compile(
    r"-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?(?:-----END [A-Z ]*PRIVATE KEY-----|\Z)"
    r"|\bsk-(?:proj-|ant-)?[A-Za-z0-9_\-]{16,}"
    r"|\b(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{20,}|\bgithub_pat_[A-Za-z0-9_]{20,}"
    r"|\b(?:AKIA|ASIA)[0-9A-Z]{16}\b"
    r"|\bxox[abposr]-[A-Za-z0-9\-]{10,}"
    r"|\bhf_[A-Za-z0-9]{20,}"
    r"|\bAIza[0-9A-Za-z_\-]{35}"
    r"|\bglpat-[A-Za-z0-9_\-]{20,}")
# scheme://USERINFO@ where USERINFO runs to the last @ before the path (a user name may hold an @, the user may
# be empty: redis://:pw@host); a password is what follows USERINFO's first colon.
URL_CREDENTIALS = re.compile(r"\b([a-zA-Z][a-zA-Z0-9+.\-]*://)([^/\s'\"<>]*)@")
# What every match of URL_CREDENTIALS holds: searched first, it starts at a literal (fast), where the full
# pattern tries every word boundary of a row (a prompt: ~0.1 ms a row written).
CREDENTIALS_HINT = re.compile(r"://[^/\s'\"<>]*@")


def _masked(m: re.Match) -> str:
    password = m.group(2).partition(":")[2]
    if REFERENCE.fullmatch(password):  # ``${NAME}``: a name, not the secret (kept, so the spec says where it is)
        return f"{m.group(1)}{MASK}:{password}@"
    return f"{m.group(1)}{MASK}{':' + MASK if ':' in m.group(2) else ''}@"


SECRET_QUERY = re.compile(r"(?i)(key|token|secret|pass|password|sig|signature|auth)")
MASK = "***"

_extra: set[str] = set()
_generation = [0]  # how many values were registered: a Redactor made earlier sees the later ones


@functools.lru_cache(maxsize=8192)  # every redaction asks for each variable's name: split them once
def is_secret_name(name: str) -> bool:
    upper = name.upper()
    if upper in NOT_SECRET_NAMES:
        return False
    return any(word == w or word.endswith(w) for word in re.split(r"[_\-.]+", upper) if word for w in SECRET_WORDS)


def register(value: str | None) -> None:
    """Treat one more value as a secret for the rest of the process (e.g. a key given in a spec string)."""
    if value and len(value) >= MIN_CHARS and value not in _extra:
        _extra.add(value)
        _generation[0] += 1


URL = re.compile(r"\b[a-zA-Z][a-zA-Z0-9+.\-]*://[^\s'\"<>]+")
REFERENCE = re.compile(r"\$\{[A-Za-z_][A-Za-z0-9_]*\}")


def carried(text: str) -> list[str]:
    """The secrets a text (a model spec, a parameter) carries in URLs: each password of a ``user:password@``
    (``openai:m@http://user:PASS@host/v1``), each value of a token-like query parameter (``?api_key=…``,
    ``&token=…``), URL-decoded as the server sees them and as written."""
    found = []
    for url in URL.findall(text):
        cred = URL_CREDENTIALS.match(url)
        if cred and ":" in cred.group(2):
            found.append(cred.group(2).partition(":")[2])
        try:
            query = urlsplit(url).query
        except ValueError:
            continue
        for key, value in parse_qsl(query, keep_blank_values=False):
            if SECRET_QUERY.search(key):
                found.append(value)
        found += [raw.partition("=")[2] for raw in query.split("&") if SECRET_QUERY.search(raw.partition("=")[0])]
    # a ``${NAME}`` reference is not the secret (the model layer expands it and registers the value)
    return [v for v in dict.fromkeys(x for value in found for x in (value, unquote(value)))
            if v and not REFERENCE.fullmatch(v)]


def register_carried(obj: Any) -> None:
    """``register`` every secret ``carried`` by any string inside ``obj`` (nested dicts, lists, tuples): a model
    spec when it is parsed, a sweep cell's parameters in the worker that runs it."""
    if isinstance(obj, str):
        if "://" in obj:
            for value in carried(obj):
                register(value)
    elif isinstance(obj, dict):
        for key, value in obj.items():
            register_carried(key)
            register_carried(value)
    elif isinstance(obj, (list, tuple, set)):
        for value in obj:
            register_carried(value)


def secret_values(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """``{value: label}`` for every secret in the environment (by name, by key shape, or registered)."""
    environ = os.environ if environ is None else environ
    found: dict[str, str] = {}
    for name, value in environ.items():
        if not value or len(value) < MIN_CHARS:
            continue
        if is_secret_name(name) or KEY_SHAPES.search(value):
            found.setdefault(value, name)
        url = URL_CREDENTIALS.search(value)
        password = url.group(2).partition(":")[2] if url else ""
        if password:  # a password inside a URL held by any variable
            found.setdefault(password, name)
    for value in _extra:
        found.setdefault(value, "registered")
    return found


@functools.lru_cache(maxsize=256)
def encoded_forms(value: str) -> frozenset[str]:
    """``value`` as it appears once base64-encoded (the characters that depend only on it, at each byte
    alignment; standard and URL-safe alphabets), hex-encoded, URL-encoded or reversed, JSON-escaped up to
    ``JSON_DEPTH`` times and HTML-escaped. Forms shorter than ``MIN_CHARS`` are left out."""
    raw = value.encode("utf-8")
    forms = {value[::-1], raw.hex(), raw.hex().upper(), quote(value, safe=""), quote_plus(value, safe="")}
    escaped = {value}
    for _ in range(JSON_DEPTH):  # JSON-escaped up to JSON_DEPTH times (a model's JSON answer, in a prompt's
        # message list, in a row's JSON), with and without \uXXXX for non-ASCII
        escaped |= {json.dumps(t, ensure_ascii=a)[1:-1] for t in escaped for a in (True, False)}
    forms |= escaped | {html.escape(text) for text in escaped}  # and HTML-escaped (a page)
    for pad in range(3):
        enc = base64.b64encode(b"\0" * pad + raw).decode("ascii")
        core = enc[-(-8 * pad // 6):(8 * (pad + len(raw))) // 6]  # chars fixed by the value's bits alone
        forms |= {core, core.translate(URLSAFE)}
    return frozenset(f for f in forms if len(f) >= MIN_CHARS)


URLSAFE = str.maketrans("+/", "-_")
# base64 or hex text wrapped over lines (lines of 40 or more characters of the alphabet, then the rest):
# searched joined up
WRAPPED = re.compile(r"(?m)(?:^[A-Za-z0-9+/]{40,}\r?\n)+[A-Za-z0-9+/]*={0,2}$")


def mask_url_credentials(text: str) -> str:
    """Every ``scheme://user:password@`` in ``text`` → ``scheme://***:***@``."""
    if "@" not in text or "://" not in text or CREDENTIALS_HINT.search(text) is None:
        return text
    return URL_CREDENTIALS.sub(_masked, text)


# Substrings one of KEY_SHAPES starts with: a text with none of them cannot match (a cheap test first).
KEY_SHAPE_PREFIXES = ("sk-", "ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_", "AKIA", "ASIA", "xox", "hf_",
                      "AIza", "glpat-", "PRIVATE KEY")


REMEMBERED = 1024  # texts a Redactor keeps masked (the last ones, up to this many)


class Redactor:
    """``redact`` for a stream of records: the environment's secret values are read once (the record layer
    masks every row it writes, thousands a second). ``shapes``: which key shapes to look for in every text —
    all of them (``KEY_SHAPE_PREFIXES``), or only OpenAI's ``sk-`` for the record layer's rows, whose
    untrusted text (tool outputs, trajectories, run configs) is fully redacted where it enters; each extra
    prefix is one more scan of every row. ``remember``: how many texts it keeps masked (an exporter masks the same
    text many times); 0 for texts never seen twice (a run's rows: a new line each, a prompt of kilobytes)."""

    def __init__(self, environ: Mapping[str, str] | None = None, shapes: tuple[str, ...] = KEY_SHAPE_PREFIXES,
                 remember: int = REMEMBERED):
        self.environ, self.shapes, self.remember = environ, shapes, remember
        self._read()

    def _read(self) -> None:
        self.generation = _generation[0]
        values = secret_values(self.environ)
        forms = {form: f"[redacted {values[v]}]" for v in sorted(values, key=len) for form in encoded_forms(v)}
        self.forms = sorted(forms.items(), key=lambda item: len(item[0]), reverse=True)
        self.done: dict[str, str] = {}

    def __call__(self, text: str) -> str:
        if self.generation != _generation[0]:  # a secret registered since (a spec parsed after the run began)
            self._read()
        if not self.remember:
            return self._mask(text)
        done = self.done.get(text)  # an exporter masks the same text many times (a model name, a prompt twice)
        if done is None:
            if len(self.done) >= self.remember:
                self.done.clear()
            done = self.done[text] = self._mask(text)
        return done

    def _mask(self, text: str) -> str:
        if "@" in text:  # URL credentials first: a registered password masked first hides its user from the pattern
            text = mask_url_credentials(text)
        for form, label in self.forms:
            if form in text:
                text = text.replace(form, label)
        if any(prefix in text for prefix in self.shapes):
            text = KEY_SHAPES.sub("[redacted key]", text)
        return text


def redact(text: str, environ: Mapping[str, str] | None = None) -> str:
    """``text`` with every secret value, key shape and URL credential masked."""
    if not text:
        return text
    text = URL_CREDENTIALS.sub(_masked, text)  # first: a masked password would hide its user from the pattern
    values = secret_values(environ)
    forms = {form: f"[redacted {values[v]}]" for v in sorted(values, key=len) for form in encoded_forms(v)}
    ordered = sorted(forms, key=len, reverse=True)  # the longest first: a value before a part of it
    if ordered and "\n" in text:
        def unwrap(m: re.Match) -> str:
            joined = re.sub(r"\s+", "", m.group(0))
            hit = next((f for f in ordered if f in joined), None)
            return m.group(0) if hit is None else forms[hit] + " (in encoded text)"
        text = WRAPPED.sub(unwrap, text)
    for form in ordered:
        if form in text:
            text = text.replace(form, forms[form])
    return KEY_SHAPES.sub("[redacted key]", text)


def redact_obj(obj: Any, environ: Mapping[str, str] | None = None) -> Any:
    """``redact`` applied to every string inside nested dicts, lists and tuples (keys included)."""
    if isinstance(obj, str):
        return redact(obj, environ)
    if isinstance(obj, dict):
        return {redact_obj(k, environ): redact_obj(v, environ) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return type(obj)(redact_obj(v, environ) for v in obj)
    return obj


def mask_url(url: str | None) -> str | None:
    """``url`` with user:password and token-like query values masked; anything else unchanged."""
    if not url:
        return url
    try:
        parts = urlsplit(url)
    except ValueError:
        return redact(url)
    netloc = parts.netloc
    if "@" in netloc:
        userinfo, host = netloc.rsplit("@", 1)
        netloc = f"{MASK}:{MASK}@{host}" if ":" in userinfo else f"{MASK}@{host}"
    query = parts.query
    if query:
        pairs = parse_qsl(query, keep_blank_values=True)
        if any(SECRET_QUERY.search(k) for k, _ in pairs):
            query = urlencode([(k, MASK if SECRET_QUERY.search(k) else v) for k, v in pairs], safe="*")
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))
