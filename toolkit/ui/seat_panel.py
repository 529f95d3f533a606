"""What a human seat knows, shown beside its question: its role and side, its partners, its private record
(the Seer's checks, the wolves' proposals tonight, the Witch's victim and potions, the Guard's or Doctor's last
protection, the bidding), rendered from the very observation a model seat receives
(``toolkit.werewolf.seat.observation.observe``). Nothing else: another seat's role is never in an observation,
so it is never here (god view is the only way to see every role)."""

from __future__ import annotations

import html
from typing import Any


def facts(obs: dict[str, Any]) -> list[str]:
    """The seat's private knowledge as plain lines, in the order the prompt gives it."""
    out = []
    if "teammates" in obs:
        out.append("Your fellow werewolves: " + (", ".join(obs["teammates"]) or "none (you are the only one)") + ".")
    if obs.get("proposals"):
        out.append("Tonight's proposals: " + "; ".join(f"{w} → {t}" for w, t in obs["proposals"]) + ".")
    if "checks" in obs:
        shown = obs.get("check_roles", obs["checks"])
        out.append("Your checks: " + ("; ".join(f"{p} is {r}" for p, r in shown.items()) or "none yet") + ".")
    if "victim" in obs:
        out.append(f"Tonight the werewolves attacked {obs['victim']}.")
    if "antidote" in obs:
        out.append(f"Potions left: antidote {'yes' if obs['antidote'] else 'no'}, "
                   f"poison {'yes' if obs['poison'] else 'no'}.")
    if obs.get("saved_tonight"):
        out.append("You used the antidote tonight.")
    if "bidding" in obs:
        b = obs["bidding"]
        out.append(f"Bidding: {b['done']} bidding{'s' if b['done'] != 1 else ''} settled today"
                   + (f"; the last speech named {', '.join(b['named'])}" if b.get("named") else "") + ".")
    today = (obs.get("record") or {}).get("days") or []
    if today and today[-1].get("day") == obs.get("day") and today[-1].get("bids"):
        out += today[-1]["bids"]
    out += list(obs.get("private") or [])  # the role's own nights: a Guard's or Doctor's protections, the Witch's
    # potions used, the wolves' past attacks
    return out


def panel(obs: dict[str, Any]) -> str:
    """The panel's HTML for one observation (the seat, its role, what it knows)."""
    side = f" (side: {html.escape(str(obs.get('side')))})" if obs.get("side") else ""
    lines = "".join(f"<li>{html.escape(x)}</li>" for x in facts(obs)) or "<li>nothing private yet</li>"
    return (f"<div class='toolkit-seat-panel' style='border:1px solid #ccd;padding:4px 8px;font-size:13px'>"
            f"<b>You are {html.escape(str(obs.get('seat')))}: {html.escape(str(obs.get('role')))}</b>{side}"
            f"<div><i>what you know</i> (day {obs.get('day')}, {html.escape(str(obs.get('phase')))})</div>"
            f"<ul style='margin:2px 0'>{lines}</ul></div>")
