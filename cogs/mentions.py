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

#: top-level command (its default name) → the id Discord gave it
COMMAND_IDS: dict[str, int] = {}
#: ``{cmd_...}`` fields any text may use, by the command they name
PLACEHOLDERS = {
    "cmd_help": "help",
    "cmd_rules": "rules",
    "cmd_status": "mafia status",
    "cmd_me": "mafia me",
    "cmd_new": "mafia new",
    "cmd_join": "mafia join",
    "cmd_leave": "mafia leave",
    "cmd_notify": "mafia notify",
    "cmd_nominate": "nominate",
    "cmd_vote": "vote",
    "cmd_unvote": "unvote",
    "cmd_protect": "protect",
    "cmd_compare": "compare",
    "cmd_elect": "elect",
    "cmd_kill": "kill",
    "cmd_tour": "tour",
    "cmd_pass": "pass",
    "cmd_check": "check",
    "cmd_lastword": "lastword speak",
    "cmd_upload": "lastword upload",
    "cmd_setup": "host setup",
    "cmd_start": "host start",
    "cmd_next": "host next",
    "cmd_end": "host end",
    "cmd_execute": "host execute",
    "cmd_touring": "host touring",
    "cmd_history": "mafia history",
    "cmd_game": "mafia game",
    "cmd_godfather": "host godfather",
    "cmd_hostrole": "admin hostrole",
    "cmd_replace": "host replace",
    "cmd_hostkill": "host kill",
    "cmd_timer": "host timer",
    "cmd_pause": "host pause",
    "cmd_resume": "host resume",
    "cmd_extend": "host extend",
    "cmd_judge": "host judge",
    "cmd_idle": "host idle",
    "cmd_skip": "host skip",
    "cmd_spectate": "mafia spectate",
    "cmd_will": "will write",
    "cmd_preset_save": "host preset save",
    "cmd_preset_delete": "host preset delete",
}


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
