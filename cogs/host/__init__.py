"""``/host``: the Procurator's tools: set up, start, move the game on, act, end.

Only the game's host, or a member with the host role, may use them.

A command whose meaning depends on the stage carries the stage its sender
saw, checked under the game's lock (:class:`bot.service.Seen`): ``/host next``
names it in its ``from`` option (offered by autocomplete) or, left out, is
taken as meant for the stage the game was in when Discord created the
interaction; ``/host execute`` likewise. So a second "next", or one sent while
the timer moved the game on, is refused ("already moved on") and changes
nothing; and one sent within ``fairness.stage_settle`` seconds after the
timer began the stage is refused too, naming that stage (the host could not
have seen it yet). Lobby settings and ``/host timer`` look at the game under the lock
too, and ``/host timer`` on the running stage is one commit (its length, the
new deadline and the announcement of it).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from cogs.host.cog import HostCog
from cogs.host.common import split_names
from cogs.host.strikes import LeaveStrikes

if TYPE_CHECKING:
    from bot.bot import ProkuratorBot

__all__ = ["HostCog", "LeaveStrikes", "split_names"]


async def setup(bot: ProkuratorBot) -> None:
    """Load the cog."""
    await bot.add_cog(HostCog(bot))
