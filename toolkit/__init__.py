"""LLM agents in Jupyter: a tool-using engineer, Werewolf players, sweeps and analysis.

Layers (each imports only the ones before it): ``llm`` → ``record``/``results`` → ``actions``
→ ``werewolf`` → ``cli``.
"""

__version__ = "0.1.0"
