"""The last word under real-world voice conditions, end to end (issue 11).

The real bot records a nominee through the fake Discord and the fake voice
server while his client reconnects, while a client without DAVE joins and
leaves (the call drops to transport-only encryption and comes back), while
others join and leave (MLS epochs change), with duplicated packets and the
SFU's silence frames. What is checked is the posted file: its packets, their
places on the timeline, its decoded audio, its length.

Three-minute speeches run on the voice server's media clock: the speaker
sends as fast as the bot reads, the bot stamps arrivals with the same clock,
so three minutes take a couple of seconds (tests/fakediscord/voice.py,
MediaClock).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence

from bot.voice.recorder import Recorder
from tests.fakediscord.voice import FakeSpeaker, SentPacket
from tests.voice.speech import opus_packets
from tests.voice.test_ogg import audio_packets
from tests.voice.test_upload import opus_head
from tests.voice.tribune import (
    FRAME,
    PRE_SKIP,
    RATE,
    SILENCE_FRAMES,
    Tribune,
    decode,
    decode_raw,
    ru,
    tribune,
)

TOLERANCE = 0.1
"""Seconds: how far the file may be from what was sent (the acceptance's 100 ms)."""


def mention(player: str) -> str:
    return f"<@{player}>"


def speech(count: int, offset: int = 0) -> list[bytes]:
    """``count`` packets (20 ms each) of the speech fixture, looped."""
    source = opus_packets()
    return [source[(offset + i) % len(source)] for i in range(count)]


def timeline(ogg: bytes) -> list[tuple[int, bytes]]:
    """Every audio packet of a file with its start, in samples of playable time."""
    placed: list[tuple[int, bytes]] = []
    granule = 0
    for packet in audio_packets(ogg):
        placed.append((granule - PRE_SKIP, packet))
        granule += SILENCE_FRAMES.get(packet, FRAME)
    return placed


def spoken(ogg: bytes) -> list[tuple[int, bytes]]:
    """The packets of a file that are not the writer's silence, with their starts."""
    return [(start, packet) for start, packet in timeline(ogg) if packet not in SILENCE_FRAMES]


def recorder_of(tb: Tribune) -> Recorder:
    return tb.cog.recording[tb.live.id][1]


class Background:
    """Things started while he speaks and awaited later (their tasks are kept)."""

    def __init__(self) -> None:
        self.tasks: list[asyncio.Task[object]] = []

    def start(self, action: Callable[[], Awaitable[object]]) -> Callable[[], None]:
        def hook() -> None:
            self.tasks.append(asyncio.ensure_future(action()))

        return hook

    async def settle(self) -> None:
        await asyncio.gather(*self.tasks)


async def posted(tb: Tribune) -> bytes:
    """Stop him, wait for the one voice message, return its file."""
    await tb.stop()
    await tb.finished(timeout=30)
    voice = await tb.voice_message()
    assert len(tb.voice_messages()) == 1
    assert tb.used_up()
    ogg = voice.attachments[0].data
    _, channels, pre_skip, rate, _, _ = opus_head(ogg)
    assert (channels, pre_skip, rate) == (1, PRE_SKIP, RATE), "mono 48 kHz, as Discord records"
    return ogg


def assert_segments_where_sent(
    ogg: bytes, segments: Sequence[Sequence[SentPacket]], started: float
) -> list[tuple[int, bytes]]:
    """One file with every packet sent, in order, and nothing else; each stretch where it
    was said: its first packet where it was sent (``started``: the recording's start), the
    rest 20 ms apart. Returns the file's spoken packets with their starts."""
    sent = [packet for segment in segments for packet in segment]
    words = spoken(ogg)
    assert [packet for _, packet in words] == [packet.opus for packet in sent]
    index = 0
    for segment in segments:
        first = words[index][0] / RATE
        assert abs(first - (segment[0].sent_at - started)) < TOLERANCE
        starts = [start for start, _ in words[index : index + len(segment)]]
        assert [b - a for a, b in zip(starts, starts[1:], strict=False)] == [FRAME] * (
            len(segment) - 1
        )
        index += len(segment)
    return words


def assert_decodes_to(ogg: bytes, packets: Sequence[bytes]) -> None:
    """The file decodes sample for sample as the packets (in the file's order) do."""
    decoded = decode(ogg)
    reference = decode_raw(list(packets))[PRE_SKIP:]
    assert len(decoded) >= len(reference) - FRAME
    usable = min(len(decoded), len(reference))
    assert decoded[:usable] == reference[:usable]


async def test_a_nominee_who_reconnects_twice_gets_one_recording_of_all_he_said() -> None:
    async with tribune() as tb:
        await tb.ask()
        nominee = await tb.join()
        client = await tb.recording()
        recorder = recorder_of(tb)
        started = recorder.recording_started
        before = client.receiver.stats.delivered

        # Three minutes of a last word: 58 s, a reconnect, 58 s, a reconnect, 58 s.
        segments: list[list[SentPacket]] = []
        ssrcs: list[int] = []
        for part in range(3):
            if part:
                await nominee.reconnect(away=2.0)
                await nominee.wait_in_group()
            ssrcs.append(nominee.ssrc)
            segments.append(await nominee.play(speech(2900, offset=400 * part)))
        sent = [packet for segment in segments for packet in segment]
        await tb.delivered(client, before + len(sent), timeout=20)
        assert len(sent) == 3 * 2900 and len(set(ssrcs)) == 3
        assert client.receiver.stats.dave_errors == 0
        ogg = await posted(tb)

        words = assert_segments_where_sent(ogg, segments, started)
        # What he said runs as long in the file as it did when sent.
        said_in_file = (words[-1][0] + FRAME - words[0][0]) / RATE
        said_when_sent = sent[-1].sent_at + 0.02 - sent[0].sent_at
        assert abs(said_in_file - said_when_sent) < TOLERANCE
        assert said_when_sent > 175.0, "three minutes, two reconnects of two seconds"
        # The whole file: from the start of recording to the Stop press just after his last word.
        duration = len(decode(ogg)) / RATE
        assert (sent[-1].sent_at + 0.02 - started) - TOLERANCE < duration <= 180.0
        line = tb.table.fake.message((await tb.calling_message()).id)
        assert line.content.startswith(
            ru("lastword.outcome.stopped", player=mention(tb.nominee), length="")[:-3]
        )


async def test_a_client_without_dave_coming_and_going_leaves_no_ciphertext_in_the_file() -> None:
    async with tribune(transition_lag=15, transition_delay=0.3) as tb:
        await tb.ask()
        nominee = await tb.join()
        client = await tb.recording()
        server = tb.server
        connection = client._connection
        background = Background()
        legacy: list[FakeSpeaker] = []
        talker = int(tb.others()[0])

        async def legacy_joins() -> None:
            legacy.append(await tb.join(talker, dave=False))

        async def downgraded() -> None:
            await background.settle()
            await tb.table.fake.wait_until(
                lambda: (
                    connection.dave_protocol_version == 0
                    and server.downgrades
                    and server.downgrades[0] in server.executed_at
                ),
                5,
                "the call never went transport-only",
            )

        async def legacy_leaves() -> None:
            await tb.leave(legacy[0])

        async def upgraded() -> None:
            await background.settle()
            await tb.table.fake.wait_until(client.dave_ready, 5, "the call never came back to DAVE")

        sent = await nominee.play(
            speech(3000),
            at={
                300: background.start(legacy_joins),
                900: downgraded,
                1200: background.start(legacy_leaves),
                2200: upgraded,
            },
        )
        await tb.delivered(client, len(sent), timeout=20)
        stats = client.receiver.stats
        assert stats.dave_errors == 0
        ogg = await posted(tb)

        # Encrypted, plain, encrypted: and frames were still encrypted after the
        # downgrade had executed (in flight), still plain after the upgrade had.
        kinds = [packet.encrypted for packet in sent]
        assert kinds[0] and kinds[-1] and False in kinds
        downgrade_at = server.executed_at[server.downgrades[0]]
        upgrade_at = server.executed_at[max(server.executed_at)]
        assert [p for p in sent if p.encrypted and downgrade_at < p.sent_at < upgrade_at]
        assert [p for p in sent if not p.encrypted and p.sent_at > upgrade_at]

        # No raw DAVE frame in the file: it holds exactly his Opus, and decodes as it.
        everything = [packet for _, packet in timeline(ogg)]
        assert not [p for p in everything if p.endswith(b"\xfa\xfa")]
        assert [packet for _, packet in spoken(ogg)] == [packet.opus for packet in sent]
        assert_decodes_to(ogg, everything)


async def test_epoch_changes_duplicates_and_sfu_silence_mid_speech_lose_nothing() -> None:
    async with tribune(transition_lag=10) as tb:
        await tb.ask()
        nominee = await tb.join()
        client = await tb.recording()
        session = client._connection.dave_session
        assert session is not None and session.epoch is not None
        epoch = session.epoch
        background = Background()
        neighbours: list[FakeSpeaker] = []
        others = tb.others()

        async def joins(user: str) -> None:
            neighbours.append(await tb.join(int(user)))

        async def leaves() -> None:
            await tb.leave(neighbours[0])

        async def epoch_is(expected: int) -> None:
            await background.settle()
            await tb.table.fake.wait_until(
                lambda: session.epoch == expected, 5, f"epoch {session.epoch}, not {expected}"
            )

        sent = await nominee.play(
            speech(2500),
            duplicate=set(range(100, 2500, 97)),
            sfu_silence=range(1500, 1560),
            at={
                200: background.start(lambda: joins(others[0])),
                600: lambda: epoch_is(epoch + 1),
                700: background.start(lambda: joins(others[1])),
                1100: lambda: epoch_is(epoch + 2),
                1200: background.start(leaves),
                1700: lambda: epoch_is(epoch + 3),
            },
        )
        await tb.delivered(client, len(sent), timeout=20)
        stats = client.receiver.stats
        assert stats.dave_errors == 0
        assert stats.duplicates == len(range(100, 2500, 97))
        ogg = await posted(tb)

        assert session.epoch == epoch + 3
        assert all(p.encrypted for p in sent if p.opus != b"\xf8\xff\xfe")
        # Every packet once, the SFU's silence where he was muted, nothing lost.
        placed = timeline(ogg)
        first = next(i for i, (_, p) in enumerate(placed) if p not in SILENCE_FRAMES)
        assert [packet for _, packet in placed[first : first + len(sent)]] == [
            packet.opus for packet in sent
        ]
        starts = [start for start, _ in placed[first : first + len(sent)]]
        assert [b - a for a, b in zip(starts, starts[1:], strict=False)] == [FRAME] * (
            len(sent) - 1
        )
        assert_decodes_to(ogg, [packet for _, packet in placed])
