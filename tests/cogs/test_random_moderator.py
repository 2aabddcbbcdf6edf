"""A moderator at random, as a property test against the strict fake.

Games in progress, one per guild (one bot serves them all); in each, a random sequence of what
a person with Manage Roles and Manage Channels can do in the client (the fake plays him and
sends the gateway events Discord sends): any overwrite on any game channel or the category,
for any member, a server role, a game role or @everyone, overwrites deleted, "Sync Now" with
the category, server roles' permissions edited (Administrator now and then), roles dragged,
server and game roles given and taken, timeouts, members leaving and coming back, newcomers,
bans (a member gone for good), the bot's own role edited (Manage Roles or Manage Channels taken,
a player's act refused meanwhile with the reason, a grant made meanwhile, the power given back:
the host told both times), the server filled to
Discord's 250 roles and freed; interleaved with the host's own kills. After each act and the reconciler's passes, no member
may do, of what the game governs, more than the rules allow him (the fake's own computation,
:func:`tests.cogs.test_effective_permissions.breaches`), save whoever the bot cannot hold back
(the owner, an administrator), and each of those was told to the host. No REST call the bot
makes is refused, save one under way when its own role loses a power (Discord refuses it before
the gateway tells the bot: 403 50013) and a read of a member who left a moment before (404), so
the invalid requests stay far under Discord's budget.

It prints the longest time a rule stayed broken and the invalid requests per 10 minutes (the
README gives both). ``MODERATOR_GAMES``, ``MODERATOR_ACTS`` (a game), ``MODERATOR_LANES`` (games
at once, each in its own guild) and ``MODERATOR_SEED`` run it bigger or again; the reconciler's
settling delay is 0 here (a game's acts come one at a time). The suite runs :data:`SEED`, so
that CI is the same run every time; ``MODERATOR_SEED=random`` explores (seeds 4054815755 and
3800261703 found the two bugs of 7 December, both fixed: the second is
``tests/cogs/test_repairs_after_a_hold.py``). After an act the bot has settled once its
outbox drained and no pass of the reconciler is asked for or running (:func:`quiet`): a pass
decides on the bot's cache, which may lag behind a moderator's act of a moment before (seed
2021532971: a game role given by hand while the pass put back that role's overwrite), and
the gateway's event that tells the bot asks for the pass that repairs it.
"""

from __future__ import annotations

import asyncio
import datetime
import json
import os
import random
from collections import Counter
from dataclasses import dataclass, field
from typing import TypeVar

import bot.footprint.reconciler as reconciler_module
from bot.channels import permission_names
from bot.footprint.effective import GOVERNED
from bot.i18n import t
from tests.cogs.scenes import accepted, another_guild, quick_edits, run
from tests.cogs.test_effective_permissions import breaches, rules_now
from tests.cogs.test_footprint import ADMINISTRATOR, REPAIR, host_cog, log_lines
from tests.fakediscord.permissions import (
    DEFAULT_BOT_PERMISSIONS,
    OVERWRITE_MEMBER,
    OVERWRITE_ROLE,
    Overwrite,
    Permission,
)
from tests.harness import Table, bot_table

T = TypeVar("T")
MANAGE_CHANNELS, MANAGE_ROLES = 1 << 4, 1 << 28

GAMES = int(os.environ.get("MODERATOR_GAMES", "50"))
ACTS = int(os.environ.get("MODERATOR_ACTS", "40"))
#: games played at once, each in its own guild (a game's acts stay one at a time)
LANES = int(os.environ.get("MODERATOR_LANES", "1"))
#: bits a moderator plays with: what the game governs and a few it does not
BITS = [bit for bit in Permission if bit & GOVERNED] + [
    Permission.READ_MESSAGE_HISTORY,
    Permission.ADD_REACTIONS,
    Permission.ATTACH_FILES,
]


@dataclass
class Figures:
    """What a run did and measured."""

    acts: Counter[str] = field(default_factory=Counter)
    longest: float = 0.0
    longest_act: str = ""
    broken: int = 0
    """Acts after which a rule was broken for a while (then repaired)."""
    told: set[int] = field(default_factory=set)
    """Administrators the host was told of."""
    unseen: list[tuple[int, int]] = field(default_factory=list)
    """The fake's calls (first, last index) while the bot's own role lacked a power: a call
    under way when the power went is refused before the gateway tells the bot (403 50013)."""

    def summary(self, invalid: int, seconds: float) -> str:
        return (
            f"{sum(self.acts.values())} acts over {GAMES} games in {seconds:.0f} s: "
            f"{self.broken} broke a rule, the longest for {self.longest * 1000:.0f} ms "
            f"({self.longest_act}); {len(self.told)} administrator(s) told to the host; invalid requests {invalid} "
            f"(per 10 minutes at most {invalid}); acts {dict(sorted(self.acts.items()))}"
        )


