"""Every command refused out of turn, by the wrong player, or on an illegal target.

One bot serves five guilds, each holding a game at one moment of play (a
lobby, day 1's discussion, day 1's voting, night 1, no game at all). Every
case runs one refused command there and checks that the answer is the
catalogue's text, visible to the user alone, in the user's own language (his
client's locale; the guilds speak Russian, the English cases' users English), and that nothing
changed: the rules state, the game's record and command log, the messages
of the guild's channels, and no REST call but the answer itself.

Who acts and on whom is written as a part in the cast (``citizen``,
``mafioso_a``, ``dead``...), which each scene fills from the bot's deal.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator
from dataclasses import dataclass, field, replace
from typing import Any

import pytest
import pytest_asyncio

from bot.i18n import t
from cogs.help import wrong_stage_text
from tests.cogs.scenes import (
    accepted,
    another_guild,
    assert_unchanged,
    ballot_message,
    refusal_text,
    snapshot,
)
from tests.harness import Table, bot_table

UNKNOWN = "Никтович"
CITIES = "Верона, Падуя"
GAME = {"cities": CITIES, "mafiosi": 2, "doctor": True, "journalist": True, "maniac": True}
IN_GAME = 16  # p0..p15 play; the last member of each guild stays out


@dataclass
class Scene:
    table: Table
    cast: dict[str, str] = field(default_factory=dict)

    def who(self, part: str) -> str:
        return self.cast.get(part, part)

    def value(self, text: Any) -> Any:
        """``@part`` → the player id of whoever plays it; anything else as is."""
        if isinstance(text, str) and text.startswith("@"):
            return self.table.pid(self.cast[text[1:]])
        return text


def first(names: list[str], *, but: tuple[str, ...] = ()) -> str:
    left = [name for name in names if name not in but]
    assert left, f"nobody left among {names} but {but}"
    return left[0]


def statuses(table: Table, city: str) -> dict[str, list[str]]:
    return {
        status: table.players_of(status, city)
        for status in ("citizen", "mafioso", "commissar", "doctor", "journalist", "maniac")
    }


def outsider(table: Table) -> str:
    return table.world.players[-1].user.username


async def lobby_scene(table: Table) -> Scene:
    names = [m.user.username for m in table.world.players]
    await table.open_lobby(names[:8])
    await table.drain()
    return Scene(table, {"joined": names[0], "outsider": names[8]})


async def day_scene(table: Table) -> Scene:
    """Day 1, discussion; the doctor may not protect himself; one dead, one nomination."""
    names = [m.user.username for m in table.world.players]
    await table.new_game(players=names[:IN_GAME], doctor_self_protect=False, **GAME)
    a, b = table.game.cities
    in_a, in_b = statuses(table, a), statuses(table, b)
    cast = {
        "citizen": in_a["citizen"][0],
        "nominator": in_a["citizen"][0],
        "nominee": in_a["commissar"][0],
        "mafioso_a": in_a["mafioso"][0],
        "mafioso_b": in_b["mafioso"][0],
        "commissar": in_b["commissar"][0],
        "doctor": table.players_of("doctor")[0],
        "journalist": table.players_of("journalist")[0],
        "maniac": table.players_of("maniac")[0],
        "dead": in_b["citizen"][0],
        "outsider": outsider(table),
    }
    await accepted(table, "host", "host kill", {"player": table.pid(cast["dead"])})
    await accepted(table, cast["nominator"], "nominate", {"player": table.pid(cast["nominee"])})
    await table.drain()
    return Scene(table, cast)


async def voting_scene(table: Table) -> Scene:
    """Day 1, voting: a nominee in A, an A resident nominated only in B, a nominee of B who died."""
    names = [m.user.username for m in table.world.players]
    await table.new_game(players=names[:IN_GAME], **GAME)
    a, b = table.game.cities
    in_a, in_b = statuses(table, a), statuses(table, b)
    cast = {
        "citizen": in_a["citizen"][0],
        "nominee": in_a["commissar"][0],
        "cross_nominee": in_a["mafioso"][0],
        "mafioso_a": in_a["mafioso"][1],
        "voter_b": in_b["commissar"][0],
        "dead": in_b["citizen"][0],
        "commissar": in_b["commissar"][0],
        "outsider": outsider(table),
    }
    cast["non_nominee"] = first(
        table.players_of("citizen", a) + table.players_of("mafioso", a),
        but=(cast["citizen"], cast["cross_nominee"]),
    )
    await accepted(table, cast["citizen"], "nominate", {"player": table.pid(cast["nominee"])})
    await accepted(table, cast["voter_b"], "nominate", {"player": table.pid(cast["cross_nominee"])})
    await accepted(table, in_b["mafioso"][0], "nominate", {"player": table.pid(cast["dead"])})
    await accepted(table, "host", "host next")
    await accepted(table, "host", "host kill", {"player": table.pid(cast["dead"])})
    await table.drain()
    return Scene(table, cast)


async def night_scene(table: Table) -> Scene:
    """Night 1 (A tours): a citizen of each city executed, a Judge in B, a dead mafioso of B,
    A's commissar has checked already."""
    names = [m.user.username for m in table.world.players]
    await table.new_game(players=names[:IN_GAME], **GAME)
    game = table.game
    a, b = game.cities
    in_a, in_b = statuses(table, a), statuses(table, b)
    cast = {
        "dead": in_a["citizen"][0],
        "dead_b": in_b["citizen"][0],
        "mafioso_a": in_a["mafioso"][0],
        "other_mafioso_a": in_a["mafioso"][1],
        "dead_mafioso": in_b["mafioso"][0],
        "mafioso_b": in_b["mafioso"][1],
        "commissar_a": in_a["commissar"][0],
        "commissar": in_b["commissar"][0],
        "doctor": table.players_of("doctor")[0],
        "journalist": table.players_of("journalist")[0],
        "maniac": table.players_of("maniac")[0],
        "outsider": outsider(table),
    }
    # with no vote, each city executes its own (only) nominee
    await accepted(table, cast["commissar_a"], "nominate", {"player": table.pid(cast["dead"])})
    await accepted(table, cast["commissar"], "nominate", {"player": table.pid(cast["dead_b"])})
    await accepted(table, "host", "host next")
    await accepted(table, "host", "host next")
    assert table.game.stage.value == "night" and not table.game.is_alive(table.pid(cast["dead"]))
    living_b = [table.name(p) for p in table.game.alive(b)]
    cast["judge_b"] = first(
        living_b, but=(cast["mafioso_b"], cast["dead_mafioso"], cast["commissar"], cast["maniac"])
    )
    cast["resident_b"] = cast["judge_b"]
    cast["citizen"] = first(
        [table.name(p) for p in table.game.alive() if table.game.status_of(p).value == "citizen"]
    )
    await accepted(table, "host", "host judge", {"player": table.pid(cast["judge_b"])})
    await accepted(table, "host", "host kill", {"player": table.pid(cast["dead_mafioso"])})
    await accepted(table, cast["commissar_a"], "check", {"player": table.pid(cast["mafioso_a"])})
    await table.drain()
    return Scene(table, cast)


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def scenes() -> AsyncIterator[dict[str, Scene]]:
    async with bot_table(players=IN_GAME + 1) as table:
        day, voting, night, nogame = [
            await another_guild(table, prefix, IN_GAME + 1) for prefix in ("d", "v", "n", "z")
        ]
        built = await asyncio.gather(
            lobby_scene(table), day_scene(day), voting_scene(voting), night_scene(night)
        )
        yield dict(zip(("lobby", "day", "voting", "night"), built, strict=True)) | {
            "nogame": Scene(nogame, {"citizen": "z0", "outsider": "z1"}),
        }


