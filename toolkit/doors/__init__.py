"""The werewolf game behind the field's doors: a PettingZoo AEC environment (``pettingzoo_env``) and a TextArena
environment (``textarena_env``), thin faces over one driver (``table``: the toolkit's own runner, with door seats
that wait for answers from outside). They need the ``rl`` extra: ``pip install 'llm-agent-toolkit[rl]'``."""
