"""The werewolf game's role and action names, kept once. The rules (``toolkit.werewolf.engine``) and the
seats' actions (``toolkit.werewolf.seat.decisions``) use them, and so does the scripted-file schema
(``toolkit.core.files``), which the model layer's scripted backend reads below the game: so they live here,
at the bottom."""

# Each role is a module toolkit/werewolf/engine/roles/<name>.py, registered by its name here (what a role does is
# there, not here). New roles go last: the shuffle deals roles in this order.
ROLES = ("Werewolf", "Villager", "Guard", "Witch", "Seer", "Doctor", "Hunter")
TARGETED_ACTIONS = ("hunt", "protect", "verify", "save", "poison", "vote", "shoot")  # each names a seat (or passes)
ACTIONS = (*TARGETED_ACTIONS, "speak", "bid", "reflect")  # every decision a seat is asked for
