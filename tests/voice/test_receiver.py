"""The receive path (bot/voice/receiver.py): the real discord.py client, the fake voice server."""

from __future__ import annotations

import asyncio
import struct
from collections.abc import Awaitable, Callable
from dataclasses import replace

import pytest

from bot.voice.receiver import (
    DaveTransitions,
    ReceivedPacket,
    ReceivingVoiceClient,
    SpeakerDirectory,
    UserStats,
    _JitterBuffer,
)
from bot.voice.rtp import RTPHeader, build_rtpsize_packet
from tests.fakediscord.voice import FakeSpeaker, SentPacket
from tests.voice.speech import opus_packets
from tests.voice.test_fake_voice import (
    VoiceWorld,
    connected_with_dave,
    voice_world,
    wait_until,
)


class ListSink:
    """Keeps every packet it is given."""

    def __init__(self) -> None:
        self.packets: list[tuple[int, int, bytes]] = []
        self.received: list[ReceivedPacket] = []

    def write_packet(self, packet: ReceivedPacket) -> None:
        self.received.append(packet)
        self.packets.append((packet.sequence, packet.timestamp, packet.opus))


class BrokenSink(ListSink):
    """Fails on every third packet."""

    def write_packet(self, packet: ReceivedPacket) -> None:
        if packet.sequence % 3 == 0:
            raise OSError("disk full")
        super().write_packet(packet)


def on_the_call_clock(world: VoiceWorld, voice_client: ReceivingVoiceClient) -> None:
    """Stamp arrivals with the call's clock, and let the speakers pace themselves on the bot."""
    server = world.server
    receiver = voice_client.receiver
    receiver.clock = server.clock
    server.receipts = lambda: receiver.stats.datagrams


async def registered(
    world: VoiceWorld, *, call_clock: bool = False
) -> tuple[FakeSpeaker, ReceivingVoiceClient, ListSink, UserStats]:
    """The nominee in the call with DAVE settled, and a sink registered for him."""
    nominee = await world.join(world.nominee_id)
    voice_client = await connected_with_dave(world)
    if call_clock:
        on_the_call_clock(world, voice_client)
    await nominee.wait_in_group()
    sink = ListSink()
    stats = voice_client.receiver.register(world.nominee_id, sink)
    return nominee, voice_client, sink, stats


def as_written(sent: list[SentPacket]) -> list[tuple[int, int, bytes]]:
    return [(packet.sequence, packet.timestamp, packet.opus) for packet in sent]


async def test_only_the_registered_speaker_is_delivered_byte_for_byte_while_another_talks_over() -> (
    None
):
    async with voice_world() as world:
        nominee = await world.join(world.nominee_id)
        neighbour = await world.join(world.neighbour_id)
        voice_client = await connected_with_dave(world)
        await nominee.wait_in_group()
        await neighbour.wait_in_group()
        sink = ListSink()
        stats = voice_client.receiver.register(world.nominee_id, sink)
        speech = opus_packets()

        sent, other = await asyncio.gather(
            nominee.play(speech[:200], start_seq=40_000, start_ts=123_456),
            neighbour.play(speech[300:500]),
        )
        await wait_until(lambda: len(sink.packets) == 200)

        assert sink.packets == as_written(sent)
        assert stats.packets == stats.delivered == 200
        assert stats.dave_errors == stats.decrypt_errors == stats.sink_errors == 0
        assert stats.passthrough == 0
        assert stats.last_delivered_time is not None
        receiver_stats = voice_client.receiver.stats
        await wait_until(lambda: receiver_stats.unregistered == len(other))
        assert receiver_stats.delivered == 200


