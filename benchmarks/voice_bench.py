"""Benchmark: writing a received last word as Ogg Opus against the usual decode-and-encode.

Run from the repository root::

    python benchmarks/voice_bench.py [--runs 3]

Both paths get the same 9,000 received packets (3 minutes of real speech,
stereo 48 kHz Opus in 20 ms frames, from ``tests/voice/fixtures/speech.ogg``)
with a little network damage: 0.5 % lost, 1 % swapped with their neighbour,
0.5 % duplicated.

* Our path, as the bot records: each packet placed on the recording's
  timeline (:class:`bot.voice.timeline.Timeline`, arrival times 0-30 ms late)
  and written by :class:`bot.voice.ogg.OggOpusWriter` (48 kHz mono header) to
  a file on disk, gap filling and waveform (each packet decoded by libopus at
  16 kHz mono for its loudness), then ``close()``.
* The usual path: decode every packet to 48 kHz stereo PCM with
  ``discord.opus.Decoder``, silence for the gaps, a pydub ``AudioSegment``,
  then export to Ogg Opus. pydub's own export needs an ffmpeg binary; when
  there is none (as on our machines) the export is done with PyAV's libopus
  encoder and Ogg muxer. The output says which.

Then the receive path as the bot runs it (:class:`bot.voice.receiver.VoiceReceiver`
with its jitter buffer, the timeline, :class:`bot.voice.recorder.OggSink`), fed
transport-encrypted datagrams on a simulated clock:

* with 5 % loss and up to 200 ms of jitter: how many packets that arrived are
  not in the file (the loss beyond the network's; goal 0), against the old
  design (no jitter buffer, the writer's 5-packet window);
* across a reconnect of the bot (1.5 s away, a new connection with a new key
  going on into the same timeline and file, as the recorder does): how much
  of what was said while it was connected is in the file;
* the CPU per speaker of that whole path (transport decryption, jitter
  buffer, timeline, writer and waveform; DAVE adds its 1.6 µs a packet);
* and an upload's memory (tracemalloc peak) and time.

It prints figures only; nothing here is asserted.
"""

from __future__ import annotations

import argparse
import asyncio
import io
import os
import random
import shutil
import sys
import tempfile
import time
import tracemalloc
import types
import warnings
from collections.abc import Callable
from fractions import Fraction
from pathlib import Path
from typing import Any, TypeVar

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import av  # noqa: E402
import av.audio.resampler  # noqa: E402

with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)
    warnings.simplefilter("ignore", RuntimeWarning)
    import discord.opus  # noqa: E402
    from pydub import AudioSegment  # type: ignore[import-untyped]  # noqa: E402

from bot.voice import opuslib, upload  # noqa: E402
from bot.voice.ogg import OggOpusWriter  # noqa: E402
from bot.voice.receiver import SpeakerDirectory, VoiceReceiver  # noqa: E402
from bot.voice.recorder import _TimelineSink  # noqa: E402
from bot.voice.rtp import RTPHeader, build_rtpsize_packet, decrypt_rtpsize  # noqa: E402
from bot.voice.sink import OGG_START, OggSink  # noqa: E402
from bot.voice.timeline import Timeline  # noqa: E402
from bot.voice.upload import prepare_upload  # noqa: E402
from bot.voice.waveform import WaveformBuilder, to_base64  # noqa: E402
from tests.voice.speech import opus_packets, speech_pcm  # noqa: E402

PACKETS = 9000
FRAME = 960
PACKETS_PER_SECOND = 50
T = TypeVar("T")

Arrival = list[tuple[int, int, bytes]]


def received_packets(seed: int = 7) -> Arrival:
    """Three minutes of speech as received: (sequence, timestamp, opus), a little damaged."""
    source = opus_packets()
    packets = [source[i % len(source)] for i in range(PACKETS)]
    rng = random.Random(seed)
    seq0, ts0 = 65_000, 2**32 - 50 * FRAME  # both counters wrap during the recording
    sent = [((seq0 + i) & 0xFFFF, (ts0 + i * FRAME) & 0xFFFFFFFF, p) for i, p in enumerate(packets)]
    arrival: Arrival = []
    for item in sent:
        roll = rng.random()
        if roll < 0.005:
            continue
        arrival.append(item)
        if roll > 0.995:
            arrival.append(item)
    for i in range(0, len(arrival) - 1):
        if rng.random() < 0.01:
            arrival[i], arrival[i + 1] = arrival[i + 1], arrival[i]
    return arrival


