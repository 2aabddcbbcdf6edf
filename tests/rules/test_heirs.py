"""An heir (``Role.succeeds``): the registry gives a role the act of another role it takes
over, by that role's rules, with the refusal and what he is told derived from the role he
succeeds: any role may be one, as the sergeant is the checker's."""

from __future__ import annotations

import pytest

from rules import RuleError, Status
from rules.roles import ROLES, _heir, role
from rules.roles.base import Role
from rules.roles.commissar import Check, PlayerChecked
from tests.rules.helpers import make_game, pass_day, play

CITIES = {
    "Verona": {
        "romeo": "citizen",
        "mercutio": "citizen",
        "benvolio": "citizen",
        "paris": "citizen",
        "tybalt": "mafioso",
        "escalus": "commissar",
        "rosaline": "lover",
    },
    "Padua": {
        "bianca": "citizen",
        "gremio": "citizen",
        "lucentio": "mafioso",
        "baptista": "commissar",
    },
}


def test_any_role_may_succeed_a_role_whose_act_has_a_deed():
    found = {row.status: row for row in ROLES}
    heir = _heir(Role(Status.LOVER, "honest", succeeds="check"), found)
    taken = heir.acts[-1]
    assert taken.command is Check and taken.stage == "night"
    assert heir.codes == role(Status.SERGEANT).codes  # the code follows the role succeeded
    game = make_game(CITIES, first_phase="night")
    with pytest.raises(RuleError) as refused:
        taken.handler(game, Check("rosaline", "tybalt"), True)
    assert refused.value.code == "commissar_alive"
    play(game, "host kill escalus")
    with pytest.raises(RuleError) as refused:  # he died this night: the checks are his still
        taken.handler(game, Check("rosaline", "tybalt"), True)
    assert refused.value.code == "commissar_alive"
    play(game, "host day")
    pass_day(game, "romeo", "paris")
    assert taken.handler(game, Check("rosaline", "tybalt"), False) == [
        PlayerChecked("rosaline", "tybalt", True)
    ]
    with pytest.raises(RuleError) as refused:  # by the holder's rules: once a night
        taken.handler(game, Check("rosaline", "romeo"), True)
    assert refused.value.code == "already_checked_tonight"


def test_an_heir_of_an_act_without_a_deed_or_of_no_act_is_refused_at_once():
    found = {row.status: row for row in ROLES}
    for verb in ("protect", "nothing"):
        with pytest.raises(TypeError):
            _heir(Role(Status.LOVER, "honest", succeeds=verb), found)
