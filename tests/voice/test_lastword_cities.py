"""The last word where the vote is: a nominee of another city is called, and his recording
posted, in the city voting on him and in his own city."""

from __future__ import annotations

from bot.i18n import mention, t
from tests.voice.test_lastword import opus_packets
from tests.voice.tribune import VOICE_MESSAGE, tribune


async def test_a_cross_city_nominee_is_called_and_heard_in_the_city_voting_on_him_and_his_own():
    async with tribune(players=16, cities="Верона, Падуя") as tb:
        table = tb.table
        voting_city, home = table.game.cities[:2]
        assert (
            table.game.city_of(tb.nominee) == home
            and table.game.city_of(tb.nominator) == voting_city
        )
        asked = await tb.ask()
        assert asked.ephemeral, asked.content
        nominee = await tb.join()
        client = await tb.recording()
        await table.drain()
        stop = f"mafia:stop:{tb.live.id}:{tb.nominee}"
        calling = t(
            "ru",
            "lastword.calling",
            player=mention(tb.nominee),
            limit="3:00",
            tribune=f"<#{tb.voice_channel}>",
        )
        for city in (voting_city, home):
            lines = [
                m
                for m in table.fake.messages(table.city_channel(city))
                if stop in str((m.components, m.edits))
            ]
            assert len(lines) == 1, city
            first = lines[0].edits[0]["content"] if lines[0].edits else lines[0].content
            assert first == calling, city
            assert lines[0].pinged == {tb.nominee_id}, city  # he is pinged, nobody else
        await tb.speak_fast(nominee, opus_packets()[:150], client)
        await tb.stop()
        await tb.finished()
        await table.drain()
        for city in (voting_city, home):
            voice = [
                m for m in table.fake.messages(table.city_channel(city)) if m.flags & VOICE_MESSAGE
            ]
            assert len(voice) == 1, city
            assert (
                voice[0].attachments[0].duration_secs and voice[0].attachments[0].duration_secs > 2
            )
        others = [c for c in table.game.cities if c not in (voting_city, home)]
        assert not others  # two cities: nowhere else to check
        assert not list(tb.folder.glob("*.ogg")), "the file is removed once both cities have it"
