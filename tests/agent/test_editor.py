"""The Editor and the Workspace it is confined to, on real files: the 100-line window and its markers,
searches (what they skip, what they count), every write's safety (anchors, backups, atomic rename, modes,
the Python check, never emptying) and the workspace's path rules."""

import os
import stat
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from toolkit.agent.tools.editor import WINDOW, Editor
from toolkit.agent.tools.base import ToolError
from toolkit.agent.environments.workspace import Workspace, scrubbed_env


@pytest.fixture
def ws(tmp_path):
    return Workspace.on_host(tmp_path / "ws")


@pytest.fixture
def ed(ws):
    return Editor(ws)


def numbered(n, prefix="line"):
    return "".join(f"{prefix}{i}\n" for i in range(1, n + 1))


def shown_numbers(view):
    """The line numbers a view shows (the ``NNNN|`` prefixes)."""
    heads = [line.split("|")[0] for line in view.splitlines() if "|" in line]
    return [int(h) for h in heads if h.strip().isdigit()]


# ------------------------------------------------------------------ the window
def test_nothing_open_and_moving_without_a_file(ed):
    assert ed.view() == "(no file open)"
    for move in (ed.scroll_down, ed.scroll_up, lambda: ed.goto_line(5), lambda: ed.search_file("x")):
        with pytest.raises(ToolError, match="no file is open; use open_file first"):
            move()


def test_open_puts_the_line_ten_below_the_top_and_counts_what_is_hidden(ws, ed):
    (ws.root / "f.txt").write_text(numbered(250))
    view = ed.open_file("f.txt", line_number=50)
    assert shown_numbers(view) == list(range(40, 140))
    assert view.splitlines()[:2] == ["[File: f.txt (250 lines total)]", "(39 more lines above)"]
    assert view.endswith("(111 more lines below)")
    assert "  40|line40" in view and " 139|line139" in view


def test_the_window_is_clamped_at_the_end_and_at_the_start(ws, ed):
    (ws.root / "f.txt").write_text(numbered(250))
    end = ed.open_file("f.txt", line_number=245)
    assert shown_numbers(end) == list(range(151, 251)) and "more lines below" not in end
    assert "(150 more lines above)" in end
    assert shown_numbers(ed.scroll_down()) == list(range(151, 251))  # past the end: still the last window
    assert shown_numbers(ed.scroll_up()) == list(range(51, 151))
    assert shown_numbers(ed.scroll_up()) == list(range(1, 101))
    assert shown_numbers(ed.scroll_up()) == list(range(1, 101))  # before the start: still the first window
    assert shown_numbers(ed.goto_line(1000)) == list(range(151, 251))


def test_a_short_file_has_no_markers_and_an_empty_file_shows_none(ws, ed):
    (ws.root / "s.txt").write_text("a\nb\nc\n")
    view = ed.open_file("s.txt", line_number=3)
    assert view == "[File: s.txt (3 lines total)]\n   1|a\n   2|b\n   3|c"
    (ws.root / "e.txt").write_text("")
    assert ed.open_file("e.txt") == "[File: e.txt (0 lines total)]\n"


@given(n=st.integers(min_value=0, max_value=400), line=st.integers(min_value=-5, max_value=450))
@settings(derandomize=True, database=None, deadline=None, max_examples=60)
@pytest.mark.slow
def test_every_window_is_contiguous_complete_and_its_markers_add_up(tmp_path_factory, n, line):
    ws = Workspace.on_host(tmp_path_factory.mktemp("win"))
    (ws.root / "f.txt").write_text(numbered(n))
    view = Editor(ws).open_file("f.txt", line_number=line)
    shown = shown_numbers(view)
    assert len(shown) == min(n, WINDOW)
    if shown:
        assert shown == list(range(shown[0], shown[0] + len(shown)))
        above = shown[0] - 1
        below = n - shown[-1]
        assert (f"({above} more lines above)" in view) == (above > 0)
        assert (f"({below} more lines below)" in view) == (below > 0)
        if n >= WINDOW:  # the asked line is on screen whenever it exists
            assert not 1 <= line <= n or line in shown