class Moderator:
    """One guild's moderator, acting at random while its game runs."""

    def __init__(self, table: Table, rng: random.Random, figures: Figures) -> None:
        self.table, self.rng, self.figures = table, rng, figures
        self.fake, self.guild = table.fake, table.guild_id
        self.roles = [self.fake.create_role(self.guild, name).id for name in ("Друзья", "Гости")]
        self.gone: list[object] = []
        """Members who left (their user, to come back)."""

    def bits(self, odds: float = 0.3) -> int:
        return sum(int(bit) for bit in BITS if self.rng.random() < odds)

    def members(self) -> list[int]:
        bot = self.fake.bot_user.id
        return [user for user in self.fake.guild(self.guild).members if user != bot]

    async def step(self) -> str:
        """One act at random (its name)."""
        footprint = rules_now(self.table)
        channels = [int(place.id) for place in footprint.places]
        game_roles = [int(role) for role in footprint.role_ids]
        channel, rng = rng_choice(self.rng, channels), self.rng
        acts = {
            "member overwrite": 6,
            "server role overwrite": 4,
            "game role overwrite": 2,
            "@everyone overwrite": 1,
            "overwrite deleted": 2,
            "sync with category": 1,
            "server role permissions": 2,
            "server role given or taken": 4,
            "game role given or taken": 2,
            "role dragged": 1,
            "timeout": 1,
            "leave and come back": 1,
            "newcomer": 1,
            "ban": 1,
            "the bot's own role edited": 1,
            "roles to the cap and freed": 0.1,
            "host kill": 1,
        }
        act = rng.choices(list(acts), weights=list(acts.values()))[0]
        if act == "member overwrite":
            target = rng_choice(rng, self.members())
            self.fake.set_overwrite(
                channel, Overwrite(target, OVERWRITE_MEMBER, self.bits(), self.bits(0.1))
            )
        elif act in ("server role overwrite", "game role overwrite", "@everyone overwrite"):
            role = {
                "server role overwrite": lambda: rng_choice(rng, self.roles),
                "game role overwrite": lambda: rng_choice(rng, game_roles),
                "@everyone overwrite": lambda: self.guild,
            }[act]()
            self.fake.set_overwrite(
                channel, Overwrite(role, OVERWRITE_ROLE, self.bits(), self.bits(0.1))
            )
        elif act == "overwrite deleted":
            self.delete_overwrite(channel)
        elif act == "sync with category":
            category = int(footprint.places[0].id)
            copied = list(self.fake.channel(category).overwrites)
            if channel != category:
                self.fake.update_channel(channel, overwrites=copied)
        elif act == "server role permissions":
            granted = ADMINISTRATOR if rng.random() < 0.1 else self.bits()
            self.fake.update_role(self.guild, rng_choice(rng, self.roles), permissions=granted)
        elif act == "server role given or taken":
            self.toggle(rng_choice(rng, self.members()), rng_choice(rng, self.roles))
        elif act == "game role given or taken":
            self.toggle(rng_choice(rng, self.members()), rng_choice(rng, game_roles))
        elif act == "role dragged":
            top = len(self.fake.guild(self.guild).roles)
            role = rng_choice(rng, self.roles + game_roles[:1])
            self.fake.move_role(self.guild, role, rng.randint(1, top))
        elif act == "timeout":
            self.timeout(rng_choice(rng, self.members()))
        elif act == "leave and come back":
            await self.leave_or_return()
        elif act == "newcomer":
            self.fake.add_member(self.guild, f"guest{rng.randrange(10**9)}")
        elif act == "ban":  # he leaves and never comes back
            host = self.table.host.user.id
            self.fake.remove_member(
                self.guild, rng_choice(rng, [u for u in self.members() if u != host])
            )
        elif act == "the bot's own role edited":
            await self.bots_role_edited(channel)
        elif act == "roles to the cap and freed":
            await self.roles_to_the_cap()
        else:
            await self.kill()
        self.figures.acts[act] += 1
        return act

    async def bots_role_edited(self, channel: int) -> None:
        """An admin takes Manage Roles or Manage Channels from the bot's role, grants someone a
        view the rules deny meanwhile, then gives the power back: the host is told both times,
        and the grant is taken back once the bot can."""
        power = self.rng.choice([MANAGE_ROLES, MANAGE_CHANNELS])
        table = self.table
        lost, back = (
            t("ru", "powers.lost", permissions="", role="").split(":")[0],
            t("ru", "powers.back"),
        )

        def told(head: str) -> int:
            return sum(line.startswith(head) for line in log_lines(table))

        losses, returns = told(lost), told(back)
        first = len(self.fake.calls())
        self.fake.set_bot_permissions(self.guild, DEFAULT_BOT_PERMISSIONS & ~power)
        await table.fake.wait_until(
            lambda: told(lost) > losses or None, REPAIR, "never told the bot lost a power"
        )
        await self.nothing_moves(power)
        target = rng_choice(self.rng, self.members())
        self.fake.set_overwrite(channel, Overwrite(target, OVERWRITE_MEMBER, self.bits(), 0))
        self.fake.set_bot_permissions(self.guild, DEFAULT_BOT_PERMISSIONS)
        await table.fake.wait_until(
            lambda: told(back) > returns or None, REPAIR, "never told the power is back"
        )
        self.figures.unseen.append((first, len(self.fake.calls())))

    async def nothing_moves(self, power: int) -> None:
        """While the bot lacks ``power`` a living player's act is refused with the reason, and
        nothing is committed (the first two living players on the server: no draw of the
        act's random sequence)."""
        table, game = self.table, self.table.game
        present = self.fake.guild(self.guild).members
        living = [p for p in game.alive() if int(p) in present]
        if len(living) < 2 or game.over:
            return
        flag = "manage_roles" if power == MANAGE_ROLES else "manage_channels"
        role = self.fake.state.bot_role(self.guild)
        assert role is not None
        reason = t(
            "ru",
            "error.powers_lacking",
            permissions=permission_names("ru", [flag]),
            role=role.name,
        )
        commands = len(await table.bot.storage.commands(table.live().id))
        answer = await run(table, living[0], "nominate", {"player": living[1]})
        assert answer.content == reason, answer.content
        assert len(await table.bot.storage.commands(table.live().id)) == commands

    async def roles_to_the_cap(self) -> None:
        """An admin fills the server to Discord's 250 roles, then deletes what he made."""
        made = [
            self.fake.create_role(self.guild, f"filler{n}").id
            for n in range(250 - len(self.fake.guild(self.guild).roles))
        ]
        await settle(self.table, "roles to the cap", self.figures)
        for role in made:
            self.fake.delete_role(self.guild, role)

    def delete_overwrite(self, channel: int) -> None:
        """A moderator deletes one overwrite of the channel (never the bot's own)."""
        bot = self.fake.bot_user.id
        present = [o for o in self.fake.channel(channel).overwrites if o.id != bot]
        if present:
            self.fake.delete_overwrite(channel, rng_choice(self.rng, present).id)

    def toggle(self, user: int, role: int) -> None:
        if role in self.fake.member(self.guild, user).roles:
            self.fake.remove_member_role(self.guild, user, role)
        else:
            self.fake.add_member_role(self.guild, user, role)

    def timeout(self, user: int) -> None:
        member = self.fake.member(self.guild, user)
        if member.communication_disabled_until is not None:
            self.fake.update_member(self.guild, user, timed_out_until=None)
            return
        until = datetime.datetime.now(datetime.UTC) + datetime.timedelta(days=1)
        self.fake.update_member(self.guild, user, timed_out_until=until.isoformat())

    async def leave_or_return(self) -> None:
        """A member (never the host) leaves; or one who left comes back."""
        host = self.table.host.user.id
        if self.gone and self.rng.random() < 0.6:
            self.fake.add_member(self.guild, self.gone.pop())  # type: ignore[arg-type]
            return
        leaving = [user for user in self.members() if user != host]
        user = rng_choice(self.rng, leaving)
        self.gone.append(self.fake.member(self.guild, user).user)
        self.fake.remove_member(self.guild, user)

    async def kill(self) -> None:
        """The host kills a citizen while the game would go on (and he is on the server)."""
        game = self.table.game
        present = self.fake.guild(self.guild).members
        citizens = [
            p for p in game.alive() if game.status_of(p).value == "citizen" and int(p) in present
        ]
        mafia = [p for p in game.alive() if game.status_of(p).value != "citizen"]
        if len(citizens) > len(mafia) + 2:
            await accepted(self.table, "host", "host kill", {"player": self.rng.choice(citizens)})