@dataclass(frozen=True)
class Case:
    scene: str
    who: str
    command: str
    options: dict[str, Any]
    key: str
    params: dict[str, Any] = field(default_factory=dict)
    component: str | None = None  # "vote" (the ballot's select), "unvote", "join", "leave"
    sample: bool = False  # also checked in English

    @property
    def id(self) -> str:
        target = "-".join(str(v).lstrip("@") for v in self.options.values())
        thing = self.component and f"[{self.component}]" or self.command.replace(" ", "-")
        return (
            f"{self.scene}:{self.who}:{thing}{'(' + target + ')' if target else ''}:{self.key[6:]}"
        )


def c(
    scene: str,
    who: str,
    command: str,
    options: dict[str, Any] | None,
    key: str,
    params: dict[str, Any] | None = None,
    **more: Any,
) -> Case:
    return Case(scene, who, command, options or {}, f"error.{key}", params or {}, **more)


HOST_COMMANDS: list[tuple[str, dict[str, Any]]] = [
    ("host setup", {"cities": "Рим, Милан"}),
    ("host touring", {"order": "Падуя, Верона"}),
    ("host timer", {"stage": "voting", "duration": "60"}),
    ("host start", {}),
    ("host next", {}),
    ("host kill", {"player": "@citizen"}),
    ("host judge", {"player": "@citizen"}),
    ("host godfather", {"player": "@mafioso_a"}),
    ("host execute", {"player": "@citizen"}),
    ("host idle", {}),
    ("host end", {}),
]
LOBBY_HOST_COMMANDS = ("host setup", "host touring", "host timer", "host start", "host end")

