"""The fake counts Discord's invalid requests (401, 403, 429 not shared) per 10 minutes of its clock,
and the plugin fails a test past the budget."""

from __future__ import annotations

from collections.abc import AsyncIterator

import aiohttp
import pytest
import pytest_asyncio

from tests.fakediscord import Permission, StandardGuild
from tests.fakediscord.invalid import BUDGET, WINDOW, InvalidRequests, is_invalid

pytest_plugins = ("pytester",)


class Clock:
    """A clock the test moves."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest_asyncio.fixture
async def session() -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession() as session:
        yield session


async def call(
    session: aiohttp.ClientSession, fake_guild: StandardGuild, method: str, path: str, **kw: object
) -> int:
    fake = fake_guild.fake
    headers = {"Authorization": f"Bot {kw.pop('token', fake.token)}"}
    async with session.request(method, fake.api_base + path, headers=headers, **kw) as answer:  # type: ignore[arg-type]
        await answer.read()
        return answer.status


def test_what_discord_counts_as_invalid() -> None:
    assert is_invalid(401, {}) and is_invalid(403, {})
    assert is_invalid(429, {"X-RateLimit-Scope": "user"})
    assert is_invalid(429, {"X-RateLimit-Scope": "global"})
    assert not is_invalid(429, {"X-RateLimit-Scope": "shared"})
    assert not is_invalid(404, {}) and not is_invalid(400, {}) and not is_invalid(200, {})


@pytest.mark.invalid_requests(200)
def test_the_window_slides_on_the_fakes_clock() -> None:
    clock = Clock()
    counter = InvalidRequests(clock)
    for _ in range(60):
        counter.note(403, {}, "PUT x -> 403")
    clock.now += WINDOW - 1
    for _ in range(50):
        counter.note(403, {}, "PUT x -> 403")
    assert (counter.total, counter.recent(), counter.peak()) == (110, 110, 110)
    clock.now += 2  # the first 60 are now more than 10 minutes old
    assert counter.recent() == 50 and counter.peak() == 110
    clock.now += WINDOW
    counter.note(429, {"X-RateLimit-Scope": "shared"}, "shared")
    assert counter.recent() == 0 and counter.total == 110


@pytest.mark.invalid_requests(10)
async def test_refusals_of_a_missing_power_are_counted(
    fake_guild: StandardGuild, session: aiohttp.ClientSession
) -> None:
    fake, guild = fake_guild.fake, fake_guild.guild
    member, channel = fake_guild.players[0], fake_guild.text_channel
    role = fake.create_role(guild.id, "Гости")
    fake.set_bot_permissions(guild.id, int(Permission.VIEW_CHANNEL | Permission.MANAGE_CHANNELS))
    role_path = f"/guilds/{guild.id}/members/{member.user.id}/roles/{role.id}"
    assert await call(session, fake_guild, "PUT", role_path) == 403
    assert await call(session, fake_guild, "DELETE", role_path) == 403
    overwrite = {"allow": "1024", "deny": "0", "type": 1}
    path = f"/channels/{channel.id}/permissions/{member.user.id}"
    assert await call(session, fake_guild, "PUT", path, json=overwrite) == 403
    assert await call(session, fake_guild, "GET", f"/channels/{channel.id}", token="x") == 401
    assert await call(session, fake_guild, "GET", f"/channels/{channel.id}") == 200
    assert await call(session, fake_guild, "GET", "/channels/1") == 404
    assert fake.invalid.total == 4
    assert fake.invalid.routes[0] == (
        "PUT /guilds/{guild_id}/members/{user_id}/roles/{role_id} -> 403"
    )


def test_a_test_past_the_budget_fails(pytester: pytest.Pytester) -> None:
    pytester.makeconftest('pytest_plugins = ("tests.fakediscord.plugin",)')
    pytester.makepyfile(
        f"""
        import pytest
        from tests.fakediscord.invalid import InvalidRequests

        def test_over():
            counter = InvalidRequests()
            for _ in range({BUDGET + 1}):
                counter.note(403, {{}}, "PUT /x -> 403")

        def test_at():
            counter = InvalidRequests()
            for _ in range({BUDGET}):
                counter.note(403, {{}}, "PUT /x -> 403")

        @pytest.mark.invalid_requests({BUDGET * 2})
        def test_marked():
            counter = InvalidRequests()
            for _ in range({BUDGET + 1}):
                counter.note(403, {{}}, "PUT /x -> 403")
        """
    )
    result = pytester.runpytest_inprocess("-p", "no:xdist", "-q")
    result.assert_outcomes(passed=3, errors=1)  # the one past it fails at teardown
    result.stdout.fnmatch_lines(["*ERROR*test_over*"])
    result.stdout.fnmatch_lines([f"*answered {BUDGET + 1} invalid requests*"])


@pytest.mark.invalid_requests(20)
async def test_the_games_calls_without_the_power_are_403_50013(
    fake_guild: StandardGuild, session: aiohttp.ClientSession
) -> None:
    """What a running game asks of Discord, refused as Discord refuses it once the bot lost Manage
    Channels, Manage Roles, or the role is above the bot's highest."""
    fake, guild = fake_guild.fake, fake_guild.guild
    member, channel = fake_guild.players[0], fake_guild.text_channel
    role = fake.create_role(guild.id, "Верона")
    everything = int(fake.state.bot_role(guild.id).permissions)  # type: ignore[union-attr]
    member_role = f"/guilds/{guild.id}/members/{member.user.id}/roles/{role.id}"
    overwrite = f"/channels/{channel.id}/permissions/{member.user.id}"
    rename = {"name": "город"}
    fake.set_bot_permissions(guild.id, everything & ~int(Permission.MANAGE_CHANNELS))
    assert await call(session, fake_guild, "PATCH", f"/channels/{channel.id}", json=rename) == 403
    assert await call(session, fake_guild, "DELETE", f"/channels/{channel.id}") == 403
    fake.set_bot_permissions(guild.id, everything & ~int(Permission.MANAGE_ROLES))
    for method, path, body in (
        ("PUT", member_role, None),
        ("DELETE", member_role, None),
        ("PUT", overwrite, {"allow": "0", "deny": "2048", "type": 1}),
        ("DELETE", overwrite, None),
        ("PATCH", f"/guilds/{guild.id}/roles/{role.id}", rename),
        ("DELETE", f"/guilds/{guild.id}/roles/{role.id}", None),
    ):
        assert await call(session, fake_guild, method, path, json=body) == 403, (method, path)
    fake.set_bot_permissions(guild.id, everything)
    fake.move_role(guild.id, role.id, len(guild.roles) - 1)  # dragged above the bot's role
    assert await call(session, fake_guild, "PUT", member_role) == 403
    assert await call(session, fake_guild, "DELETE", f"/guilds/{guild.id}/roles/{role.id}") == 403
    assert all(c.response["code"] == 50013 for c in fake.calls() if c.status == 403)
    assert fake.invalid.total == 10