def best_of(runs: int, work: Callable[[], T]) -> tuple[float, float, T]:
    """Run ``work`` ``runs`` times; return the fastest run's wall time, CPU time and result."""
    best: tuple[float, float, T] | None = None
    for _ in range(runs):
        wall, cpu = time.perf_counter(), time.process_time()
        result = work()
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        if best is None or wall < best[0]:
            best = (wall, cpu, result)
    assert best is not None
    return best


def peak_memory(work: Callable[[], Any]) -> int:
    """Peak Python allocation (bytes) while ``work`` runs, as tracemalloc sees it."""
    tracemalloc.start()
    try:
        work()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


# --- our path -----------------------------------------------------------------------------


def arrival_times(arrival: Arrival, seed: int = 11) -> list[float]:
    """When each packet arrived: its send time (by its timestamp) plus 0-30 ms of jitter."""
    rng = random.Random(seed)
    first = arrival[0][1]
    return [((ts - first) & 0xFFFFFFFF) / 48_000 + rng.uniform(0, 0.03) for _, ts, _ in arrival]


def our_path(
    arrival: Arrival, times: list[float], directory: str, measure_levels: bool = True
) -> dict[str, float]:
    """Place the packets and write them into an Ogg file on disk, as OggSink does; timings."""
    path = os.path.join(directory, "last-word.ogg")
    with open(path, "wb") as sink:
        start = time.perf_counter()
        timeline = Timeline(0.0)
        writer = OggOpusWriter(
            sink, max_seconds=180, start_timestamp=0, channels=1, measure_levels=measure_levels
        )
        placing = 0.0
        for (sequence, timestamp, packet), at in zip(arrival, times, strict=True):
            placed_at = time.perf_counter()
            placed = timeline.place(0x1234, sequence, timestamp, at, 960)
            placing += time.perf_counter() - placed_at
            if placed is not None:
                writer.feed(
                    placed.sequence & 0xFFFF, (OGG_START + placed.position) & 0xFFFFFFFF, packet
                )
        fed = time.perf_counter()
        info = writer.close()
        done = time.perf_counter()
    return {
        "total": done - start,
        "feed": fed - start,
        "place": placing,
        "close": done - fed,
        "duration": info.duration_secs,
        "bytes": info.byte_size,
    }


# --- the usual path -----------------------------------------------------------------------