CASES: list[Case] = [
    # --- the lobby: nothing to play yet, join and leave checked
    c("lobby", "joined", "nominate", {"player": "@outsider"}, "not_started", sample=True),
    c("lobby", "joined", "vote", {"player": "@outsider"}, "not_started"),
    c("lobby", "joined", "pass", None, "not_started"),
    c("lobby", "joined", "mafia me", None, "not_started"),
    c("lobby", "joined", "mafia join", None, "already_joined", sample=True),
    c("lobby", "outsider", "mafia leave", None, "not_joined"),
    c("lobby", "joined", "", None, "already_joined", component="join"),
    c("lobby", "outsider", "", None, "not_joined", component="leave", sample=True),
    *[
        c("lobby", "joined", command, options, "not_host", sample=command == "host start")
        for command, options in HOST_COMMANDS
        if command in LOBBY_HOST_COMMANDS
    ],
    # --- no game in the guild
    c("nogame", "citizen", "nominate", {"player": "@outsider"}, "no_game", sample=True),
    c("nogame", "citizen", "mafia join", None, "no_game"),
    c("nogame", "citizen", "mafia me", None, "no_game"),
    c("nogame", "citizen", "host start", None, "no_game"),
    # --- day 1, discussion
    c("day", "outsider", "nominate", {"player": "@nominee"}, "not_player", sample=True),
    c("day", "dead", "nominate", {"player": "@nominee"}, "not_alive", sample=True),
    c("day", "mafioso_a", "nominate", {"player": "@dead"}, "target_not_alive"),
    c(
        "day",
        "mafioso_a",
        "nominate",
        {"player": UNKNOWN},
        "no_such_player",
        {"name": UNKNOWN},
        sample=True,
    ),
    c(
        "day",
        "nominator",
        "nominate",
        {"player": "@mafioso_a"},
        "already_nominated_today",
        sample=True,
    ),
    c("day", "mafioso_a", "nominate", {"player": "@nominee"}, "already_nominated", sample=True),
    c("day", "citizen", "vote", {"player": "@nominee"}, "wrong_phase", sample=True),
    c("day", "dead", "vote", {"player": "@nominee"}, "not_alive"),
    c("day", "citizen", "unvote", None, "wrong_phase"),
    c("day", "outsider", "unvote", None, "not_player"),
    c("day", "citizen", "protect", {"player": "@nominee"}, "wrong_role", sample=True),
    c("day", "doctor", "protect", {"player": "@doctor"}, "self_target", sample=True),
    c("day", "doctor", "protect", {"player": "@dead"}, "target_not_alive"),
    c("day", "doctor", "protect", {"player": UNKNOWN}, "no_such_player", {"name": UNKNOWN}),
    c("day", "dead", "protect", {"player": "@nominee"}, "not_alive"),
    c("day", "citizen", "compare", {"first": "@nominee", "second": "@mafioso_a"}, "wrong_role"),
    c(
        "day",
        "journalist",
        "compare",
        {"first": "@nominee", "second": "@nominee"},
        "same_player",
        sample=True,
    ),
    c(
        "day",
        "journalist",
        "compare",
        {"first": "@nominee", "second": UNKNOWN},
        "no_such_player",
        {"name": UNKNOWN},
    ),
    c("day", "outsider", "compare", {"first": "@nominee", "second": "@mafioso_a"}, "not_player"),
    c("day", "citizen", "elect", {"player": "@mafioso_a"}, "wrong_role", sample=True),
    c("day", "mafioso_a", "elect", {"player": "@citizen"}, "not_mafioso", sample=True),
    c("day", "mafioso_a", "elect", {"player": "@mafioso_b"}, "not_mafioso"),
    c("day", "mafioso_a", "kill", {"player": "@citizen"}, "wrong_phase", sample=True),
    c("day", "maniac", "kill", {"player": "@citizen"}, "wrong_phase"),
    c("day", "mafioso_a", "tour", {"player": "@commissar"}, "wrong_phase"),
    c("day", "mafioso_a", "pass", None, "wrong_phase"),
    c("day", "commissar", "check", {"player": "@mafioso_b"}, "wrong_phase", sample=True),
    c("day", "citizen", "mafia join", None, "not_lobby", sample=True),
    c("day", "outsider", "mafia leave", None, "not_player"),
    c("day", "dead", "mafia leave", None, "leave_dead"),
    c("day", "outsider", "mafia join", None, "join_running"),
    c("day", "outsider", "mafia me", None, "not_player", sample=True),
    *[
        c("day", who, command, options, "not_host", sample=command in ("host next", "host end"))
        for command, options in HOST_COMMANDS
        for who in ("citizen", "outsider")
    ],
    *[
        c("day", "dead", command, options, "not_host")
        for command, options in HOST_COMMANDS
        if command in ("host kill", "host end")
    ],
    # --- day 1, voting
    c("voting", "citizen", "nominate", {"player": "@non_nominee"}, "wrong_phase", sample=True),
    c("voting", "citizen", "vote", {"player": "@non_nominee"}, "not_nominated", sample=True),
    c("voting", "citizen", "vote", {"player": "@cross_nominee"}, "not_nominated"),
    c("voting", "voter_b", "vote", {"player": "@dead"}, "target_not_alive", sample=True),
    c("voting", "dead", "vote", {"player": "@cross_nominee"}, "not_alive"),
    c("voting", "outsider", "vote", {"player": "@nominee"}, "not_player"),
    c("voting", "citizen", "vote", {"player": UNKNOWN}, "no_such_player", {"name": UNKNOWN}),
    c("voting", "citizen", "unvote", None, "no_vote", sample=True),
    c("voting", "dead", "unvote", None, "not_alive"),
    c("voting", "mafioso_a", "kill", {"player": "@citizen"}, "wrong_phase"),
    c("voting", "commissar", "check", {"player": "@voter_b"}, "wrong_phase"),
    c("voting", "outsider", "", None, "not_player", component="vote", sample=True),
    c("voting", "dead", "", None, "not_alive", component="vote"),
    c("voting", "citizen", "", None, "no_vote", component="unvote", sample=True),
    c("voting", "outsider", "", None, "not_player", component="unvote"),
    # --- night 1
    c("night", "commissar", "nominate", {"player": "@mafioso_b"}, "wrong_phase", sample=True),
    c("night", "commissar", "vote", {"player": "@mafioso_b"}, "wrong_phase"),
    c("night", "commissar", "unvote", None, "wrong_phase"),
    c("night", "doctor", "protect", {"player": "@commissar"}, "wrong_phase", sample=True),
    c(
        "night",
        "journalist",
        "compare",
        {"first": "@commissar", "second": "@mafioso_b"},
        "wrong_phase",
    ),
    c("night", "citizen", "kill", {"player": "@commissar"}, "wrong_role", sample=True),
    c("night", "mafioso_a", "kill", {"player": "@resident_b"}, "wrong_city", sample=True),
    c("night", "mafioso_a", "kill", {"player": "@other_mafioso_a"}, "own_mafioso", sample=True),
    c("night", "mafioso_a", "kill", {"player": "@dead"}, "target_not_alive"),
    c("night", "maniac", "kill", {"player": "@maniac"}, "self_target", sample=True),
    c("night", "dead", "kill", {"player": "@commissar_a"}, "not_alive"),
    c("night", "outsider", "kill", {"player": "@commissar_a"}, "not_player"),
    c("night", "mafioso_a", "kill", {"player": UNKNOWN}, "no_such_player", {"name": UNKNOWN}),
    c("night", "mafioso_b", "tour", {"player": "@commissar_a"}, "not_touring", sample=True),
    c("night", "mafioso_a", "tour", {"player": "@commissar_a"}, "wrong_city"),
    c("night", "mafioso_a", "tour", {"player": "@judge_b"}, "judge_immune", sample=True),
    c("night", "mafioso_a", "tour", {"player": "@dead_b"}, "target_not_alive"),
    c("night", "citizen", "tour", {"player": "@commissar"}, "wrong_role"),
    c("night", "dead", "tour", {"player": "@commissar"}, "not_alive"),
    c("night", "outsider", "tour", {"player": "@commissar"}, "not_player"),
    c("night", "mafioso_a", "pass", None, "not_godfather", sample=True),
    c("night", "citizen", "pass", None, "wrong_role"),
    c("night", "dead", "pass", None, "not_alive"),
    c(
        "night",
        "commissar_a",
        "check",
        {"player": "@other_mafioso_a"},
        "already_checked_tonight",
        sample=True,
    ),
    c("night", "commissar", "check", {"player": "@commissar"}, "self_target", sample=True),
    c("night", "commissar", "check", {"player": "@mafioso_a"}, "wrong_city", sample=True),
    c("night", "commissar", "check", {"player": "@dead_b"}, "target_not_alive"),
    c("night", "citizen", "check", {"player": "@commissar"}, "wrong_role"),
    c("night", "outsider", "check", {"player": "@commissar"}, "not_player"),
    c("night", "commissar", "check", {"player": UNKNOWN}, "no_such_player", {"name": UNKNOWN}),
    c("night", "citizen", "elect", {"player": "@mafioso_a"}, "wrong_role"),
    c("night", "mafioso_b", "elect", {"player": "@dead_mafioso"}, "target_not_alive", sample=True),
    c("night", "dead", "elect", {"player": "@mafioso_a"}, "not_alive"),
    c("night", "citizen", "mafia join", None, "not_lobby"),
]

