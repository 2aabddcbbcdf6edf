"""The players' act commands are the table's (rules/table.py): the bot registers one slash
command per act of its own, in the table's order, named and described by the catalogues in
each language, whose options are the act's targets, each offered by autocomplete."""

from bot.i18n import catalogue
from cogs.play import act_command
from rules.table import OWN_COMMAND_ACTS, PLAYER_ACTS
from tests.harness import bot_table

#: an act's targets → the options Discord shows
OPTIONS = {(): [], ("target",): ["player"], ("first", "second"): ["first", "second"]}


def localised(key: str) -> dict[str, str]:
    return {
        "en-US": str(catalogue("en")[key]),
        "en-GB": str(catalogue("en")[key]),
        "ru": str(catalogue("ru")[key]),
    }


def test_every_players_act_but_the_last_word_has_a_command_of_its_own():
    assert set(PLAYER_ACTS) - {act.verb for act in OWN_COMMAND_ACTS} == {"lastword"}
    assert [act_command(act).name for act in OWN_COMMAND_ACTS] == [
        act.slash[0] for act in OWN_COMMAND_ACTS
    ]


async def test_the_synced_act_commands_are_the_tables_with_the_catalogues_texts():
    async with bot_table(players=2) as table:
        put = table.fake.last_call("PUT", "/applications/{application_id}/commands")
    synced = [command["name"] for command in put.json]
    names = [act.slash[0] for act in OWN_COMMAND_ACTS]
    assert [name for name in synced if name in names] == names  # the table's order
    assert synced.index(names[-1]) - synced.index(names[0]) == len(names) - 1  # side by side
    by_name = {command["name"]: command for command in put.json}
    for act in OWN_COMMAND_ACTS:
        name = act.slash[0]
        command = by_name[name]
        assert command["description"] == catalogue("en")[f"cmd.{name}.description"], name
        assert command["name_localizations"] == localised(f"cmd.{name}.name"), name
        assert command["description_localizations"] == localised(f"cmd.{name}.description"), name
        assert command["contexts"] == [0] and command["dm_permission"] is False, name
        options = command.get("options", [])
        assert [option["name"] for option in options] == OPTIONS[act.targets], name
        for option in options:
            assert option["type"] == 3 and option["required"] and option["autocomplete"], name
            assert option["name_localizations"] == localised(f"opt.{option['name']}.name")
            assert option["description_localizations"] == localised("opt.player.description")
