"""A pull request's commit, made by the host from a session's kept archive (``result.push``): what the user's own
``git add -A`` would take (their ignore files too), on the session's start commit, to a branch that is not the
remote's default one nor anyone else's. Real git, real archives (``collect.py tar``), a bare remote."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.agent.test_apply import git, kept_session
from toolkit.agent.environments import result
from toolkit.agent.environments.hostgit import ResultError

pytestmark = pytest.mark.slow  # a dozen gits each: seconds on a loaded machine


def repo(tmp_path: Path, files: dict[str, str], commit: bool = True) -> tuple[Path, Path]:
    """A user's repository ``ws`` holding ``files`` (committed with ``commit``) and a bare remote."""
    remote = tmp_path / "remote.git"
    git("init", "-q", "--bare", "-b", "main", str(remote), cwd=tmp_path)
    folder = tmp_path / "ws"
    folder.mkdir()
    git("init", "-q", "-b", "main", cwd=folder)
    for name, text in files.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text)
    if commit:
        git("add", "-A", cwd=folder)
        git("commit", "-q", "-m", "start", cwd=folder)
    return folder, remote


def pushed_files(remote: Path, branch: str) -> list[str]:
    return git("ls-tree", "-r", "--name-only", branch, cwd=remote).split()


def test_a_pull_request_never_pushes_what_the_users_repository_ignores(tmp_path, monkeypatch):
    """``.env`` listed in the repository's ``.git/info/exclude``, ``secret.key`` in the user's global excludes
    file (``$XDG_CONFIG_HOME/git/ignore``) and ``notes.txt`` in a ``core.excludesFile`` of the global config: none
    reaches the remote, as the user's ``git add -A`` would not take them; the session's new file does. On
    7f68d02 all three were pushed (session 19's diff read, S2)."""
    config = tmp_path / "config"
    (config / "git").mkdir(parents=True)
    (config / "git" / "ignore").write_text("*.key\n")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(config))
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(tmp_path / "gitconfig"))
    folder, remote = repo(tmp_path, {"a.txt": "a\n", ".gitignore": "build/\n"})
    (folder / ".git" / "info" / "exclude").write_text(".env\n")
    (folder / ".env").write_text("API_KEY=sk-not-for-the-remote\n")
    (folder / "secret.key").write_text("key\n")
    kept_session(folder, lambda copy: (copy / "new.txt").write_text("new\n"))
    result.push(folder, "s1", "feature", str(remote), "t")
    assert pushed_files(remote, "feature") == [".gitignore", "a.txt", "new.txt"]

    (tmp_path / "gitconfig").write_text(f"[core]\n\texcludesFile = {tmp_path / 'mine'}\n")
    (tmp_path / "mine").write_text("notes.txt\n")
    (folder / "notes.txt").write_text("private\n")
    for made in ("results", "copy"):
        assert not (tmp_path / made).exists()
    import shutil
    shutil.rmtree(folder / ".agent")
    kept_session(folder, lambda copy: (copy / "new2.txt").write_text("new\n"))
    result.push(folder, "s1", "feature2", str(remote), "t")
    assert pushed_files(remote, "feature2") == [".gitignore", "a.txt", "new2.txt", "secret.key"]


def test_a_pull_request_made_after_the_user_committed_shows_only_the_sessions_change(tmp_path):
    """The user commits ``b.txt`` while the session runs: the pull request's commit sits on the session's start
    commit and its diff names only the session's change; its record's diff is what was pushed. On 7f68d02 the
    commit sat on the user's HEAD of now with the start's files: it deleted ``b.txt`` (session 19's diff read,
    M5)."""
    folder, remote = repo(tmp_path, {"a.txt": "a\n"})
    start = git("rev-parse", "HEAD", cwd=folder)
    kept_session(folder, lambda copy: (copy / "a.txt").write_text("changed\n"))
    (folder / "b.txt").write_text("the user's\n")
    git("add", "b.txt", cwd=folder)
    git("commit", "-q", "-m", "the user's", cwd=folder)
    pushed = result.push(folder, "s1", "feature", str(remote), "t", start=start)
    assert git("diff", "--name-status", "feature^", "feature", cwd=remote) == "M\ta.txt"
    assert git("rev-parse", "feature^", cwd=remote) == start == pushed.base
    assert pushed.diff == git("diff-tree", "-p", "--no-commit-id", "feature", cwd=remote) + "\n"
    assert "+changed" in pushed.diff and "b.txt" not in pushed.diff