def test_a_file_removed_under_the_editor_is_one_clear_error(ws, ed):
    (ws.root / "gone.txt").write_text("x\n")
    ed.open_file("gone.txt")
    (ws.root / "gone.txt").unlink()
    with pytest.raises(ToolError, match="gone.txt: no such file"):
        ed.scroll_down()


def test_open_refuses_folders_missing_files_and_fifos(ws, ed):
    (ws.root / "dir").mkdir()
    os.mkfifo(ws.root / "pipe")
    with pytest.raises(ToolError, match="dir is a folder"):
        ed.open_file("dir")
    with pytest.raises(ToolError, match="nope.txt: no such file"):
        ed.open_file("nope.txt")
    with pytest.raises(ToolError, match="not a regular file"):
        ed.open_file("pipe")  # reading it would block the session
    with pytest.raises(ToolError, match="not a regular file"):
        ed.write_file("pipe", "x")
    assert ed.current is None


# ------------------------------------------------------------------ searching
def test_search_file_lists_numbered_hits_and_caps_the_listing_not_the_count(ws, ed):
    (ws.root / "m.txt").write_text("".join("hit\n" if i % 2 else "miss\n" for i in range(1, 161)))
    out = ed.search_file("hit", path="m.txt")
    lines = out.splitlines()
    assert lines[0] == "80 matches for 'hit' in m.txt"
    assert lines[1:] == [f"{i}: hit" for i in range(1, 100, 2)]  # the first 50 of 80
    assert ed.search_file("absent", path="m.txt") == "0 matches for 'absent' in m.txt"
    ed.open_file("m.txt")
    assert ed.search_file("miss").startswith("80 matches for 'miss' in m.txt")  # the open file by default


def test_search_dir_says_which_files_a_lease_kept_it_from_reading(ws, ed):
    """A file under another process's write lease answers "busy" at once (fileop opens with O_NONBLOCK); the
    search says it was not searched and why (before: "0 files contain 'bee'", nothing more). The lease is a real
    one, taken by this test's process (its break notice, SIGIO, ignored meanwhile)."""
    import fcntl
    import signal

    (ws.root / "a.txt").write_text("bee\n")
    (ws.root / "b.txt").write_text("bee bee\n")
    before = signal.signal(signal.SIGIO, signal.SIG_IGN)
    fd = os.open(ws.root / "b.txt", os.O_RDONLY)
    try:
        fcntl.fcntl(fd, fcntl.F_SETLEASE, fcntl.F_WRLCK)
        out = ed.search_dir("bee")
    finally:
        fcntl.fcntl(fd, fcntl.F_SETLEASE, fcntl.F_UNLCK)
        os.close(fd)
        signal.signal(signal.SIGIO, before)
    assert out == ("1 files contain 'bee'\na.txt: 1\n"
                   "(1 files not searched, busy (another process holds a lease on it): b.txt)")
    assert ed.search_dir("bee") == "2 files contain 'bee'\na.txt: 1\nb.txt: 2"  # the lease let go


def test_search_dir_counts_occurrences_and_skips_git_agent_binaries_and_links_out(ws, ed, tmp_path):
    (ws.root / "src").mkdir()
    (ws.root / "src" / "a.py").write_text("needle needle\nneedle\n")
    (ws.root / "b.txt").write_text("one needle\n")
    (ws.root / "bin.dat").write_bytes(b"\xff\xfe needle \x00\x80")
    for hidden in (".git", ".agent"):
        (ws.root / hidden).mkdir()
        (ws.root / hidden / "x.txt").write_text("needle")
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "o.txt").write_text("needle")
    (tmp_path / "secret.txt").write_text("needle")
    (ws.root / "linkdir").symlink_to(tmp_path / "outside")
    (ws.root / "linkfile").symlink_to(tmp_path / "secret.txt")
    assert ed.search_dir("needle") == "2 files contain 'needle'\nb.txt: 1\nsrc/a.py: 3"
    assert ed.search_dir("needle", dir="src") == "1 files contain 'needle'\nsrc/a.py: 3"
    assert ed.search_dir("nothing-like-this") == "0 files contain 'nothing-like-this'"
    with pytest.raises(ToolError, match="outside the workspace"):
        ed.search_dir("needle", dir="linkdir")


