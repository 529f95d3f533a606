"""The kinds of events rows, each declared once with how every reader of the rows treats it.

The engine declares its own kinds here (``ENGINE``); a role declares the kinds its decisions emit in its module
(``Role.events``), and ``roles.event_kinds()`` gathers both. The readers take their vocabulary from there and
from nowhere else: the report's fallback rates count the kinds that record a seat's ``decision``, the Kaggle
export writes each kind as its ``kaggle`` entry, Kaggle's readers map Kaggle's entries and actions back to
``decision``, the HTML replay draws each kind as its ``view`` says, and the analyses count the living from the
kinds that ``remove`` a seat. ``Game.emit`` refuses a kind nobody declared, so a role cannot emit a row that
some reader would not know.
"""

from __future__ import annotations

from dataclasses import dataclass

VIEWS = ("text", "speech", "vote", "exile")
MODERATOR = ("dict", "moderator_announcement")  # Kaggle's log entry for what its game has no type for


@dataclass(frozen=True)
class EventKind:
    """One kind of events row.

    - ``decision``: the seat's decision (``Ask.action``) the row records: its actor answered it, and a fallback
      answer counts in the model's fallback rate; None for the moderator's rows;
    - ``kaggle``: the row in a Kaggle replay's moderator log, as (data entry type, event name) of
      kaggle-environments' ``envs/werewolf/game/records.py``; ``MODERATOR`` where Kaggle's game has no type;
    - ``kaggle_action``: the Kaggle ``Action`` class whose answer this decision is (its harness's calls);
    - ``view``: how the HTML replay shows it: ``speech`` (the speaker, then their words, hidden when the page
      leaves content out), ``vote`` (also a cell of the day's vote matrix), ``exile`` (the matrix's exiled),
      ``text`` (its text);
    - ``removes``: its target leaves the game (a death, an exile, a shot): the analyses count the living from it.
    """

    name: str
    decision: str | None = None
    kaggle: tuple[str, str] = MODERATOR
    kaggle_action: str | None = None
    view: str = "text"
    removes: bool = False

    def __post_init__(self) -> None:
        if not self.name or self.view not in VIEWS:
            raise ValueError(f"an event kind needs a name and a view ({', '.join(VIEWS)}): {self!r}")


# the kinds the engine emits itself (the roles' kinds are in their modules)
ENGINE = (
    EventKind("announcement"),
    EventKind("speech", decision="speak", kaggle=("ChatDataEntry", "discussion"), kaggle_action="ChatAction",
              view="speech"),
    EventKind("bid", decision="bid", kaggle_action="BidAction"),
    EventKind("vote", decision="vote", kaggle=("DayExileVoteDataEntry", "vote_action"), kaggle_action="VoteAction",
              view="vote"),
    EventKind("death", kaggle=("WerewolfNightEliminationDataEntry", "elimination"), removes=True),
    EventKind("elimination", kaggle=("DayExileElectedDataEntry", "elimination"), view="exile", removes=True),
    EventKind("forfeit"),  # the error policy forfeit: the seat's side loses (the game ends)
    EventKind("disqualification", removes=True),  # the error policy eliminate_after:N: the seat leaves the game
)
