"""A role in one place (issue 31): a switchable role's name is written in few files of the
product. A new role is its module in ``rules/roles/`` and its member of ``Status``, nothing
else; the roles from before the declarations are held where they stand, never to grow."""

from __future__ import annotations

import re

from rules.model import Status
from rules.table import SWITCHABLE
from tests.test_sizes import ROOT, product_files

#: the most product files a switchable role's name may be written in
MOST_FILES = 2
#: the roles written in more files before a role was one declaration (not to grow)
OLDER: dict[Status, int] = {Status.MANIAC: 24}


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


def test_the_count_sees_a_name() -> None:
    assert "rules/roles/doctor.py" in files_naming(Status.DOCTOR)
    assert len(files_naming(Status.MANIAC)) > MOST_FILES
