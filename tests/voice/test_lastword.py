"""The last word in the tribune, end to end: the real bot records a nominee and posts his voice.

Each test runs ProkuratorBot against the fake Discord and the fake voice
server (DAVE included), and checks what reaches Discord: the messages in the
nominee's city channel, the bytes of the posted Ogg Opus file decoded with
PyAV, the voice-message metadata, and the rules' record of the last word.
"""

from __future__ import annotations

import asyncio
import base64
import io
from dataclasses import replace

import av

from cogs.lastword import clock_text
from tests.fakediscord import Overwrite, Permission
from tests.fakediscord.voice import SentPacket
from tests.voice.speech import opus_packets
from tests.voice.test_ogg import audio_packets
from tests.voice.test_upload import opus_head
from tests.voice.tribune import (
    FRAME,
    PRE_SKIP,
    RATE,
    SILENCE_FRAMES,
    decode,
    decode_raw,
    decoded_length,
    expected_packets,
    leading_silence,
    peak,
    recorded_audio,
    ru,
    tone_packets,
    tone_share,
    tribune,
)

TONE_HZ = 1500.0
SEND_VOICE = int(Permission.SEND_VOICE_MESSAGES)


def mention(player: str) -> str:
    return f"<@{player}>"


def file_samples(packets: list[bytes]) -> int:
    """Samples of a recording's audio packets (speech packets are 20 ms)."""
    return sum(SILENCE_FRAMES.get(packet, FRAME) for packet in packets)


