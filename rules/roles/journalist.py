"""The journalist: honest; compares two players' statuses once a day."""

from rules.commands import Compare
from rules.day import DayRules
from rules.model import Status
from rules.roles.base import DAY, Role, RoleAct

ROLE = Role(
    Status.JOURNALIST,
    "honest",
    switchable=True,
    per_game=1,
    dealt_from=8,
    acts=(RoleAct(Compare, DAY, DayRules._compare),),
    announced="day",
    presets={"beginners": False, "club": True},
)
