"""The citizen (гражданин, «чиж»): honest; votes by day, nothing else."""

from rules.model import Status
from rules.roles.base import Role

ROLE = Role(Status.CITIZEN, "honest")
