"""A role in one place (issue 31): a role's name is written in few files of the product. A new
role is its module in ``rules/roles/`` and its member of ``Status``, nothing else. A role that
plays alone is a side and a cause of death as well: its side is written in its declaration, and
whatever names sides, winners, causes or marks asks the declarations (``Role.alone``,
``Role.cause``); the role that fills the seats left is declared so (``Role.fills``). The mafia,
the side the rules are built around, is asked of ``Status.in_mafia`` and the declared sides,
never of the mafioso's status. One exception: the commissar is written in the sergeant's module
too, who hears his answers and takes his place, and whose stored event names the commissar he
heard (``SergeantTold.commissar``, a field of the games' logs and the placeholder of its
text)."""

from __future__ import annotations

import re

from rules.model import Status
from rules.table import SWITCHABLE
from tests.test_sizes import ROOT, product_files

#: the most product files a switchable role's name may be written in
MOST_FILES = 2
#: a role also named by the module of a role defined by it, and where its name is written
PLACED: dict[Status, list[str]] = {
    Status.COMMISSAR: ["rules/model.py", "rules/roles/commissar.py", "rules/roles/sergeant.py"],
}


def names(text: str, status: Status) -> bool:
    """Whether the text names the status as a word, in any case (``maniac_idle`` does not)."""
    return re.search(rf"\b{status.value}\b", text, re.IGNORECASE) is not None


def files_naming(status: Status) -> list[str]:
    """The product's Python files that name the status."""
    return [
        str(path.relative_to(ROOT))
        for path in product_files()
        if names(path.read_text(encoding="utf-8"), status)
    ]


def test_a_roles_name_is_in_its_module_and_status_only() -> None:
    for status in Status:
        own = ["rules/model.py", f"rules/roles/{status.value}.py"]
        assert sorted(files_naming(status)) == PLACED.get(status, own), status.value


def test_every_switchable_role_is_held_to_its_module() -> None:
    held = [status for status in SWITCHABLE if status in PLACED]
    assert held == []
    assert all(len(files_naming(status)) <= MOST_FILES for status in SWITCHABLE)


def test_the_count_sees_a_name() -> None:
    assert "rules/roles/doctor.py" in files_naming(Status.DOCTOR)
    assert names("# the Maniac's kill", Status.MANIAC)
    assert names('side = "maniac"', Status.MANIAC)
    assert not names("options.maniac_idle", Status.MANIAC)