async def test_a_nominee_speaks_and_his_city_gets_his_voice_only() -> None:
    async with tribune() as tb:
        talker = tb.others()[0]
        asked = await tb.ask()
        assert asked.ephemeral
        assert asked.content == ru("lastword.queued", ahead=0)
        nominee = await tb.join()
        neighbour = await tb.join(int(talker))
        client = await tb.recording()
        recorder = tb.cog.recording[tb.live.id][1]
        clock = recorder.clock  # the call's: real time, jumped through the speech
        await neighbour.wait_in_group()
        calling = await tb.calling_message()
        assert tb.table.fake.message(calling.id).content == ru(
            "lastword.calling",
            player=mention(tb.nominee),
            limit="3:00",
            tribune=f"<#{tb.voice_channel}>",
        )
        assert calling.pinged == {tb.nominee_id}, "the nominee is pinged, and nobody else"

        # 20 s of speech with a 3 s pause, two packets lost, two pairs reordered,
        # while a neighbour blasts a loud tone into the same channel.
        gap_at = 580
        stats = client.receiver.stats
        before, others_before = stats.delivered, stats.unregistered + stats.unknown_ssrc
        waited = clock() - recorder.recording_started  # however long a loaded machine took
        sent, blasted = await asyncio.gather(
            nominee.play(
                opus_packets()[:1000],
                gaps={gap_at: 3.0},
                lose={100, 101},
                reorder=[(200, 201), (640, 642)],
            ),
            neighbour.play(tone_packets(TONE_HZ, 700)),
        )
        spoke = clock()
        assert len(sent) == 998
        await tb.delivered(client, before + len(sent), timeout=60)
        await tb.table.fake.wait_until(
            lambda: stats.unregistered + stats.unknown_ssrc - others_before >= len(blasted),
            60,
            "the neighbour's packets never reached the bot",
        )
        progress = await tb.progress_shown()
        stopped = await tb.stop()
        assert stopped.ephemeral and stopped.content == ru("lastword.stopping")
        await tb.finished(timeout=60)
        over = clock()  # the recording ended before this

        # What the city sees: the speaker's line, then the voice message, once.
        voice = await tb.voice_message()
        assert len(tb.voice_messages()) == 1
        messages = tb.city_messages()
        index = messages.index(voice)
        attachment = voice.attachments[0]
        assert len(voice.attachments) == 1 and voice.content == "" and not voice.components
        assert attachment.content_type is not None and attachment.content_type.startswith(
            "audio/ogg"
        )
        duration = attachment.duration_secs
        assert duration is not None
        assert messages[index - 1].content == ru(
            "lastword.posted", player=mention(tb.nominee), length=clock_text(duration)
        )
        amplitudes = base64.b64decode(attachment.waveform or "")
        assert 0 < len(amplitudes) <= 256 and max(amplitudes) > 0

        # The live line was edited while he spoke, and says how it ended.
        line = tb.table.fake.message(progress.id)
        assert any("🔴" in old["content"] and "/ 3:00" in old["content"] for old in line.edits)
        assert line.content == ru(
            "lastword.outcome.stopped", player=mention(tb.nominee), length=clock_text(duration)
        )
        assert line.components == []

        # The file holds his packets only, on his timeline: leading silence until
        # his first packet, the lost ones and the pause as silence frames.
        ogg = attachment.data
        # 48 kHz mono, as Discord's clients record voice messages: his stereo packets
        # kept bit for bit, the header telling decoders to mix them down.
        assert opus_head(ogg)[:4] == (1, 1, PRE_SKIP, RATE)
        with av.open(io.BytesIO(ogg)) as container:
            stream = container.streams.audio[0]
            assert (stream.channels, stream.sample_rate) == (1, RATE)
        packets, lead = recorded_audio(ogg)
        # the lead-in is the time from the recording's start until his first packet, to the frame
        first_sent = min(packet.sent_at for packet in sent) - recorder.recording_started
        assert first_sent >= waited
        assert abs((lead - PRE_SKIP) / RATE - first_sent) <= FRAME / RATE, (
            "his voice is not where he spoke"
        )
        expected = expected_packets(sent)
        assert len(expected) == 1000 + 150
        assert packets[: len(expected)] == expected
        assert all(packet in SILENCE_FRAMES for packet in packets[len(expected) :])
        total = lead + file_samples(packets)
        assert duration == (total - PRE_SKIP) / RATE
        # 23 s of speech and pause, then the moment until Stop was pressed (on the call's clock:
        # no longer than from his last packet until the recording was over, give or take a second)
        assert 23.0 - FRAME / RATE <= (total - lead) / RATE < 23.0 + (over - spoke) + 1.0

        decoded = decode(ogg)
        assert abs(len(decoded) - duration * RATE) <= 1
        lead_in = audio_packets(ogg)[: leading_silence(audio_packets(ogg))[0]]
        reference = decode_raw(lead_in + expected)[PRE_SKIP:]
        assert len(reference) == total - PRE_SKIP - file_samples(packets[len(expected) :])
        assert decoded[: len(reference)] == reference

        # The neighbour's tone is nowhere in it; the pause is where and as long as it was.
        assert tone_share(decode_raw(tone_packets(TONE_HZ, 200)), TONE_HZ) > 0.5
        assert tone_share(decoded, TONE_HZ) < 0.01
        pause = lead - PRE_SKIP + gap_at * FRAME
        assert peak(decoded[pause + FRAME : pause + 150 * FRAME]) < 1e-4
        assert peak(decoded[pause - 10 * FRAME : pause]) > 0.05
        assert peak(decoded[pause + 150 * FRAME : pause + 160 * FRAME]) > 0.05
        assert peak(decoded[: max(0, lead - PRE_SKIP)]) < 1e-4

        # The rules have his last word: a second one the same day is refused.
        assert tb.used_up()
        again = await tb.ask()
        assert again.ephemeral and again.content == ru("error.last_word_used")
        assert not list(tb.folder.iterdir()), "the posted recording is not left on disk"


async def test_four_minutes_of_speech_are_cut_at_exactly_three() -> None:
    async with tribune() as tb:
        await tb.ask()
        nominee = await tb.join()
        client = await tb.recording()
        speech = opus_packets()
        four_minutes = [speech[i % len(speech)] for i in range(12_000)]
        before = client.receiver.stats.delivered
        sent = await tb.speak_fast(nominee, four_minutes, client)
        await tb.finished(timeout=30)

        voice = await tb.voice_message()
        attachment = voice.attachments[0]
        assert attachment.duration_secs == 180.0
        assert abs(decoded_length(attachment.data) - 180 * RATE) <= 1
        packets, lead = recorded_audio(attachment.data)
        assert lead >= PRE_SKIP
        assert packets == expected_packets(sent)[: len(packets)]
        assert client.receiver.stats.delivered - before < len(four_minutes)
        line = tb.table.fake.message((await tb.calling_message()).id)
        assert line.content == ru(
            "lastword.outcome.complete", player=mention(tb.nominee), length="3:00"
        )
        assert tb.used_up()


