"""The declared footprint and its differences, without Discord: what a death changes and in which
order, what the reconciler repairs, how member overwrites stand in for a role above the bot."""

from __future__ import annotations

from bot.channels import CityPlaces, Layout
from bot.footprint import (
    SPECTATORS_KEY,
    Observed,
    declared,
    end_items,
    member_changes,
    quiet_night_items,
    repairs,
)
from bot.permissions import LISTEN, READ, SILENCE, TRIBUNE_SILENCE, WRITE
from rules import ProcuratorKill
from tests.rules.helpers import make_game

GUILD, BOT, HOST = 1, 2, 3
TEXT, MAFIA, VOICE_ID, DEAD, LOG, CATEGORY = 10, 11, 12, 13, 14, 15
LIVING, DEAD_ROLE = 20, 21
CITY = {
    "101": "citizen",
    "102": "citizen",
    "103": "mafioso",
    "104": "commissar",
    "105": "doctor",
    "106": "citizen",
    "107": "citizen",
}


def layout(*, quiet: int | None = None, quiet_nights: bool = False) -> Layout:
    return Layout(
        guild=GUILD,
        bot=BOT,
        host=HOST,
        category=CATEGORY,
        cities=[CityPlaces("Verona", TEXT, MAFIA, LIVING, quiet)],
        voice=VOICE_ID,
        dead=DEAD,
        log=LOG,
        dead_role=DEAD_ROLE,
        quiet_nights=quiet_nights,
    )


def calls(items: list) -> list[tuple[str, int, int, bool]]:
    """Items as (kind, member, role or channel, add)."""
    return [
        (
            item.kind,
            int(item.target.get("user_id") or item.target.get("id")),
            int(item.target.get("role") or item.target.get("channel_id")),
            not item.payload.get("delete") and item.payload.get("add", True),
        )
        for item in items
    ]


def test_a_mafiosos_death_takes_his_role_closes_his_room_then_gives_the_dead_role():
    game = make_game({"Verona": CITY})
    game.apply(ProcuratorKill("103"))
    before = declared(None, game, layout(), revived={"103"})
    after = declared(None, game, layout())
    assert calls(member_changes(before, after, {103})) == [
        ("member_role", 103, LIVING, False),
        ("overwrite", 103, MAFIA, False),
        ("member_role", 103, DEAD_ROLE, True),
    ]


def observed(
    members: dict[int, frozenset[int]], positions: dict[int, int], bot_top: int = 5
) -> Observed:
    footprint = declared(None, make_game({"Verona": CITY}), layout())
    overwrites = {
        int(p.id): {int(o.target): (o.allow, o.deny) for o in p.overwrites if o.type == 0}
        for p in footprint.places
    }
    return Observed(
        roles=positions,
        channels={int(p.id) for p in footprint.places},
        overwrites=overwrites,
        members=members,
        bot_top=bot_top,
    )


def test_a_role_given_or_taken_by_a_person_is_put_right_and_nothing_else_changes():
    game = make_game({"Verona": CITY})
    game.apply(ProcuratorKill("101"))
    footprint = declared(None, game, layout())
    everyone = {int(p): frozenset({LIVING}) for p in CITY if p != "101"}
    seen = observed(
        {**everyone, 101: frozenset({DEAD_ROLE}), 102: frozenset({DEAD_ROLE})},
        {LIVING: 1, DEAD_ROLE: 2},
    )
    found = repairs(footprint, seen)
    assert (found.adds, found.removals, found.stuck, found.standins) == (
        ((102, LIVING),),
        ((102, DEAD_ROLE),),
        (),
        {},
    )
    assert not repairs(
        footprint, observed({**everyone, 101: frozenset({DEAD_ROLE})}, {LIVING: 1, DEAD_ROLE: 2})
    )


def test_a_dead_player_stuck_with_a_role_above_the_bot_is_held_to_the_dead_by_member_overwrites():
    game = make_game({"Verona": CITY})
    game.apply(ProcuratorKill("101"))
    footprint = declared(None, game, layout())
    everyone = {int(p): frozenset({LIVING}) for p in CITY}
    seen = observed({**everyone, 101: frozenset({LIVING, DEAD_ROLE})}, {LIVING: 9, DEAD_ROLE: 2})
    found = repairs(footprint, seen)
    assert found.stuck == (LIVING,) and not found.removals  # Discord would refuse to take it
    standin = found.standins[101]
    allow, deny = standin[TEXT]
    assert allow == READ.value and deny & WRITE.value and deny & SILENCE.value == SILENCE.value
    allow, deny = standin[VOICE_ID]
    assert (
        allow == LISTEN.value and deny & TRIBUNE_SILENCE.value == TRIBUNE_SILENCE.value
    )  # listens only
    assert set(standin) == {TEXT, VOICE_ID, DEAD}  # the rooms with game role overwrites, no other


