"""The maniac: plays for himself; kills one player each night."""

from rules.commands import Kill
from rules.model import Stage, Status
from rules.night import NightRules
from rules.roles.base import Role, RoleAct

ROLE = Role(
    Status.MANIAC,
    "maniac",
    switchable=True,
    per_game=1,
    dealt_from=10,
    acts=(RoleAct(Kill, Stage.NIGHT.value, NightRules._kill_command),),
    announced="night",
    presets={"beginners": False, "club": True},
)
