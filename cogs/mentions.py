"""Commands named in texts: as clickable command mentions, under their localised names.

A text that tells a player what to do names the command as Discord's client
shows it to him: ``</голосовать:ID>`` in a Russian guild, ``</vote:ID>`` in an
English one (``</мафия я:ID>`` for a subcommand). The ids are what Discord gave
the global commands when the bot synced its tree; the bot syncs only when the
tree changed, so they are stored (``bot.bot.ProkuratorBot.sync_commands``) and
set here at start (:func:`set_command_ids`: a hook :class:`cogs.game.GameCog` declares,
with :func:`command_field`, the texts' fallback for ``{cmd_...}`` fields). Renderers only
get a game, not the bot, so the ids live in this module: one bot process has one
application and one tree. Without an id
(before the first sync, in a test without one) a command is written as code,
``/голосовать``, which still names it as the client shows it.
"""

from __future__ import annotations

from bot.i18n import t
from rules.table import HOST_ACTS, HOST_TOOLS, PLAYER_ACTS

#: top-level command (its default name) → the id Discord gave it
COMMAND_IDS: dict[str, int] = {}
#: ``{cmd_...}`` fields of the commands ``rules/table.py`` does not declare
OTHER_COMMANDS = {
    "cmd_help": "help",
    "cmd_rules": "rules",
    "cmd_status": "mafia status",
    "cmd_me": "mafia me",
    "cmd_new": "mafia new",
    "cmd_join": "mafia join",
    "cmd_leave": "mafia leave",
    "cmd_notify": "mafia notify",
    "cmd_upload": "lastword upload",
    "cmd_setup": "host setup",
    "cmd_start": "host start",
    "cmd_history": "mafia history",
    "cmd_game": "mafia game",
    "cmd_hostrole": "admin hostrole",
    "cmd_spectate": "mafia spectate",
    "cmd_will": "will write",
    "cmd_preset_save": "host preset save",
    "cmd_preset_delete": "host preset delete",
}


def table_fields() -> dict[str, str]:
    """The ``{cmd_...}`` fields of the commands the table declares: a player's act by its verb
    (``cmd_vote``, its main slash command), a host's command by its last word (``cmd_next``),
    prefixed ``host`` where a player's act has that word (``cmd_hostkill``)."""
    fields = {f"cmd_{act.verb}": act.slash[0] for act in PLAYER_ACTS.values()}
    hosts = [path for act in HOST_ACTS.values() for path in act.slash] + list(HOST_TOOLS)
    for path in hosts:
        word = path.split()[-1]
        field = f"cmd_{word}" if fields.get(f"cmd_{word}", path) == path else f"cmd_host{word}"
        fields[field] = path
    return fields


#: ``{cmd_...}`` fields any text may use, by the command they name
PLACEHOLDERS = {**table_fields(), **OTHER_COMMANDS}


def set_command_ids(ids: dict[str, int]) -> None:
    """Remember the ids of the synced commands (replaces what was known)."""
    COMMAND_IDS.clear()
    COMMAND_IDS.update(ids)


def localised_name(language: str, path: str) -> str:
    """``"mafia me"`` → ``"мафия я"``: each word by its catalogue key (``cmd.mafia.name``,
    ``cmd.mafia.me.name``)."""
    words = path.split()
    return " ".join(
        t(language, "cmd." + ".".join(words[: index + 1]) + ".name") for index in range(len(words))
    )


def command(language: str, path: str) -> str:
    """A command as a clickable mention in ``language`` (``path`` by default names, such as
    ``"lastword speak"``), or as code when its id is unknown."""
    name = localised_name(language, path)
    command_id = COMMAND_IDS.get(path.split()[0])
    if command_id is None:
        return f"`/{name}`"
    return f"</{name}:{command_id}>"


def command_field(language: str, name: str) -> str | None:
    """A ``{cmd_...}`` field no caller filled: the command's mention."""
    path = PLACEHOLDERS.get(name)
    return command(language, path) if path is not None else None
