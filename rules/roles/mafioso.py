"""The mafioso: his city's mafia; elects the Godfather, kills at night in his city, tours."""

from rules.commands import Elect, Kill, Pass, Tour
from rules.model import Stage, Status
from rules.night import NightRules
from rules.roles.base import ANY, Role, RoleAct

NIGHT = Stage.NIGHT.value

ROLE = Role(
    Status.MAFIOSO,
    "mafia",
    acts=(
        RoleAct(Elect, ANY, NightRules._elect),
        RoleAct(Kill, NIGHT, NightRules._kill_command),
        RoleAct(Tour, NIGHT, NightRules._tour),
        RoleAct(Pass, NIGHT, NightRules._pass),
    ),
    announced="night",
)
