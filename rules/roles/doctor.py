"""The doctor: honest; protects one player by day for the coming night."""

from rules.commands import Protect
from rules.day import DayRules
from rules.model import Status
from rules.roles.base import DAY, Role, RoleAct

ROLE = Role(
    Status.DOCTOR,
    "honest",
    switchable=True,
    per_game=1,
    dealt_from=6,
    acts=(RoleAct(Protect, DAY, DayRules._protect),),
    announced="day",
    presets={"beginners": True, "club": True},
)