async def test_the_hosts_limit_is_the_cut() -> None:
    async with tribune(last_word_seconds=2) as tb:
        await tb.ask()
        nominee = await tb.join()
        client = await tb.recording()
        line = await tb.calling_message()
        assert tb.table.fake.message(line.id).content == ru(
            "lastword.calling",
            player=mention(tb.nominee),
            limit="0:02",
            tribune=f"<#{tb.voice_channel}>",
        )
        sent = await tb.speak_fast(nominee, opus_packets()[:250], client)
        await tb.finished()

        attachment = (await tb.voice_message()).attachments[0]
        assert attachment.duration_secs == 2.0
        assert abs(decoded_length(attachment.data) - 2 * RATE) <= 1
        packets, _ = recorded_audio(attachment.data)
        assert packets == expected_packets(sent)[: len(packets)]
        assert tb.table.fake.message(line.id).content == ru(
            "lastword.outcome.complete", player=mention(tb.nominee), length="0:02"
        )


async def test_the_days_end_waits_for_the_speaker_then_executes_him() -> None:
    async with tribune() as tb:
        table = tb.table
        voting = await table.slash("host", "host next")
        began = ru("host.began", moment="день 1, голосование", deadline="").rstrip()
        assert voting.ephemeral and voting.content.startswith(began)
        for voter in tb.others()[:4]:
            voted = await table.slash(table.name(voter), "vote", {"player": tb.nominee})
            assert voted.ephemeral, voted.content
        await tb.ask()
        nominee = await tb.join()
        client = await tb.recording()

        ended = await table.slash("host", "host next")
        if ended.callback_type == 5:  # "thinking…": a loaded bot waited for the game's lock
            await ended.wait_original()
        assert ended.ephemeral and ended.content == ru("host.deferred")
        assert table.game.stage.name == "VOTING"
        assert table.game.is_alive(tb.nominee)

        before = client.receiver.stats.delivered
        sent = await nominee.play(opus_packets()[:250])
        await tb.delivered(client, before + len(sent))
        assert table.game.stage.name == "VOTING", "the day still waits while he speaks"
        await tb.stop()
        await tb.finished()

        assert not table.game.is_alive(tb.nominee)
        messages = tb.city_messages()
        voice = await tb.voice_message()
        death = "💀 " + mention(tb.nominee)
        deaths = [m for m in messages if m.kind == "channel" and death in m.content]
        assert len(deaths) == 1
        assert messages.index(voice) < messages.index(deaths[0]), "executed after his last word"
        posted = ru(
            "lastword.posted",
            player=mention(tb.nominee),
            length=clock_text(voice.attachments[0].duration_secs or 0),
        )
        assert [m.content for m in messages].index(posted) == messages.index(voice) - 1


async def test_a_refused_voice_message_is_posted_once_as_an_audio_attachment() -> None:
    async with tribune(refusals=True) as tb:  # the server took Send Voice Messages from the bot
        fake = tb.table.fake
        # ...and the bot does not put its overwrite back (the footprint's pass would: it is not
        # what this test is about), so Discord refuses the voice message itself
        await tb.table.bot.get_cog("HostCog").footprint.close()
        bot_id = fake.bot_user.id
        channel = fake.channel(tb.city_channel)
        mine = next(o for o in channel.overwrites if o.id == bot_id)
        fake.set_overwrite(
            tb.city_channel,
            Overwrite(bot_id, mine.type, mine.allow & ~SEND_VOICE, mine.deny | SEND_VOICE),
        )
        await tb.ask()
        nominee = await tb.join()
        client = await tb.recording()
        before = client.receiver.stats.delivered
        sent = await nominee.play(opus_packets()[:300])
        await tb.delivered(client, before + len(sent))
        await tb.stop()
        await tb.finished()

        refused = [
            c
            for c in fake.calls("POST", "/channels/{channel_id}/messages")
            if c.status == 403 and c.params.get("channel_id") == str(tb.city_channel)
        ]
        assert len(refused) == 1, "the voice message was tried once"
        assert not tb.voice_messages()
        attached = tb.with_attachments()
        assert len(attached) == 1
        message = attached[0]
        assert message.content == ru("lastword.attachment", player=mention(tb.nominee))
        attachment = message.attachments[0]
        assert attachment.content_type is not None and attachment.content_type.startswith(
            "audio/ogg"
        )
        assert attachment.filename.endswith(".ogg")
        packets, _ = recorded_audio(attachment.data)
        assert packets[: len(sent)] == expected_packets(sent)
        messages = tb.city_messages()
        duration = (decoded_length(attachment.data)) / RATE
        assert messages[messages.index(message) - 1].content == ru(
            "lastword.posted", player=mention(tb.nominee), length=clock_text(duration)
        )
        assert tb.used_up()


