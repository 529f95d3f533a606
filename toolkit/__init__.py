"""LLM agents in Jupyter: a tool-using engineer, Werewolf players, sweeps and analysis.

The packages are the layers; each imports only the ones before it (``tests/test_architecture.py`` proves it):
``core`` → ``llm`` (and ``testing``, its loopback server) → ``record`` → ``prompting`` → ``werewolf`` /
``agent`` → ``analysis`` / ``doors`` → ``study`` → ``ui`` → ``cli``. See ``docs/architecture.md``.
"""

__version__ = "0.1.0"
