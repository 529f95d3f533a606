"""A model URL's password, echoed back by the endpoint, is written nowhere: ``play``, an engineer session, a papermill
sweep, the response cache, every export and ``view`` are run as the user runs them (``python -m toolkit``, real HTTP
to the loopback server, whose ``echo`` behaviour sends back the credentials it received), then every file under the
output folders is searched for the password in plain, base64 (any alignment, either alphabet), hex, URL-encoded and
JSON-escaped forms (parquet, SQLite, zip and Inspect's .eval files read as their contents)."""

import base64
import binascii
import html
import importlib.util
import json
import os
import re
import sqlite3
import subprocess
import sys
import zipfile
from pathlib import Path
from urllib.parse import quote, unquote

import pytest

import pandas as pd

from toolkit.core.secrets import carried

PASSWORD = "s3cr3t-Hünter2x"  # non-ASCII: its URL-encoded and JSON-escaped forms differ from it
TOKEN = "tok-98765-abcdef"


def texts(path: Path) -> list[str]:
    """What a reader of the file can see: its bytes as text, and the contents of parquet, SQLite and zip files."""
    data = path.read_bytes()
    out = [data.decode("utf-8", "replace"), data.decode("latin-1")]
    if path.suffix == ".parquet":
        out.append(pd.read_parquet(path).to_json(force_ascii=False, default_handler=str))
    elif data[:16] == b"SQLite format 3\x00":
        with sqlite3.connect(path) as db:
            out.append("\n".join(db.iterdump()))
    elif path.suffix == ".eval":  # a zip, compressed with zstd (which zipfile cannot read): Inspect's reader
        from inspect_ai.log import read_eval_log

        out.append(read_eval_log(str(path)).model_dump_json())
    elif zipfile.is_zipfile(path):
        with zipfile.ZipFile(path) as z:
            out += [z.read(name).decode("utf-8", "replace") for name in z.namelist()]
    return out


