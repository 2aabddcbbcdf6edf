"""The last word: a nominee's defence, recorded in the tribune voice channel or uploaded.

``/lastword speak`` (or the "Last word" button on his nomination) queues the
nominee; one last word is recorded at a time per game. The bot joins the
game's voice channel, posts who speaks with a Stop button and a live
"recording 1:23 / 3:00" line, and records only the nominee's audio straight
into an Ogg Opus file, for at most ``last_word_seconds``. While he speaks
the day cannot end: a day's end (host or timer) waits for him. No last word begins while
the game stands still (:mod:`bot.powers`); one under way then is kept, the day's end waits.

A finished recording is written to disk first; then the rules' last-word
command is committed together with the outbox items that post it (a line
naming the speaker, then the file as a native voice message, or as a plain
attachment where Discord refuses voice messages). A crash therefore never
loses a finished last word and never posts it twice. A technical failure
(no voice connection, no audio, DAVE not ready) does not use up the last
word: the player is told to try again or to upload. ``/lastword upload``
takes his own recording, prepared in a worker thread.

The recording outlives the bot's own voice reconnects (up to
``last_word.reconnect_attempts`` fresh connections, all within
``last_word.reconnect_give_up`` seconds, the time away as silence; if the link
does not come back, what was said is posted, ending with his last audio) and
a nominee stepping out for up to ``last_word.leave_grace`` seconds.

The last word follows the game: after every commit, a speaker who is out of
it (killed, struck out, replaced), or a game that is over, stops his
recording at once; the bot leaves the tribune, his line says why and how
long what he said lasts, in the third person, and that is posted after it
(not as his last word: the rules no longer give him one). The file follows
the recorder's timeline (:mod:`bot.voice.recorder`): 48 kHz mono Ogg Opus,
the silence before his first word in it. Until it is committed or posted
the recording is a ``.part`` file; one a stopped process leaves behind is
reported at the next start and dropped.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import discord
from discord import app_commands
from discord.ext import commands

from bot.errors import UserError
from bot.i18n import key_str, mention, phrase
from bot.outbox.intents import Edit, Send
from bot.service import LiveGame, NoGame, last_word_hold
from bot.storage import OutboxItem
from bot.voice import tribune
from bot.voice.ogg import RecordingInfo
from bot.voice.receiver import ReceivingVoiceClient
from bot.voice.recorder import OggSink, Recorder, RecordingOutcome, RecordingResult
from bot.voice.upload import PreparedAudio
from bot.wiring import Hooks
from cogs.common import player_of, require_host, running_game, seen_by
from cogs.render import pings_on
from cogs.speech import (
    announce_items,
    cancelled_text,
    city_channels,
    clock_text,
    cut_short_items,
    has_spoken,
    interruption,
    line_refs,
    outcome_message,
    post_voice,
    progress_message,
    publish,
    restart_items,
    take_upload,
)
from rules import RequestLastWord, RuleError

if TYPE_CHECKING:
    from bot.bot import ProkuratorBot

log = logging.getLogger(__name__)

MIB = 1024 * 1024


@dataclass
class Request:
    """A nominee waiting for the tribune."""

    game_id: int
    player: str


class LastWordCog(commands.Cog):
    """``/lastword speak|upload``, the tribune, the Stop button and posting recordings."""

    lastword = app_commands.Group(
        name=key_str("cmd.lastword.name"),
        description=key_str("cmd.lastword.description"),
        guild_only=True,
    )

    def __init__(self, bot: ProkuratorBot) -> None:
        self.bot = bot
        self.folder = bot.config.data_folder / "lastwords"
        self.folder.mkdir(parents=True, exist_ok=True)
        self.queues: dict[int, list[Request]] = {}
        self.workers: dict[int, asyncio.Task[None]] = {}
        self.recording: dict[int, tuple[str, Recorder]] = {}
        self.uploading: set[tuple[int, str]] = set()
        """(game, player) of each ``/lastword upload`` under way."""
        self.current: dict[int, str] = {}
        """The player whose turn it is in each game (connecting, waiting for him, recording)."""
        self._reports: set[asyncio.Task[None]] = set()
        self.clock: Callable[[], float] = time.monotonic
        """Stamps received audio and times recordings (tests drive a simulated one)."""
        self.reconnect_backoff = 1.0
        """Seconds times the attempt number between failed voice reconnects while recording."""

    def hooks(self) -> Hooks:
        """The last word's and the Stop buttons; the outbox's ``voice`` items (recordings);
        ``/host skip``; a speaker the game let go cut short after every commit."""
        return Hooks(
            after_commit=[self._committed],
            components={"lastword": self._lastword_button, "stop": self._stop_button},
            outbox_handlers={"voice": self.post_recording},
            skip_last_word=self.skip,
        )

    def _committed(self, live: LiveGame) -> None:
        """After every commit of a game: a last word the game no longer lets go on (the
        speaker out of it, replaced, the game over) is cut short at once."""
        current = self.recording.get(live.id)
        if current is not None and interruption(live, current[0]) is not None:
            current[1].stop(cut=True)

    async def cog_load(self) -> None:
        """Report recordings a previous process was stopped in the middle of, and drop them."""
        for part in sorted(self.folder.glob("*.part")):
            task = asyncio.get_running_loop().create_task(self._report_interrupted(part))
            self._reports.add(task)
            task.add_done_callback(self._reports.discard)

    async def _report_interrupted(self, part: Path) -> None:
        """A ``.part`` left behind: tell the city (he may ask again), unless it was committed.

        The file becomes the posted recording's only once the last word is
        committed, and is removed right after: a player who has his last word
        already lost nothing to the restart.
        """
        game_id, player, token = part.name.split(".")[0].split("-")[:3]
        await self.bot.wait_until_ready()
        try:
            live: LiveGame | None = self.bot.service.live(int(game_id))
        except NoGame:
            live = None
        game = live.game if live is not None else None
        if (
            live is not None
            and game is not None
            and player in game.players
            and player not in game.last_words
        ):
            log.warning(
                "last word of %s in game %s was interrupted by a restart; dropped", player, game_id
            )
            (self.folder / f"{game_id}-{player}-{token}.ogg").unlink(missing_ok=True)
            await self._post_now(live, *restart_items(live, player, token))
        part.unlink(missing_ok=True)

    # ------------------------------------------------------------------ commands

    @lastword.command(
        name=key_str("cmd.lastword.speak.name"),
        description=key_str("cmd.lastword.speak.description"),
    )
    async def speak(self, interaction: discord.Interaction) -> None:
        live = await running_game(self.bot, interaction)
        await self._queue(interaction, live, player_of(live, interaction))

    @lastword.command(
        name=key_str("cmd.lastword.upload.name"),
        description=key_str("cmd.lastword.upload.description"),
    )
    @app_commands.rename(file=key_str("opt.file.name"))
    @app_commands.describe(file=key_str("opt.file.description"))
    async def upload(self, interaction: discord.Interaction, file: discord.Attachment) -> None:
        live = await running_game(self.bot, interaction)
        player = player_of(live, interaction)
        game = live.game
        assert game is not None
        game.check(RequestLastWord(player))
        self.bot.powers.refuse(live, RequestLastWord(player))
        if self._busy(live.id, player):
            raise UserError("error.lastword_queued")
        if (live.id, player) in self.uploading:
            raise UserError("error.lastword_uploading")
        limit = self.bot.config.last_word.max_upload_mib * MIB
        if file.size > limit:
            raise UserError(
                "upload.upload_too_large", limit=self.bot.config.last_word.max_upload_mib
            )
        # taken before the first await: a second upload of his sent meanwhile is refused, so one
        # file is stored and committed, none left over
        self.uploading.add((live.id, player))
        try:
            await self._upload(interaction, live, player, file)
        finally:
            self.uploading.discard((live.id, player))

    async def _upload(
        self,
        interaction: discord.Interaction,
        live: LiveGame,
        player: str,
        file: discord.Attachment,
    ) -> None:
        await interaction.response.defer(ephemeral=True, thinking=True)
        key = last_word_hold(player, upload=True)
        self.bot.service.hold(live.id, key)
        try:
            text = await take_upload(
                self.bot.service,
                self.folder,
                live,
                player,
                file,
                interaction_id=interaction.id,
                max_mib=self.bot.config.last_word.max_upload_mib,
            )
        finally:
            await self.bot.service.release(live.id, key)
        await interaction.edit_original_response(
            content=text, allowed_mentions=discord.AllowedMentions.none()
        )

    async def skip(self, interaction: discord.Interaction) -> None:
        """``/host skip``: stop the last word being recorded."""
        live = await running_game(self.bot, interaction)
        await require_host(self.bot, interaction, live)
        current = self.recording.get(live.id)
        if current is None:
            raise UserError("error.no_recording")
        current[1].stop()
        text = phrase(seen_by(live, interaction), "lastword.skipped")
        await interaction.response.send_message(text, ephemeral=True)

    # ------------------------------------------------------------------ buttons

    async def _lastword_button(self, interaction: discord.Interaction, parts: list[str]) -> None:
        live = await running_game(self.bot, interaction)
        if parts[0] != str(live.id):
            raise UserError("error.stale_button")
        player = player_of(live, interaction)
        if len(parts) > 1 and parts[1] != player:
            raise UserError("error.not_your_button")
        await self._queue(interaction, live, player)

    async def _stop_button(self, interaction: discord.Interaction, parts: list[str]) -> None:
        live = await running_game(self.bot, interaction)
        current = self.recording.get(live.id)
        if (
            parts[0] != str(live.id)
            or current is None
            or (len(parts) > 1 and parts[1] != current[0])
        ):
            raise UserError("error.no_recording")
        speaker, recorder = current
        if str(interaction.user.id) != speaker:
            await require_host(self.bot, interaction, live)
        recorder.stop()
        text = phrase(seen_by(live, interaction), "lastword.stopping")
        await interaction.response.send_message(text, ephemeral=True)

    # ------------------------------------------------------------------ the queue

    def _busy(self, game_id: int, player: str) -> bool:
        queued = any(r.player == player for r in self.queues.get(game_id, []))
        return queued or self.current.get(game_id) == player

    async def _queue(self, interaction: discord.Interaction, live: LiveGame, player: str) -> None:
        game = live.game
        assert game is not None
        game.check(RequestLastWord(player))
        self.bot.powers.refuse(live, RequestLastWord(player))
        if not live.record.channels.get("voice"):
            raise UserError("error.no_tribune")
        if self._busy(live.id, player):
            raise UserError("error.lastword_queued")
        if (live.id, player) in self.uploading:
            raise UserError("error.lastword_uploading")
        queue = self.queues.setdefault(live.id, [])
        queue.append(Request(live.id, player))
        ahead = len(queue) - 1 + (1 if live.id in self.current else 0)
        worker = self.workers.get(live.id)
        if worker is None or worker.done():
            self.workers[live.id] = asyncio.create_task(
                self._work(live.id), name=f"lastword-{live.id}"
            )
        await interaction.response.send_message(
            phrase(seen_by(live, interaction), "lastword.queued", ahead=ahead), ephemeral=True
        )

    async def _work(self, game_id: int) -> None:
        queue = self.queues.setdefault(game_id, [])
        guild_id: int | None = None
        try:
            while queue:
                request = queue.pop(0)
                try:
                    live = self.bot.service.live(game_id)
                except NoGame:
                    return
                guild_id = live.record.guild_id
                self.current[game_id] = request.player
                try:
                    await self._record(live, request)
                except Exception:
                    log.exception("last word of %s in game %s failed", request.player, game_id)
                    await self._disconnect(guild_id)
                    await self._announce(
                        live,
                        phrase(live, "lastword.technical", player=mention(request.player)),
                        request.player,
                    )
                finally:
                    self.current.pop(game_id, None)
        finally:
            if guild_id is not None:
                await self._disconnect(guild_id)

    async def _disconnect(self, guild_id: int) -> None:
        """Leave the tribune (a failed connection is dropped, the next one starts afresh)."""
        await tribune.leave(self.bot, guild_id)

    async def _connect(self, live: LiveGame, *, fresh: bool = False) -> ReceivingVoiceClient:
        """The bot in the game's tribune (``fresh``: a new connection, the dropped one given up)."""
        return await tribune.join(
            self.bot,
            live.record.guild_id,
            int(live.record.channels["voice"]),
            clock=self.clock,
            timeout=float(self.bot.config.last_word.dave_timeout),
            fresh=fresh,
        )

    async def _record(self, live: LiveGame, request: Request) -> None:
        game = live.game
        player = request.player
        assert game is not None
        reason = interruption(live, player)
        if reason is not None:
            await self._announce(live, cancelled_text(live, player, reason), player)
            return
        if (held := self.bot.powers.standstill(live, RequestLastWord(player))) is not None:
            text = phrase(live, "lastword.held", player=mention(player), **held.params)
            await self._announce(live, text, player)  # it stood still while he waited his turn
            return
        key = last_word_hold(player)
        self.bot.service.hold(live.id, key)
        try:
            await self._record_held(live, player, game.options.last_word_seconds)
        finally:
            await self.bot.service.release(live.id, key)

    async def _record_held(self, live: LiveGame, player: str, limit: int) -> None:
        """Join, record and post one last word while the day's end waits."""
        token = secrets.token_hex(4)
        try:
            voice = await self._connect(live)
        except Exception as error:
            log.warning("game %s: cannot join the tribune: %r", live.id, error)
            await self._disconnect(live.record.guild_id)
            await self._announce(
                live, phrase(live, "lastword.technical", player=mention(player)), player
            )
            return
        reason = interruption(live, player)  # the game went on while the bot joined
        if reason is not None:
            await self._disconnect(live.record.guild_id)
            await self._announce(live, cancelled_text(live, player, reason), player)
            return
        channels = city_channels(live, player)
        refs = line_refs(f"lastword:{player}:{token}", len(channels))
        # The .part exists before the line naming him: a restart finds every line to correct.
        part = self.folder / f"{live.id}-{player}-{token}.ogg.part"
        result, info = await self._take(live, player, limit, voice, part, channels, refs)
        duration = info.duration_secs if info is not None else 0.0
        log.info(
            "game %s: last word of %s: %s (%s), %.1f s, %d reconnects, %d absences",
            live.id,
            player,
            result.outcome.value,
            result.detail,
            duration,
            result.reconnects,
            result.absences,
        )
        reason = interruption(live, player)
        if reason is not None:
            posted = info if result.packets_written else None
            await self._cut_short(live, player, part, posted, channels, refs, reason)
            return
        final = outcome_message(live, player, result, duration)
        for each in refs:
            await self._post_now(live, Edit(each, final).item())
        await self._keep(live, player, token, part, result, info, (channels, refs))

    async def _take(
        self,
        live: LiveGame,
        player: str,
        limit: int,
        voice: ReceivingVoiceClient,
        part: Path,
        channels: list[int],
        refs: list[str],
    ) -> tuple[RecordingResult, RecordingInfo | None]:
        """Call him and record him into ``part``, written to the disk when it ends; the file is
        removed if the recording fails, kept if the process is going down."""
        handle = part.open("wb")
        sink = OggSink(handle, float(limit))
        recorder = self._recorder(live, player, limit, voice, sink, refs)
        self.recording[live.id] = (player, recorder)
        try:
            try:
                await self._call(live, player, limit, channels, refs)
                result = await recorder.run()
                info = sink.close(result.end_position)
                handle.flush()
                os.fsync(handle.fileno())
            finally:
                self.recording.pop(live.id, None)
                handle.close()
        except asyncio.CancelledError:
            # The process is going down: the .part tells the next start that
            # this last word was interrupted (it is not used up).
            raise
        except BaseException:
            part.unlink(missing_ok=True)
            raise
        return result, info

    def _recorder(
        self,
        live: LiveGame,
        player: str,
        limit: int,
        voice: ReceivingVoiceClient,
        sink: OggSink,
        refs: list[str],
    ) -> Recorder:
        """The recorder of his last word: its clock on his lines, his absences told, the
        tribune joined again when the bot's connection drops."""
        config = self.bot.config.last_word

        async def progress(elapsed: float) -> None:
            # awaited by the recorder: stored before any later edit of the same line
            for each in refs:
                await self._post_now(
                    live,
                    Edit(
                        each, progress_message(live, player, elapsed, limit, recording=True)
                    ).item(),
                )

        async def absence(away: bool) -> None:
            key = "lastword.stepped_out" if away else "lastword.back"
            await self._announce(
                live, phrase(live, key, player=mention(player), seconds=config.leave_grace), player
            )

        async def reconnect() -> ReceivingVoiceClient:
            return await self._connect(live, fresh=True)

        return Recorder(
            voice,
            int(player),
            sink,
            max_seconds=float(limit),
            clock=self.clock,
            join_timeout=float(config.join_timeout),
            dave_timeout=float(config.dave_timeout),
            on_progress=progress,
            progress_interval=float(config.progress_every),
            leave_grace=float(config.leave_grace),
            on_absence=absence,
            reconnect=reconnect,
            reconnect_attempts=config.reconnect_attempts,
            reconnect_backoff=self.reconnect_backoff,
            reconnect_give_up=float(config.reconnect_give_up),
        )

    async def _call(
        self, live: LiveGame, player: str, limit: int, channels: list[int], refs: list[str]
    ) -> None:
        """He is called where his city and the cities voting on him can hear, pinged."""
        calling = progress_message(live, player, 0.0, limit, recording=False)
        if pings_on(live) and await self.bot.service.wants_pings(int(player)):
            calling["allowed_mentions"] = {"parse": [], "users": [player]}
        for channel, each in zip(channels, refs, strict=True):
            await self._post_now(live, Send(calling, channel, ref=each).item())

    async def _keep(
        self,
        live: LiveGame,
        player: str,
        token: str,
        part: Path,
        result: RecordingResult,
        info: RecordingInfo | None,
        lines: tuple[list[int], list[str]],
    ) -> None:
        """What becomes of a finished recording: posted as his last word; nothing said, his
        last word given in silence; a technical failure, his last word kept for another try;
        the rules refusing it now (the game moved on meanwhile), cut short after all."""
        if result.technical_failure:
            part.unlink(missing_ok=True)
            if result.outcome is not RecordingOutcome.no_audio:
                await self._disconnect(live.record.guild_id)
            await self._announce(
                live, phrase(live, "lastword.technical", player=mention(player)), player
            )
            return
        if info is None or result.packets_written == 0:
            part.unlink(missing_ok=True)
            with contextlib.suppress(RuleError, NoGame):  # he had his chance and said nothing
                await self.bot.service.apply(live.id, RequestLastWord(player), source="player")
            return
        try:
            audio = part.read_bytes()
            await publish(
                self.bot.service,
                self.folder,
                live,
                player,
                token,
                audio,
                info.duration_secs,
                info.waveform,
            )
        except (RuleError, NoGame):
            reason = interruption(live, player) or "moved_on"
            await self._cut_short(live, player, part, info, *lines, reason)
            return
        except BaseException as error:
            # Cancelled before the commit: the .part stays for the next start to report.
            if not isinstance(error, asyncio.CancelledError) or has_spoken(live, player):
                part.unlink(missing_ok=True)
            raise
        part.unlink(missing_ok=True)

    async def _cut_short(
        self,
        live: LiveGame,
        player: str,
        part: Path,
        info: RecordingInfo | None,
        channels: list[int],
        refs: list[str],
        reason: str,
    ) -> None:
        """A recording the game cut short: told and posted at once (:func:`cut_short_items`);
        the bot leaves the tribune unless someone waits for it."""
        await self._post_now(
            live, *cut_short_items(live, player, part, info, channels, refs, reason)
        )
        part.unlink(missing_ok=True)
        if not self.queues.get(live.id):
            await self._disconnect(live.record.guild_id)

    # ------------------------------------------------------------------ posting

    async def post_recording(self, item: OutboxItem) -> int | None:
        """The outbox handler of ``voice`` items: a voice message, else a plain attachment."""
        return await post_voice(self.bot.http, item)

    async def _post_now(self, live: LiveGame, *items: OutboxItem) -> None:
        await self.bot.storage.add_outbox(live.id, list(items))
        self.bot.outbox.kick(live.id)

    async def _announce(self, live: LiveGame, text: str, player: str) -> None:
        """A line where his last word is called: his city's channel and the cities voting on him."""
        for item in announce_items(live, text, player):
            await self._post_now(live, item)


async def setup(bot: ProkuratorBot) -> None:
    """Load the cog."""
    await bot.add_cog(LastWordCog(bot))


__all__ = ["LastWordCog", "PreparedAudio", "clock_text"]
