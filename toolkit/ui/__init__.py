"""Front ends: ipywidgets for the notebooks (``WerewolfSession``, ``EngineerSession``, ``ResultsExplorer``,
needing the ``notebooks`` extra) and the transcript formatter the CLI shares with them. The widgets drive
the same runners as the CLI (``GameRunner``, ``Session``) through their step/stop hooks. The first widget taken
from here imports the plug-in modules (``toolkit.core.plugins``)."""

from importlib import import_module

_WIDGETS = {"AdaptiveTournament": "toolkit.ui.tournament", "EngineerSession": "toolkit.ui.engineer",
            "ResultsExplorer": "toolkit.ui.results",
            "WerewolfSession": "toolkit.ui.werewolf"}
__all__ = list(_WIDGETS)


def __getattr__(name: str):
    # Imported on first use, so that `toolkit.ui.transcript` (the CLI's) does not need ipywidgets.
    if name in _WIDGETS:
        from toolkit.core.plugins import load

        load()  # a notebook's plug-ins (toolkit.core.plugins) before its first widget
        return getattr(import_module(_WIDGETS[name]), name)
    raise AttributeError(name)
