"""Interaction answers without parsing the message Discord echoes back, until someone reads it.

discord.py (2.5 and later) asks Discord for the message an interaction's answer created
(``with_response``) and builds it at once: an :class:`discord.InteractionMessage`, with its
author, member, components and mentions, for every ``send_message``, ``defer`` and
``edit_message``. Nothing in the bot reads it (nor does discord.py on those paths: the view's
message id comes from the callback's ``interaction`` part). ``benchmarks/callback_bench.py``
measures it: 20 µs an answer parsed, 1.5 µs left unparsed, some 2 % of a trivial command's
CPU (about 1 ms). A cProfile of the loop (``service_bench.py --probe`` with
``BENCH_CPROFILE``) put it at 8 %, more than parsing the interaction itself; the profiler
inflates code made of many small calls like this one.

discord.py has no option to skip it, so :class:`LazyCallbackResponse` takes the place of its
``InteractionCallbackResponse`` in :mod:`discord.interactions` (where the answering methods
look the class up): the same fields, with ``resource`` built from the kept payload the first
time it is read. The payload is a dict Discord sent; keeping it costs nothing more than the
answer already did.
"""

from __future__ import annotations

from typing import Any

import discord
from discord import interactions
from discord.utils import _get_as_snowflake

#: discord.py's own class, for putting it back (``benchmarks/service_probe.py``'s A/B)
EAGER = interactions.InteractionCallbackResponse


class LazyCallbackResponse(EAGER):
    """discord.py's ``InteractionCallbackResponse``, its ``resource`` parsed on first read."""

    __slots__ = ("_resource_data", "_resource")

    def _update(self, data: Any) -> None:
        interaction = data["interaction"]
        self.id = int(interaction["id"])
        self._thinking = interaction.get("response_message_loading", False)
        self._ephemeral = interaction.get("response_message_ephemeral", False)
        self.message_id = _get_as_snowflake(interaction, "response_message_id")
        self.activity_id = interaction.get("activity_instance_id")
        resource = data.get("resource")
        self._resource_data = resource
        self._resource: Any = None
        if resource is not None:
            self.type = discord.enums.try_enum(discord.InteractionResponseType, resource["type"])

    @property
    def resource(self) -> Any:
        """The message (or activity instance) the answer created, built now if not yet."""
        if self._resource is None and self._resource_data is not None:
            resource, self._resource_data = self._resource_data, None
            message, activity = resource.get("message"), resource.get("activity_instance")
            if message is not None:
                # discord.py's own call, as it makes it: its state proxy and the interaction's
                # channel are what its stubs do not admit (its source ignores both too)
                self._resource = interactions.InteractionMessage(
                    state=interactions._InteractionMessageState(self._parent, self._state),  # type: ignore[arg-type]
                    channel=self._parent.channel,  # type: ignore[arg-type]
                    data=message,
                )
            elif activity is not None:
                self._resource = interactions.InteractionCallbackActivityInstance(activity)
        return self._resource

    @resource.setter
    def resource(self, value: Any) -> None:
        self._resource, self._resource_data = value, None


def parse_answers_lazily(lazy: bool = True) -> None:
    """Have discord.py's answers keep the echoed message unparsed (``lazy``) or parse it at
    once, as it does itself (``False``)."""
    # replacing the class where discord.py looks it up, which its stubs declare a fixed class
    interactions.InteractionCallbackResponse = LazyCallbackResponse if lazy else EAGER  # type: ignore[misc,assignment]