def rng_choice(rng: random.Random, items: list[T]) -> T:
    return items[rng.randrange(len(items))]


def exempt(table: Table, user: int) -> bool:
    """Whoever no overwrite holds back: the owner, an administrator."""
    guild = table.fake.guild(table.guild_id)
    if user == guild.owner_id:
        return True
    return bool(table.fake.state.guild_permissions(table.guild_id, user) & ADMINISTRATOR)


async def unfixable_told(table: Table, users: set[int]) -> None:
    """Each administrator beyond the rules was named to the host."""
    for user in users:
        if user == table.fake.guild(table.guild_id).owner_id:
            continue
        head = t("ru", "footprint.effective.administrator", member=f"<@{user}>", roles="")

        def told(head: str = head.split("(")[0]) -> bool | None:
            return any(line.startswith(head) for line in log_lines(table)) or None

        await table.fake.wait_until(
            told,
            REPAIR,
            f"the host was never told of the administrator {user}",
        )


#: the seed the suite runs (``MODERATOR_SEED`` another, or ``random``)
SEED = 28


async def quiet(table: Table) -> None:
    """The bot's repairs drained: its outbox, and the reconciler's passes that the gateway's
    events asked for meanwhile (a pass decides on the bot's cache, which may lag behind what a
    moderator did a moment before; the event that tells it asks for the pass that repairs it,
    which may store more items)."""
    reconciler, game = host_cog(table).footprint, table.live().id

    def idle() -> bool | None:
        task = reconciler._tasks.get(game)
        asked = game in reconciler._dirty or game in reconciler._waiting
        return (not asked and (task is None or task.done()) and table.bot.outbox.idle()) or None

    while True:
        await table.drain()
        await table.fake.wait_until(idle, REPAIR, "the reconciler never settled")
        if table.bot.outbox.idle():
            return


