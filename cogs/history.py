"""``/mafia history|game|export|stats|top``: the guild's finished games, replays and figures.

Everything here reads the archive (``bot/archive.py``), which holds only games
that are over or were ended by the host, so nothing of a running game can be
shown: ``/mafia game`` and ``/mafia export`` of a game under way are refused,
and ``/mafia history`` does not list it.

The commands join the ``/mafia`` group of the lobby cog (added to it when this
cog loads). The history's Previous and Next buttons are discord.py
``DynamicItem``s with the persistent custom id ``mafia:history:{page}``, so they
work after a restart. At a game's end the archiver stores, with the archive,
one ``picture`` outbox item per channel where the summary went; its handler,
:meth:`HistoryCog.post_picture`, draws the picture and posts it with the
item's nonce (a retry gives back the message already made).
"""

from __future__ import annotations

import asyncio
import io
import logging
import re
from functools import partial
from typing import TYPE_CHECKING, Any

import discord
from discord import app_commands
from discord.ext import commands
from discord.http import handle_message_parameters

from bot.archive import Archiver
from bot.errors import UserError
from bot.export import ExportError, export_scenario
from bot.i18n import key_str, mention, phase_words, t, winner_words
from bot.limits import block_sections, chunks
from bot.outbox.intents import Picture
from bot.picture import UPLOAD_LIMIT, render_png
from bot.service import LiveGame
from bot.storage import ArchivedGame, GameRecord, OutboxItem
from bot.wiring import Hooks
from cogs.history_text import (
    stats_lines,
    summary_lines,
    summary_parts,
    top_lines,
)
from cogs.pages import lost_pages
from cogs.render import closing_channels
from cogs.season import transcript_link

if TYPE_CHECKING:
    from bot.bot import ProkuratorBot

log = logging.getLogger(__name__)

PAGE = 10
TOP = 10
MIN_GAMES = 5
#: messages one ``/mafia game`` answer may take
MAX_MESSAGES = 4


class HistoryPage(
    discord.ui.DynamicItem[discord.ui.Button[discord.ui.View]],
    template=r"mafia:history:(?P<page>[0-9]{1,7})",
):
    """A Previous/Next button of ``/mafia history``: shows page ``page`` in place."""

    def __init__(self, page: int, *, label: str = "·", disabled: bool = False) -> None:
        super().__init__(
            discord.ui.Button(
                custom_id=f"mafia:history:{page}",
                label=label,
                disabled=disabled,
                style=discord.ButtonStyle.secondary,
            )
        )
        self.page = page

    @classmethod
    async def from_custom_id(
        cls,
        interaction: discord.Interaction[Any],
        item: discord.ui.Item[Any],
        match: re.Match[str],
        /,
    ) -> HistoryPage:
        return cls(int(match["page"]))

    async def callback(self, interaction: discord.Interaction[Any]) -> None:
        cog = interaction.client.get_cog("HistoryCog")
        try:
            await cog.show_history(interaction, self.page, edit=True)
        except Exception as error:  # the same answers as for slash commands
            await interaction.client.handle_error(interaction, error)