def test_a_pull_requests_branch_is_never_the_remotes_default_nor_anothers(tmp_path):
    """The branch name is the agent's: the remote's default branch (also on an empty remote) and a branch the
    remote has that this session did not push are refused in one line with nothing pushed; the session's own
    branch is pushed again over its own commit. On 7f68d02 ``main`` was pushed (a fast-forward of the remote's
    default branch) and an existing branch was overwritten."""
    folder, remote = repo(tmp_path, {"a.txt": "a\n"})
    kept_session(folder, lambda copy: (copy / "a.txt").write_text("changed\n"))
    with pytest.raises(ResultError, match=r"^the pull request's branch 'main' is the default branch of .*; nothing "
                                          r"pushed \(name a new branch\)$"):
        result.push(folder, "s1", "main", str(remote), "t")  # an empty remote: its HEAD names main
    git("push", "-q", str(remote), "main", "main:theirs", cwd=folder)
    before = git("for-each-ref", cwd=remote)
    with pytest.raises(ResultError, match="'main' is the default branch"):
        result.push(folder, "s1", "main", str(remote), "t")
    with pytest.raises(ResultError, match="'theirs' is already on .* and is not this session's; nothing pushed"):
        result.push(folder, "s1", "theirs", str(remote), "t")
    with pytest.raises(ResultError, match="is not a name git takes for a branch"):
        result.push(folder, "s1", "a..b", str(remote), "t")
    assert git("for-each-ref", cwd=remote) == before
    first = result.push(folder, "s1", "feature", str(remote), "one")
    with pytest.raises(ResultError, match="'feature' is already on"):
        result.push(folder, "s1", "feature", str(remote), "two")  # not this session's (no commit of it named)
    again = result.push(folder, "s1", "feature", str(remote), "two", mine=first.commit)
    assert git("log", "--format=%s", "feature", cwd=remote).split("\n") == ["two", "start"] and again.commit


def test_a_pull_request_from_a_repository_with_no_commit_is_a_root_commit(tmp_path):
    """A new repository (``git init``, nothing committed): the pull request is a root commit of the session's
    files. On 7f68d02: git's "Needed a single revision" (session 19's diff read, L4)."""
    folder, remote = repo(tmp_path, {"a.txt": "a\n"}, commit=False)
    kept_session(folder, lambda copy: (copy / "b.txt").write_text("b\n"))
    pushed = result.push(folder, "s1", "feature", str(remote), "t", start="")
    assert pushed.base == "" and git("rev-list", "--count", "feature", cwd=remote) == "1"
    assert pushed_files(remote, "feature") == ["a.txt", "b.txt"] and "+b" in pushed.diff
    assert result.push(folder, "s1", "feature2", str(remote), "t").base == ""  # HEAD of now: none either


def test_the_users_own_link_out_of_the_folder_does_not_refuse_a_pull_request(tmp_path):
    """A venv's ``bin/python -> /usr/bin/python3``, the user's, unchanged by the session: the push goes (and
    commits it, as the user's ``git add -A`` would: it is not ignored here); a link out the session makes is still
    refused. On 7f68d02 the push refused ('.venv/bin/python' is a link out of the folder), as --apply did before
    that commit."""
    folder, remote = repo(tmp_path, {"a.txt": "a\n", ".venv/bin/activate": "x\n"})
    (folder / ".venv" / "bin" / "python").symlink_to("/usr/bin/python3")
    kept_session(folder, lambda copy: (copy / "a.txt").write_text("changed\n"))
    result.push(folder, "s1", "feature", str(remote), "t")
    assert git("ls-tree", "feature", ".venv/bin/python", cwd=remote).startswith("120000")
    assert git("cat-file", "-p", "feature:.venv/bin/python", cwd=remote) == "/usr/bin/python3"
    import shutil
    shutil.rmtree(folder / ".agent")
    kept_session(folder, lambda copy: (copy / "out").symlink_to("/etc"))
    with pytest.raises(ResultError, match="'out' is a link out of the folder"):
        result.push(folder, "s1", "feature2", str(remote), "t")
    assert "feature2" not in git("for-each-ref", cwd=remote)


def test_a_pull_request_from_a_folder_inside_a_repository_is_refused(tmp_path):
    """A workspace that is a folder inside a repository (``repo/pkg``): its archive holds only that folder's
    files, which a commit of the whole repository would put at its top, deleting the rest; refused in one line,
    nothing pushed. On 7f68d02 the pushed commit deleted ``top.txt`` and moved ``pkg/p.txt`` to ``p.txt``."""
    top, remote = repo(tmp_path, {"top.txt": "t\n", "pkg/p.txt": "p\n"})
    folder = top / "pkg"
    kept_session(folder, lambda copy: (copy / "p.txt").write_text("changed\n"))
    with pytest.raises(ResultError, match=r"is a folder inside a repository, not its top: .*; nothing pushed"):
        result.push(folder, "s1", "feature", str(remote), "t")
    assert "feature" not in git("for-each-ref", cwd=remote)
