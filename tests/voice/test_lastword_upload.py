"""``/lastword upload`` end to end: a player's own recording becomes his voice message.

The file travels as Discord sends it: an attachment option whose bytes the bot
downloads from the CDN. Each accepted format is posted as a native voice
message; what is refused gets its own localised answer and does not use up
the last word; a file over the limit is refused before it is downloaded.
"""

from __future__ import annotations

import array
import base64
import math

import pytest

from bot.config import Config
from cogs.lastword import clock_text
from tests.fakediscord import InteractionResult, Upload
from tests.harness import NO_TIMERS, Table, bot_table
from tests.voice.speech import speech_pcm
from tests.voice.test_upload import (
    FORMATS,
    encode_file,
    mono_pcm,
    opus_head,
    png_bytes,
    stereo,
    tone,
    wav_bytes,
)
from tests.voice.tribune import (
    RATE,
    VOICE_MESSAGE,
    correlation,
    decode,
    envelope,
    quick_edits,
    ru,
)

CDN_ROUTE = "/attachments/{channel_id}/{attachment_id}/{filename}"
#: name → (container, codec, file name, content type); ".opus" is Ogg Opus by another name.
ACCEPTED = {
    "ogg": FORMATS["ogg"],
    "opus": ("ogg", "libopus", "speech.opus", "audio/opus"),
    "mp3": FORMATS["mp3"],
    "m4a": FORMATS["m4a"],
    "wav": FORMATS["wav"],
    "webm": FORMATS["webm"],
}


def mention(player: str) -> str:
    return f"<@{player}>"


async def nominees(table: Table, count: int) -> list[str]:
    """``count`` players nominated by as many others (one nomination each per day)."""
    alive = table.game.alive()
    chosen = alive[:count]
    for nominator, nominee in zip(alive[count : 2 * count], chosen, strict=True):
        done = await table.slash(table.name(nominator), "nominate", {"player": nominee})
        assert done.ephemeral, done.content
    await table.drain()
    return chosen


async def upload(table: Table, player: str, file: Upload) -> InteractionResult:
    """``/lastword upload`` by a player; waits for the final answer."""
    result = await table.slash(table.name(player), "lastword upload", {"file": file})
    await result.wait_callback()
    if result.deferred:
        await result.wait_original(timeout=20)
    return result


def city_channel(table: Table, player: str) -> int:
    return table.city_channel(table.game.city_of(player))


def downloads(table: Table) -> int:
    return len(table.fake.calls("GET", CDN_ROUTE))


@pytest.fixture(scope="module")
def files() -> dict[str, Upload]:
    pcm = speech_pcm()
    made = {}
    for name, (container, codec, filename, content_type) in ACCEPTED.items():
        made[name] = Upload(filename, encode_file(container, codec, pcm), content_type)
    return made


async def test_each_accepted_format_is_posted_as_his_voice_message(
    files: dict[str, Upload],
) -> None:
    source_seconds = len(speech_pcm()) / 4 / RATE
    source_envelope = envelope(array.array("h", mono_pcm()))
    async with bot_table(players=16, config=Config(timers=NO_TIMERS)) as table:
        quick_edits(table)
        await table.new_game(cities="Верона")
        speakers = await nominees(table, len(files))
        for player, (name, file) in zip(speakers, files.items(), strict=True):
            channel = city_channel(table, player)
            fetched = downloads(table)
            answer = await upload(table, player, file)
            assert answer.ephemeral and answer.content == ru("lastword.done"), (
                name,
                answer.content,
            )
            assert downloads(table) == fetched + 1
            await table.drain()

            posted = table.fake.messages(channel, kind="channel")
            voice = posted[-1]
            assert voice.flags & VOICE_MESSAGE, name
            attachment = voice.attachments[0]
            assert attachment.content_type is not None and attachment.content_type.startswith(
                "audio/ogg"
            )
            duration = attachment.duration_secs
            assert duration is not None and abs(duration - source_seconds) < 0.06, name
            amplitudes = base64.b64decode(attachment.waveform or "")
            assert 0 < len(amplitudes) <= 256 and max(amplitudes) > 0
            assert posted[-2].content == ru(
                "lastword.posted", player=mention(player), length=clock_text(duration)
            )
            assert opus_head(attachment.data)[1:4:2] == (1, 48000), "mono 48 kHz, as Discord's"
            decoded = decode(attachment.data)
            assert len(decoded) == round(duration * RATE)
            # His speech, normalised: the loudness follows the source's, 100 ms by 100 ms.
            assert correlation(envelope(decoded), source_envelope) > 0.95, name
            assert player in table.game.last_words
        assert len(
            [m for m in table.fake.messages(kind="channel") if m.flags & VOICE_MESSAGE]
        ) == len(files)


