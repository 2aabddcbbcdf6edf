"""Answers Discord did not deliver: kept, and shown with the member's next answer.

A command is committed before it is answered (:mod:`bot.service`): when Discord then fails
the answer (a 5xx twice, a 429 whose wait outlasts the 3 s Discord gives, a network fault),
the command stands while the player saw "interaction failed". The interaction cannot be
answered any more (a follow-up needs an acknowledged interaction), so the answer he should
have read is stored here, per guild and member, in the ``meta`` table (it outlives a
restart), and the next answer the bot gives him in that guild carries it as a private
follow-up. An answer to a command that changed nothing (``/help``, a refusal) is not kept:
there is nothing he has to learn.

The database may be failing just then (the command was stored, the server went down before
its answer was kept): the answer is then held in memory, stored with the next one kept for
him, and handed out with his next answer all the same. A failure here never turns into a
refusal of the command, which stands.
"""

from __future__ import annotations

import json
import logging

import discord

from bot.i18n import t
from bot.limits import CONTENT, clip
from bot.storage import Storage, is_storage_failure

log = logging.getLogger(__name__)

PREFIX = "undelivered:"
#: answers kept per member at most (the newest): a flood of failures keeps a screenful
KEEP = 5


def _key(guild_id: int, user_id: int) -> str:
    return f"{PREFIX}{guild_id}:{user_id}"


class Notices:
    """Undelivered answers by (guild, member); see the module docstring."""

    def __init__(self, storage: Storage) -> None:
        self.storage = storage
        self._waiting: set[str] = set()
        """The keys with answers stored: the common case (none) asks the database nothing."""
        self._unsaved: dict[str, list[str]] = {}
        """Answers the database failed to take, by key: stored with the next one, handed out
        with the next answer."""

    async def load(self) -> int:
        """Know the answers stored by an earlier process; returns how many members have some."""
        self._waiting = set(await self.storage.meta_keys(PREFIX))
        return len(self._waiting)

    async def keep(self, guild_id: int, user_id: int, text: str) -> None:
        """Store an answer Discord did not deliver to the member (in memory while the database
        fails; never raises for that)."""
        key = _key(guild_id, user_id)
        unsaved = [*self._unsaved.pop(key, []), text]
        try:
            stored = await self.storage.meta(key) if key in self._waiting else None
            texts: list[str] = json.loads(stored) if stored else []
            await self.storage.set_meta(
                key, json.dumps([*texts, *unsaved][-KEEP:], ensure_ascii=False)
            )
        except Exception as error:
            if not is_storage_failure(error):
                raise
            log.warning(
                "the database failed (%r): the undelivered answer(s) of %s are held in memory",
                error,
                user_id,
            )
            self._unsaved[key] = unsaved[-KEEP:]
            return
        self._waiting.add(key)

    async def take(self, guild_id: int, user_id: int) -> list[str]:
        """The member's undelivered answers, oldest first, forgotten as they are handed out
        (those stored stay stored while the database fails; those held in memory are given)."""
        key = _key(guild_id, user_id)
        texts: list[str] = []
        if key in self._waiting:
            try:
                stored = await self.storage.meta(key)
                await self.storage.delete_meta(key)
            except Exception as error:
                if not is_storage_failure(error):
                    raise
                log.warning(
                    "the database failed (%r): the stored undelivered answers of %s wait",
                    error,
                    user_id,
                )
            else:
                self._waiting.discard(key)
                texts = list(json.loads(stored)) if stored else []
        return [*texts, *self._unsaved.pop(key, [])][-KEEP:]

    async def give_back(self, guild_id: int, user_id: int, texts: list[str]) -> None:
        """Answers taken whose delivery failed again: kept for the next time."""
        for text in texts:
            await self.keep(guild_id, user_id, text)

    async def undelivered(
        self,
        interaction: discord.Interaction,
        text: str,
        error: BaseException,
        *,
        applied: bool,
        language: str,
    ) -> None:
        """Discord refused the answer ``text`` to ``interaction``: keep it if the interaction
        changed something (``applied``), else only log it (nothing was lost)."""
        if not applied or interaction.guild_id is None:
            log.info(
                "interaction %s of %s could not be answered (%s); it changed nothing",
                interaction.id,
                interaction.user.id,
                error,
            )
            return
        log.warning(
            "the answer to interaction %s of %s was not delivered (%s); it was applied: "
            "kept for his next command",
            interaction.id,
            interaction.user.id,
            error,
        )
        room = CONTENT - len(t(language, "notice.undelivered", answer=""))
        await self.keep(
            interaction.guild_id,
            interaction.user.id,
            t(language, "notice.undelivered", answer=clip(text, room)),
        )

    async def hand_out(self, interaction: discord.Interaction) -> None:
        """After an answer to ``interaction``: its member's undelivered answers, as private
        follow-ups (kept again if Discord refuses those too)."""
        if interaction.guild_id is None:
            return
        texts = await self.take(interaction.guild_id, interaction.user.id)
        for index, text in enumerate(texts):
            try:
                await interaction.followup.send(
                    text, ephemeral=True, allowed_mentions=discord.AllowedMentions.none()
                )
            except (discord.HTTPException, discord.RateLimited) as error:
                log.info(
                    "undelivered answers of %s not handed out (%s); kept",
                    interaction.user.id,
                    error,
                )
                await self.give_back(interaction.guild_id, interaction.user.id, texts[index:])
                return
        if texts:
            log.info("handed %d undelivered answer(s) to %s", len(texts), interaction.user.id)
