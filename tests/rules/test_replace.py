"""The Procurator's replacement (``host replace OLD NEW``) and the absent host's lot (``host lot``)."""

from __future__ import annotations

from rules import CastVote, Cause, ExecuteByLot, Game, Replace, RuleError, Stage, Status
from rules.events import PlayerKilled, PlayerReplaced
from rules.scenario import ScenarioError, load_scenario, result_json, run_scenario
from tests.rules.helpers import TWO_CITIES, kinds, make_game, of, play, refuse


def test_the_newcomer_takes_everything_the_old_player_held():
    game = make_game()
    play(
        game,
        "tybalt nominate romeo",
        "romeo nominate tybalt",
        "friar protect tybalt",
        "host voting",
        "tybalt vote romeo",
        "romeo vote tybalt",
    )
    events = game.apply(Replace("tybalt", "juliet"))
    assert events == [PlayerReplaced("tybalt", "juliet", "Verona")]
    assert events[0].audience.kind.value == "everyone"  # who came and went; never his status
    assert "tybalt" not in game.players and game.status_of("juliet") is Status.MAFIOSO
    assert game.city_of("juliet") == "Verona" and game.godfather_of("Verona") == "juliet"
    assert game.residents["Verona"].index("juliet") == 2  # in the old player's seat
    assert (
        game.votes["Verona"]["juliet"][0] == "romeo"
        and game.votes["Verona"]["romeo"][0] == "juliet"
    )
    assert game.nominees("Verona") == ["romeo", "juliet"] and "juliet" in game.nominators
    assert game.role_state["doctor_choice"] == "juliet"
    # the newcomer acts; the old name is unknown now
    play(game, "juliet unvote", "juliet vote romeo")
    before = game.to_dict()
    try:
        game.apply(CastVote("tybalt", "romeo"))
    except RuleError as error:
        assert error.code == "unknown_player"
    else:
        raise AssertionError("the old player voted")
    assert game.to_dict() == before


def test_the_state_round_trips_and_replays_with_a_replacement():
    game = make_game()
    play(game, "host voting", "host night")
    game.apply(Replace("lucentio", "cambio"))
    play(game, "cambio kill bianca")
    again = Game.from_dict(game.to_dict())
    assert again == game and again.status_of("cambio") is Status.MAFIOSO
    assert game.to_dict()["replaced"] == [["lucentio", "cambio"]]
    assert "replaced" not in make_game().to_dict(), "a game without one keeps its old form"


def test_a_replacement_is_refused_for_the_dead_and_for_anyone_who_plays_or_played():
    game = make_game()
    play(game, "host kill romeo")
    before = game.to_dict()
    for old, new, code in (
        ("romeo", "newbie", "target_not_alive"),
        ("tybalt", "mercutio", "already_playing"),
        ("ghost", "newbie", "unknown_player"),
    ):
        try:
            game.apply(Replace(old, new))
        except Exception as error:
            assert getattr(error, "code", None) == code
        else:
            raise AssertionError((old, new))
    assert game.to_dict() == before
    game.apply(Replace("tybalt", "juliet"))
    for new in ("tybalt", "juliet"):
        before = game.to_dict()
        try:
            game.apply(Replace("mercutio", new))
        except Exception as error:
            assert getattr(error, "code", None) == "already_playing"
        assert game.to_dict() == before


def test_a_scenario_names_its_newcomer_in_the_replace_step_and_plays_him_after():
    data = {
        "seed": 3,
        "cities": TWO_CITIES,
        "steps": [
            "host replace tybalt juliet",
            "juliet nominate romeo",
            "host voting",
            "juliet vote romeo",
            "host night",
            "tybalt kill romeo",
        ],
    }
    result = result_json(run_scenario(load_scenario(data)))
    assert [step["ok"] for step in result["steps"]] == [True, True, True, True, True, False]
    assert result["steps"][-1]["error"] == "unknown_player"
    for bad in (
        ["juliet nominate romeo"],
        ["host replace tybalt host"],
        ["host replace ghost juliet"],
    ):
        try:
            load_scenario({"cities": TWO_CITIES, "steps": bad})
        except ScenarioError:
            continue
        raise AssertionError(bad)


def test_an_absent_hosts_lot_executes_in_every_waiting_city_as_random_would():
    game = make_game(day_fallback="host")
    play(game, "host voting", "host night")
    assert game.stage is Stage.EXECUTION and game.pending_executions == ["Verona", "Padua"]
    events = game.apply(ExecuteByLot())
    killed = of(events, PlayerKilled)
    assert [k.by_city for k in killed] == ["Verona", "Padua"]
    assert all(k.cause is Cause.EXECUTION and k.by_chance for k in killed)
    assert game.stage is Stage.NIGHT and "phase_started" in kinds(events)
    same = make_game(day_fallback="random")
    play(same, "host voting")
    chosen = [k.player for k in of(same.apply(parse("host night", same)), PlayerKilled)]
    assert chosen == [k.player for k in killed], "the lot draws as day_fallback: random does"
    assert refuse(game, "host lot").code == "wrong_phase"


def parse(step: str, game: Game):
    from rules.scenario import parse_step

    return parse_step(step, game.players)
