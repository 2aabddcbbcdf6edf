"""``/help`` and ``/rules``: what you can do right now, and the rules of the game.

``/help`` answers privately, from where the asker stands: a player gets his
status and city (his own secret, told to him alone), the stage and its
deadline, and what the rules let him do now (``Game.legal_actions``), each
command as a clickable mention under its localised name; the dead, the host,
someone who does not play, a lobby's players and a server without a game get
what is theirs to do. ``/rules`` shows the rules in the guild's language,
``docs/rules.{ru,en}.md``, one ``##`` section at a time: without a section
the contents, with one (offered by autocomplete) that section. The texts are
package data (``bot/texts/``, links to ``docs/``), so an installed bot finds
them too.
"""

from __future__ import annotations

from functools import cache
from importlib import resources
from typing import TYPE_CHECKING, Any

import discord
from discord import app_commands
from discord.ext import commands

from bot.errors import UserError
from bot.i18n import LANGUAGES, key_str, phrase, t
from bot.limits import OPTION_LABEL, clip
from bot.service import LiveGame
from bot.storage import GameState
from bot.wiring import Hooks
from cogs import presets
from cogs.common import (
    answer_lines,
    host_gone,
    interaction_data,
    is_host,
    manages_server,
    plays_in,
    seen_by,
    status_text,
)
from cogs.mentions import command
from cogs.render import deadline_text, moment_text
from cogs.scheduled import next_scheduled, scheduled_line
from cogs.spectators import watch_hint
from cogs.will import will_limit
from rules import RuleError
from rules.table import ACTS, ANY, HOST_ACTS, HOST_TOOLS, PLAYER_ACTS

if TYPE_CHECKING:
    from bot.bot import ProkuratorBot

#: a verb of ``legal_actions`` → the command that does it
PLAYER_COMMANDS = {verb: act.slash[0] for verb, act in PLAYER_ACTS.items()}
#: a verb of ``legal_host_actions`` → the host's command
HOST_COMMANDS = {verb: act.slash[0] for verb, act in HOST_ACTS.items() if act.slash}


def _stages() -> dict[str, str]:
    """The stage each command belongs to (slash commands by their default names, and the "Last
    word" button's action ``lastword``); a command sent at several stages, or at any, has none."""
    stages: dict[str, set[str]] = {}
    for act in ACTS:
        for slash in act.slash:
            stages.setdefault(slash, set()).add(act.stage)
    one = {slash: next(iter(found)) for slash, found in stages.items() if len(found) == 1}
    return {slash: stage for slash, stage in one.items() if stage != ANY} | {
        "lastword": PLAYER_ACTS["lastword"].stage
    }


#: the stage a command belongs to (:func:`_stages`)
STAGE_OF = _stages()
#: what the host can always do while his game runs
HOST_ALWAYS = HOST_TOOLS


@cache
def rules_text(language: str) -> str:
    """The rules in ``language`` (Discord markdown), as the package ships them."""
    language = language if language in LANGUAGES else "ru"
    return (resources.files("bot") / "texts" / f"rules.{language}.md").read_text(encoding="utf-8")


def rule_sections(language: str) -> list[tuple[str, str]]:
    """The rules split at their ``##`` headings: ``(title, text)``, the introduction first
    (titled by the ``#`` heading)."""
    sections: list[tuple[str, str]] = []
    title = ""
    lines: list[str] = []
    for line in rules_text(language).splitlines():
        if line.startswith("# ") and not sections and not lines:
            title = line[2:].strip()
            continue
        if line.startswith("## "):
            sections.append((title, "\n".join(lines).strip()))
            title, lines = line[3:].strip(), []
            continue
        lines.append(line)
    sections.append((title, "\n".join(lines).strip()))
    return [(name, text) for name, text in sections if text]


def action_line(live: LiveGame, verb: str, player: str) -> str:
    """One thing a player may do now: the command and what it does for him."""
    game = live.game
    assert game is not None
    path = PLAYER_COMMANDS[verb]
    key = f"help.verb.{verb}"
    if verb in ("kill", "tour"):
        godfather = game.godfather_of(game.city_of(player)) == player
        # the mafia's kill is its Godfather's decision or a member's proposal, told apart; any
        # other kill is its status's
        key += ".godfather" if godfather else f".{game.status_of(player).value}"
    return phrase(
        live,
        key,
        command=command(live.language, path),
        upload=command(live.language, "lastword upload"),
    )