async def settle(table: Table, act: str, figures: Figures) -> None:
    """Wait until no member may do more than the rules allow (save the exempt), then for the
    outbox; the time a rule stayed broken is measured."""
    loop = asyncio.get_running_loop()
    started = loop.time()

    def over_the_rules() -> list[tuple[int, int, int]]:
        return [
            (user, channel, has & ~rules)
            for user, channel, has, rules in breaches(table)
            if has & ~rules and not exempt(table, user)
        ]

    if over_the_rules():
        figures.broken += 1
        try:
            await table.fake.wait_until(lambda: not over_the_rules() or None, REPAIR)
        except TimeoutError:
            raise AssertionError(f"after {act!r} a rule stays broken: {over_the_rules()}") from None
        took = loop.time() - started
        if took > figures.longest:
            figures.longest, figures.longest_act = took, act
    await table.drain()
    # the last items may let through what a pass decided on a lagging cache; the pass its
    # gateway event asks for takes it away: measured too, and it must be gone once all is quiet
    late = loop.time() if over_the_rules() else None
    await quiet(table)
    if late is not None and not over_the_rules():
        figures.broken += 1
        if loop.time() - late > figures.longest:
            figures.longest, figures.longest_act = loop.time() - late, f"{act}, after the outbox"
    exempt_beyond = {user for user, _, has, rules in breaches(table) if has & ~rules}
    assert all(exempt(table, user) for user in exempt_beyond), (act, exempt_beyond)
    await unfixable_told(table, exempt_beyond)
    figures.told |= exempt_beyond - {table.fake.guild(table.guild_id).owner_id}


async def test_a_moderator_at_random_never_leaves_anyone_more_than_the_rules_allow(monkeypatch):
    wanted = os.environ.get("MODERATOR_SEED") or str(SEED)
    seed = random.SystemRandom().randrange(2**32) if wanted == "random" else int(wanted)
    monkeypatch.setattr(reconciler_module, "SETTLE", 0.0)
    figures = Figures()
    loop = asyncio.get_running_loop()
    started = loop.time()
    # refusals are checked below: only those the bot could not know of (a power just taken)
    async with bot_table(players=8, refusals=True) as first:

        async def lane(index: int) -> None:
            """Games ``index``, ``index + LANES``...: one at a time, each in a guild of its own,
            its acts drawn from a generator of its own (the seed gives the same plan)."""
            rng = random.Random(f"{seed}:{index}")
            for number in range(index, GAMES, LANES):
                table = first if number == 0 else await another_guild(first, f"g{number}p", 8)
                quick_edits(table)
                await table.new_game(cities="Верона", maniac=False)
                moderator = Moderator(table, rng, figures)
                for _ in range(ACTS):
                    act = await moderator.step()
                    try:
                        await settle(table, act, figures)
                    except AssertionError as error:
                        raise AssertionError(f"{error} (MODERATOR_SEED={seed})") from None

        await asyncio.gather(*(lane(index) for index in range(LANES)))
        calls = first.fake.calls()
        invalid = [c for c in calls if c.status in (401, 403, 429)]
        unseen = [
            f"{c.method} {c.path} -> {c.status} {c.response}"
            for n, c in enumerate(calls)
            if c.status >= 400
            and c.fault is None
            and not (
                c.status == 403
                and '"code": 50013' in json.dumps(c.response)
                and any(a <= n < b for a, b in figures.unseen)
            )
            # a pass confirming by REST a member who left (banned) a moment before: a read
            # Discord answers 404, which is not an invalid request
            and not (c.method == "GET" and c.status == 404 and "/members/" in c.path)
        ]
        assert unseen == [], f"Discord would have refused these calls (MODERATOR_SEED={seed})"
        report = figures.summary(len(invalid), loop.time() - started)
        print(f"\n{report} (MODERATOR_SEED={seed})")
        assert sum(figures.acts.values()) >= GAMES * ACTS
        assert len(invalid) <= 100, report
