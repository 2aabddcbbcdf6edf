"""Benchmark: receiving a speaker's voice, from UDP datagram to Opus packet in the sink.

Run from the repository root::

    python benchmarks/voice_receive_bench.py [--packets 3000] [--connects 10]

Everything runs against the real discord.py 2.7.1 voice client connected to
the fake Discord and its fake voice server (tests/fakediscord/) on 127.0.0.1, with a
simulated speaker in the MLS group. It measures:

* connect → DAVE ready: from ``channel.connect()`` to the DAVE session being
  ready with no transition pending (the speaker already in the channel, so a
  Welcome is the way in), over ``--connects`` fresh connections;
* per packet, each step alone: RTP header parse, transport decryption
  (``aead_xchacha20_poly1305_rtpsize``, with header extension and padding),
  DAVE decryption (``DaveSession.decrypt``);
* per packet, the whole receive path as it runs in the bot: the socket
  listener in a thread (as discord.py's reader calls it) and the event loop
  draining into a sink (duplicate check and the DAVE rules included), as CPU
  time of the process over ``--packets`` datagrams of real speech;
* the cost of dropping a datagram of a user nobody records;
* and from these, the share of one core a speaker takes at 50 packets/s.

It prints figures only; nothing here is asserted.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import statistics
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import davey  # noqa: E402

from bot.voice.receiver import ReceivedPacket, ReceivingVoiceClient  # noqa: E402
from bot.voice.rtp import RTPHeader, build_rtpsize_packet, decrypt_rtpsize, parse_header  # noqa: E402
from tests.fakediscord.voice import FakeSpeaker  # noqa: E402
from tests.voice.speech import opus_packets  # noqa: E402
from tests.voice.test_fake_voice import VoiceWorld, voice_world  # noqa: E402

PACKETS_PER_SECOND = 50


class CountingSink:
    """Counts packets and bytes; wakes the benchmark when the expected count is reached."""

    def __init__(self, expected: int, done: asyncio.Event) -> None:
        self.expected = expected
        self.done = done
        self.count = 0
        self.size = 0

    def write_packet(self, packet: ReceivedPacket) -> None:
        self.count += 1
        self.size += len(packet.opus)
        if self.count == self.expected:
            self.done.set()


def per_call_us(function: Callable[[bytes], object], items: list[bytes], rounds: int = 3) -> float:
    """Best of ``rounds`` of the mean time of ``function`` over ``items``, in microseconds."""
    best = float("inf")
    for _ in range(rounds):
        started = time.perf_counter()
        for item in items:
            function(item)
        best = min(best, (time.perf_counter() - started) / len(items))
    return best * 1e6


def datagrams_for(
    world: VoiceWorld, speaker: FakeSpeaker, speech: list[bytes], *, first_seq: int
) -> tuple[list[bytes], list[bytes]]:
    """Speech as the bot receives it from ``speaker``: DAVE frames, then RTP datagrams."""
    key = world.server.bot_secret_key()
    frames = [speaker.session.encrypt_opus(packet) for packet in speech]
    datagrams = [
        build_rtpsize_packet(
            RTPHeader(
                (first_seq + index) & 0xFFFF,
                (index * 960) & 0xFFFFFFFF,
                speaker.ssrc,
                extension_profile=0xBEDE,
            ),
            frame,
            key,
            first_seq + index + 1,
            extension_body=bytes([0x10, 0x7F, 0, 0]),
            padding=(index % 7) + 1,
        )
        for index, frame in enumerate(frames)
    ]
    return frames, datagrams


async def connect_to_ready(connects: int) -> list[float]:
    """Milliseconds from channel.connect() to DAVE ready, one fresh bot each time."""
    times: list[float] = []
    for _ in range(connects):
        async with voice_world() as world:
            await world.join(world.nominee_id)
            started = time.perf_counter()
            voice_client = await world.channel.connect(cls=ReceivingVoiceClient)
            assert isinstance(voice_client, ReceivingVoiceClient)
            while not (
                voice_client.dave_ready() and world.nominee_id in voice_client.dave_members()
            ):
                await asyncio.sleep(0.0005)
            times.append((time.perf_counter() - started) * 1000)
            await voice_client.disconnect()
    return times


async def receive_path(count: int) -> None:
    async with voice_world() as world:
        nominee = await world.join(world.nominee_id)
        neighbour = await world.join(world.neighbour_id)
        voice_client = await world.channel.connect(cls=ReceivingVoiceClient)
        assert isinstance(voice_client, ReceivingVoiceClient)
        while not voice_client.dave_ready():
            await asyncio.sleep(0.001)
        await nominee.wait_in_group()
        await neighbour.wait_in_group()
        await nominee.announce()
        await neighbour.announce()
        while voice_client.speakers.ssrc_for(world.neighbour_id) is None:
            await asyncio.sleep(0.001)
        session = voice_client._connection.dave_session
        assert session is not None
        key = world.server.bot_secret_key()
        speech = (opus_packets() * (count // len(opus_packets()) + 1))[:count]
        print(
            f"speech: {count} packets, mean {statistics.mean(map(len, speech)):.0f} bytes of Opus"
        )

        _, datagrams = datagrams_for(world, nominee, speech, first_seq=0)
        parse_us = per_call_us(parse_header, datagrams)
        transport_us = per_call_us(lambda d: decrypt_rtpsize(d, key), datagrams)
        # davey refuses a frame it has decrypted before (replay), so each round gets new ones.
        dave_us = min(
            per_call_us(
                lambda f: session.decrypt(world.nominee_id, davey.MediaType.audio, f),
                [nominee.session.encrypt_opus(packet) for packet in speech],
                rounds=1,
            )
            for _ in range(3)
        )
        steps = transport_us + dave_us
        print(f"RTP header parse alone:               {parse_us:7.2f} µs/packet")
        print(f"parse + transport decrypt (+ strip):  {transport_us:7.2f} µs/packet")
        print(f"DAVE decrypt:                         {dave_us:7.2f} µs/packet")

        receiver = voice_client.receiver
        loop = asyncio.get_running_loop()
        full_us: list[float] = []
        reader_us: list[float] = []
        for attempt in range(3):
            _, datagrams = datagrams_for(world, nominee, speech, first_seq=(attempt + 1) * 10_000)
            done = asyncio.Event()
            sink = CountingSink(len(datagrams), done)
            receiver.register(world.nominee_id, sink)
            reader_cpu: list[float] = []

            def feed(
                datagrams: list[bytes] = datagrams, reader_cpu: list[float] = reader_cpu
            ) -> None:
                started = time.thread_time()
                for datagram in datagrams:
                    receiver._on_datagram(datagram)
                reader_cpu.append(time.thread_time() - started)

            cpu_started = time.process_time()
            thread = threading.Thread(target=feed, name="bench-socket-reader")
            thread.start()
            await asyncio.wait_for(done.wait(), 60)
            await loop.run_in_executor(None, thread.join)
            full_us.append((time.process_time() - cpu_started) / len(datagrams) * 1e6)
            reader_us.append(reader_cpu[0] / len(datagrams) * 1e6)
            receiver.unregister(world.nominee_id)
            assert sink.count == len(datagrams), (sink.count, receiver.stats)
        full = min(full_us)
        print(
            f"whole receive path (reader thread + loop + sink), CPU: {full:7.2f} µs/packet "
            f"(reader thread alone {min(reader_us):.2f})"
        )

        _, others = datagrams_for(world, neighbour, speech[:1000], first_seq=50_000)
        receiver.register(world.nominee_id, CountingSink(0, asyncio.Event()))
        drop_us = per_call_us(receiver._on_datagram, others)
        receiver.unregister(world.nominee_id)
        print(f"dropping another user's datagram: {drop_us:7.2f} µs/packet")

        for label, micros in (("parse + transport + DAVE", steps), ("whole receive path", full)):
            share = micros * PACKETS_PER_SECOND / 1e6 * 100
            print(
                f"one speaker at {PACKETS_PER_SECOND} packets/s, {label}: {share:.3f} % of one core"
            )
        await voice_client.disconnect()


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--packets", type=int, default=3000)
    parser.add_argument("--connects", type=int, default=10)
    arguments = parser.parse_args()
    logging.basicConfig(level=logging.CRITICAL)
    print(f"python {sys.version.split()[0]}, davey {davey.__version__}, {os.cpu_count()} CPUs")
    times = await connect_to_ready(arguments.connects)
    print(
        f"connect → DAVE ready over {len(times)} connections: median {statistics.median(times):.1f} ms, "
        f"min {min(times):.1f}, max {max(times):.1f}"
    )
    await receive_path(arguments.packets)


if __name__ == "__main__":
    asyncio.run(main())
