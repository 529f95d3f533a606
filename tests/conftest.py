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


def _results_listing(root):
    folder = root / "results"
    return {str(p.relative_to(root)) for p in folder.rglob("*")} if folder.is_dir() else set()


@pytest.fixture(scope="session", autouse=True)
def _repository_results_untouched():
    """Tests write only to temporary folders: the repository's results/ ends the session as it began."""
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    before = _results_listing(root)
    yield
    new = sorted(_results_listing(root) - before)
    assert not new, f"tests wrote into the repository's results/: {new[:5]}"
