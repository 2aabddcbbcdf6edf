"""The last word: a nominee's defence, recorded in the tribune voice channel or uploaded.

``/lastword speak`` (or the "Last word" button on his nomination) queues the
nominee; one last word is recorded at a time per game. The bot joins the
game's voice channel, posts who speaks with a Stop button and a live
"recording 1:23 / 3:00" line, and records only the nominee's audio straight
into an Ogg Opus file, for at most ``last_word_seconds``. While he speaks
the day cannot end: a day's end (host or timer) waits for him.

A finished recording is written to disk first; then the rules' last-word
command is committed together with the outbox items that post it (a line
naming the speaker, then the file as a native voice message, or as a plain
attachment where Discord refuses voice messages). A crash therefore never
loses a finished last word and never posts it twice. A technical failure
(no voice connection, no audio, DAVE not ready) does not use up the last
word: the player is told to try again or to upload. ``/lastword upload``
takes his own recording, prepared in a worker thread.

The recording outlives the bot's own voice reconnects (Discord moving the
call to another voice server, a crashed one): the bot reconnects, up to
``last_word.reconnect_attempts`` fresh connections in a row, and the same
file goes on, the time away as silence; if every attempt fails, what was
said so far is posted. A nominee who steps out of the tribune has
``last_word.leave_grace`` seconds to come back to the same last word (his
cities are told both), the time away as silence too.

The file follows the recorder's timeline: the silence before his first word
is in it and counts towards the limit, so a full recording lasts exactly
``last_word_seconds``; a client that reconnects mid-speech (new SSRC, new
timestamps) gives one file, with the time he was away as silence. The file
is 48 kHz mono Ogg Opus, as Discord's clients record voice messages. Until his last word is committed the recording is a
``.part`` file; one that a stopped or killed process leaves behind is
reported at the next start (the line naming him says the recording was
interrupted, his city is told he may ask again) and dropped.
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
from typing import TYPE_CHECKING, Any

import discord
from discord import app_commands
from discord.ext import commands

from bot.errors import UserError
from bot.i18n import NO_PINGS, key_str, mention, phrase
from bot.limits import CITIES
from bot.service import LiveGame, NoGame
from bot.storage import OutboxItem
from bot.voice.receiver import ReceivingVoiceClient
from bot.voice.recorder import OggSink, Recorder, RecordingOutcome
from bot.voice.upload import PreparedAudio, UploadError, prepare_upload
from bot.voice.voice_message import post_audio_attachment, post_voice_message
from bot.wiring import Hooks
from cogs.common import player_of, require_host, running_game
from cogs.render import pings_on
from rules import RequestLastWord, RuleError

if TYPE_CHECKING:
    from bot.bot import ProkuratorBot

log = logging.getLogger(__name__)

MIB = 1024 * 1024


def clock_text(seconds: float) -> str:
    """``83.4`` → ``1:23``."""
    whole = int(seconds)
    return f"{whole // 60}:{whole % 60:02d}"


@dataclass
class Request:
    """A nominee waiting for the tribune."""

    game_id: int
    player: str


def _refs(first: str, count: int) -> list[str]:
    """The message names of one last word's line in each of ``count`` channels."""
    return [first] + [f"{first}:{n}" for n in range(1, count)]


def _has_spoken(live: LiveGame, player: str) -> bool:
    """Whether the rules have the player's last word of today (it is committed)."""
    return live.game is not None and player in live.game.last_words