def player_lines(live: LiveGame, player: str) -> list[str]:
    """A player's help: his status, the stage, and what he may do now."""
    game = live.game
    assert game is not None
    city = game.city_of(player)
    lines = [
        phrase(
            live, "help.player", status=status_text(live, game.status_of(player).value), city=city
        )
    ]
    if game.godfather_of(city) == player:
        lines.append(phrase(live, "help.godfather"))
    lines.append(stage_line(live))
    if not game.is_alive(player):
        lines.append(phrase(live, "help.dead"))
        return lines
    actions = game.legal_actions(player)
    if actions:
        lines.append(phrase(live, "help.can"))
        lines.extend(action_line(live, action.verb, player) for action in actions)
    else:
        lines.append(phrase(live, "help.nothing"))
    if will_limit(live):
        lines.append(
            phrase(
                live,
                "help.will",
                command=command(live.language, "will write"),
                count=will_limit(live),
            )
        )
    return lines + presets.house_lines(live)


def stage_line(live: LiveGame) -> str:
    """Where the game is, and when the stage ends."""
    game = live.game
    assert game is not None
    return phrase(live, "help.stage", moment=moment_text(live), deadline=deadline_text(live))


def host_lines(live: LiveGame) -> list[str]:
    """The host's help while his game runs: what the rules let him do now, and his tools."""
    game = live.game
    assert game is not None
    lines = [phrase(live, "help.host", game=live.id), stage_line(live)]
    paths = list(dict.fromkeys(HOST_COMMANDS[a.verb] for a in game.legal_host_actions()))
    paths += [path for path in HOST_ALWAYS if path not in paths]
    lines.append(phrase(live, "help.host_can"))
    lines.extend(
        phrase(live, f"help.{path.replace(' ', '.')}", command=command(live.language, path))
        for path in [*paths, "host hand"]
    )
    return lines


def stand_in_lines(live: LiveGame, user: discord.abc.User) -> list[str]:
    """To one who may stand in for a host who left the server (Manage Server, not playing):
    how to take his place or end the game."""
    if not host_gone(live) or not manages_server(user) or plays_in(live, user.id):
        return []
    take, end = command(live.language, "host take"), command(live.language, "host end")
    return [phrase(live, "help.host_gone", game=live.id, take=take, end=end)]


def lobby_lines(live: LiveGame, user: int, host: bool) -> list[str]:
    """A lobby (or a game being started): join, wait, or set it up."""

    def say(key: str, **params: Any) -> str:
        return phrase(live, key, **params)

    def cmd(path: str) -> str:
        return command(live.language, path)

    if live.record.state == GameState.STARTING:
        return [say("help.starting", game=live.id)]
    if host:  # the host does not play: nothing to join
        return [
            say(
                "help.lobby_host",
                game=live.id,
                setup=cmd("host setup"),
                start=cmd("host start"),
                end=cmd("host end"),
            ),
            say("help.lobby_presets", setup=cmd("host setup"), save=cmd("host preset save")),
            say("help.host.attendance", command=cmd("host attendance")),
            say("help.host.hand", command=cmd("host hand")),
        ]
    joined = any(int(p["id"]) == user for p in live.record.lobby.get("players", []))
    if joined:
        return [say("help.lobby_joined", game=live.id, leave=cmd("mafia leave"))]
    return [say("help.lobby_open", game=live.id, join=cmd("mafia join"))]


def help_lines(
    bot: ProkuratorBot,
    live: LiveGame | None,
    user: discord.abc.User,
    language: str,
    host_role: int | None,
) -> list[str]:
    """What the user can do right now (see the module docstring)."""
    always = t(
        language,
        "help.always",
        me=command(language, "mafia me"),
        status=command(language, "mafia status"),
        rules=command(language, "rules"),
        notify=command(language, "mafia notify"),
    )
    # who does not play (the host, a co-host, a spectator) has no status and gets no pings
    onlooker = t(
        language,
        "help.always_onlooker",
        status=command(language, "mafia status"),
        rules=command(language, "rules"),
    )
    if live is None:
        return [
            t(
                language,
                "help.no_game",
                new=command(language, "mafia new"),
                rules=command(language, "rules"),
                history=command(language, "mafia history"),
            ),
            t(language, "help.schedule", command=command(language, "mafia schedule")),
            always,
        ]
    host = is_host(bot, live, user, host_role)
    stand_in = stand_in_lines(live, user)
    if live.game is None:
        return [*stand_in, *lobby_lines(live, user.id, host), onlooker if host else always]
    player = str(user.id)
    lines: list[str] = []
    if player in live.game.players:
        lines.extend(player_lines(live, player))
    if host:
        lines.extend(host_lines(live))
    if not lines:
        lines = [watch_hint(live, user.id), stage_line(live)]
    return [*stand_in, *lines, always if player in live.game.players else onlooker]


