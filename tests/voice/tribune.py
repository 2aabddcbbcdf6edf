"""The last word end to end: the real bot, the fake Discord and the fake voice server.

:func:`tribune` starts a one-city game against a :class:`FakeVoiceServer`, a
player nominates another, and yields a :class:`Tribune` that knows the
nominee, his city channel, the bot's voice client and the last-word cog.
The helpers wait on conditions (with timeouts), never on fixed sleeps.
"""

from __future__ import annotations

import array
import asyncio
import contextlib
import io
import math
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import Any

import av

from bot.config import Config, LastWord
from bot.i18n import t
from bot.service import LiveGame
from bot.voice.ogg import SILENCE_FRAME
from bot.voice.receiver import ReceivingVoiceClient
from cogs.lastword import LastWordCog
from tests.fakediscord import InteractionResult, Message
from tests.fakediscord.voice import FakeSpeaker, FakeVoiceServer, SentPacket
from tests.harness import NO_TIMERS, Table, bot_table
from tests.voice.test_ogg import audio_packets

VOICE_MESSAGE = 1 << 13
RATE = 48_000
FRAME = 960
PRE_SKIP = 312
#: Opus silence frames the Ogg writer fills gaps with, by their length in samples.
SILENCE_FRAMES = {
    SILENCE_FRAME: 960,
    b"\xf0\xff\xfe": 480,
    b"\xe8\xff\xfe": 240,
    b"\xe0\xff\xfe": 120,
}
#: Fast enough for tests, long enough for the recorder's waits.
FAST = LastWord(join_timeout=5, dave_timeout=5, progress_every=1)


def ru(key: str, **params: Any) -> str:
    """A catalogue text in the game's language (the standard guild is Russian)."""
    return t("ru", key, **params)


