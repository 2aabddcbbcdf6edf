"""First end-to-end check: /mafia new, join, /host start, /mafia status through the fake Discord."""

from tests.harness import bot_table


async def test_a_game_starts_and_shows_its_status():
    async with bot_table(players=8) as table:
        live = await table.new_game(cities="Верона, Падуя")
        game = live.game
        assert game is not None and game.cities == ("Верона", "Падуя")
        assert sorted(len(game.residents[c]) for c in game.cities) == [4, 4]
        status = await table.slash("p0", "mafia status")
        assert status.ephemeral
        assert "день 1, обсуждение" in status.content
        for city in game.cities:
            assert any(
                "Город " + city in text for text in table.channel_messages(table.city_channel(city))
            )