async def test_ten_minutes_are_posted_cut_at_three_with_a_fade() -> None:
    # Ten minutes of the speech, 8 kHz mono WAV (9.6 MB: under the limit).
    speech_8k = array.array("h", mono_pcm())[::6]
    minutes = array.array("h", speech_8k.tobytes() * math.ceil(600 * 8000 / len(speech_8k)))[
        : 600 * 8000
    ]
    file = Upload("long.wav", wav_bytes(minutes.tobytes(), 8000), "audio/wav")
    async with bot_table(players=8, config=Config(timers=NO_TIMERS)) as table:
        quick_edits(table)
        await table.new_game(cities="Верона")
        (player,) = await nominees(table, 1)
        answer = await upload(table, player, file)
        assert answer.content == ru("lastword.done")
        await table.drain()

        posted = table.fake.messages(city_channel(table, player), kind="channel")
        attachment = posted[-1].attachments[0]
        assert posted[-1].flags & VOICE_MESSAGE
        assert attachment.duration_secs == 180.0
        assert posted[-2].content == ru("lastword.posted", player=mention(player), length="3:00")
        decoded = decode(attachment.data)
        assert abs(len(decoded) - 180 * RATE) <= 1
        # Up to the last half second his level follows the source's; then it fades to nothing.
        heard = envelope(decoded[-RATE * 2 :], window=RATE // 10)
        said = [level / 32768 for level in envelope(minutes[178 * 8000 : 180 * 8000], window=800)]
        assert min(said[-5:]) > 0.01, "the source speaks through the cut"
        gains = [h / s for h, s in zip(heard, said, strict=True) if s > 0.01]
        steady = sorted(gains[:-5])[len(gains[:-5]) // 2]
        fade = [h / s for h, s in zip(heard[-5:], said[-5:], strict=True)]
        assert fade[-1] < 0.3 * steady and fade[-1] < fade[0], "faded out at the cut"


VOICE = tone(2, 12_000)
REFUSED = {
    "not audio": (
        Upload("notes.txt", b"Who killed the baker? Not me.\n" * 40, "text/plain"),
        "upload.upload_not_audio",
    ),
    "an image named .mp3": (
        Upload("last-word.mp3", png_bytes(), "audio/mpeg"),
        "upload.upload_not_audio",
    ),
    "a web page named .mp3": (
        Upload("last-word.mp3", b"<!doctype html><html><body>404</body></html>", "audio/mpeg"),
        "upload.upload_not_audio",
    ),
    "too short": (
        Upload("oops.wav", wav_bytes(mono_pcm()[: 2 * 14_400], 48000), "audio/wav"),
        "upload.upload_too_short",
    ),
    "channels that cancel": (
        Upload("phase.wav", wav_bytes(stereo(VOICE, [-v for v in VOICE]), 48000, 2), "audio/wav"),
        "upload.upload_silent",
    ),
    "corrupt": (
        Upload("speech.ogg", b"OggS" + bytes(range(256)) * 40, "audio/ogg"),
        "upload.upload_corrupt",
    ),
    "empty": (Upload("silence.mp3", b"", "audio/mpeg"), "upload.upload_empty"),
    "unsupported": (
        Upload("speech.flac", b"fLaC" + bytes(4000), "audio/flac"),
        "upload.upload_unsupported",
    ),
}


async def test_bad_files_are_refused_with_their_reason_and_do_not_use_it_up() -> None:
    async with bot_table(players=8, config=Config(timers=NO_TIMERS)) as table:
        quick_edits(table)
        await table.new_game(cities="Верона")
        (player,) = await nominees(table, 1)
        channel = city_channel(table, player)
        before = len(table.fake.messages(channel, kind="channel"))
        for case, (file, key) in REFUSED.items():
            answer = await upload(table, player, file)
            assert answer.ephemeral and answer.content == ru(key, limit=25), (case, answer.content)

        fetched = downloads(table)
        huge = Upload("speech.wav", wav_bytes(bytes(25 * 1024 * 1024 + 2), 48000), "audio/wav")
        answer = await upload(table, player, huge)
        assert answer.ephemeral and answer.content == ru("upload.upload_too_large", limit=25)
        assert not answer.deferred
        assert downloads(table) == fetched, "refused by its size, not downloaded"

        await table.drain()
        assert len(table.fake.messages(channel, kind="channel")) == before, "nothing posted"
        assert player not in table.game.last_words
        assert not list((table.bot.get_cog("LastWordCog").folder).iterdir())  # type: ignore[union-attr]


async def test_only_a_nominee_may_upload(files: dict[str, Upload]) -> None:
    async with bot_table(players=8, config=Config(timers=NO_TIMERS)) as table:
        quick_edits(table)
        await table.new_game(cities="Верона")
        await nominees(table, 1)
        bystander = table.game.alive()[-1]
        fetched = downloads(table)
        answer = await upload(table, bystander, files["ogg"])
        assert answer.ephemeral and answer.content == ru("error.not_nominee")
        assert downloads(table) == fetched
        assert bystander not in table.game.last_words


async def test_two_uploads_at_once_by_one_nominee_post_one_and_leave_no_file(
    files: dict[str, Upload],
) -> None:
    """He sends his recording twice in a row (a double tap, two devices): both are in flight at
    once. Exactly one becomes his last word, the other is refused with its own answer, and no
    stored file is left behind once the recording is posted."""
    async with bot_table(players=8, config=Config(timers=NO_TIMERS)) as table:
        quick_edits(table)
        await table.new_game(cities="Верона")
        (player,) = await nominees(table, 1)
        channel = city_channel(table, player)
        table.fake.delay("GET", CDN_ROUTE, 0.5, count=2)  # both downloads are under way together
        member = table.name(player)
        first = await table.slash(member, "lastword upload", {"file": files["ogg"]}, wait=False)
        second = await table.slash(member, "lastword upload", {"file": files["mp3"]}, wait=False)
        for result in (first, second):
            await result.wait_callback(10)
            if result.deferred:
                await result.wait_original(20)
        await table.drain()
        folder = table.bot.get_cog("LastWordCog").folder  # type: ignore[union-attr]
        assert sorted(p.name for p in folder.iterdir()) == []
        voice = [m for m in table.fake.messages(channel, kind="channel") if m.flags & VOICE_MESSAGE]
        assert len(voice) == 1
        assert player in table.game.last_words
        answers = sorted([first.content, second.content])
        assert answers == sorted([ru("lastword.done"), ru("error.lastword_uploading")]), answers