def test_find_file_by_part_or_glob_sorted_and_the_link_shown_as_itself(ws, ed, tmp_path):
    for rel in ("z_test.py", "a/test_one.py", "a/b/test_two.txt", "notes.md", ".git/test_x.py"):
        (ws.root / rel).parent.mkdir(parents=True, exist_ok=True)
        (ws.root / rel).write_text("x")
    (tmp_path / "far").mkdir()
    (tmp_path / "far" / "test_far.py").write_text("x")
    (ws.root / "far").symlink_to(tmp_path / "far")
    assert ed.find_file("test") == "3 files match 'test'\na/b/test_two.txt\na/test_one.py\nz_test.py"
    assert ed.find_file("*.py") == "2 files match '*.py'\na/test_one.py\nz_test.py"
    assert ed.find_file("test_?ne.py", dir="a") == "1 files match 'test_?ne.py'\na/test_one.py"
    assert ed.find_file("far") == "1 files match 'far'\nfar"  # the link, not its contents


def test_find_file_lists_at_most_a_hundred(ws, ed):
    for i in range(130):
        (ws.root / f"f{i:03}.txt").write_text("")
    lines = ed.find_file("*.txt").splitlines()
    assert lines[0] == "130 files match '*.txt'" and len(lines) == 101 and lines[-1] == "f099.txt"


# ------------------------------------------------------------------ writing
def test_create_refuses_an_existing_file_and_makes_folders(ws, ed):
    view = ed.create_file("deep/er/new.txt", "hello\n")
    assert (ws.root / "deep/er/new.txt").read_text() == "hello\n" and view.endswith("   1|hello")
    assert ed.current == "deep/er/new.txt"
    with pytest.raises(ToolError, match="exists; use write_file"):
        ed.create_file("deep/er/new.txt", "other")
    assert (ws.root / "deep/er/new.txt").read_text() == "hello\n"
    ed.create_file("empty.txt")
    assert (ws.root / "empty.txt").read_text() == ""
    assert not (ws.root / ".agent" / "backups").exists() or not any((ws.root / ".agent" / "backups").iterdir())


def test_a_new_python_file_that_does_not_compile_is_not_created(ws, ed):
    with pytest.raises(ToolError, match=r"invalid Python \(line 1: .*\); the file is unchanged"):
        ed.create_file("bad.py", "def (:\n")
    assert not (ws.root / "bad.py").exists()
    Editor(ws, check_python=False).create_file("bad.py", "def (:\n")  # the check can be turned off
    assert (ws.root / "bad.py").read_text() == "def (:\n"


def test_write_file_backs_up_keeps_the_mode_and_leaves_no_temporary_files(ws, ed):
    script = ws.root / "sub" / "run.sh"
    script.parent.mkdir()
    script.write_text("echo old\n")
    script.chmod(0o750)
    ed.write_file("sub/run.sh", "echo new\n")
    assert script.read_text() == "echo new\n" and stat.S_IMODE(script.stat().st_mode) == 0o750
    backups = list((ws.root / ".agent" / "backups").iterdir())
    assert len(backups) == 1 and backups[0].name.startswith("sub__run.sh.") and backups[0].read_text() == "echo old\n"
    assert backups[0].name.rsplit(".", 1)[1].isdigit()
    ed.write_file("sub/run.sh", "echo newer\n")
    assert len(list((ws.root / ".agent" / "backups").iterdir())) == 2
    assert not [p for p in ws.root.rglob("*.tmp")]


def test_write_file_refuses_blank_over_text_but_not_over_nothing(ws, ed):
    (ws.root / "t.txt").write_text("keep me\n")
    with pytest.raises(ToolError, match="refusing to empty t.txt"):
        ed.write_file("t.txt", "  \n\n\t")
    assert (ws.root / "t.txt").read_text() == "keep me\n"
    (ws.root / "blank.txt").write_text("\n")
    ed.write_file("blank.txt", "")
    assert (ws.root / "blank.txt").read_text() == ""
    (ws.root / "folder").mkdir()
    with pytest.raises(ToolError, match="folder is not a regular file"):
        ed.write_file("folder", "x")


