"""The werewolf game's role and action names, kept once. The rules (``toolkit.werewolf.engine``) and the
seats' actions (``toolkit.werewolf.seat.decisions``) use them, and so does the scripted-file schema
(``toolkit.core.files``), which the model layer's scripted backend reads below the game: so they live here,
at the bottom."""

ROLES = ("Werewolf", "Villager", "Guard", "Witch", "Seer", "Doctor")  # new roles go last: the shuffle keeps its order
SPECIAL_ROLES = ("Guard", "Witch", "Seer", "Doctor")  # the village roles with a night power
TARGETED_ACTIONS = ("hunt", "protect", "verify", "save", "poison", "vote")  # each names a seat (or passes)
ACTIONS = (*TARGETED_ACTIONS, "speak", "reflect")  # every decision a seat is asked for