@dataclass
class Tribune:
    """A running game with a nominee, and the voice server of its tribune."""

    table: Table
    server: FakeVoiceServer
    live: LiveGame
    nominee: str
    """Player id (Discord user id as text) of the nominee."""
    nominator: str
    speakers: dict[int, FakeSpeaker] = field(default_factory=dict)
    home: int = field(init=False, default=0)
    """His city's channel (known once the game is over too)."""

    def __post_init__(self) -> None:
        self.wire()
        self.home = self.table.city_channel(self.city)

    def wire(self) -> None:
        """Run the bot's recordings on the voice server's clock, and let it pace its speakers.

        The speakers then send faster than real time and the bot receives as
        in real time (see :class:`tests.fakediscord.voice.MediaClock`).
        """
        self.cog.clock = self.server.clock
        self.server.receipts = self.datagrams_read
        self.server.ssrc_known = self.ssrc_known

    def ssrc_known(self, user_id: int, ssrc: int) -> bool:
        """Whether the bot's voice client knows that ``user_id`` speaks on ``ssrc``."""
        client = self.voice_client()
        return client is not None and client.speakers.ssrc_for(user_id) == ssrc

    def datagrams_read(self) -> int | None:
        """How many datagrams the bot's voice client has read (None while it has none)."""
        client = self.voice_client()
        return client.receiver.stats.datagrams if client is not None else None

    # who and where ---------------------------------------------------------------------

    @property
    def cog(self) -> LastWordCog:
        # The bot loads cogs/lastword.py as an extension: a module object of its
        # own, so its class is not the one this file imports.
        cog = self.table.bot.get_cog("LastWordCog")
        assert cog is not None and type(cog).__name__ == "LastWordCog"
        return cog  # type: ignore[return-value]

    @property
    def nominee_id(self) -> int:
        return int(self.nominee)

    @property
    def city(self) -> str:
        return self.table.game.city_of(self.nominee)

    @property
    def city_channel(self) -> int:
        return self.home

    @property
    def voice_channel(self) -> int:
        return int(self.live.record.channels["voice"])

    @property
    def folder(self) -> Path:
        return self.cog.folder

    def others(self) -> list[str]:
        """Living players other than the nominee and the nominator."""
        return [p for p in self.table.game.alive() if p not in (self.nominee, self.nominator)]

    def voice_client(self) -> ReceivingVoiceClient | None:
        guild = self.table.bot.get_guild(self.table.guild_id)
        client = guild.voice_client if guild is not None else None
        return client if isinstance(client, ReceivingVoiceClient) else None

    # messages --------------------------------------------------------------------------

    def city_messages(self) -> list[Message]:
        """What the bot posted in the nominee's city channel (not interaction answers)."""
        return self.table.fake.messages(self.city_channel, kind="channel")

    def voice_messages(self) -> list[Message]:
        return [m for m in self.city_messages() if m.flags & VOICE_MESSAGE]

    def with_attachments(self) -> list[Message]:
        return [m for m in self.city_messages() if m.attachments]

    def containing(self, text: str) -> list[Message]:
        return [m for m in self.city_messages() if text in m.content]

    async def calling_message(self, timeout: float = 5.0) -> Message:
        """The line naming the speaker, with the Stop button, once posted."""
        custom_id = f"mafia:stop:{self.live.id}:{self.nominee}"

        def lines() -> list[Message]:
            return [m for m in self.city_messages() if custom_id in str((m.components, m.edits))]

        found = await self.table.fake.wait_until(
            lines, timeout, "the speaker's line with the Stop button was never posted"
        )
        return found[-1]

    # acting ----------------------------------------------------------------------------

    async def ask(self, who: str | None = None) -> InteractionResult:
        """``/lastword speak`` by the nominee (or someone else)."""
        return await self.table.slash(self.table.name(who or self.nominee), "lastword speak")

    async def join(self, user_id: int | None = None, *, dave: bool = True) -> FakeSpeaker:
        """A member comes into the tribune: main gateway voice state, then the voice server.

        ``dave=False``: his client does not support end-to-end encryption.
        """
        user = user_id if user_id is not None else self.nominee_id
        self.table.fake.set_voice_state(self.table.guild_id, user, self.voice_channel)
        speaker = self.server.add_speaker(user, channel_id=self.voice_channel, dave=dave)
        self.speakers[user] = speaker
        return speaker

    async def leave(self, speaker: FakeSpeaker) -> None:
        await speaker.leave()
        self.table.fake.set_voice_state(self.table.guild_id, speaker.user_id, None)

    async def recording(self, timeout: float = 10.0) -> ReceivingVoiceClient:
        """Wait until the recorder records the nominee (he is there, DAVE is settled)."""

        def started() -> ReceivingVoiceClient | None:
            client = self.voice_client()
            if client is not None and client.receiver.is_registered(self.nominee_id):
                return client
            return None

        return await self.table.fake.wait_until(started, timeout, "the recording never started")

    async def delivered(
        self, client: ReceivingVoiceClient, total: int, timeout: float = 10.0
    ) -> None:
        """Wait until the bot has taken ``total`` packets of recorded users on this connection."""
        await self.table.fake.wait_until(
            lambda: client.receiver.stats.delivered >= total,
            timeout,
            f"the bot took {client.receiver.stats.delivered} packets, not {total}: "
            f"{client.receiver.stats}",
        )

    async def speak_fast(
        self,
        speaker: FakeSpeaker,
        packets: Sequence[bytes],
        client: ReceivingVoiceClient,
        *,
        burst: int = 50,
        timeout: float = 5.0,
    ) -> list[SentPacket]:
        """Send packets far faster than real time (on the call's clock, as in real time).

        In bursts; after each, wait until the bot has taken it (or stopped
        recording). Stops once the recording has ended; returns what was sent.
        """
        sent: list[SentPacket] = []
        base = client.receiver.stats.delivered
        loop = asyncio.get_running_loop()
        for start in range(0, len(packets), burst):
            if not self.is_recording():
                break
            sent += await speaker.play(packets[start : start + burst])
            deadline = loop.time() + timeout
            while client.receiver.stats.delivered < base + len(sent) and self.is_recording():
                if loop.time() > deadline:
                    raise TimeoutError(
                        f"the bot took {client.receiver.stats.delivered - base} "
                        f"of {len(sent)} packets"
                    )
                await asyncio.sleep(0.002)
        return sent

    def is_recording(self) -> bool:
        return self.live.id in self.cog.recording

    async def progress_shown(self, timeout: float = 10.0) -> Message:
        """Wait until the live "recording m:ss / m:ss" line is on the speaker's message."""
        message = await self.calling_message()
        marker = ru("lastword.recording", player=f"<@{self.nominee}>", elapsed="", limit="")[:12]
        await self.table.fake.wait_until(
            lambda: marker in message.content, timeout, "the live progress line was never shown"
        )
        return message

    async def stop(self, who: str | None = None) -> InteractionResult:
        """Press Stop on the speaker's line (as the nominee unless ``who``)."""
        message = await self.calling_message()
        user = self.table.member(who).user.id if who is not None else self.nominee_id
        return await self.table.fake.click(
            message, f"mafia:stop:{self.live.id}:{self.nominee}", user
        )

    async def finished(self, timeout: float = 15.0) -> None:
        """Wait until the game's last-word worker has nothing left, then drain the outbox."""
        worker = self.cog.workers.get(self.live.id)
        if worker is not None:
            await self.table.fake.wait_until(
                worker.done, timeout, "the last-word worker never finished"
            )
        await self.table.drain()

    async def voice_message(self, timeout: float = 10.0) -> Message:
        """Wait for the (single) native voice message in the nominee's city channel."""
        return await self.table.fake.wait_until(
            lambda: self.voice_messages()[-1] if self.voice_messages() else None,
            timeout,
            "no voice message was posted",
        )

    def used_up(self) -> bool:
        return self.nominee in self.table.game.last_words


