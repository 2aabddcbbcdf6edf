"""The citizen (гражданин, «чиж»): honest; votes by day, nothing else. He fills the seats no
other role takes."""

from rules.model import Status
from rules.roles.base import Role

ROLE = Role(Status.CITIZEN, "honest", fills=True)