class HistoryCog(commands.Cog):
    """The archive's commands, the end-of-game picture, and the archiver's hooks."""

    def __init__(self, bot: ProkuratorBot) -> None:
        self.bot = bot
        self.archiver = Archiver(
            bot.storage,
            announce=self._announce,
            on_archived=lambda archived: bot.outbox.kick(archived.game_id),
            clock=bot.clock,
        )
        bot.add_dynamic_items(HistoryPage)
        self._moved: list[app_commands.Command[Any, ..., Any]] = []
        self._sweep: asyncio.Task[int] | None = None

    def hooks(self) -> Hooks:
        """After every commit, the archiver (a game that ended is archived); the outbox's
        ``picture`` items."""
        return Hooks(
            after_commit=[self.archiver.game_ended],
            outbox_handlers={"picture": self.post_picture},
        )

    async def cog_load(self) -> None:
        """Join the ``/mafia`` group; archive at start what ended unarchived."""
        group = self.bot.tree.get_command("mafia")
        if not isinstance(group, app_commands.Group):
            raise RuntimeError(
                "cogs.history needs the /mafia group of cogs.lobby, loaded before it"
            )
        for command in list(self.__cog_app_commands__):
            assert isinstance(command, app_commands.Command)
            group.add_command(command)
            self._moved.append(command)
        # they are the group's now, not top-level commands of this cog
        self.__cog_app_commands__ = []
        self._sweep = asyncio.get_running_loop().create_task(
            self.archiver.sweep(), name="archive-sweep"
        )

    async def cog_unload(self) -> None:
        group = self.bot.tree.get_command("mafia")
        if isinstance(group, app_commands.Group):
            for command in self._moved:
                group.remove_command(command.name)
        self.bot.remove_dynamic_items(HistoryPage)

    # ------------------------------------------------------------------ the end of a game

    async def _announce(self, record: GameRecord, archived: ArchivedGame) -> list[OutboxItem]:
        """The picture, after the summary, wherever the summary was told."""
        language = await self.bot.service.language(record.guild_id)
        caption = t(language, "history.picture", game=archived.game_id)
        return [
            Picture(
                channel, {"game_id": archived.game_id, "language": language, "content": caption}
            ).item()
            for channel in closing_channels(LiveGame(record))
        ]

    async def post_picture(self, item: OutboxItem) -> int | None:
        """The outbox handler of ``picture`` items: draw the archived game, post it once."""
        archived = await self.bot.storage.archived_game(int(item.payload["game_id"]))
        if archived is None:
            log.error(
                "picture of game %s: the game is not archived; nothing posted",
                item.payload["game_id"],
            )
            return None
        png = await asyncio.to_thread(
            render_png, archived, str(item.payload.get("language") or "ru")
        )
        if len(png) > UPLOAD_LIMIT:
            log.error(
                "picture of game %s is %d bytes, over Discord's limit; not posted",
                archived.game_id,
                len(png),
            )
            return None
        file = discord.File(io.BytesIO(png), filename=f"game-{archived.game_id}.png")
        with handle_message_parameters(
            content=str(item.payload.get("content") or ""),
            file=file,
            nonce=f"ob{item.id}",
            allowed_mentions=discord.AllowedMentions.none(),
        ) as params:
            message = await self.bot.http.send_message(
                int(item.target["channel_id"]), params=params
            )
        return int(message["id"])

    # ------------------------------------------------------------------ reading the archive

    async def _finished(self, interaction: discord.Interaction, number: int) -> ArchivedGame:
        """The guild's archived game ``number``.

        Raises:
            UserError: outside a guild; the game is under way; no such finished game here.
        """
        if interaction.guild_id is None:
            raise UserError("error.guild_only")
        archived = await self.bot.storage.archived_game(number)
        if archived is not None and archived.guild_id == interaction.guild_id:
            return archived
        open_game = await self.bot.service.open_game(interaction.guild_id)
        if open_game is not None and open_game.id == number:
            raise UserError("error.game_not_over", game=number)
        raise UserError("error.no_finished_game", game=number)

    # ------------------------------------------------------------------ /mafia history

    @app_commands.command(
        name=key_str("cmd.mafia.history.name"),
        description=key_str("cmd.mafia.history.description"),
    )
    async def history(self, interaction: discord.Interaction) -> None:
        await self.show_history(interaction, 0, edit=False)

    async def show_history(
        self, interaction: discord.Interaction, page: int, *, edit: bool
    ) -> None:
        """One page of the guild's archive, newest first, with Previous and Next."""
        if interaction.guild_id is None:
            raise UserError("error.guild_only")
        language = await self.bot.language_for(interaction)
        say = partial(t, language)
        rows, total = await self.bot.storage.archived_games(
            interaction.guild_id, offset=page * PAGE, limit=PAGE
        )
        pages = max(1, -(-total // PAGE))
        if page >= pages and total:
            page = pages - 1
            rows, total = await self.bot.storage.archived_games(
                interaction.guild_id, offset=page * PAGE, limit=PAGE
            )
        lines = [say("history.title")]
        for row in rows:
            if row.ended == "over":
                winners = ", ".join(winner_words(language, w) for w in row.winners) or say(
                    "winners.none"
                )
                result = say("history.won", winners=winners)
            else:
                result = say("history.stopped", phase=phase_words(language, row.last_phase))
            lines.append(
                say(
                    "history.row",
                    game=row.game_id,
                    when=f"<t:{int(row.ended_at)}:d>",
                    cities=", ".join(row.cities),
                    players=say("history.players", count=row.players),
                    result=result,
                )
            )
        if not rows:
            lines.append(say("history.empty"))
        lines.append(say("history.page", page=page + 1, pages=pages))
        content = chunks(lines)[0]
        view = discord.ui.View(timeout=None)
        view.add_item(
            HistoryPage(max(0, page - 1), label=say("history.previous"), disabled=page == 0)
        )
        view.add_item(HistoryPage(page + 1, label=say("history.next"), disabled=page + 1 >= pages))
        none = discord.AllowedMentions.none()
        if edit:
            await interaction.response.edit_message(
                content=content, view=view, allowed_mentions=none
            )
        else:
            await interaction.response.send_message(
                content, view=view, ephemeral=True, allowed_mentions=none
            )

    # ------------------------------------------------------------------ /mafia game

    @app_commands.command(
        name=key_str("cmd.mafia.game.name"),
        description=key_str("cmd.mafia.game.description"),
    )
    @app_commands.rename(number=key_str("opt.number.name"), votes=key_str("opt.votes.name"))
    @app_commands.describe(
        number=key_str("opt.number.description"),
        votes=key_str("opt.votes.description"),
    )
    async def game(
        self,
        interaction: discord.Interaction,
        number: app_commands.Range[int, 1, 2**53 - 1],
        votes: bool = False,
    ) -> None:
        archived = await self._finished(interaction, number)
        language = await self.bot.language_for(interaction)
        await interaction.response.defer(ephemeral=True, thinking=True)
        png = await asyncio.to_thread(partial(render_png, archived, language, votes=votes))
        summary = summary_parts(language, archived)
        lost = await lost_pages(self.bot, archived.game_id, language)
        if not lost:  # under the title, unless the message is gone (its pages come instead)
            summary[0][0][1:1] = await transcript_link(self.bot, archived.game_id, language)
        parts = block_sections(summary)
        if len(parts) > MAX_MESSAGES:
            parts = parts[: MAX_MESSAGES - 1] + chunks(
                [t(language, "archive.more", game=archived.game_id)]
            )
        none = discord.AllowedMentions.none()
        file = discord.File(io.BytesIO(png), filename=f"game-{archived.game_id}.png")
        # the picture goes with the last message: after the whole summary, votes included
        if len(parts) == 1:
            await interaction.edit_original_response(
                content=parts[0], attachments=[file, *lost], allowed_mentions=none
            )
            return
        await interaction.edit_original_response(content=parts[0], allowed_mentions=none)
        for part in parts[1:-1]:
            await interaction.followup.send(part, ephemeral=True, allowed_mentions=none)
        await interaction.followup.send(
            parts[-1], files=[file, *lost], ephemeral=True, allowed_mentions=none
        )

    # ------------------------------------------------------------------ /mafia export

    @app_commands.command(
        name=key_str("cmd.mafia.export.name"),
        description=key_str("cmd.mafia.export.description"),
    )
    @app_commands.rename(number=key_str("opt.number.name"))
    @app_commands.describe(number=key_str("opt.number.description"))
    async def export(
        self, interaction: discord.Interaction, number: app_commands.Range[int, 1, 2**53 - 1]
    ) -> None:
        archived = await self._finished(interaction, number)
        language = await self.bot.language_for(interaction)
        await interaction.response.defer(ephemeral=True, thinking=True)
        try:
            text = await asyncio.to_thread(export_scenario, archived)
        except ExportError as error:
            log.warning("game %s cannot be exported: %s", number, error)
            await interaction.edit_original_response(
                content=t(language, "error.export_failed", game=number)
            )
            return
        data = text.encode("utf-8")
        if len(data) > UPLOAD_LIMIT:
            await interaction.edit_original_response(
                content=t(language, "error.export_too_big", game=number)
            )
            return
        name = f"game-{number}.yaml"
        await interaction.edit_original_response(
            content=t(language, "history.exported", game=number, file=name),
            attachments=[discord.File(io.BytesIO(data), filename=name)],
        )

    # ------------------------------------------------------------------ /mafia stats

    @app_commands.command(
        name=key_str("cmd.mafia.stats.name"),
        description=key_str("cmd.mafia.stats.description"),
    )
    @app_commands.rename(player=key_str("opt.player.name"))
    @app_commands.describe(player=key_str("opt.stats_player.description"))
    async def stats(
        self, interaction: discord.Interaction, player: discord.User | None = None
    ) -> None:
        if interaction.guild_id is None:
            raise UserError("error.guild_only")
        who = player or interaction.user
        language = await self.bot.language_for(interaction)
        found = await self.bot.storage.player_stats(interaction.guild_id, str(who.id))
        lines = stats_lines(language, mention(str(who.id)), found)
        await interaction.response.send_message(
            "\n".join(lines), ephemeral=True, allowed_mentions=discord.AllowedMentions.none()
        )

    # ------------------------------------------------------------------ /mafia top

    @app_commands.command(
        name=key_str("cmd.mafia.top.name"),
        description=key_str("cmd.mafia.top.description"),
    )
    @app_commands.rename(min_games=key_str("opt.min_games.name"))
    @app_commands.describe(min_games=key_str("opt.min_games.description"))
    async def top(
        self,
        interaction: discord.Interaction,
        min_games: app_commands.Range[int, 1, 10_000] = MIN_GAMES,
    ) -> None:
        if interaction.guild_id is None:
            raise UserError("error.guild_only")
        language = await self.bot.language_for(interaction)
        storage = self.bot.storage
        boards = {
            by: await storage.leaderboard(
                interaction.guild_id, by, limit=TOP, min_games=min_games if by == "win_rate" else 1
            )
            for by in ("wins", "win_rate", "rating")
        }
        lines = top_lines(
            language, boards, min_games, await storage.guild_results(interaction.guild_id)
        )
        await interaction.response.send_message(
            "\n".join(lines), ephemeral=True, allowed_mentions=discord.AllowedMentions.none()
        )


async def setup(bot: ProkuratorBot) -> None:
    """Load the cog."""
    await bot.add_cog(HistoryCog(bot))


__all__ = ["HistoryCog", "HistoryPage", "stats_lines", "summary_lines", "top_lines"]