PARAMS = [pytest.param(case, "ru", id=f"ru-{case.id}") for case in CASES] + [
    pytest.param(case, "en", id=f"en-{case.id}") for case in CASES if case.sample
]
ENGLISH_WORDS = re.compile(r"\b(day|night|discussion|voting|execution)\b")


async def refused(scene: Scene, case: Case, user_locale: str) -> Any:
    table = scene.table
    user = table.member(scene.who(case.who)).user.id
    if case.component == "vote":
        ballot = ballot_message(table, table.game.cities[0])
        candidate = scene.value("@nominee")
        return await table.fake.select(
            ballot, f"mafia:vote:{table.live().id}:0", [candidate], user, locale=user_locale
        )
    if case.component == "unvote":
        ballot = ballot_message(table, table.game.cities[0])
        return await table.fake.click(
            ballot, f"mafia:unvote:{table.live().id}", user, locale=user_locale
        )
    if case.component in ("join", "leave"):
        reference = await table.bot.storage.message_ref(table.live().id, "lobby")
        assert reference is not None
        return await table.fake.click(
            reference[1], f"mafia:{case.component}:{table.live().id}", user, locale=user_locale
        )
    options = {name: scene.value(value) for name, value in case.options.items()}
    return await table.slash(user, case.command, options, locale=user_locale)


