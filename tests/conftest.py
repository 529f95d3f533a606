import gc
import os
import shutil
import sys
import tempfile
from pathlib import Path

import pytest

from toolkit.testing.loopback_server import FakeOpenAIServer

# Retries in tests wait milliseconds, not seconds; Retry-After is still honoured where a test sets it.
FAST = dict(backoff_initial_s=0.005, backoff_max_s=0.02, timeout_s=2.0, max_attempts=6)


@pytest.fixture
def server():
    """A loopback OpenAI-compatible test double (real HTTP; see toolkit.testing.loopback_server)."""
    with FakeOpenAIServer(seed=1) as srv:
        yield srv


@pytest.fixture(autouse=True)
def _no_real_endpoint(monkeypatch):
    # Tests never reach a hosted model, whatever the developer's shell has set.
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.delenv("TOOLKIT_CACHE_DIR", raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-real-key-0123456789")


@pytest.fixture(autouse=True)
def _collector_as_found():
    # The `tournament` command sets the collector for a process that plays many games (toolkit.core.collector:
    # frozen heap, youngest generation every 10,000 objects). Tests that call the command in their own process
    # would leave it set for the tests after them (a tracemalloc peak then holds more garbage in cycles: CI, ci8).
    threshold, enabled = gc.get_threshold(), gc.isenabled()
    yield
    if gc.get_freeze_count():
        gc.unfreeze()
    gc.set_threshold(*threshold)
    (gc.enable if enabled else gc.disable)()


GUARD = Path(__file__).resolve().parent / "write_guard"
GUARD_OWNER = pytest.StashKey[bool]()


def pytest_collection_modifyitems(config, items):
    """A test that drives headless Chromium through the ``browser`` fixture is in the browser tier."""
    for item in items:
        if "browser" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.browser)


def pytest_configure(config):
    """Tests write only to temporary folders. Every Python process of the suite (this one, the xdist workers,
    the subprocesses and kernels the tests start) loads tests/write_guard/sitecustomize.py, whose audit hook
    notes a write under the repository's results/ with the test that made it; that test then fails."""
    if "TOOLKIT_WRITE_GUARD_REPORT" not in os.environ:  # the controller; xdist workers inherit what it sets
        os.environ["TOOLKIT_WRITE_GUARD"] = str(GUARD.parents[1] / "results")
        fd, os.environ["TOOLKIT_WRITE_GUARD_REPORT"] = tempfile.mkstemp(prefix="toolkit-write-guard-")
        os.close(fd)
        config.stash[GUARD_OWNER] = True  # a pytest run inside a test finds the file made and must not remove it
        os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(GUARD), os.environ.get("PYTHONPATH")]))
        # the results explorer's report cache (toolkit/ui/results.py): a temporary folder, never the user's
        os.environ["TOOLKIT_REPORT_CACHE"] = tempfile.mkdtemp(prefix="toolkit-report-cache-")
    sys.path.insert(0, str(GUARD))
    import sitecustomize  # noqa: F401  (installs the hook in this process; a no-op where it is installed)
    sys.path.remove(str(GUARD))


def pytest_unconfigure(config):
    if config.stash.get(GUARD_OWNER, False):  # the process that made the report file
        Path(os.environ.pop("TOOLKIT_WRITE_GUARD_REPORT")).unlink(missing_ok=True)
        shutil.rmtree(os.environ.pop("TOOLKIT_REPORT_CACHE", "/nonexistent"), ignore_errors=True)


def _guard_lines(test):
    with open(os.environ["TOOLKIT_WRITE_GUARD_REPORT"]) as report:
        return sorted({line.split("\t", 1)[1].strip() for line in report if line.split("\t", 1)[0] == test})


@pytest.fixture(autouse=True)
def _writes_only_to_temporary_folders(request):
    yield
    written = _guard_lines(request.node.nodeid)
    assert not written, f"this test wrote into the repository's results/: {written[:5]}"


@pytest.fixture
def prices(tmp_path, monkeypatch):
    """``prices("det: {input: 1.0, output: 4.0}")``: a TOOLKIT_PRICES file for this test (subprocesses inherit it)."""
    from toolkit.llm.model import load_prices

    def set_prices(text):
        (tmp_path / "prices.yaml").write_text(text + "\n")
        monkeypatch.setenv("TOOLKIT_PRICES", str(tmp_path / "prices.yaml"))
        load_prices.cache_clear()

    yield set_prices
    load_prices.cache_clear()
