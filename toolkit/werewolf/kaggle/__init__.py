"""The Kaggle Game Arena werewolf harness (``kaggle-environments``, envs/werewolf) beside this engine: read its
replays (``replay``), play its games (``harness``, needs the package), and play a Kaggle game's decisions through
this engine to compare the outcomes (``differential``). docs/werewolf.md has the rules card."""