def quick_edits(table: Table) -> None:
    """Edits of one message go out 50 ms apart, not 1.5 s (these tests are not about coalescing)."""
    table.bot.outbox.edit_interval = 0.05


async def start_game(
    table: Table, *, last_word_seconds: int | None = None, cities: str = "Верона"
) -> tuple[LiveGame, str, str]:
    """A game (one city unless ``cities`` names more); the first living player nominates the
    second, or, with two cities or more, the first player of the first city nominates the first
    of the second (a cross-city nomination)."""
    quick_edits(table)
    setup: dict[str, Any] = {"cities": cities}
    if last_word_seconds is not None:
        setup["last_word_seconds"] = last_word_seconds
    live = await table.new_game(**setup)
    nominator, nominee = table.game.alive()[:2]
    if len(table.game.cities) > 1:
        first, second = table.game.cities[:2]
        nominator, nominee = table.game.alive(first)[0], table.game.alive(second)[0]
    nominated = await table.slash(table.name(nominator), "nominate", {"player": nominee})
    assert nominated.ephemeral and table.game.nominations, nominated.content
    await table.drain()
    return live, nominee, nominator


@contextlib.asynccontextmanager
async def tribune(
    *,
    players: int = 8,
    last_word: LastWord = FAST,
    last_word_seconds: int | None = None,
    refusals: bool = False,
    cities: str = "Верона",
    language: str = "ru",
    **server_options: Any,
) -> AsyncIterator[Tribune]:
    """A game with a nominee, the bot and a fake voice server for its tribune (``refusals``: as
    for :func:`tests.harness.bot_table`; ``language``: the bot's on that server, set by the
    host before the game)."""
    server = FakeVoiceServer(**server_options)
    await server.start()
    try:
        config = Config(timers=NO_TIMERS, last_word=last_word)
        async with bot_table(players=players, config=config, refusals=refusals) as table:
            table.fake.voice_server = server
            if language != "ru":
                chosen = await table.slash("host", "admin language", {"language": language})
                await chosen.wait_final()
            live, nominee, nominator = await start_game(
                table, last_word_seconds=last_word_seconds, cities=cities
            )
            tribune = Tribune(table, server, live, nominee, nominator)
            try:
                yield tribune
            finally:
                worker = tribune.cog.workers.get(live.id)
                if worker is not None and not worker.done():
                    worker.cancel()
                    with contextlib.suppress(BaseException):
                        await worker
    finally:
        await server.close()


# --------------------------------------------------------------------------
# Audio


def leading_silence(packets: Sequence[bytes]) -> tuple[int, int]:
    """(silence packets, their samples) at the start of a recording's audio packets."""
    count = samples = 0
    for packet in packets:
        if packet not in SILENCE_FRAMES:
            break
        count += 1
        samples += SILENCE_FRAMES[packet]
    return count, samples


def expected_packets(sent: Sequence[SentPacket]) -> list[bytes]:
    """What the Ogg file holds for these packets: in timestamp order, gaps as silence frames."""
    ordered = sorted(sent, key=lambda p: p.timestamp)
    result: list[bytes] = []
    for previous, packet in zip([None, *ordered], ordered, strict=False):
        if previous is not None:
            missing = (packet.timestamp - previous.timestamp - FRAME) // FRAME
            result.extend([SILENCE_FRAME] * missing)
        result.append(packet.opus)
    return result