class LastWordCog(commands.Cog):
    """``/lastword speak|upload``, the tribune, the Stop button and posting recordings."""

    lastword = app_commands.Group(
        name=key_str("lastword", "cmd.lastword.name"),
        description=key_str("Your last word before the execution", "cmd.lastword.description"),
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
        """The last word's and the Stop buttons; the outbox's ``voice`` items (recordings)."""
        return Hooks(
            components={"lastword": self._lastword_button, "stop": self._stop_button},
            outbox_handlers={"voice": self.post_recording},
        )

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
            for ref in _refs(
                f"lastword:{player}:{token}", CITIES
            ):  # one line per city it was told in
                await self._post_now(
                    live,
                    OutboxItem(
                        "edit",
                        {"ref": ref},
                        {
                            "content": phrase(
                                live, "lastword.outcome.interrupted", player=mention(player)
                            ),
                            "components": [],
                            "allowed_mentions": NO_PINGS,
                        },
                    ),
                )
            await self._announce(
                live, phrase(live, "lastword.interrupted", player=mention(player)), player
            )
        part.unlink(missing_ok=True)

    # ------------------------------------------------------------------ commands

    @lastword.command(
        name=key_str("speak", "cmd.lastword.speak.name"),
        description=key_str(
            "Speak your last word in the tribune voice channel", "cmd.lastword.speak.description"
        ),
    )
    async def speak(self, interaction: discord.Interaction) -> None:
        live = await running_game(self.bot, interaction)
        await self._queue(interaction, live, player_of(live, interaction))

    @lastword.command(
        name=key_str("upload", "cmd.lastword.upload.name"),
        description=key_str(
            "Post your own recording as your last word", "cmd.lastword.upload.description"
        ),
    )
    @app_commands.rename(file=key_str("file", "opt.file.name"))
    @app_commands.describe(
        file=key_str("ogg, opus, mp3, m4a, wav or webm; cut to the limit", "opt.file.description")
    )
    async def upload(self, interaction: discord.Interaction, file: discord.Attachment) -> None:
        live = await running_game(self.bot, interaction)
        player = player_of(live, interaction)
        game = live.game
        assert game is not None
        game.check(RequestLastWord(player))
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
        game = live.game
        assert game is not None
        await interaction.response.defer(ephemeral=True, thinking=True)
        key = f"upload:{player}"
        self.bot.service.hold(live.id, key)
        try:
            data = await file.read()
            prepared = await asyncio.to_thread(
                prepare_upload,
                data,
                file.filename,
                file.content_type,
                max_seconds=game.options.last_word_seconds,
            )
            text = await self._publish(
                live,
                player,
                secrets.token_hex(4),
                prepared.ogg_bytes,
                prepared.duration_secs,
                prepared.waveform,
                interaction_id=interaction.id,
            )
        except UploadError as error:
            log.info("upload of %s in game %s refused: %s (%s)", player, live.id, error.code, error)
            text = phrase(
                live, f"upload.{error.code}", limit=self.bot.config.last_word.max_upload_mib
            )
        except (RuleError, discord.HTTPException) as error:
            log.info("upload of %s in game %s failed: %s", player, live.id, error)
            text = phrase(live, "lastword.upload_failed")
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
        await interaction.response.send_message(phrase(live, "lastword.skipped"), ephemeral=True)

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
        await interaction.response.send_message(phrase(live, "lastword.stopping"), ephemeral=True)

    # ------------------------------------------------------------------ the queue

    def _busy(self, game_id: int, player: str) -> bool:
        queued = any(r.player == player for r in self.queues.get(game_id, []))
        return queued or self.current.get(game_id) == player

    async def _queue(self, interaction: discord.Interaction, live: LiveGame, player: str) -> None:
        game = live.game
        assert game is not None
        game.check(RequestLastWord(player))
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
            phrase(live, "lastword.queued", ahead=ahead), ephemeral=True
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
        guild = self.bot.get_guild(guild_id)
        voice = guild.voice_client if guild is not None else None
        if voice is not None:
            with contextlib.suppress(Exception):
                await voice.disconnect(force=True)

    async def _reconnect(self, live: LiveGame) -> ReceivingVoiceClient:
        """A fresh connection to the tribune, the dropped one given up first."""
        guild = self.bot.get_guild(live.record.guild_id)
        old = guild.voice_client if guild is not None else None
        if isinstance(old, ReceivingVoiceClient):
            await old.abandon()
        elif guild is not None:
            await self._disconnect(guild.id)
        return await self._connect(live)

    async def _connect(self, live: LiveGame) -> ReceivingVoiceClient:
        guild = self.bot.get_guild(live.record.guild_id)
        channel = guild.get_channel(int(live.record.channels["voice"])) if guild else None
        if guild is None or not isinstance(channel, discord.VoiceChannel):
            raise ConnectionError("the tribune voice channel is gone")
        voice = guild.voice_client
        if (
            isinstance(voice, ReceivingVoiceClient)
            and voice.channel == channel
            and voice.link_alive()
        ):
            voice.receiver.clock = self.clock
            return voice
        if voice is not None:
            await self._disconnect(guild.id)
        timeout = float(self.bot.config.last_word.dave_timeout)
        client = await channel.connect(
            cls=ReceivingVoiceClient, timeout=timeout, reconnect=False, self_mute=True
        )
        assert isinstance(client, ReceivingVoiceClient)
        client.receiver.clock = self.clock
        return client

    async def _record(self, live: LiveGame, request: Request) -> None:
        game = live.game
        player = request.player
        assert game is not None
        try:
            game.check(RequestLastWord(player))
        except RuleError as error:
            await self._announce(
                live,
                phrase(
                    live,
                    "lastword.cancelled",
                    player=mention(player),
                    reason=phrase(live, f"error.{error.code}", **error.params),
                ),
                player,
            )
            return
        key = f"lastword:{player}"
        self.bot.service.hold(live.id, key)
        try:
            await self._record_held(live, player, game.options.last_word_seconds)
        finally:
            await self.bot.service.release(live.id, key)

    async def _record_held(self, live: LiveGame, player: str, limit: int) -> None:
        """Join, record and post one last word while the day's end waits."""
        token = secrets.token_hex(4)
        ref = f"lastword:{player}:{token}"
        try:
            voice = await self._connect(live)
        except Exception as error:
            log.warning("game %s: cannot join the tribune: %r", live.id, error)
            await self._disconnect(live.record.guild_id)
            await self._announce(
                live, phrase(live, "lastword.technical", player=mention(player)), player
            )
            return
        config = self.bot.config.last_word

        channels = self._city_channels(live, player)
        refs = _refs(ref, len(channels))

        async def progress(elapsed: float) -> None:
            # awaited by the recorder: stored before any later edit of the same line
            for each in refs:
                await self._post_now(
                    live,
                    OutboxItem(
                        "edit",
                        {"ref": each},
                        self._progress_payload(live, player, elapsed, limit, recording=True),
                    ),
                )

        # The .part exists before the line naming him: a restart finds every line to correct.
        part = self.folder / f"{live.id}-{player}-{token}.ogg.part"
        handle = part.open("wb")
        sink = OggSink(handle, float(limit))

        async def absence(away: bool) -> None:
            key = "lastword.stepped_out" if away else "lastword.back"
            await self._announce(
                live, phrase(live, key, player=mention(player), seconds=config.leave_grace), player
            )

        async def reconnect() -> ReceivingVoiceClient:
            return await self._reconnect(live)

        recorder = Recorder(
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
        )
        self.recording[live.id] = (player, recorder)
        try:
            try:
                # he is called where his city and the cities voting on him can hear, pinged
                calling = self._progress_payload(live, player, 0.0, limit, recording=False)
                if pings_on(live) and await self.bot.service.wants_pings(int(player)):
                    calling["allowed_mentions"] = {"parse": [], "users": [player]}
                for channel, each in zip(channels, refs, strict=True):
                    await self._post_now(
                        live, OutboxItem("send", {"channel_id": channel, "ref": each}, calling)
                    )
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
        outcome = result.outcome
        duration = info.duration_secs if info is not None else 0.0
        log.info(
            "game %s: last word of %s: %s (%s), %.1f s, %d reconnects, %d absences",
            live.id,
            player,
            outcome.value,
            result.detail,
            duration,
            result.reconnects,
            result.absences,
        )
        key = f"lastword.outcome.{outcome.value}"
        if outcome is RecordingOutcome.connection_lost and not result.technical_failure:
            key = "lastword.outcome.connection_lost_kept"  # what he said is posted
        final = {
            "content": phrase(live, key, player=mention(player), length=clock_text(duration)),
            "components": [],
            "allowed_mentions": NO_PINGS,
        }
        for each in refs:
            await self._post_now(live, OutboxItem("edit", {"ref": each}, final))
        if result.technical_failure:
            part.unlink(missing_ok=True)
            if outcome is not RecordingOutcome.no_audio:
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
            await self._publish(
                live, player, token, part.read_bytes(), info.duration_secs, info.waveform
            )
        except (RuleError, NoGame) as error:
            part.unlink(missing_ok=True)
            reason = phrase(live, f"error.{getattr(error, 'code', 'no_game')}")
            await self._announce(
                live,
                phrase(live, "lastword.cancelled", player=mention(player), reason=reason),
                player,
            )
            return
        except BaseException as error:
            # Cancelled before the commit: the .part stays for the next start to report.
            if not isinstance(error, asyncio.CancelledError) or _has_spoken(live, player):
                part.unlink(missing_ok=True)
            raise
        part.unlink(missing_ok=True)

    # ------------------------------------------------------------------ posting

    async def _publish(
        self,
        live: LiveGame,
        player: str,
        token: str,
        audio: bytes,
        duration: float,
        waveform: str,
        *,
        interaction_id: int | None = None,
    ) -> str:
        """Store the file, then commit the last word with the items that post it."""
        path = self.folder / f"{live.id}-{player}-{token}.ogg"
        with path.open("wb") as handle:
            handle.write(audio)
            handle.flush()
            os.fsync(handle.fileno())
        items = []
        for channel in self._city_channels(live, player):
            items.append(
                OutboxItem(
                    "send",
                    {"channel_id": channel},
                    {
                        "content": phrase(
                            live,
                            "lastword.posted",
                            player=mention(player),
                            length=clock_text(duration),
                        ),
                        "allowed_mentions": NO_PINGS,
                    },
                )
            )
            items.append(
                OutboxItem(
                    "voice",
                    {"channel_id": channel},
                    {
                        "path": str(path),
                        "duration": duration,
                        "waveform": waveform,
                        "fallback": phrase(live, "lastword.attachment", player=mention(player)),
                        "keep": channel != self._city_channels(live, player)[-1],
                    },
                )
            )
        try:
            await self.bot.service.apply(
                live.id,
                RequestLastWord(player),
                source="player",
                interaction_id=interaction_id,
                extra_outbox=items,
            )
        except RuleError:
            path.unlink(missing_ok=True)  # refused before anything was stored: nothing refers to it
            raise
        except BaseException:
            if not _has_spoken(live, player):  # committed, then interrupted: the outbox posts it
                path.unlink(missing_ok=True)
            raise
        return phrase(live, "lastword.done")

    async def post_recording(self, item: OutboxItem) -> int | None:
        """The outbox handler of ``voice`` items: a voice message, else a plain attachment."""
        path = Path(item.payload["path"])
        if not path.exists():
            log.error("recording %s of outbox item %s is missing; nothing to post", path, item.id)
            return None
        audio = path.read_bytes()
        channel = int(item.target["channel_id"])
        nonce = f"ob{item.id}"
        try:
            message = await post_voice_message(
                self.bot.http,
                channel,
                audio,
                float(item.payload["duration"]),
                str(item.payload["waveform"]),
                nonce=nonce,
            )
        except discord.HTTPException as error:
            if error.status not in (400, 403):
                raise
            log.info("voice message refused (%s); posting the recording as an attachment", error)
            message = await post_audio_attachment(
                self.bot.http, channel, audio, str(item.payload.get("fallback") or ""), nonce=nonce
            )
        if not item.payload.get("keep"):  # the last city's post: the file is done with
            path.unlink(missing_ok=True)
        return int(message["id"])

    def _city_channels(self, live: LiveGame, player: str) -> list[int]:
        """Where a last word is called and posted: the cities voting on him (those that
        nominated him today), then his own city."""
        game = live.game
        assert game is not None
        voting = [city for city in game.cities if player in game.nominees(city)]
        cities = list(dict.fromkeys([*voting, game.city_of(player)]))
        return [int(live.record.channels["cities"][city]["text"]) for city in cities]

    def _progress_payload(
        self, live: LiveGame, player: str, elapsed: float, limit: int, *, recording: bool
    ) -> dict[str, Any]:
        key = "lastword.recording" if recording else "lastword.calling"
        content = phrase(
            live,
            key,
            player=mention(player),
            elapsed=clock_text(elapsed),
            limit=clock_text(limit),
            tribune=f"<#{live.record.channels.get('voice')}>",
        )
        return {
            "content": content,
            "allowed_mentions": NO_PINGS,
            "components": [
                {
                    "type": 1,
                    "components": [
                        {
                            "type": 2,
                            "style": 4,
                            "custom_id": f"mafia:stop:{live.id}:{player}",
                            "label": phrase(live, "lastword.stop"),
                        }
                    ],
                }
            ],
        }

    async def _post_now(self, live: LiveGame, item: OutboxItem) -> None:
        await self.bot.storage.add_outbox(live.id, [item])
        self.bot.outbox.kick(live.id)

    async def _announce(self, live: LiveGame, text: str, player: str) -> None:
        """A line where his last word is called: his city's channel and the cities voting on him."""
        if live.game is None or not live.record.channels or player not in live.game.players:
            return
        for channel in self._city_channels(live, player):
            await self._post_now(
                live,
                OutboxItem(
                    "send", {"channel_id": channel}, {"content": text, "allowed_mentions": NO_PINGS}
                ),
            )


async def setup(bot: ProkuratorBot) -> None:
    """Load the cog."""
    await bot.add_cog(LastWordCog(bot))


__all__ = ["LastWordCog", "PreparedAudio", "clock_text"]
