"""Every role and every command the table declares (rules/table.py) has its texts in each
language and its place in the rules; help's tables are the table's."""

import discord
import pytest

from bot.i18n import LANGUAGES, catalogue, t
from cogs import help as help_cog
from cogs.help import HOST_COMMANDS, PLAYER_COMMANDS, STAGE_OF, rules_text
from cogs.mentions import PLACEHOLDERS
from rules import Game, RoleCounts, StartVoting, deal
from rules.table import ACTS, ANY, DAY, HOST_TOOLS, PLAYER_ACTS, ROLES


def keys(language: str) -> set[str]:
    return set(catalogue(language))


def command_keys(path: str) -> list[str]:
    words = path.split()
    return [
        f"cmd.{'.'.join(words[:n])}.{part}"
        for n in range(1, len(words) + 1)
        for part in ("name", "description")
    ]


@pytest.mark.parametrize("language", LANGUAGES)
def test_every_role_has_its_name_help_option_and_rules(language):
    have, rules = keys(language), rules_text(language).lower()
    for row in ROLES:
        status = row.status.value
        assert {f"status.{status}", f"role.help.{status}"} <= have, status
        if row.switchable:  # the host's setup option named after it
            assert {f"opt.{status}.name", f"opt.{status}.description"} <= have, status
        assert t(language, f"status.{status}").lower() in rules, (
            f"the rules never name the {status}"
        )


@pytest.mark.parametrize("language", LANGUAGES)
def test_every_command_has_its_names_help_and_stage_texts(language):
    have = keys(language)
    paths = {slash for act in ACTS for slash in act.slash} | set(HOST_TOOLS)
    for path in paths:
        missing = [key for key in command_keys(path) if key not in have]
        assert not missing, missing
        assert path in PLACEHOLDERS.values(), f"no {{cmd_...}} field names /{path}"
    for verb, act in PLAYER_ACTS.items():
        variants = {f"help.verb.{verb}"} | {
            f"help.verb.{verb}.{who}" for who in ("godfather", "mafioso", "maniac")
        }
        assert variants & have, verb
        assert act.stage in (DAY, ANY) or act.stage in {s for s in STAGE_OF.values()}
    for stage in set(STAGE_OF.values()):
        assert f"wrong_stage.{stage}" in have, stage
    for path in HOST_TOOLS:
        assert f"help.{path.replace(' ', '.')}" in have, path


def test_the_host_help_has_a_line_for_every_act_the_rules_offer_him():
    game = Game.create(deal({"Verona": [f"v{i}" for i in range(8)]}, 3, RoleCounts()), 3)
    offered = {action.verb for action in game.legal_host_actions()}
    game.apply(StartVoting())
    offered |= {action.verb for action in game.legal_host_actions()}
    assert offered >= {"voting", "night", "kill", "judge", "godfather"}
    have = keys("ru")
    for verb in offered:
        assert f"help.{HOST_COMMANDS[verb].replace(' ', '.')}" in have, verb


def test_helps_tables_are_the_tables():
    assert {act.verb: act.slash[0] for act in ACTS if not act.by_host} == PLAYER_COMMANDS
    assert help_cog.HOST_ALWAYS == HOST_TOOLS
    assert STAGE_OF["nominate"] == "discussion" and STAGE_OF["lastword upload"] == "day"
    assert "host next" not in STAGE_OF and "host kill" not in STAGE_OF


def test_host_setup_switches_exactly_the_roles_the_table_says_it_does():
    """A role the table marks switchable is an on/off option of ``/host setup`` (named after its
    status), and no status is an option there that the table does not mark."""
    from cogs.host.game_setup import HostSetup
    from rules.model import Status
    from rules.table import SWITCHABLE

    options = {p.name: p for p in HostSetup.setup.parameters}
    statuses = {status.value for status in Status}
    switched = {name for name, p in options.items() if name in statuses}
    assert switched == {status.value for status in SWITCHABLE}
    assert all(options[name].type is discord.AppCommandOptionType.boolean for name in switched)
