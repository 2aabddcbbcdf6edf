"""The fake's guild scheduled events refuse what Discord refuses: the right to create events, an
EXTERNAL event's location and end, a start in the past, a wrong status change, a page of more than
100 interested users."""

from __future__ import annotations

import datetime
import time
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest_asyncio

from tests.fakediscord import DEFAULT_BOT_PERMISSIONS, Permission, StandardGuild
from tests.fakediscord.strict_helpers import Rest, refused


@pytest_asyncio.fixture
async def rest(fake_guild: StandardGuild) -> AsyncIterator[Rest]:
    async with aiohttp.ClientSession() as session:
        yield Rest(fake_guild.fake, session)


def at(hours: float) -> str:
    return datetime.datetime.fromtimestamp(time.time() + hours * 3600, tz=datetime.UTC).isoformat()


def external(**changes: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "name": "Мафия",
        "privacy_level": 2,
        "entity_type": 3,
        "scheduled_start_time": at(2),
        "scheduled_end_time": at(5),
        "entity_metadata": {"location": "#general"},
    }
    body.update(changes)
    return {key: value for key, value in body.items() if value is not ...}


async def test_an_external_event_needs_its_location_its_end_and_a_future_start(
    fake_guild: StandardGuild, rest: Rest
) -> None:
    path = f"/guilds/{fake_guild.guild.id}/scheduled-events"
    status, answer = await rest.call("POST", path, external(entity_metadata={}))
    refused(status, answer, "entity_metadata", "location")
    status, answer = await rest.call("POST", path, external(scheduled_end_time=...))
    refused(status, answer, "scheduled_end_time")
    status, answer = await rest.call(
        "POST", path, external(scheduled_start_time=at(-1), scheduled_end_time=at(1))
    )
    refused(status, answer, "scheduled_start_time", code="GUILD_SCHEDULED_EVENT_SCHEDULE_PAST")
    status, answer = await rest.call("POST", path, external(scheduled_end_time=at(1)))
    refused(status, answer, "scheduled_end_time", code="GUILD_SCHEDULED_EVENT_END_BEFORE_START")
    status, answer = await rest.call(
        "POST", path, external(channel_id=str(fake_guild.text_channel.id))
    )
    refused(status, answer, "channel_id")
    status, answer = await rest.call("POST", path, external())
    assert (
        status == 200
        and answer["status"] == 1
        and answer["entity_metadata"] == {"location": "#general"}
    )
    assert answer["creator_id"] == str(fake_guild.fake.bot_user.id)


async def test_creating_an_event_needs_create_events(fake_guild: StandardGuild, rest: Rest) -> None:
    fake, guild = fake_guild.fake, fake_guild.guild
    bot_role = next(
        role for role in guild.roles.values() if role.permissions == DEFAULT_BOT_PERMISSIONS
    )
    fake.update_role(
        guild.id, bot_role.id, permissions=DEFAULT_BOT_PERMISSIONS & ~int(Permission.CREATE_EVENTS)
    )
    status, answer = await rest.call("POST", f"/guilds/{guild.id}/scheduled-events", external())
    assert (status, answer["code"]) == (403, 50013)
    fake.update_role(guild.id, bot_role.id, permissions=DEFAULT_BOT_PERMISSIONS)
    status, _ = await rest.call("POST", f"/guilds/{guild.id}/scheduled-events", external())
    assert status == 200


async def test_status_moves_and_interested_users_come_a_hundred_at_most(
    fake_guild: StandardGuild, rest: Rest
) -> None:
    fake, guild = fake_guild.fake, fake_guild.guild
    path = f"/guilds/{guild.id}/scheduled-events"
    _, event = await rest.call("POST", path, external())
    users = f"{path}/{event['id']}/users"
    for member in fake_guild.players[:3]:
        fake.event_routes.mark_interested(int(event["id"]), member.user.id)
    status, answer = await rest.call("GET", users, params={"limit": "101"})
    refused(status, answer, "limit")
    status, answer = await rest.call("GET", users, params={"limit": "2", "with_member": "true"})
    ids = sorted(m.user.id for m in fake_guild.players[:3])
    assert (
        status == 200
        and [int(row["user_id"]) for row in answer] == ids[:2]
        and "member" in answer[0]
    )
    status, answer = await rest.call("GET", users, params={"after": str(ids[1])})
    assert [int(row["user_id"]) for row in answer] == ids[2:]

    status, answer = await rest.call("PATCH", f"{path}/{event['id']}", {"status": 3})
    refused(status, answer, "status")  # scheduled → completed is not a move
    status, answer = await rest.call("PATCH", f"{path}/{event['id']}", {"status": 2})
    assert status == 200 and answer["status"] == 2
    status, answer = await rest.call(
        "GET", f"{path}/{event['id']}", params={"with_user_count": "true"}
    )
    assert answer["user_count"] == 3
    status, answer = await rest.call("GET", f"{path}/1")
    assert (status, answer["code"]) == (404, 10070)
