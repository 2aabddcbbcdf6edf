"""Persistent components: discord.py ``DynamicItem``\\ s over the ``mafia:`` custom ids.

Every button and menu the bot posts carries its meaning in its custom id
(``mafia:join:{game}``, ``mafia:vote:{game}:{city_index}``, ...), so a message
posted before a restart keeps working after it. Each form below is a
``DynamicItem`` registered with ``bot.add_dynamic_items``: discord.py matches
the id against its template, and the item's callback hands the interaction,
with the id's fields, to the handler the owning cog declared in its hooks
(``components`` of :class:`bot.wiring.Hooks`) (the last word's buttons stay in
``cogs/lastword.py``). A refusal raised by a handler gets the same localised,
private answer as a slash command's.

Every other id (a retired action, a malformed id, one not starting with
``mafia:`` at all: the bot posts none, so it is crafted or from another
bot's era) is answered with "this button is no longer active" by
:class:`Retired`, a ``DynamicItem`` whose template matches exactly the ids
that no other form matches.
discord.py dispatches an id to *every* template that matches it, so a plain
``mafia:.*`` would answer known ids twice; a negative look-ahead over the
other forms keeps the catch-all inside the library's router rather than in a
hand-written ``on_interaction`` that would have to know which ids the router
took.
"""

from __future__ import annotations

import logging
import re
from typing import TYPE_CHECKING, Any, ClassVar

import discord
from discord.ui import Button, DynamicItem, Item, Select

from bot.collector import release_when_done
from bot.errors import UserError
from cogs.common import bot_of, interaction_data

if TYPE_CHECKING:
    pass

log = logging.getLogger(__name__)

#: the forms of the ids, after ``mafia:``, by action; groups are the fields handed on
FORMS: dict[str, str] = {
    "join": r"join:(\d+)",
    "leave": r"leave:(\d+)",
    "role": r"role:(\d+)",
    "vote": r"vote:(\d+):(\d+)",
    "unvote": r"unvote:(\d+)",
    "lastword": r"lastword:(\d+)(?::(\d+))?",
    "stop": r"stop:(\d+)(?::(\d+))?",
    "confirm": r"confirm:(\d+):(end|kill):(\d+)(?::(\d+))?",
    "cancel": r"cancel:(\d+)",
    "here": r"here:(\d+):(\d+)",
}


#: ``mafia:`` forms whose DynamicItems live in other cogs; a new one must be named here too,
#: or :class:`Retired` answers it as well (``tests/cogs/test_components.py`` checks)
ELSEWHERE: dict[str, str] = {
    "history": r"history:([0-9]{1,7})",  # cogs/history.py: HistoryPage
}


def template(action: str) -> str:
    """The whole custom id template of an action."""
    return rf"mafia:{FORMS[action]}"


#: every id that no form matches, ``mafia:`` or not (``\Z``: a trailing newline is not an end)
RETIRED = r"(?s)(?!mafia:(?:" + "|".join([*FORMS.values(), *ELSEWHERE.values()]) + r")\Z).*"


class _Routed:
    """What every game component does: find the cog's handler and answer refusals."""

    action: ClassVar[str]

    def __init__(self, item: Any, fields: list[str]) -> None:
        super().__init__(item)  # type: ignore[call-arg]
        self.fields = fields

    @classmethod
    async def from_custom_id(
        cls, interaction: discord.Interaction, item: Item[Any], match: re.Match[str], /
    ) -> Any:
        return cls(item, [group for group in match.groups() if group is not None])

    async def interaction_check(self, interaction: discord.Interaction, /) -> bool:
        # the first thing discord.py runs for a component: free the interaction when it is done
        release_when_done(interaction)
        return True

    async def callback(self, interaction: discord.Interaction) -> None:
        bot = bot_of(interaction)
        handler = bot.wired.components.get(self.action)
        try:
            if handler is None:
                raise UserError("error.stale_button")
            await bot.within_share(interaction)
            await handler(interaction, self.fields)
        except Exception as error:  # the same answers as for slash commands
            await bot.handle_error(interaction, error)
        else:
            bot.share_settled(interaction)


class JoinButton(_Routed, DynamicItem[Button[Any]], template=template("join")):
    """The lobby's "Join"."""

    action = "join"


class LeaveButton(_Routed, DynamicItem[Button[Any]], template=template("leave")):
    """The lobby's "Leave"."""

    action = "leave"


class RoleButton(_Routed, DynamicItem[Button[Any]], template=template("role")):
    """ "My status" under each city's welcome."""

    action = "role"


class VoteSelect(_Routed, DynamicItem[Select[Any]], template=template("vote")):
    """A city's ballot: the menu of candidates (``{game}:{city index}``)."""

    action = "vote"


class UnvoteButton(_Routed, DynamicItem[Button[Any]], template=template("unvote")):
    """A ballot's "Unvote"."""

    action = "unvote"


class LastWordButton(_Routed, DynamicItem[Button[Any]], template=template("lastword")):
    """ "Last word" on a nomination (``{game}:{player}``), handled by the last word's cog."""

    action = "lastword"


class StopButton(_Routed, DynamicItem[Button[Any]], template=template("stop")):
    """ "Stop" on a last word being recorded (``{game}:{player}``), handled by the last word's cog."""

    action = "stop"


class ConfirmButton(_Routed, DynamicItem[Button[Any]], template=template("confirm")):
    """ "Yes" under the host's ``/host end`` or ``/host kill`` (``{game}:{action}:{issued ms}[:{player}]``),
    handled by the host's cog: the act happens only on it, and only while it is fresh."""

    action = "confirm"


class CancelButton(_Routed, DynamicItem[Button[Any]], template=template("cancel")):
    """ "No" under a host's confirmation: nothing happens."""

    action = "cancel"


class HereButton(_Routed, DynamicItem[Button[Any]], template=template("here")):
    """ "I'm here" under a roll call before the start (``{game}:{round}``), handled by the roll
    call's cog."""

    action = "here"


class Retired(_Routed, DynamicItem[Item[Any]], template=RETIRED):
    """Any other id: "this button is no longer active"."""

    action = "retired"

    async def callback(self, interaction: discord.Interaction) -> None:
        bot = bot_of(interaction)
        custom_id = interaction_data(interaction).get("custom_id")
        log.info(
            "component %r of user %s matches no form: answered as no longer active",
            custom_id,
            interaction.user.id,
        )
        await bot.handle_error(interaction, UserError("error.stale_button"))


ITEMS: tuple[type[DynamicItem[Any]], ...] = (
    JoinButton,
    LeaveButton,
    RoleButton,
    VoteSelect,
    UnvoteButton,
    LastWordButton,
    StopButton,
    ConfirmButton,
    CancelButton,
    HereButton,
    Retired,
)
