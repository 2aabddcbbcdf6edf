"""The bot is wired in one place (bot/wiring.py, from ``ProkuratorBot.setup_hook``).

Static checks over the source (AST): no module under bot/ imports cogs, in any form; no cog
assigns to, or appends to, an attribute of the bot's parts; no module assigns another module's
attribute at import; no cog looks another cog up in its constructor. Then the wiring itself: the
order the hooks run in, as a started bot has them, and what :class:`bot.wiring.Hooks` refuses.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from bot.wiring import Hooks, wire
from tests.harness import bot_table

ROOT = Path(__file__).resolve().parent.parent
#: the bot's parts a cog must not change: they are wired by bot/wiring.py
PARTS = frozenset({"service", "outbox", "storage", "timers", "notices"})
#: list methods that add to what they are called on
ADDS = frozenset({"append", "extend", "insert"})


def modules(folder: str) -> Iterator[tuple[str, ast.Module]]:
    """Every module under ``folder`` of the repository: (its path, its tree)."""
    for path in sorted((ROOT / folder).rglob("*.py")):
        yield str(path.relative_to(ROOT)), ast.parse(path.read_text(encoding="utf-8"))


def imports_cogs(node: ast.AST) -> bool:
    """Whether a node imports ``cogs`` or one of its modules (a plain import, a ``from``, or
    ``importlib.import_module`` / ``__import__`` of a literal name)."""

    def is_cogs(name: str | None) -> bool:
        return name is not None and (name == "cogs" or name.startswith("cogs."))

    if isinstance(node, ast.Import):
        return any(is_cogs(alias.name) for alias in node.names)
    if isinstance(node, ast.ImportFrom):
        return node.level == 0 and is_cogs(node.module)
    if isinstance(node, ast.Call) and node.args:
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
        first = node.args[0]
        return (
            name in ("import_module", "__import__")
            and isinstance(first, ast.Constant)
            and isinstance(first.value, str)
            and is_cogs(first.value)
        )
    return False


def bot_chain(node: ast.expr) -> list[str] | None:
    """The attributes after ``bot`` or ``self.bot`` in ``bot.service.after_commit`` or
    ``self.bot.outbox.handlers["voice"]`` (subscripts skipped); None: not rooted at the bot."""
    names: list[str] = []
    while isinstance(node, ast.Attribute | ast.Subscript):
        if isinstance(node, ast.Attribute):
            names.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    names.append(node.id)
    names.reverse()
    if names[:2] == ["self", "bot"]:
        return names[2:]
    if names[0] == "bot":
        return names[1:]
    return None


def assigned(node: ast.AST) -> list[ast.expr]:
    """What a statement assigns to (augmented and annotated assignments too)."""
    if isinstance(node, ast.Assign):
        return list(node.targets)
    if isinstance(node, ast.AugAssign | ast.AnnAssign):
        return [node.target]
    return []


def changes_the_bot(node: ast.AST) -> str | None:
    """What a statement or call of a cog changes on the bot or its parts, or None."""
    for target in assigned(node):
        chain = bot_chain(target)
        if chain is not None and chain and (len(chain) == 1 or PARTS & set(chain)):
            return "assigns bot." + ".".join(chain)
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr in ADDS
    ):
        chain = bot_chain(node.func.value)
        if chain is not None and PARTS & set(chain):
            return f"calls bot.{'.'.join(chain)}.{node.func.attr}"
    return None


def module_level(tree: ast.Module) -> Iterator[ast.stmt]:
    """The statements run at import: the module's own, inside ``if``/``try``/``with`` too."""
    pending: list[ast.stmt] = list(tree.body)
    while pending:
        statement = pending.pop(0)
        if isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            continue
        yield statement
        for name in ("body", "orelse", "finalbody"):
            pending.extend(getattr(statement, name, []))
        for handler in getattr(statement, "handlers", []):
            pending.extend(handler.body)


def imported_names(tree: ast.Module) -> set[str]:
    """The names a module binds by importing (``from bot import i18n`` binds ``i18n``)."""
    bound: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            bound.update((alias.asname or alias.name).split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            bound.update(alias.asname or alias.name for alias in node.names)
    return bound


def assigns_another_module(tree: ast.Module) -> list[str]:
    """The import-time assignments of an imported name's attribute (``i18n.fallback = f``)."""
    bound = imported_names(tree)
    found = []
    for statement in module_level(tree):
        for target in assigned(statement):
            root = target
            while isinstance(root, ast.Attribute | ast.Subscript):
                root = root.value
            rooted = isinstance(root, ast.Name) and root.id in bound
            if isinstance(target, ast.Attribute | ast.Subscript) and rooted:
                found.append(f"line {statement.lineno}: {ast.unparse(target)}")
    return found


def test_no_module_of_bot_imports_cogs():
    found = [
        f"{path}:{node.lineno}"
        for path, tree in modules("bot")
        for node in ast.walk(tree)
        if imports_cogs(node)
    ]
    assert found == []


def test_no_cog_changes_the_bots_parts():
    found = [
        f"{path}:{node.lineno}: {what}"
        for path, tree in modules("cogs")
        for node in ast.walk(tree)
        if (what := changes_the_bot(node)) is not None
    ]
    assert found == []


@pytest.mark.parametrize("folder", ["bot", "cogs", "rules"])
def test_no_module_assigns_another_modules_attribute_at_import(folder):
    found = [
        f"{path}: {what}" for path, tree in modules(folder) for what in assigns_another_module(tree)
    ]
    assert found == []


def test_no_cog_looks_another_up_in_its_constructor():
    found = []
    for path, tree in modules("cogs"):
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef) and node.name == "__init__":
                for call in ast.walk(node):
                    func = getattr(call, "func", None)
                    name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
                    if isinstance(call, ast.Call) and name == "get_cog":
                        found.append(f"{path}:{call.lineno}")
    assert found == []