async def test_only_the_speaker_or_the_host_may_stop_him() -> None:
    async with tribune() as tb:
        table = tb.table
        bystander = table.name(tb.others()[0])
        await tb.ask()
        nominee = await tb.join()
        client = await tb.recording()
        before = client.receiver.stats.delivered
        sent = await nominee.play(opus_packets()[:200])
        await tb.delivered(client, before + len(sent))

        pressed = await tb.stop(bystander)
        assert pressed.ephemeral and pressed.content == ru("error.not_host")
        skipped = await table.slash(bystander, "host skip")
        assert skipped.ephemeral and skipped.content == ru("error.not_host")
        assert tb.is_recording()

        by_host = await tb.stop("host")
        assert by_host.ephemeral and by_host.content == ru("lastword.stopping")
        await tb.finished()
        voice = await tb.voice_message()
        packets, _ = recorded_audio(voice.attachments[0].data)
        assert packets[: len(sent)] == expected_packets(sent)
        line = table.fake.message((await tb.calling_message()).id)
        assert line.content.startswith(
            ru("lastword.outcome.stopped", player=mention(tb.nominee), length="")[:-3]
        )


async def test_the_hosts_skip_stops_him_and_silence_uses_up_his_last_word() -> None:
    async with tribune() as tb:
        table = tb.table
        idle = await table.slash("host", "host skip")
        assert idle.ephemeral and idle.content == ru("error.no_recording")
        await tb.ask()
        await tb.join()
        await tb.recording()

        skipped = await table.slash("host", "host skip")
        assert skipped.ephemeral and skipped.content == ru("lastword.skipped")
        await tb.finished()

        line = table.fake.message((await tb.calling_message()).id)
        assert line.content == ru(
            "lastword.outcome.stopped", player=mention(tb.nominee), length="0:00"
        )
        assert line.components == []
        assert not tb.with_attachments()
        assert tb.used_up(), "he stood at the tribune and said nothing"
        again = await tb.ask()
        assert again.content == ru("error.last_word_used")


async def test_the_tribune_takes_one_speaker_at_a_time_in_the_order_they_asked() -> None:
    async with tribune() as first:
        table = first.table
        second_nominator, second_nominee = first.others()[:2]
        nominated = await table.slash(
            table.name(second_nominator), "nominate", {"player": second_nominee}
        )
        assert nominated.ephemeral, nominated.content
        await table.drain()
        second = replace(first, nominee=second_nominee, nominator=second_nominator, speakers={})

        # The first asks with the button on his nomination; it is his button only.
        nomination = next(
            m
            for m in first.city_messages()
            if f"mafia:lastword:{first.live.id}:{first.nominee}" in str(m.components)
        )
        custom_id = f"mafia:lastword:{first.live.id}:{first.nominee}"
        foreign = await table.fake.click(nomination, custom_id, int(second.nominee))
        assert foreign.ephemeral and foreign.content == ru("error.not_your_button")
        pressed = await table.fake.click(nomination, custom_id, first.nominee_id)
        assert pressed.ephemeral and pressed.content == ru("lastword.queued", ahead=0)
        asked = await second.ask()
        assert asked.content == ru("lastword.queued", ahead=1)
        twice = await first.ask()
        assert twice.content == ru("error.lastword_queued")

        speakers = [await first.join(), await second.join()]
        client = await first.recording()
        assert not client.receiver.is_registered(second.nominee_id), "one speaker at a time"
        sent: list[list[SentPacket]] = []
        for tb, speaker in zip((first, second), speakers, strict=True):
            client = await tb.recording()
            before = client.receiver.stats.delivered
            start = 0 if tb is first else 400
            spoken = await speaker.play(opus_packets()[start : start + 150])
            await tb.delivered(client, before + len(spoken))
            sent.append(spoken)
            await tb.stop()
        await first.finished()

        voices = first.voice_messages()
        assert len(voices) == 2
        for voice, spoken in zip(voices, sent, strict=True):
            packets, _ = recorded_audio(voice.attachments[0].data)
            assert packets[: len(spoken)] == expected_packets(spoken)
        assert first.used_up() and second.used_up()