def test_a_lost_channel_is_made_again_before_anything_else_is_looked_at():
    game = make_game({"Verona": CITY})
    footprint = declared(None, game, layout())
    seen = observed({}, {LIVING: 1, DEAD_ROLE: 2})
    gone = Observed(seen.roles, seen.channels - {TEXT}, seen.overwrites, seen.members, seen.bot_top)
    found = repairs(footprint, gone)
    assert [place.path for place in found.lost_places] == [("cities", "Verona", "text")]
    assert not found.adds and not found.lost_roles


def test_a_quiet_night_is_the_footprint_by_night_its_start_and_end_the_difference_the_reconciler_keeps():
    QUIET = 22
    game = make_game({"Verona": CITY}, first_phase="night")
    assert game.stage.value == "night"
    quiet = layout(quiet=QUIET, quiet_nights=True)
    city = declared(None, game, quiet).places[1]
    assert city.id == TEXT
    assert [
        (o.target, o.allow, o.deny) for o in city.overwrites if o.target in (LIVING, QUIET)
    ] == [(LIVING, READ.value, SILENCE.value), (QUIET, READ.value, SILENCE.value)]
    # the mafia still confers in its room, the tribune and the dead channel are as by day
    assert (
        declared(None, game, quiet).places[2:]
        == declared(None, game, quiet, night=False).places[2:]
    )

    def overwrites(items: list) -> list[tuple[int, int, int, int, str]]:
        return [
            (
                item.target["channel_id"],
                item.target["id"],
                int(item.payload["allow"]),
                int(item.payload["deny"]),
                item.queue,
            )
            for item in items
        ]

    channels = quiet.to_channels()
    assert overwrites(quiet_night_items(game, channels, night=True)) == [
        (TEXT, LIVING, READ.value, SILENCE.value, "permissions"),
        (TEXT, QUIET, READ.value, SILENCE.value, "provision"),
    ]  # after the twin is made
    assert overwrites(quiet_night_items(game, channels, night=False)) == [
        (TEXT, LIVING, (READ | WRITE).value, 0, "permissions"),
        (TEXT, QUIET, (READ | WRITE).value, 0, "provision"),
    ]
    assert (
        quiet_night_items(game, layout(quiet=QUIET).to_channels(), night=True) == []
    )  # the rules' default

    # a city left writable at night (a person's edit, or a restart between the night and its items)
    by_day = declared(None, game, quiet, night=False)
    seen = Observed(
        roles={LIVING: 1, QUIET: 1, DEAD_ROLE: 1},
        channels={int(p.id) for p in by_day.places},
        overwrites={
            int(p.id): {int(o.target): (o.allow, o.deny) for o in p.overwrites if o.type == 0}
            for p in by_day.places
        },
        members={},
        bot_top=5,
    )
    assert repairs(declared(None, game, quiet), seen).overwrites == (
        (TEXT, LIVING, READ.value, SILENCE.value),
        (TEXT, QUIET, READ.value, SILENCE.value),
    )
    assert not repairs(by_day, seen)


def test_the_ends_lock_edits_only_the_channels_it_changes_after_any_role_still_being_made():
    game = make_game({"Verona": CITY})
    channels = layout().to_channels()
    items, lane = end_items(channels, game, reveal=False)
    # the category keeps its overwrites; the log (no reveal) too; the rest turn read-only
    assert [int(item.target["channel_id"]) for item in items] == [TEXT, MAFIA, VOICE_ID, DEAD]
    assert lane == "permissions" and {item.queue for item in items} == {"permissions"}
    text = next(item for item in items if item.target["channel_id"] == TEXT)
    living = next(o for o in text.payload["permission_overwrites"] if o["id"] == str(LIVING))
    assert (int(living["allow"]), int(living["deny"])) == (READ.value, SILENCE.value)

    revealed, _ = end_items(channels, game, reveal=True)
    assert LOG in [int(item.target["channel_id"]) for item in revealed]

    # a first spectator asked just before: his role is named by its key until made
    channels["spectators"] = SPECTATORS_KEY
    items, lane = end_items(channels, game, reveal=False)
    assert lane == "provision" and {item.queue for item in items} == {"provision"}
    text = next(item for item in items if item.target["channel_id"] == TEXT)
    assert SPECTATORS_KEY in [o["id"] for o in text.payload["permission_overwrites"]]