def decodings(text: str) -> list[str]:
    """Every base64 (both alphabets, each of 4 offsets) and hex (each of 2 offsets) run of the text, decoded, and
    the text URL-decoded, HTML-unescaped and JSON-unescaped (at any depth)."""
    unescaped = re.sub(r"\\+u([0-9a-fA-F]{4})", lambda m: chr(int(m.group(1), 16)), html.unescape(text))
    out = [unquote(text), unescaped, re.sub(r"\\+", "", unescaped)]
    for run in re.findall(r"[A-Za-z0-9+/_\-]{8,}", text):
        for start in range(4):
            chunk = run[start:]
            chunk = chunk[: len(chunk) // 4 * 4]
            for alt in (None, b"-_"):
                try:
                    out.append(base64.b64decode(chunk, altchars=alt).decode("utf-8", "replace"))
                except (binascii.Error, ValueError):
                    pass
    for run in re.findall(r"[0-9a-fA-F]{8,}", text):
        for start in range(2):
            chunk = run[start:]
            out.append(bytes.fromhex(chunk[: len(chunk) // 2 * 2]).decode("utf-8", "replace"))
    for match in re.findall(r'"(?:[^"\\]|\\.)*"', text):
        try:
            out.append(json.loads(match))
        except ValueError:
            pass
    return out


def leaks(root: Path, secret: str) -> list[str]:
    """The files under root in which the secret can be read, in any form."""
    forms = {secret, quote(secret, safe=""), json.dumps(secret)[1:-1], secret.encode().hex()}
    found = []
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        for text in texts(path):
            if any(f in text for f in forms) or any(secret in d for d in decodings(text)):
                found.append(str(path.relative_to(root)))
                break
    return found


def test_a_spec_carries_its_url_password_and_query_tokens():
    assert carried("openai:m@http://alice:PASSWORD1@host:8000/v1") == ["PASSWORD1"]
    assert set(carried(f"openai:m@http://u:{quote(PASSWORD)}@h/v1?api_key={TOKEN}&x=1")) == {quote(PASSWORD),
                                                                                             PASSWORD, TOKEN}
    assert carried("heuristic") == carried("openai:m@http://host/v1?model=x") == []


def toolkit(*args, cwd, env):
    p = subprocess.run([sys.executable, "-m", "toolkit", *args], cwd=cwd, capture_output=True, text=True,
                       env=env, timeout=600)
    return p


@pytest.mark.slow
def test_an_echoed_url_password_is_written_nowhere(tmp_path, server):
    url = server.base_url.replace("http://", f"http://alice:{quote(PASSWORD)}@")
    out = tmp_path / "out"
    env = {**os.environ, "PYTHONPATH": os.getcwd(), "TOOLKIT_CACHE_DIR": str(out / "cache")}
    for var in [k for k in env if k.startswith("OPENAI_")]:
        env.pop(var)
    ran = []

    def run(*args):
        p = toolkit(*args, cwd=tmp_path, env=env)
        ran.append((args[0], p.returncode, p.stdout[-300:], p.stderr[-600:]))
        assert PASSWORD not in p.stdout + p.stderr, args[0]
        return p

    run("play", "--model", f"openai:echo@{url}", "--seat", f"Player2=openai:echo:error@{url}", "--max-days", "1",
        "--keep-going", "--out", "out/play")  # with its transcript: the terminal gets no password either
    (tmp_path / "ws").mkdir()
    run("engineer", "--task", "say hi", "--workspace", "ws", "--model", f"openai:echo@{url}", "--env", "local",
        "--max-steps", "2", "--out", "out/play")
    (tmp_path / "sweep.yaml").write_text(
        f"name: leak\nnotebook: experiments/werewolf.ipynb\nparameters: {{n_games: 1, seed: 0}}\n"
        f"grid:\n  model: ['openai:echo@{url}']\n")
    sweep = subprocess.run([sys.executable, "-m", "toolkit", "sweep", str(tmp_path / "sweep.yaml"), "--out",
                            str(out / "sweeps")], cwd=Path.cwd(), capture_output=True, text=True, env=env,
                           timeout=900)
    assert PASSWORD not in sweep.stdout + sweep.stderr
    assert list((out / "sweeps").rglob("notebook.ipynb")), sweep.stderr[-2000:]
    [game] = {p.parent for p in (out / "play").rglob("games.parquet")}
    game_id = pd.read_parquet(game / "games.parquet")["game_id"].iloc[0]
    formats = [("kaggle", None), ("hf", "pyarrow"), ("inspect", "inspect_ai"), ("otel", "opentelemetry.sdk"),
               ("mini", "minisweagent")]
    exported = []
    for fmt, module in formats:
        if module is None or importlib.util.find_spec(module.split(".")[0]) is not None:
            p = run("export", fmt, "out/play", "--out", f"out/export-{fmt}")
            assert p.returncode == 0, (fmt, p.stderr[-1500:])
            exported.append(fmt)
    session = pd.read_parquet(next((out / "play").rglob("sessions.parquet")))["session_id"].iloc[0]
    assert run("view", "out/play", "--game", game_id, "--out", "out/view/game.html").returncode == 0
    assert run("view", "out/play", "--session", session, "--out", "out/view/session.html").returncode == 0

    assert any(r.get("model") == "echo" for r in server.requests) and "kaggle" in exported
    assert leaks(out, PASSWORD) == [] and leaks(tmp_path / "ws", PASSWORD) == [], ran
    calls = pd.concat([pd.read_parquet(p) for p in out.rglob("calls.parquet")])
    # the echoes are kept, masked
    assert calls["response_text"].fillna("").str.contains("you sent alice:[redacted", regex=False).any()
    assert calls["error"].fillna("").str.contains("you sent alice:[redacted", regex=False).any()
    assert (out / "cache" / "responses.sqlite").exists()


@pytest.mark.slow
def test_a_password_given_as_a_reference_stays_out_of_every_file(tmp_path, server):
    """``${NAME}`` in a spec: the files keep the reference (a sweep or tournament file, the schedule, the tables),
    the server gets the value, and the value is masked where the server echoes it."""
    secret = "ref-Pässword-42"
    url = server.base_url.replace("http://", "http://alice:${ECHO_PASSWORD_REF}@")
    env = {**os.environ, "PYTHONPATH": os.getcwd(), "ECHO_PASSWORD_REF": secret}
    done = toolkit("play", "--model", f"openai:echo@{url}", "--max-days", "1", "--keep-going", "--out", "out",
                   "--quiet", cwd=tmp_path, env=env)
    assert done.returncode in (0, 1), done.stderr[-2000:]  # 1: the echoes spoil most answers (a degraded game)
    sent = {base64.b64decode(h["authorization"].split()[1]).decode() for h in server.headers if "authorization" in h}
    assert sent == {f"alice:{secret}"}
    players = pd.read_parquet(next((tmp_path / "out").rglob("players.parquet")))
    assert players["spec"].str.contains("${ECHO_PASSWORD_REF}", regex=False).all()
    assert leaks(tmp_path / "out", secret) == []
    env.pop("ECHO_PASSWORD_REF")
    missing = toolkit("play", "--model", f"openai:echo@{url}", "--out", "out2", cwd=tmp_path, env=env)
    assert missing.returncode == 2 and "${ECHO_PASSWORD_REF}" in missing.stderr and "not set" in missing.stderr
    assert len(missing.stderr.strip().splitlines()) == 1 and not (tmp_path / "out2").exists()