def wanted_params(scene: Scene, case: Case, language: str) -> dict[str, Any]:
    params = dict(case.params)
    if case.key == "error.wrong_phase":
        game = scene.table.game
        params.update(phase=str(game.phase), stage=game.stage.value)
    if case.key == "error.join_running":  # and how to follow it instead
        game_id = scene.table.live().id
        hint = t(language, "help.spectator_on", game=game_id)
        params.update(game=game_id, hint=hint)
    return params


@pytest.mark.asyncio(loop_scope="module")
@pytest.mark.parametrize(("case", "language"), PARAMS)
async def test_a_refused_command_answers_privately_and_changes_nothing(
    scenes: dict[str, Scene], case: Case, language: str
) -> None:
    scene = scenes[case.scene]
    table = scene.table
    user_locale = "ru" if language == "ru" else "en-US"
    # the guild speaks Russian: an English user's refusals are in English all the same
    before = await snapshot(table) if case.scene != "nogame" else None
    calls = len(table.fake.calls())
    result = await refused(scene, case, user_locale)
    await result.wait_callback()
    if case.command == "host start":  # deferred first (making channels takes long), then answered
        assert result.callback_type == 5, result.describe()
        await result.wait_original()
    else:
        assert result.callback_type == 4, result.describe()
    assert result.ephemeral, f"a public refusal: {result.content}"
    assert result.followups == []
    if case.key == "error.wrong_phase":  # where the game is, and when this is possible
        expected = wrong_stage_text(
            replace(table.live(), language=language), case.command or case.component or ""
        )
        assert expected and t(language, f"stage.{table.game.stage.value}") in expected
    else:
        expected = refusal_text(language, case.key, **wanted_params(scene, case, language))
    assert result.content == expected
    if language == "ru":
        assert not ENGLISH_WORDS.search(result.content), (
            f"English in a Russian answer: {result.content}"
        )
    if before is not None:
        await assert_unchanged(table, before)
    else:
        await table.drain()
        extra = [
            f"{call.method} {call.path}"
            for call in table.fake.calls()[calls:]
            if not call.path.startswith(("/interactions/", "/webhooks/"))
        ]
        assert extra == [] and not [
            g for g in table.bot.service.games() if g.record.guild_id == table.guild_id
        ]


def test_every_player_and_host_command_has_refusal_cases() -> None:
    """The table above covers each command, each scene's kinds of wrongness."""
    commands = {case.command for case in CASES if case.command}
    components = {case.component for case in CASES if case.component}
    for name in (
        "nominate",
        "vote",
        "unvote",
        "protect",
        "compare",
        "elect",
        "kill",
        "tour",
        "pass",
        "check",
        "mafia me",
        "mafia join",
        "mafia leave",
        *(h for h, _ in HOST_COMMANDS),
    ):
        assert name in commands, name
    assert components == {"vote", "unvote", "join", "leave"}
    for name in ("nominate", "vote", "kill", "tour", "check", "elect", "protect", "compare"):
        keys = {case.key for case in CASES if case.command == name}
        assert "error.not_alive" in keys or "error.not_player" in keys, name
        assert keys & {
            "error.target_not_alive",
            "error.no_such_player",
            "error.wrong_city",
            "error.self_target",
            "error.same_player",
            "error.not_mafioso",
            "error.not_nominated",
        }, name
