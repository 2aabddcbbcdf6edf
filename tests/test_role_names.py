"""A role in one place (issue 31): a role's name is written in few files of the product, counted
as a plain substring in any case (as ``grep -rli doctor`` counts it: ``doctor_choice`` and
``maniac_idle`` name their roles too). A new role is its module in ``rules/roles/`` and its
member of ``Status``, nothing else. What a role keeps in the game's state, its rule options, its
side and cause of death (a role that plays alone), the seats it fills, and the act it takes over
from another role (the sergeant, his city's checker's heir) are in its declaration, and
whatever stores, offers, names or does them asks the declarations (``Role.state``,
``Role.options``, ``Role.alone``, ``Role.cause``, ``Role.fills``, ``Role.succeeds``). The mafia,
the side the rules are built around, is asked of ``Status.in_mafia`` and the declared sides,
never of the mafioso's status; its codes are built from its status (``rules.roles.MAFIA``), as
every role's count code is."""

from __future__ import annotations

from rules.model import Status
from rules.table import SWITCHABLE
from tests.test_sizes import ROOT, product_files

#: the most product files a switchable role's name may be written in
MOST_FILES = 2


def names(text: str, status: Status) -> bool:
    """Whether the text names the status: its value anywhere, in any case (``maniac_idle``
    does, and ``no_mafioso``)."""
    return status.value.casefold() in text.casefold()


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
        assert sorted(files_naming(status)) == own, status.value


def test_every_switchable_role_is_held_to_its_module() -> None:
    assert all(len(files_naming(status)) <= MOST_FILES for status in SWITCHABLE)


def test_the_count_sees_a_name() -> None:
    assert "rules/roles/doctor.py" in files_naming(Status.DOCTOR)
    assert names("# the Maniac's kill", Status.MANIAC)
    assert names('side = "maniac"', Status.MANIAC)
    assert names("options.maniac_idle", Status.MANIAC)
    assert names("self.doctor_choice", Status.DOCTOR) and names("ManiacIdle", Status.MANIAC)
    assert names("no_mafioso", Status.MAFIOSO) and names("a Mafioso", Status.MAFIOSO)
