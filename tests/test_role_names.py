"""A role in one place (issue 31): a role's name is written in few files of the product. A new
role is its module in ``rules/roles/`` and its member of ``Status``, nothing else; the commissar
is named by the sergeant too (who hears him and takes his place); the maniac, a side and a cause
of death as well as a role, is held where he stands, never to grow."""

from __future__ import annotations

import re

from rules.model import Status
from rules.table import SWITCHABLE
from tests.test_sizes import ROOT, product_files

#: the most product files a switchable role's name may be written in
MOST_FILES = 2
#: the roles written in more files before a role was one declaration (not to grow)
OLDER: dict[Status, int] = {Status.MANIAC: 13}
#: the roles every game has, and where their names are written
PLACED: dict[Status, list[str]] = {
    Status.COMMISSAR: ["rules/model.py", "rules/roles/commissar.py", "rules/roles/sergeant.py"],
}


def files_naming(status: Status) -> list[str]:
    """The product's Python files that name the status (as a word, in any case)."""
    word = re.compile(rf"\b{status.value}\b", re.IGNORECASE)
    return [
        str(path.relative_to(ROOT))
        for path in product_files()
        if word.search(path.read_text(encoding="utf-8"))
    ]


def test_a_switchable_roles_name_is_in_its_module_and_status_only() -> None:
    for status in SWITCHABLE:
        found = files_naming(status)
        most = OLDER.get(status, MOST_FILES)
        assert len(found) <= most, (status.value, found)
        if status not in OLDER:
            assert sorted(found) == ["rules/model.py", f"rules/roles/{status.value}.py"], found


def test_a_role_every_game_has_is_named_where_it_is_placed() -> None:
    for status, placed in PLACED.items():
        assert files_naming(status) == placed


def test_the_mafioso_is_named_in_his_module_and_status_only() -> None:
    """The mafia is a side (``Status.in_mafia``, the roles' declared sides): whatever serves its
    members asks the side, and the status is written where it is declared."""
    assert files_naming(Status.MAFIOSO) == ["rules/model.py", "rules/roles/mafioso.py"]


def test_the_count_sees_a_name() -> None:
    assert "rules/roles/doctor.py" in files_naming(Status.DOCTOR)
    assert len(files_naming(Status.MANIAC)) > MOST_FILES
