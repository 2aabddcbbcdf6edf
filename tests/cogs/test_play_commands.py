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


def _strings(node: dict, path: str = ""):  # type: ignore[no-untyped-def]
    """Every (where, default, its en-US) of a synced command, its options and their choices."""
    where = f"{path}/{node.get('name')}"
    for field in ("name", "description"):
        localised = (node.get(f"{field}_localizations") or {}).get("en-US")
        if field in node:
            yield f"{where}.{field}", node[field], localised
    for option in node.get("options", []) or []:
        yield from _strings(option, where)
    for choice in node.get("choices", []) or []:
        localised = (choice.get("name_localizations") or {}).get("en-US")
        yield f"{where}:{choice['value']}", choice["name"], localised


async def test_every_default_text_of_the_synced_tree_is_its_english_one():
    """English is written once: a command's default name and description (what every client
    outside Russian and English sees) are the English catalogue's, as en-US shows them."""
    async with bot_table(players=2) as table:
        put = table.fake.last_call("PUT", "/applications/{application_id}/commands")
    checked = [
        (where, default, english)
        for command in put.json
        for where, default, english in _strings(command)
        if english is not None
    ]
    assert len(checked) > 200
    assert [c for c in checked if c[1] != c[2]] == []


def test_no_command_text_is_written_in_the_code():
    """``key_str`` takes the catalogue's key alone: no English default beside it in the code."""
    import ast
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    doubled = [
        f"{path.relative_to(root)}:{node.lineno}"
        for folder in ("bot", "cogs", "rules")
        for path in (root / folder).rglob("*.py")
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "key_str"
        and len(node.args) != 1
    ]
    assert doubled == []