async def test_loss_reordering_and_silence_reach_the_sink_in_sequence_order() -> None:
    async with voice_world() as world:
        nominee, voice_client, sink, stats = await registered(world)

        sent = await nominee.play(
            opus_packets()[:60],
            start_seq=65_530,
            start_ts=2**32 - 2_000,
            lose={5, 6, 40},
            reorder=[(10, 12), (30, 31)],
            gaps={20: 0.5, 50: 1.25},
            padding=True,
            extension=True,
        )
        await wait_until(lambda: len(sink.packets) == 57)

        # Sent out of order, handed on in order (the jitter buffer, before DAVE).
        assert sink.packets == as_written(sorted(sent, key=lambda packet: packet.index))
        assert voice_client.receiver.stats.dave_errors == 0
        order = list(range(60))
        order[10], order[12] = order[12], order[10]
        order[30], order[31] = order[31], order[30]
        assert [packet.index for packet in sent] == [i for i in order if i not in {5, 6, 40}]
        timestamps = {packet.index: packet.timestamp for packet in sent}
        assert (timestamps[21] - timestamps[19]) % 2**32 == 2 * 960 + 24_000


async def test_two_registered_users_each_get_their_own_audio() -> None:
    async with voice_world() as world:
        nominee = await world.join(world.nominee_id)
        neighbour = await world.join(world.neighbour_id)
        voice_client = await connected_with_dave(world)
        await nominee.wait_in_group()
        await neighbour.wait_in_group()
        nominee_sink, neighbour_sink = ListSink(), ListSink()
        voice_client.receiver.register(world.nominee_id, nominee_sink)
        voice_client.receiver.register(world.neighbour_id, neighbour_sink)
        speech = opus_packets()

        sent_nominee, sent_neighbour = await asyncio.gather(
            nominee.play(speech[:50]), neighbour.play(speech[50:100], start_seq=7)
        )
        await wait_until(lambda: len(nominee_sink.packets) == len(neighbour_sink.packets) == 50)

        assert nominee_sink.packets == as_written(sent_nominee)
        assert neighbour_sink.packets == as_written(sent_neighbour)
        with pytest.raises(ValueError, match="already has a sink"):
            voice_client.receiver.register(world.nominee_id, ListSink())


async def test_audio_before_its_speaking_event_is_held_and_replayed() -> None:
    async with voice_world() as world:
        nominee, voice_client, sink, stats = await registered(world)

        early = await nominee.play(opus_packets()[:10], announce=False)
        await wait_until(lambda: voice_client.receiver.stats.unknown_ssrc == 10)
        assert sink.packets == []
        await nominee.announce()
        later = await nominee.play(opus_packets()[10:20], start_seq=10, start_ts=9_600)
        await wait_until(lambda: len(sink.packets) == 20)

        assert sink.packets == as_written(early) + as_written(later)


async def test_garbage_rtcp_and_forgeries_are_counted_and_the_reader_lives_on() -> None:
    async with voice_world() as world:
        nominee, voice_client, sink, stats = await registered(world)
        await nominee.play(opus_packets()[:1])
        await wait_until(lambda: len(sink.packets) == 1)
        server = world.server
        key = server.bot_secret_key()
        before = replace(voice_client.receiver.stats)

        server.send_raw(b"\x00\x01 not rtp at all")
        server.send_raw(bytes([0x81, 200, 0, 6]) + bytes(24))  # an RTCP sender report
        server.send_raw(bytes([0x81, 205, 0, 3]) + bytes(12))  # a NACK (transport feedback)
        server.send_raw(bytes([0x81, 206, 0, 2]) + bytes(8))  # a PLI (payload feedback)
        header = RTPHeader(sequence=1, timestamp=960, ssrc=nominee.ssrc)
        server.send_raw(build_rtpsize_packet(header, b"forged", bytes(32), 1))  # wrong key
        server.send_raw(bytes([0x80, 0x78]) + struct.pack(">HII", 2, 1920, nominee.ssrc) + b"ab")
        server.send_raw(build_rtpsize_packet(RTPHeader(3, 2880, 0xDEAD), b"x", key, 2))
        sent = await nominee.play(opus_packets()[1:6], start_seq=10, start_ts=20 * 960)
        await wait_until(lambda: len(sink.packets) == 6)

        receiver_stats = voice_client.receiver.stats
        assert receiver_stats.not_rtp == before.not_rtp + 1
        assert receiver_stats.rtcp == before.rtcp + 3
        assert stats.decrypt_errors == 2
        assert receiver_stats.unknown_ssrc == before.unknown_ssrc + 1
        assert sink.packets[1:] == as_written(sent)


