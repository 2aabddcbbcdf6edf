"""The commissar: honest; checks one resident of his city each night (one in every city)."""

from rules.commands import Check
from rules.model import Stage, Status
from rules.night import NightRules
from rules.roles.base import Role, RoleAct

ROLE = Role(
    Status.COMMISSAR,
    "honest",
    acts=(RoleAct(Check, Stage.NIGHT.value, NightRules._check),),
    announced="night",
)