def _export_with_pyav(segment: Any, sink: io.BytesIO) -> None:
    """pydub AudioSegment -> Ogg Opus through PyAV (libopus 64 kbit/s, 20 ms frames)."""
    with av.open(sink, "w", format="ogg") as out:
        stream = out.add_stream("libopus", rate=48000, layout="stereo")
        assert isinstance(stream, av.AudioStream)
        stream.bit_rate = 64000
        stream.codec_context.options = {"frame_duration": "20"}
        raw: bytes = segment.raw_data
        step = FRAME * 4
        for index, offset in enumerate(range(0, len(raw), step)):
            chunk = raw[offset : offset + step]
            frame = av.AudioFrame(format="s16", layout="stereo", samples=len(chunk) // 4)
            frame.planes[0].update(chunk)
            frame.sample_rate = 48000
            frame.pts = index * FRAME
            frame.time_base = Fraction(1, 48000)
            out.mux(stream.encode(frame))
        out.mux(stream.encode(None))


def usual_path(arrival: Arrival, use_ffmpeg: bool) -> dict[str, float]:
    """Decode every packet to PCM, fill gaps, pydub, export to Ogg Opus; return timings."""
    start = time.perf_counter()
    decoder = discord.opus.Decoder()  # type: ignore[no-untyped-call]
    seq_ref, ts_ref = arrival[0][0], arrival[0][1]
    unwrapped = {
        (sequence - seq_ref + 2**15) % 2**16 - 2**15: (timestamp - ts_ref + 2**31) % 2**32 - 2**31
        for sequence, timestamp, _ in arrival
    }
    payloads = {(sequence - seq_ref + 2**15) % 2**16 - 2**15: p for sequence, _, p in arrival}
    first_ts = min(unwrapped.values())
    pcm = bytearray()
    for key in sorted(unwrapped):
        position = (unwrapped[key] - first_ts) * 4
        if position < len(pcm):
            continue
        pcm += bytes(position - len(pcm))
        pcm += decoder.decode(payloads[key], fec=False)
    decoded = time.perf_counter()
    segment = AudioSegment(data=bytes(pcm), sample_width=2, frame_rate=48000, channels=2)
    waveform = WaveformBuilder()
    waveform.add_pcm(0, segment.raw_data, 2)
    to_base64(waveform.finish(0, len(pcm) // 4))
    sink = io.BytesIO()
    if use_ffmpeg:
        segment.export(sink, format="ogg", codec="libopus", bitrate="64k")
    else:
        _export_with_pyav(segment, sink)
    done = time.perf_counter()
    return {"total": done - start, "decode": decoded - start, "export": done - decoded}


# --- uploads ------------------------------------------------------------------------------


def ten_minute_mp3() -> bytes:
    """Ten minutes of the speech fixture as a 44.1 kHz stereo 128 kbit/s MP3."""
    pcm = speech_pcm()
    sink = io.BytesIO()
    with av.open(sink, "w", format="mp3") as out:
        stream = out.add_stream("libmp3lame", rate=44100, layout="stereo")
        assert isinstance(stream, av.AudioStream)
        stream.bit_rate = 128000
        resampler = av.audio.resampler.AudioResampler(
            format=stream.codec_context.format.name,
            layout="stereo",
            rate=44100,
            frame_size=stream.codec_context.frame_size,
        )
        samples = 0
        step = 48000
        while samples < 600 * 48000:
            offset = (samples % (len(pcm) // 4 - step)) * 4
            frame = av.AudioFrame(format="s16", layout="stereo", samples=step)
            frame.planes[0].update(pcm[offset : offset + step * 4])
            frame.sample_rate = 48000
            frame.pts = samples
            frame.time_base = Fraction(1, 48000)
            for resampled in resampler.resample(frame):
                out.mux(stream.encode(resampled))
            samples += step
        for resampled in resampler.resample(None):
            out.mux(stream.encode(resampled))
        out.mux(stream.encode(None))
    return sink.getvalue()


def verdict(ok: bool) -> str:
    return "meets the goal" if ok else "MISSES the goal"


def encrypted_datagrams(arrival: Arrival, key: bytes) -> list[bytes]:
    """The received packets as they come off the wire: RTP with extension, XChaCha20 rtpsize."""
    return [
        build_rtpsize_packet(
            RTPHeader(sequence, timestamp, 0x1234, extension_profile=0xBEDE),
            payload,
            key,
            index,
            extension_body=b"\x00" * 4,
            padding=(index % 7) + 1,
        )
        for index, (sequence, timestamp, payload) in enumerate(arrival)
    ]


def receive_steps(datagrams: list[bytes], key: bytes) -> float:
    """Both paths start here: parse and transport-decrypt every datagram (seconds)."""
    start = time.perf_counter()
    for datagram in datagrams:
        decrypt_rtpsize(datagram, key)
    return time.perf_counter() - start


class _Connection:
    """What VoiceReceiver reads of discord.py's connection state (no socket: datagrams are fed)."""

    def __init__(self, key: bytes) -> None:
        self.secret_key = list(key)
        self.dave_session = None
        self.ssrc = 1

    def add_socket_listener(self, callback: Callable[[bytes], None]) -> None:
        """Datagrams are handed to the receiver directly."""


class _Client:
    def __init__(self, key: bytes, loop: asyncio.AbstractEventLoop) -> None:
        self._connection = _Connection(key)
        self.loop = loop


def damaged_call(
    loss: float,
    jitter: float,
    *,
    hold: float | None = None,
    outage: tuple[float, float] | None = None,
    seed: int = 5,
) -> dict[str, float]:
    """170 s of speech through the bot's receive path, on a simulated clock (under the
    3-minute limit even when the first packet is late, so no packet is cut by the limit).

    Each packet is lost with probability ``loss`` and otherwise arrives 0 to
    ``jitter`` seconds late; ``outage`` (start, seconds) is a reconnect of the
    bot: nothing arrives meanwhile, and a new connection (new key, new
    receiver) goes on into the same timeline and file. ``hold``: the jitter
    buffer's wait (None: the receiver's own; 0: no jitter buffer).
    """
    source = opus_packets()
    rng = random.Random(seed)
    user, ssrc = 77, 0x5151
    keys = [bytes(range(32)), bytes(range(1, 33))]
    arrivals: list[tuple[float, int, int, bytes]] = []
    lost = away = 0
    count = 170 * PACKETS_PER_SECOND
    for index in range(count):
        sent_at = index * 0.02
        part = 0
        if outage is not None:
            if outage[0] <= sent_at < outage[0] + outage[1]:
                away += 1
                continue
            part = int(sent_at >= outage[0])
        if rng.random() < loss:
            lost += 1
            continue
        datagram = build_rtpsize_packet(
            RTPHeader(index & 0xFFFF, index * FRAME, ssrc),
            source[index % len(source)],
            keys[part],
            index,
        )
        arrivals.append((sent_at + rng.uniform(0, jitter), part, index, datagram))
    arrivals.sort()
    loop = asyncio.new_event_loop()
    now = [0.0]
    handle = io.BytesIO()
    sink = OggSink(handle, 180.0)
    recorder = types.SimpleNamespace(recording_started=0.0, _wake=asyncio.Event())
    placing = _TimelineSink(recorder, sink)  # type: ignore[arg-type]

    def receiver_for(part: int) -> VoiceReceiver:
        speakers = SpeakerDirectory()
        speakers.learn(user, ssrc)
        options = {} if hold is None else {"jitter_hold": hold}
        receiver = VoiceReceiver(
            _Client(keys[part], loop), speakers, clock=lambda: now[0], **options
        )  # type: ignore[arg-type]
        return receiver

    receivers = [receiver_for(0)]
    stats = receivers[0].register(user, placing)
    cpu = time.process_time()
    for at, part, _, datagram in arrivals:
        now[0] = at
        if part >= len(receivers):
            receivers[-1].unregister(user)
            receivers.append(receiver_for(part))
            receivers[-1].register(user, placing, stats=stats)
        receivers[-1]._receive(datagram)
        receivers[-1]._drain()
    receivers[-1].unregister(user)
    info = sink.close(round(count * 0.02 * 48_000))
    cpu = time.process_time() - cpu
    loop.close()
    assert info is not None
    return {
        "sent": count,
        "lost": lost,
        "away": away,
        "arrived": len(arrivals),
        "written": info.voice_packets,
        "duration": info.duration_secs,
        "cpu": cpu,
    }


def upload_memory(data: bytes) -> tuple[int, float, float]:
    """Peak Python memory (bytes), wall and CPU seconds of one prepare_upload."""
    tracemalloc.start()
    wall, cpu = time.perf_counter(), time.process_time()
    try:
        prepare_upload(data, "last-word.mp3", "audio/mpeg")
        return (
            tracemalloc.get_traced_memory()[1],
            time.perf_counter() - wall,
            time.process_time() - cpu,
        )
    finally:
        tracemalloc.stop()


def uploads(runs: int) -> None:
    """The uploads section: time, CPU and memory of one upload, and where its CPU goes."""
    print("\n== uploads ==")
    print(f"load average now: {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores")
    start = time.perf_counter()
    mp3 = ten_minute_mp3()
    print(
        f"made a 10-minute 44.1 kHz stereo 128 kbit/s MP3: {len(mp3) / 1024 / 1024:.1f} MiB"
        f" in {time.perf_counter() - start:.1f} s"
    )
    upload_time, upload_cpu, prepared = best_of(
        runs, lambda: prepare_upload(mp3, "last-word.mp3", "audio/mpeg")
    )
    print(
        f"prepare_upload: {upload_time * 1000:.0f} ms ({upload_cpu * 1000:.0f} ms CPU)"
        f" -> {prepared.duration_secs:.3f} s,"
        f" {len(prepared.ogg_bytes) / 1024:.0f} KiB Ogg Opus  [goal < 2 s: {verdict(upload_time < 2)}]"
    )
    peak, wall, cpu_seconds = upload_memory(mp3)
    print(
        f"memory per upload: peak {peak / 1024 / 1024:.1f} MiB of Python memory besides the"
        f" {len(mp3) / 1024 / 1024:.1f} MiB upload (3 minutes of decoded PCM: 16.5 MiB);"
        f" that run {wall * 1000:.0f} ms ({cpu_seconds * 1000:.0f} ms CPU)"
    )

    # Where the CPU goes: the module's two stages run on their own (private names, read here only).
    container = upload._CONTAINERS["mp3"]
    _, decode_cpu, (pcm, cut) = best_of(
        runs, lambda: upload._decode(mp3, container, 180 * upload.SAMPLE_RATE)
    )
    _, encode_cpu, _ = best_of(runs, lambda: upload._encode(pcm, len(pcm) // 2, cut))
    print(
        f"of which: decoding and resampling to 48 kHz mono {decode_cpu * 1000:.0f} ms CPU;"
        f" gain, fade, libopus (complexity 10) and the Ogg pages {encode_cpu * 1000:.0f} ms CPU"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3, help="runs per figure (best is shown)")
    parser.add_argument("--uploads-only", action="store_true", help="only the uploads section")
    args = parser.parse_args()
    runs: int = args.runs
    if args.uploads_only:
        uploads(runs)
        return

    opuslib.load_for_discord()
    use_ffmpeg = shutil.which("ffmpeg") is not None
    print(f"libopus: {opuslib.version()} from {opuslib.find_libopus()}")
    print(f"load average at start: {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores")
    print(
        f"PyAV {av.__version__}, discord.py {discord.__version__}, Python {sys.version.split()[0]}"
    )
    print(
        "usual path export: "
        + (
            "pydub AudioSegment.export through the ffmpeg binary"
            if use_ffmpeg
            else "no ffmpeg binary: pydub AudioSegment + PyAV libopus encoder and Ogg muxer"
        )
    )

    arrival = received_packets()
    times = arrival_times(arrival)
    print(f"\ninput: {len(arrival)} packets received for {PACKETS} sent (3 min, 20 ms, stereo)")

    with tempfile.TemporaryDirectory() as directory:
        our_time, _, ours = best_of(runs, lambda: our_path(arrival, times, directory))
        _, _, closes = best_of(runs, lambda: our_path(arrival, times, directory))
        writer_only_time, _, writer_only = best_of(
            runs, lambda: our_path(arrival, times, directory, measure_levels=False)
        )
        our_peak = peak_memory(lambda: our_path(arrival, times, directory))
    usual_time, _, usual = best_of(runs, lambda: usual_path(arrival, use_ffmpeg))
    usual_peak = peak_memory(lambda: usual_path(arrival, use_ffmpeg))

    per_packet = ours["feed"] / len(arrival)
    writer_per_packet = writer_only["feed"] / len(arrival)
    cpu = per_packet * PACKETS_PER_SECOND * 100
    ratio = usual_time / our_time
    finalise = min(ours["close"], closes["close"])

    print("\n== our path: packets -> timeline -> Ogg Opus (gap filling, reordering, waveform) ==")
    print(f"output: {ours['duration']:.3f} s of audio, {ours['bytes'] / 1024:.0f} KiB")
    print(f"total {our_time * 1000:.1f} ms  (feeding {ours['feed'] * 1000:.1f} ms)")
    print(
        f"finalise (close) a 3-minute last word: {finalise * 1000:.2f} ms"
        f"  [goal < 50 ms: {verdict(finalise < 0.05)}]"
    )
    print(
        f"per packet {per_packet * 1e6:.1f} us = CPU per speaker at 50 packets/s: {cpu:.3f} % of"
        f" one core  [our share of the 5 % receive budget: {verdict(cpu < 5)}]"
    )
    print(
        f"  of which placing on the timeline: {ours['place'] / len(arrival) * 1e6:.1f} us/packet;"
        f" timeline and Ogg writer without the waveform: {writer_per_packet * 1e6:.1f} us/packet"
        f" ({writer_only_time * 1000:.1f} ms total); the rest is libopus decoding for the waveform"
    )
    print(
        f"peak Python memory per recording in progress: {our_peak / 1024:.0f} KiB"
        f"  [goal < 2 MiB: {verdict(our_peak < 2 * 1024 * 1024)}]"
        " (tracemalloc; libopus's decoder state, ~30 KiB of C memory, is not traced)"
    )

    print("\n== the usual path: decode to PCM, pydub, encode ==")
    print(
        f"total {usual_time * 1000:.0f} ms  (decode {usual['decode'] * 1000:.0f} ms,"
        f" pydub + waveform + export {usual['export'] * 1000:.0f} ms)"
    )
    print(f"peak Python memory: {usual_peak / 1024 / 1024:.1f} MiB")

    key = bytes(range(32))
    datagrams = encrypted_datagrams(arrival, key)
    receiving = min(receive_steps(datagrams, key) for _ in range(runs))
    print("\n== comparison ==")
    print(f"our path is {ratio:.1f}x faster  [goal >= 30x: {verdict(ratio >= 30)}]")
    print(
        f"finalising alone (end of speech -> file ready): ours {finalise * 1000:.2f} ms, the usual"
        f" {usual_time * 1000:.0f} ms (it decodes and encodes at the end): {usual_time / finalise:.0f}x"
    )
    print(
        f"with receiving (parse + transport decrypt, {receiving * 1e6 / len(arrival):.1f} us/packet,"
        f" the same for both) counted on both sides: {(usual_time + receiving) * 1000:.0f} ms vs"
        f" {(our_time + receiving) * 1000:.0f} ms: {(usual_time + receiving) / (our_time + receiving):.1f}x"
        " (DAVE decryption adds 1.6 us/packet to both: benchmarks/voice_receive_bench.py)"
    )
    print(
        f"without the waveform decode it would be {usual_time / writer_only_time:.0f}x faster"
        " (the waveform is what costs)"
    )

    uploads(runs)

    print("\n== the receive path under network damage (simulated clock) ==")
    for label, hold in (("jitter buffer (the bot)", None), ("no jitter buffer (before)", 0.0)):
        damaged = damaged_call(0.05, 0.2, hold=hold)
        beyond = damaged["arrived"] - damaged["written"]
        print(
            f"5 % loss, 0-200 ms jitter, {label}: {damaged['lost']:.0f} of {damaged['sent']:.0f}"
            f" lost by the network, {damaged['arrived']:.0f} arrived, {damaged['written']:.0f} in the file:"
            f" loss beyond the network's {beyond:.0f} ({beyond / damaged['arrived'] * 100:.2f} %)"
            + (f"  [goal 0: {verdict(beyond == 0)}]" if hold is None else "")
        )
        if hold is None:
            per_speaker = damaged["cpu"] / damaged["sent"] * PACKETS_PER_SECOND * 100
            print(
                f"CPU per speaker, the whole receive path without DAVE (transport decrypt, jitter"
                f" buffer, timeline, writer, waveform): {damaged['cpu'] / damaged['sent'] * 1e6:.1f}"
                f" us/packet = {per_speaker:.2f} % of one core at 50 packets/s"
            )
    across = damaged_call(0.0, 0.03, outage=(60.0, 1.5))
    said = across["sent"] - across["away"]
    print(
        f"across a bot reconnect (away 1.5 s at 1:00, then a new connection): {across['written']:.0f}"
        f" of the {said:.0f} packets said while connected are in the file"
        f" ({across['written'] / said * 100:.1f} % kept), {across['duration']:.2f} s long, the"
        f" {across['away'] * 0.02:.1f} s away as silence (before: the recording was thrown away, 0 %)"
    )


if __name__ == "__main__":
    main()