async def test_a_failing_sink_loses_only_its_packets() -> None:
    async with voice_world() as world:
        nominee = await world.join(world.nominee_id)
        voice_client = await connected_with_dave(world)
        await nominee.wait_in_group()
        sink = BrokenSink()
        stats = voice_client.receiver.register(world.nominee_id, sink)

        sent = await nominee.play(opus_packets()[:30])
        await wait_until(lambda: stats.delivered + stats.sink_errors == 30)

        assert stats.sink_errors == 10
        assert sink.packets == [p for p in as_written(sent) if p[0] % 3]


async def test_corrupted_dave_frames_are_counted_not_delivered() -> None:
    async with voice_world() as world:
        nominee, voice_client, sink, stats = await registered(world)

        await nominee.play(opus_packets()[:20], corrupt_dave=True)
        await wait_until(lambda: stats.dave_errors == 20)
        good = await nominee.play(opus_packets()[20:25], start_seq=20, start_ts=20 * 960)
        await wait_until(lambda: len(sink.packets) == 5)

        assert stats.packets == 25
        assert sink.packets == as_written(good)
        assert voice_client.receiver.stats.dave_errors == 20


async def test_without_dave_frames_pass_through() -> None:
    async with voice_world(dave=False) as world:
        nominee = await world.join(world.nominee_id)
        voice_client = await world.connect()
        await wait_until(voice_client.dave_ready)
        assert voice_client._connection.dave_protocol_version == 0
        sink = ListSink()
        stats = voice_client.receiver.register(world.nominee_id, sink)

        sent = await nominee.play(opus_packets()[:10])
        await wait_until(lambda: len(sink.packets) == 10)

        assert sink.packets == as_written(sent)
        assert stats.passthrough == 10


async def test_the_socket_is_read_all_along_so_nothing_old_reaches_a_new_sink() -> None:
    async with voice_world() as world:
        nominee = await world.join(world.nominee_id)
        voice_client = await connected_with_dave(world)
        await nominee.wait_in_group()
        receiver = voice_client.receiver
        reader = voice_client._connection._socket_reader
        assert receiver._on_datagram in reader._callbacks

        # He talks before anyone records him: read and dropped at once, not left in the socket.
        before = receiver.stats.unregistered
        await nominee.play(opus_packets()[:40])
        await wait_until(lambda: receiver.stats.unregistered == before + 40)
        sink = ListSink()
        receiver.register(world.nominee_id, sink)
        later = await nominee.play(opus_packets()[40:50])
        await wait_until(lambda: len(sink.packets) == 10)
        receiver.unregister(world.nominee_id)

        assert sink.packets == as_written(later)
        assert not receiver.is_registered(world.nominee_id)
        assert receiver._on_datagram in reader._callbacks