def wrong_stage_text(live: LiveGame, path: str) -> str | None:
    """A refusal for the wrong stage that says where the game is and when what was asked for is
    possible ("it is the voting now; nominations open at the start of a day"); None when the
    command is not one of a stage."""
    kind = STAGE_OF.get(path)
    if kind is None or live.game is None:
        return None
    return " ".join(
        [stage_line(live), phrase(live, f"wrong_stage.{kind}"), phrase(live, "help.what_now")]
    )


def component_path(interaction: discord.Interaction) -> str:
    """The command an interaction stands for: a slash command's default name, a component's
    action (``mafia:vote:...`` → ``vote``)."""
    if interaction.command is not None:
        return interaction.command.qualified_name
    custom_id = str(interaction_data(interaction).get("custom_id", ""))
    parts = custom_id.split(":")
    return parts[1] if len(parts) > 1 and parts[0] == "mafia" else ""


class HelpCog(commands.Cog):
    """``/help`` and ``/rules``; explains refusals for the wrong stage."""

    def __init__(self, bot: ProkuratorBot) -> None:
        self.bot = bot

    def hooks(self) -> Hooks:
        """Its words for a refusal for the wrong stage."""
        return Hooks(explain_refusal=self.explain)

    async def explain(self, interaction: discord.Interaction, error: RuleError) -> str | None:
        """A better text for a rules' refusal than its catalogue entry, where there is one."""
        if error.code != "wrong_phase" or interaction.guild_id is None:
            return None
        live = await self.bot.service.open_game(interaction.guild_id)
        if live is None:
            return None
        return wrong_stage_text(seen_by(live, interaction), component_path(interaction))

    @app_commands.command(
        name=key_str("cmd.help.name"),
        description=key_str("cmd.help.description"),
    )
    @app_commands.guild_only()
    async def help(self, interaction: discord.Interaction) -> None:
        if interaction.guild_id is None:
            raise UserError("error.guild_only")
        language = await self.bot.language_for(interaction)
        live = await self.bot.service.open_game(interaction.guild_id)
        live = None if live is None else seen_by(live, interaction)
        role = await self.bot.storage.guild_host_role(interaction.guild_id)
        lines = help_lines(self.bot, live, interaction.user, language, role)
        soon = await next_scheduled(self.bot.storage, interaction.guild_id)
        if soon is not None:  # before the line of what one may always do
            lines.insert(len(lines) - 1, scheduled_line(language, soon))
        await answer_lines(interaction, lines)

    @app_commands.command(
        name=key_str("cmd.rules.name"),
        description=key_str("cmd.rules.description"),
    )
    @app_commands.rename(section=key_str("opt.section.name"))
    @app_commands.describe(section=key_str("opt.section.description"))
    async def rules(self, interaction: discord.Interaction, section: int | None = None) -> None:
        language = await self.bot.language_for(interaction)
        sections = rule_sections(language)
        if section is None:
            title, text = sections[0]
            contents = [
                t(language, "rules.entry", number=n, title=name)
                for n, (name, _) in enumerate(sections[1:], start=1)
            ]
            lines = [
                f"# {title}",
                text,
                t(language, "rules.contents", rules=command(language, "rules")),
                *contents,
            ]
        elif 1 <= section < len(sections):
            title, text = sections[section]
            lines = [f"## {title}", text]
        else:
            raise UserError(
                "error.no_such_section", count=len(sections) - 1, rules=command(language, "rules")
            )
        await answer_lines(interaction, lines)

    @rules.autocomplete("section")
    async def _sections(
        self, interaction: discord.Interaction, current: str
    ) -> list[app_commands.Choice[int]]:
        language = await self.bot.language_for(interaction)
        lowered = current.casefold()
        return [
            app_commands.Choice(name=clip(f"{n}. {title}", OPTION_LABEL), value=n)
            for n, (title, _) in enumerate(rule_sections(language)[1:], start=1)
            if lowered in f"{n}. {title}".casefold()
        ][:25]


async def setup(bot: ProkuratorBot) -> None:
    """Load the cog."""
    await bot.add_cog(HelpCog(bot))


__all__ = ["HelpCog", "help_lines", "rule_sections", "rules_text"]