def test_writing_through_an_inner_link_changes_the_target_and_keeps_the_link(ws, ed):
    (ws.root / "real.txt").write_text("old\n")
    (ws.root / "alias.txt").symlink_to("real.txt")
    ed.write_file("alias.txt", "new\n")
    assert (ws.root / "alias.txt").is_symlink() and (ws.root / "real.txt").read_text() == "new\n"


def test_edit_ranges_are_checked_and_anchors_ignore_surrounding_spaces(ws, ed):
    (ws.root / "a.txt").write_text("one\n  two  \nthree\n")
    for first, last in ((0, 1), (2, 1), (1, 4), (4, 4)):
        with pytest.raises(ToolError, match=rf"lines {first}-{last} are not in a.txt \(it has 3 lines\)"):
            ed.edit_file_by_replace("a.txt", first, "one", last, "three", "x")
    with pytest.raises(ToolError, match="line 3 of a.txt is 'three', not 'two'"):
        ed.edit_file_by_replace("a.txt", 2, "two", 3, "two", "x")
    view = ed.edit_file_by_replace("a.txt", 2, "two", 2, "\ttwo ", "TWO")
    assert (ws.root / "a.txt").read_text() == "one\nTWO\nthree\n" and "   2|TWO" in view


def test_edits_delete_lines_and_keep_a_missing_final_newline_missing(ws, ed):
    (ws.root / "n.txt").write_text("a\nb\nc\nd")
    ed.edit_file_by_replace("n.txt", 2, "b", 3, "c", "")
    assert (ws.root / "n.txt").read_text() == "a\nd"
    ed.edit_file_by_replace("n.txt", 2, "d", 2, "d", "D1\nD2\n")
    assert (ws.root / "n.txt").read_text() == "a\nD1\nD2"


@given(lines=st.lists(st.text(alphabet="abc xyz=()", min_size=1, max_size=8).filter(str.strip), min_size=1,
                      max_size=30),
       span=st.tuples(st.integers(0, 29), st.integers(0, 29)),
       new=st.lists(st.text(alphabet="pqr 01", max_size=6), max_size=5))
@settings(derandomize=True, database=None, deadline=None, max_examples=80)
@pytest.mark.slow
def test_an_edit_is_a_splice_of_the_line_list(tmp_path_factory, lines, span, new):
    """Whatever the lines and the range, the file afterwards is exactly the list splice (or unchanged and
    refused when the splice would leave nothing)."""
    ws = Workspace.on_host(tmp_path_factory.mktemp("edit"))
    first, last = sorted(min(i, len(lines) - 1) + 1 for i in span)
    original = "\n".join(lines) + "\n"
    (ws.root / "f.txt").write_text(original)
    new_text = "\n".join(new)
    expected = lines[:first - 1] + (new_text.splitlines() if new_text else []) + lines[last:]
    ed = Editor(ws)
    if not "".join(expected).strip():
        with pytest.raises(ToolError, match="refusing to empty"):
            ed.edit_file_by_replace("f.txt", first, lines[first - 1], last, lines[last - 1], new_text)
        assert (ws.root / "f.txt").read_text() == original
    else:
        ed.edit_file_by_replace("f.txt", first, lines[first - 1], last, lines[last - 1], new_text)
        assert (ws.root / "f.txt").read_text() == "\n".join(expected) + "\n"


@pytest.mark.parametrize("original,edited", [
    (b"one\r\ntwo\r\nthree\r\n", b"one\r\nTWO\r\nthree\r\n"),
    (b"one\ntwo\nthree\x0cpage\n", b"one\nTWO\nthree\x0cpage\n"),
])
def test_an_edit_leaves_the_lines_it_does_not_touch_byte_for_byte(ws, ed, original, edited):
    (ws.root / "f.txt").write_bytes(original)
    ed.edit_file_by_replace("f.txt", 2, "two", 2, "two", "TWO")
    assert (ws.root / "f.txt").read_bytes() == edited