async def test_duplicates_are_dropped_before_dave_and_are_not_dave_errors(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async with voice_world() as world:
        nominee, voice_client, sink, stats = await registered(world)

        sent = await nominee.play(opus_packets()[:60], duplicate={0, 5, 6, 59}, reorder=[(7, 9)])
        await wait_until(lambda: stats.delivered + stats.duplicates == 64)

        assert sink.packets == as_written(sorted(sent, key=lambda packet: packet.index))
        assert stats.duplicates == 4 and voice_client.receiver.stats.duplicates == 4
        assert stats.dave_errors == 0
        assert not [r for r in caplog.records if "DAVE" in r.getMessage()]


async def test_sfu_silence_frames_pass_unencrypted() -> None:
    async with voice_world() as world:
        nominee, voice_client, sink, stats = await registered(world)

        sent = await nominee.play(opus_packets()[:40], sfu_silence=range(10, 25))
        await wait_until(lambda: len(sink.packets) == 40)

        assert sink.packets == as_written(sent)
        assert [p[2] for p in sink.packets[10:25]] == [b"\xf8\xff\xfe"] * 15
        assert stats.passthrough == 15 and stats.dave_errors == 0


def speech(count: int) -> list[bytes]:
    source = opus_packets()
    return [source[i % len(source)] for i in range(count)]


class Background:
    """Things started while he speaks, awaited later (so their tasks are kept)."""

    def __init__(self) -> None:
        self.tasks: list[asyncio.Task[object]] = []

    def start(self, coroutine: Callable[[], Awaitable[object]]) -> Callable[[], None]:
        def hook() -> None:
            self.tasks.append(asyncio.ensure_future(coroutine()))

        return hook

    async def settle(self) -> None:
        await asyncio.gather(*self.tasks)


async def test_an_epoch_change_mid_speech_loses_nothing() -> None:
    async with voice_world(transition_lag=8) as world:
        nominee, voice_client, sink, stats = await registered(world)
        session = voice_client._connection.dave_session
        assert session is not None
        epoch = session.epoch
        assert epoch is not None
        background = Background()
        joined: list[FakeSpeaker] = []

        async def neighbour_joins() -> None:
            joined.append(await world.join(world.neighbour_id))

        async def neighbour_leaves() -> None:
            await world.leave(joined[0])

        async def epoch_is(expected: int) -> None:
            await background.settle()
            await wait_until(lambda: session.epoch == expected)

        sent = await nominee.play(
            speech(2000),
            at={
                200: background.start(neighbour_joins),
                700: lambda: epoch_is(epoch + 1),
                800: background.start(neighbour_leaves),
                1300: lambda: epoch_is(epoch + 2),
            },
        )
        await wait_until(lambda: stats.delivered + stats.dave_errors == len(sent))

        assert len(world.server.transitions_executed) >= 3, "welcome, add and remove transitions"
        assert sink.packets == as_written(sent)
        assert all(packet.encrypted for packet in sent)
        assert stats.dave_errors == 0 and stats.passthrough == 0


async def test_a_client_without_dave_joining_and_leaving_leaves_no_ciphertext() -> None:
    async with voice_world(transition_lag=12, transition_delay=0.3) as world:
        nominee, voice_client, sink, stats = await registered(world)
        connection = voice_client._connection
        server = world.server
        background = Background()
        legacy: list[FakeSpeaker] = []

        async def legacy_joins() -> None:
            legacy.append(await world.join(world.neighbour_id, dave=False))

        async def downgraded() -> None:
            await background.settle()
            await wait_until(
                lambda: (
                    connection.dave_protocol_version == 0
                    and bool(server.downgrades)
                    and server.downgrades[0] in server.executed_at
                )
            )

        async def legacy_leaves() -> None:
            await world.leave(legacy[0])

        async def upgraded() -> None:
            await background.settle()
            await wait_until(voice_client.dave_ready)

        sent = await nominee.play(
            speech(2500),
            at={
                200: background.start(legacy_joins),
                700: downgraded,
                1000: background.start(legacy_leaves),
                1800: upgraded,
            },
        )
        await wait_until(lambda: stats.delivered + stats.dave_errors == len(sent))

        assert stats.dave_errors == 0
        assert sink.packets == as_written(sent)
        assert not [p for p in sink.packets if p[2].endswith(b"\xfa\xfa")]
        assert stats.dave_errors == 0
        # Encrypted, then plain, then encrypted again; encrypted frames still came
        # after the downgrade executed, plain ones after the upgrade did.
        kinds = [packet.encrypted for packet in sent]
        switches = [i for i in range(1, len(kinds)) if kinds[i] != kinds[i - 1]]
        assert len(switches) == 2 and kinds[0] and kinds[-1]
        downgrade_at = server.executed_at[server.downgrades[0]]
        upgrade_at = server.executed_at[max(server.executed_at)]
        assert [p for p in sent if p.encrypted and downgrade_at < p.sent_at < upgrade_at]
        assert [p for p in sent if not p.encrypted and p.sent_at > upgrade_at]
        assert stats.passthrough == kinds.count(False)


def test_dave_transitions_say_when_plain_frames_are_expected() -> None:
    transitions = DaveTransitions()
    transitions.handle({"op": 4, "d": {"dave_protocol_version": 1}}, 0.0)
    assert not transitions.passthrough_allowed(0.0)
    # A downgrade: passthrough from its preparation on, for as long as it lasts.
    transitions.handle({"op": 21, "d": {"transition_id": 5, "protocol_version": 0}}, 1.0)
    assert transitions.passthrough_allowed(1.0)
    transitions.handle({"op": 22, "d": {"transition_id": 5}}, 1.2)
    assert transitions.transport_only and transitions.passthrough_allowed(500.0)
    # The upgrade: still plain until op 22 executes it, then ten seconds of grace.
    transitions.handle({"op": 24, "d": {"epoch": 1, "protocol_version": 1}}, 600.0)
    assert transitions.upgrading and transitions.passthrough_allowed(601.0)
    transitions.handle({"op": 22, "d": {"transition_id": 9}}, 602.0)
    assert not transitions.transport_only
    assert transitions.passthrough_allowed(611.9) and not transitions.passthrough_allowed(612.1)
    # A sole-member reset (op 24 with epoch 1 in an encrypted call, then transition 0) is no upgrade.
    transitions.handle({"op": 24, "d": {"epoch": 1, "protocol_version": 1}}, 700.0)
    transitions.handle({"op": 21, "d": {"transition_id": 0, "protocol_version": 1}}, 700.0)
    assert not transitions.passthrough_allowed(700.0)
    # A session that starts transport-only.
    transitions.handle({"op": 4, "d": {"dave_protocol_version": 0}}, 800.0)
    assert transitions.passthrough_allowed(800.0)
    transitions.handle({"op": 22, "d": None}, 801.0)


def test_directory_learns_from_the_voice_gateway() -> None:
    directory = SpeakerDirectory()
    learnt: list[tuple[int, int]] = []
    directory.add_listener(lambda user, ssrc: learnt.append((user, ssrc)))

    directory.handle({"op": 11, "d": {"user_ids": ["7", "8"]}})
    directory.handle({"op": 5, "d": {"user_id": "7", "ssrc": 70, "speaking": 1}})
    directory.handle({"op": 12, "d": {"user_id": "8", "audio_ssrc": 80, "video_ssrc": 0}})

    assert directory.connected_users == {7, 8}
    assert (directory.user_for(70), directory.user_for(80)) == (7, 8)
    assert learnt == [(7, 70), (8, 80)]

    directory.handle({"op": 5, "d": {"user_id": "7", "ssrc": 71, "speaking": 1}})
    assert directory.user_for(70) is None and directory.ssrc_for(7) == 71

    directory.handle({"op": 13, "d": {"user_id": "8"}})
    assert directory.user_for(80) is None and directory.connected_users == {7}

    directory.handle({"op": 2, "d": {"ssrc": 1, "ip": "127.0.0.1", "port": 1, "modes": []}})
    assert directory.user_for(71) is None and not directory.connected_users


async def test_directory_hook_never_raises() -> None:
    directory = SpeakerDirectory()
    await directory.on_voice_ws_message(None, {"op": 5, "d": {"user_id": "x", "ssrc": 1}})
    await directory.on_voice_ws_message(None, {"op": 11, "d": {"user_ids": None}})
    await directory.on_voice_ws_message(None, {"op": 5, "d": None})
    assert directory.user_for(1) is None


async def test_a_speaking_event_seconds_late_loses_nothing_of_the_start() -> None:
    async with voice_world() as world:
        nominee, voice_client, sink, stats = await registered(world, call_clock=True)

        # Two and a half seconds of speech on an SSRC nobody has named yet (125 packets).
        early = await nominee.play(opus_packets()[:125], announce=False)
        await wait_until(lambda: voice_client.receiver.stats.unknown_ssrc == 125)
        assert sink.packets == []
        await nominee.announce()
        await wait_until(lambda: len(sink.packets) == 125)

        assert sink.packets == as_written(early)
        assert voice_client.receiver.stats.dave_errors == 0


async def test_the_unnamed_hold_is_measured_in_seconds() -> None:
    async with voice_world() as world:
        nominee = await world.join(world.nominee_id)
        voice_client = await connected_with_dave(world)
        on_the_call_clock(world, voice_client)
        await nominee.wait_in_group()
        sink = ListSink()
        receiver = voice_client.receiver
        receiver.register(world.nominee_id, sink)

        # Eight seconds unnamed: only the last five (the hold) are still there when it is named.
        early = await nominee.play(opus_packets()[:400], announce=False)
        await wait_until(lambda: receiver.stats.unknown_ssrc == 400)
        await nominee.announce()
        kept = [
            packet
            for packet in early
            if packet.sent_at >= world.server.clock() - receiver.unnamed_hold
        ]
        await wait_until(lambda: len(sink.packets) == len(kept))
        assert 240 <= len(kept) <= 251
        assert sink.packets == as_written(kept)


def test_a_streams_first_packet_goes_once_the_next_is_there_not_after_the_hold() -> None:
    buffer = _JitterBuffer(hold=0.4)
    first, second, third = (
        (None, 7, sequence, 960 * sequence, b"", 0.02 * sequence) for sequence in (100, 101, 102)
    )
    assert buffer.push(first) == [], "alone, it may still be overtaken"
    assert buffer.push(second) == [first, second]
    assert buffer.push(third) == [third]

    overtaken = _JitterBuffer(hold=0.4)
    later, earlier = (None, 7, 101, 960, b"", 0.0), (None, 7, 100, 0, b"", 0.02)
    assert overtaken.push(later) == []
    assert overtaken.push(earlier) == [earlier, later]


async def test_a_second_frame_that_overtakes_the_first_of_a_stream_decrypts_both() -> None:
    async with voice_world() as world:
        nominee, voice_client, sink, stats = await registered(world)

        # The stream's first frame arrives after its second, and again after a reconnect.
        first = await nominee.play(opus_packets()[:30], reorder=[(0, 1)])
        await wait_until(lambda: len(sink.packets) == 30)
        await nominee.reconnect(away=0.5)
        await nominee.wait_in_group()
        second = await nominee.play(opus_packets()[30:60], reorder=[(0, 1)])
        await wait_until(lambda: len(sink.packets) == 60)

        assert [packet.encrypted for packet in first + second] == [True] * 60
        assert stats.dave_errors == 0
        by_index = sorted(first, key=lambda p: p.index) + sorted(second, key=lambda p: p.index)
        assert sink.packets == as_written(by_index)


async def test_packets_up_to_a_third_of_a_second_late_are_put_back_in_order() -> None:
    async with voice_world() as world:
        nominee, voice_client, sink, stats = await registered(world, call_clock=True)

        # Every fifth packet 130 to 330 ms late: overtaken by up to 16 others.
        late = {index: 0.13 + 0.01 * (index % 21) for index in range(5, 300, 5)}
        sent = await nominee.play(opus_packets()[:300], delay=late, lose={77, 78})
        await wait_until(lambda: len(sink.packets) == 298)

        arrival = [packet.index for packet in sent]
        assert arrival != sorted(arrival)
        assert sink.packets == as_written(sorted(sent, key=lambda p: p.index))
        assert stats.dave_errors == 0
