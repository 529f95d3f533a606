"""What reaches the user's terminal is text: a hostile model's escape sequences (clear screen, a fake prompt, an OSC 52
clipboard write, a window title, a bidi override) reach the terminal shown escaped, through ``python -m toolkit
engineer`` and ``play`` run as the user runs them, against the loopback test server (real HTTP)."""

import json
import os
import subprocess
import sys

import pytest

from toolkit.core.printable import printable

CLEAR = "\x1b[2J\x1b[H"
OSC52 = "\x1b]52;c;ZWNobyBwd25lZA==\x07"  # writes "echo pwned" to the clipboard
TITLE = "\x1b]0;owned\x1b\\"
FAKE_PROMPT = "\r\x1b[32mroot@host:~# \x1b[0m"
BIDI = "\u202egnp.exe"
C1 = "\x9b2J\x90dcs\x9c"  # C1 CSI and DCS/ST: some terminals act on the 8-bit forms
HOSTILE = CLEAR + OSC52 + TITLE + FAKE_PROMPT + BIDI + C1 + "\u2028done\x7f\x08"
RAW = ["\x1b", "\x07", "\x9b", "\x90", "\x9c", "\u202e", "\u2028", "\x7f", "\x08", "\r"]


def hostile_free(text: str) -> bool:
    return not any(ch in text for ch in RAW)


def test_printable_escapes_every_control_and_keeps_text():
    assert printable("Ünïcödé 文字 🐺 a\u00a0b") == "Ünïcödé 文字 🐺 a\u00a0b"
    out = printable(HOSTILE)
    assert hostile_free(out) and "\\x1b[2J" in out and "\\u202e" in out and "\\x9b" in out
    assert printable("one\ntwo\tthree\r\n", keep_lines=True) == "one\ntwo\tthree\n"
    assert printable("a\rb", keep_lines=True) == "a\\rb"  # a lone carriage return would overwrite the line
    assert printable("one\ntwo") == "one\\ntwo"
    assert printable("\u200b\u2066\ufeff") == "\\u200b\\u2066\\ufeff"  # zero-width, isolate, BOM


def step(*commands):
    return json.dumps({"thought": "", "commands": list(commands)})


def cli(*args, cwd, stdin="", timeout=120):
    env = {**os.environ, "PYTHONPATH": os.getcwd(), "NO_COLOR": "1"}
    return subprocess.run([sys.executable, "-m", "toolkit", *args], cwd=cwd, input=stdin, capture_output=True,
                          text=True, timeout=timeout, env=env)


@pytest.mark.slow
def test_an_engineer_session_shows_hostile_model_text_escaped(tmp_path, server):
    (tmp_path / "ws").mkdir()
    server.say(step({"command_name": "Human.ask_human", "args": {"question": "ready?" + HOSTILE}},
                    {"command_name": "Human.reply_to_human", "args": {"content": "line one\nline two" + HOSTILE}},
                    {"command_name": "Nope" + HOSTILE, "args": {}}),
               step({"command_name": "end", "args": {}}))
    p = cli("engineer", "--task", "say hi", "--workspace", "ws", "--model", f"openai:say@{server.base_url}",
            "--env", "local", "--out", "res", "--max-steps", "3", cwd=tmp_path, stdin="yes\n")
    assert p.returncode == 0, p.stderr[-2000:]
    out = p.stdout + p.stderr
    assert "[agent asks] ready?" in p.stderr and "[agent says] line one\nline two" in p.stderr  # content lines kept
    assert "[FAILED] Nope\\x1b[2J" in p.stdout  # the model's tool name, escaped
    assert hostile_free(out), [ch for ch in RAW if ch in out]


@pytest.mark.slow
def test_a_game_transcript_shows_hostile_speech_escaped(tmp_path, server):
    # every seat speaks the hostile text (structured answers come back as the queued JSON)
    server.say(*[json.dumps({"speech": HOSTILE, "target": "Player1", "thought": HOSTILE})] * 400)
    p = cli("play", "--model", f"openai:say@{server.base_url}", "--max-days", "1", "--keep-going", "--out", "res",
            cwd=tmp_path)
    assert "winner:" in p.stdout, p.stderr[-2000:]
    assert hostile_free(p.stdout + p.stderr)


# the sandbox-side scripts: what they print goes down a pipe the host reads as data, never to a terminal
SANDBOX_SCRIPTS = {"holder.py", "collect.py", "fileop.py", "static_server.py", "subreaper.py"}


def test_the_command_line_and_the_agent_print_only_through_show():
    """Every line the command line and the agent's side (its human channel, the environment's warnings)
    print goes through ``show`` (or the transcript's ``ansi``, which cleans its texts): no other ``print``
    or ``sys.stdout``/``sys.stderr`` ``write`` in toolkit/cli or toolkit/agent."""
    import ast
    from pathlib import Path

    found, read = [], 0
    for path in sorted([*Path("toolkit/cli").glob("*.py"), *Path("toolkit/agent").rglob("*.py")]):
        if path.name in SANDBOX_SCRIPTS:
            continue
        read += 1
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call):
                f = node.func
                printing = isinstance(f, ast.Name) and f.id == "print"
                writing = (isinstance(f, ast.Attribute) and f.attr == "write" and isinstance(f.value, ast.Attribute)
                           and f.value.attr in ("stdout", "stderr"))
                if (printing or writing) and path != Path("toolkit/cli/common.py"):  # the Transcript: ansi()
                    found.append(f"{path}:{node.lineno}")
    assert read > 30 and found == [], found


def test_the_agents_human_channel_and_warnings_show_hostile_text_escaped(monkeypatch, capsys):
    """The human channel of a session on a terminal (stdin replaced by a text buffer: the one part of a
    terminal a test cannot drive) and an environment warning quoting a program's output."""
    import asyncio
    import io

    from toolkit.agent.environments import environment
    from toolkit.agent.tools.human import StdinChannel

    monkeypatch.setattr("sys.stdin", io.StringIO("yes\n"))
    channel = StdinChannel()
    assert asyncio.run(channel.ask("ready?" + HOSTILE)) == "yes"
    asyncio.run(channel.tell("line one\nline two" + HOSTILE))
    environment.warn_once("warning: " + HOSTILE)
    err = capsys.readouterr().err
    assert "[agent asks] ready?\\x1b[2J" in err and "[agent says] line one\nline two" in err
    assert "warning: \\x1b[2J" in err and hostile_free(err), [ch for ch in RAW if ch in err]


def test_log_records_reach_the_terminal_printable():
    """A log record quoting a model's text (a failed tool's name and traceback) is printed by the command line's
    last-resort handler, made printable (Python's own prints it raw)."""
    import io
    import logging

    from toolkit.cli.common import log_to_terminal

    replaced = log_to_terminal()
    stream = io.StringIO()
    logging.lastResort.setStream(stream)
    logger = logging.getLogger("toolkit.test.terminal")
    logger.propagate = False  # no handler on its way (pytest's own sits on the root): the last resort prints it
    try:
        logger.warning("tool %s failed", "Nope" + HOSTILE)
    finally:
        logging.lastResort = replaced
    assert stream.getvalue().startswith("tool Nope\\x1b[2J") and hostile_free(stream.getvalue())