@pytest.mark.parametrize(
    "source, found",
    [
        ("from cogs.mentions import command", True),
        ("import cogs.limits", True),
        ("def f():\n    from cogs import common", True),
        ("importlib.import_module('cogs.channels')", True),
        ("from bot.limits import clip", False),
        ("EXTENSIONS = ('cogs.game',)", False),
    ],
)
def test_the_import_check_sees_every_form(source, found):
    assert any(imports_cogs(node) for node in ast.walk(ast.parse(source))) is found


@pytest.mark.parametrize(
    "source, found",
    [
        ("bot.service.render = render", True),
        ("self.bot.service.after_commit.append(self.arm)", True),
        ('bot.outbox.handlers["voice"] = self.post', True),
        ("self.bot.outbox.idle_hooks.extend(hooks)", True),
        ("bot.timers.render_reminder = f", True),
        ("bot.explain_refusal = self.explain", True),
        ("self.bot.storage.count += 1", True),
        ("self.bot = bot", False),
        ("self.handlers.append(x)", False),
        ("await self.bot.service.apply(1, c)", False),
        ("lines.append(bot.service.find(1))", False),
    ],
)
def test_the_cog_check_sees_every_change(source, found):
    changes = [changes_the_bot(node) for node in ast.walk(ast.parse(source))]
    assert any(changes) is found


def test_the_import_time_check_sees_another_modules_attribute():
    tree = ast.parse(
        "from bot import i18n\nimport logging\n"
        "i18n.fallback = f\nif True:\n    logging.root.level = 1\n"
        "local = {}\nlocal['x'] = 1\n"
        "def g():\n    i18n.fallback = f\n"
    )
    assert assigns_another_module(tree) == [
        "line 3: i18n.fallback",
        "line 5: logging.root.level",
    ]


def qualnames(hooks: list[Any]) -> list[str]:
    """Each hook's name: a bound method's as its object's class and the method's name, a
    function's qualified name."""
    return [
        f"{type(hook.__self__).__name__}.{hook.__name__}"
        if hasattr(hook, "__self__")
        else hook.__qualname__
        for hook in hooks
    ]


async def test_a_started_bot_has_every_hook_in_the_order_of_its_cogs():
    async with bot_table(players=4) as table:
        bot = table.bot
        assert qualnames(bot.service.after_commit) == [
            "ProkuratorBot.hooks.<locals>.<lambda>",  # the outbox's kick
            "PhaseTimers.arm",
            "Powers._committed",
            "LeaveStrikes.arm",
            "HostlessLobbies.arm",
            "Reconciler._committed",
            "AttendanceCog.arm",
            "LastWordCog._committed",
            "Archiver.game_ended",
            "SeasonCog.game_ended",
        ]
        assert qualnames(bot.outbox.idle_hooks) == [
            "HostCog._provision_idle",
            "Reconciler._idle",
            "SeasonCog._lane_idle",
        ]
        assert qualnames(bot.outbox.failure_hooks) == [
            "HostCog._provision_failed",
            "Reconciler._failed",
            "RoomWatch._failed",
            "SeasonCog._refused",
        ]
        assert qualnames(bot.service.restorers) == [
            "restorer.<locals>.restore_times",
            "LeaveStrikes.restore",
            "HostlessLobbies.restore",
            "IdleWatch.restore",
        ]
        assert qualnames(bot.service.observers) == ["observe"]
        assert qualnames(bot.service.listeners) == ["IdleWatch.day_ended"]
        assert {"picture", "voice", "transcript"} <= bot.outbox.handlers.keys()
        assert sorted(bot.wired.components) == [
            "cancel",
            "confirm",
            "here",
            "join",
            "lastword",
            "leave",
            "role",
            "stop",
            "unvote",
            "vote",
        ]
        assert bot.service.render.__qualname__ == "render"
        assert bot.timers.render_reminder.__qualname__ == "reminder_items"
        assert qualnames([bot.wired.explain_refusal]) == ["HelpCog.explain"]
        assert qualnames([bot.wired.skip_last_word]) == ["LastWordCog.skip"]


def test_two_parts_may_not_declare_the_same_single_hook():
    async def first(interaction: Any, fields: list[str]) -> None:
        return None

    with pytest.raises(ValueError, match="render"):
        Hooks.joined([Hooks(render=lambda live, events: []), Hooks(render=lambda live, e: [])])
    with pytest.raises(ValueError, match="vote"):
        Hooks.joined([Hooks(components={"vote": first}), Hooks(components={"vote": first})])
    joined = Hooks.joined([Hooks(after_commit=[print]), Hooks(after_commit=[repr, str])])
    assert joined.after_commit == [print, repr, str]


async def test_a_hook_may_not_replace_the_outboxs_own_call():
    async with bot_table(players=4) as table:

        async def post(item: Any) -> int | None:
            return None

        with pytest.raises(ValueError, match="send"):
            wire(table.bot, Hooks(outbox_handlers={"send": post}))
