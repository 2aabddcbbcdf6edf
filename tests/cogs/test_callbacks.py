"""The message an interaction's answer created is parsed only when read (bot.callbacks)."""

from __future__ import annotations

from typing import Any

import discord
import pytest
from discord import interactions

from bot.callbacks import EAGER, LazyCallbackResponse, parse_answers_lazily
from bot.i18n import t
from tests.harness import bot_table


@pytest.fixture
def answers(monkeypatch: pytest.MonkeyPatch) -> tuple[list[Any], list[Any]]:
    """(every callback response discord.py built, every InteractionMessage it built)."""
    responses: list[Any] = []
    messages: list[Any] = []
    update, build = LazyCallbackResponse._update, interactions.InteractionMessage.__init__

    def kept(self: Any, data: Any) -> None:
        responses.append(self)
        update(self, data)

    def counted(self: Any, *args: Any, **kwargs: Any) -> None:
        messages.append(self)
        build(self, *args, **kwargs)

    monkeypatch.setattr(LazyCallbackResponse, "_update", kept)
    monkeypatch.setattr(interactions.InteractionMessage, "__init__", counted)
    return responses, messages


async def test_an_answer_builds_no_message_until_its_resource_is_read(
    answers: tuple[list[Any], list[Any]],
) -> None:
    responses, messages = answers
    async with bot_table(players=4) as table:
        assert interactions.InteractionCallbackResponse is LazyCallbackResponse
        result = await table.slash("p0", "mafia status")
        await result.wait_callback()
        told = t("ru", "error.no_game")
        assert result.text == told
        # Discord echoed the answer's message (the fake, as Discord, when asked with_response)
        assert len(responses) == 1 and responses[0]._resource_data["message"]["content"] == told
        assert messages == []  # and nothing parsed it
        response = responses[0]
        assert response.message_id == result.original_message_id
        assert response.type is discord.InteractionResponseType.channel_message
        assert response.is_ephemeral() and not response.is_thinking()
        # read, it is the message discord.py would have built, once
        message = response.resource
        assert isinstance(message, discord.InteractionMessage)
        assert (message.id, message.content, message.flags.ephemeral) == (
            result.original_message_id,
            told,
            True,
        )
        assert response.resource is message and len(messages) == 1


async def test_eager_is_discordpys_own_parse(answers: tuple[list[Any], list[Any]]) -> None:
    """The switch back (the bench's A/B) gives discord.py's class, which parses at once."""
    _, messages = answers
    async with bot_table(players=4) as table:
        parse_answers_lazily(False)
        try:
            assert interactions.InteractionCallbackResponse is EAGER
            result = await table.slash("p0", "mafia status")
            await result.wait_callback()
            assert result.text == t("ru", "error.no_game")
            assert len(messages) == 1 and messages[0].content == result.text
        finally:
            parse_answers_lazily()