def test_insert_before_a_line_at_the_end_and_into_an_empty_file(ws, ed):
    (ws.root / "i.txt").write_text("a\nb")
    ed.insert_content_at_line("i.txt", 1, "first")
    ed.insert_content_at_line("i.txt", 4, "last\nlast2")
    assert (ws.root / "i.txt").read_text() == "first\na\nb\nlast\nlast2\n"
    for bad in (0, 7):
        with pytest.raises(ToolError, match=rf"line {bad} is not in i.txt \(it has 5 lines\)"):
            ed.insert_content_at_line("i.txt", bad, "x")
    (ws.root / "e.txt").write_text("")
    ed.insert_content_at_line("e.txt", 1, "only")
    assert (ws.root / "e.txt").read_text() == "only\n"
    (ws.root / "m.py").write_text("def f():\n    return 1\n")
    with pytest.raises(ToolError, match="invalid Python"):
        ed.insert_content_at_line("m.py", 2, "  oops = (")
    assert (ws.root / "m.py").read_text() == "def f():\n    return 1\n"
    with pytest.raises(ToolError, match="no such file"):
        ed.insert_content_at_line("absent.txt", 1, "x")


def test_append_adds_the_missing_newlines_and_shows_the_end(ws, ed):
    (ws.root / "log.txt").write_text(numbered(150).rstrip("\n"))
    view = ed.append_file("log.txt", "tail")
    assert (ws.root / "log.txt").read_text() == numbered(150) + "tail\n"
    assert shown_numbers(view) == list(range(52, 152))
    ed.append_file("new/dir/x.txt", "first\n")
    assert (ws.root / "new/dir/x.txt").read_text() == "first\n"
    assert ed.current == "new/dir/x.txt"


def test_a_planted_agent_link_cannot_redirect_backups_out(ws, ed, tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (ws.root / ".agent").symlink_to(elsewhere)
    (ws.root / "a.txt").write_text("v1\n")
    ed.write_file("a.txt", "v2\n")
    assert list(elsewhere.iterdir()) == []
    assert not (ws.root / ".agent").is_symlink() and len(list((ws.root / ".agent" / "backups").iterdir())) == 1


# ------------------------------------------------------------------ the workspace
def test_workspace_paths(ws, tmp_path):
    assert ws.path("a/../b.txt") == "b.txt"  # lexical here; links are resolved inside the environment
    assert ws.path(".") == "."
    for bad, message in (("", "a path is required"), ("  ", "a path is required"),
                         (str(tmp_path), "absolute paths are refused"), ("..", "outside the workspace")):
        with pytest.raises(ToolError, match=message):
            ws.path(bad)
    (ws.root / "out").symlink_to(tmp_path)
    assert ws.kind("out") == "outside" and ws.kind("a.txt") == "missing"


def test_write_private_replaces_a_planted_link_instead_of_following_it(ws, tmp_path):
    victim = tmp_path / "victim.txt"
    victim.write_text("untouched")
    (ws.private("trajectories") / "t.json").symlink_to(victim)
    written = ws.write_private("trajectories/t.json", "{}")
    assert victim.read_text() == "untouched" and not written.is_symlink() and written.read_text() == "{}"
    (ws.root / ".agent" / "notes").write_text("a file where a folder should be")
    assert ws.write_private("notes/n.txt", "ok").read_text() == "ok"


def test_scrubbed_env_is_an_allow_list(monkeypatch):
    monkeypatch.setenv("MY_SERVICE_TOKEN", "tok-123456789")
    monkeypatch.setenv("FORCE_COLOR", "1")
    env = scrubbed_env()
    assert set(env) <= {"PATH", "TERM", "NO_COLOR", "GIT_TERMINAL_PROMPT", "HOME", "LANG", "LC_ALL", "LC_CTYPE", "TZ"}
    assert env["PATH"].split(os.pathsep)[0] == os.path.dirname(sys.executable)
    assert env["TERM"] == "dumb" and env["NO_COLOR"] == "1" and env["GIT_TERMINAL_PROMPT"] == "0"
    assert len(env["PATH"].split(os.pathsep)) == len(set(env["PATH"].split(os.pathsep)))