def recorded_audio(ogg: bytes) -> tuple[list[bytes], int]:
    """The audio packets of a recording after its leading silence, and that silence in samples."""
    packets = audio_packets(ogg)
    count, samples = leading_silence(packets)
    return packets[count:], samples


def decode(ogg: bytes) -> array.array[float]:
    """Decode an Ogg Opus file with PyAV (pre-skip and end trimming applied); the first channel."""
    samples: array.array[float] = array.array("f")
    with av.open(io.BytesIO(ogg), "r") as container:
        for frame in container.decode(audio=0):
            assert frame.format.name == "fltp"
            samples.frombytes(bytes(frame.planes[0])[: frame.samples * 4])
    return samples


def decoded_length(ogg: bytes) -> int:
    """Samples PyAV decodes from an Ogg Opus file."""
    with av.open(io.BytesIO(ogg), "r") as container:
        return sum(frame.samples for frame in container.decode(audio=0))


def decode_raw(packets: Sequence[bytes], layout: str = "mono") -> array.array[float]:
    """Decode raw Opus packets with a fresh decoder (no pre-skip); the first channel.

    Mono by default, as a player decodes the bot's recordings (their OpusHead
    says one channel; stereo packets are mixed down by the decoder).
    """
    decoder = av.CodecContext.create("opus", "r")
    assert isinstance(decoder, av.AudioCodecContext)
    decoder.sample_rate = RATE
    decoder.layout = layout
    samples: array.array[float] = array.array("f")
    for packet in packets:
        for frame in decoder.decode(av.Packet(packet)):
            samples.frombytes(bytes(frame.planes[0])[: frame.samples * 4])
    return samples


def tone_packets(frequency: float, count: int, amplitude: float = 0.8) -> list[bytes]:
    """A loud sine as 20 ms stereo Opus packets (someone else talking in the channel)."""
    encoder = av.CodecContext.create("libopus", "w")
    assert isinstance(encoder, av.AudioCodecContext)
    encoder.sample_rate = RATE
    encoder.layout = "stereo"
    encoder.format = "s16"
    encoder.bit_rate = 96000
    encoder.options = {"frame_duration": "20", "application": "audio"}
    packets: list[bytes] = []
    for index in range(count + 2):
        pcm = array.array("h")
        for n in range(index * FRAME, (index + 1) * FRAME):
            value = int(amplitude * 32767 * math.sin(2 * math.pi * frequency * n / RATE))
            pcm.extend((value, value))
        frame = av.AudioFrame(format="s16", layout="stereo", samples=FRAME)
        frame.planes[0].update(pcm.tobytes())
        frame.sample_rate = RATE
        frame.pts = index * FRAME
        frame.time_base = Fraction(1, RATE)
        packets.extend(bytes(p) for p in encoder.encode(frame))
    return packets[:count]


def tone_share(samples: Sequence[float], frequency: float) -> float:
    """Share of the signal's power at ``frequency`` (Goertzel over the whole signal)."""
    coefficient = 2 * math.cos(2 * math.pi * frequency / RATE)
    previous = before = 0.0
    power = 0.0
    for x in samples:
        previous, before = x + coefficient * previous - before, previous
        power += x * x
    tone = previous * previous + before * before - coefficient * previous * before
    if power == 0:
        return 0.0
    return (2 * tone / len(samples)) / power


def peak(samples: Sequence[float]) -> float:
    return max((abs(x) for x in samples), default=0.0)


def envelope(samples: Sequence[float], window: int = 4800) -> list[float]:
    """RMS per window (100 ms at 48 kHz)."""
    return [
        math.sqrt(sum(x * x for x in samples[i : i + window]) / window)
        for i in range(0, len(samples) - window + 1, window)
    ]


def correlation(a: Sequence[float], b: Sequence[float]) -> float:
    """Pearson correlation of two sequences (cut to the shorter)."""
    n = min(len(a), len(b))
    a, b = a[:n], b[:n]
    mean_a, mean_b = sum(a) / n, sum(b) / n
    cov = sum((x - mean_a) * (y - mean_b) for x, y in zip(a, b, strict=True))
    var_a = sum((x - mean_a) ** 2 for x in a)
    var_b = sum((y - mean_b) ** 2 for y in b)
    return cov / math.sqrt(var_a * var_b)
