"""The ``mafia-bot`` command line."""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import signal
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rules.scenario import ScenarioError

log = logging.getLogger("bot")


def _fail(command: str, message: str, code: int = 2) -> int:
    print(f"mafia-bot {command}: {message}", file=sys.stderr)
    return code


def _check_config(args: argparse.Namespace) -> int:
    from bot.config import ConfigError, load_config, shown_database

    try:
        config = load_config(Path(args.file))
    except ConfigError as error:
        return _fail("check-config", str(error))
    shards = (
        f", shards {','.join(map(str, config.shards))} of {config.shard_count}"
        if config.shards is not None
        else ""
    )
    print(
        f"{args.file}: ok (database {shown_database(config.database)}{shards}, language {config.language}, "
        f"timers {config.timers.discussion}/{config.timers.voting}/{config.timers.night} s)"
    )
    return 0


def _run(args: argparse.Namespace) -> int:
    from bot.config import ConfigError, load_config

    try:
        config = load_config(Path(args.config) if args.config else None)
    except ConfigError as error:
        return _fail("run", str(error))
    level = args.log_level.upper() if args.log_level else config.log_level
    if logging.getLevelName(level) not in range(0, 60):
        return _fail("run", f"--log-level: unknown level {args.log_level!r}")
    from dataclasses import replace

    from bot.bot import LOG_FORMAT, ShardFilter
    from bot.config import MAX_SHARDS, check_shards, parse_shards

    try:
        shards = parse_shards("--shards", args.shards) if args.shards is not None else config.shards
        if args.shard_count is not None and not 1 <= args.shard_count <= MAX_SHARDS:
            raise ConfigError(
                f"--shard-count: must be from 1 to {MAX_SHARDS}, got {args.shard_count}"
            )
        count = args.shard_count if args.shard_count is not None else config.shard_count
        check_shards(
            shards,
            count,
            names=(
                "--shards" if args.shards is not None else "shards",
                "--shard-count"
                if args.shard_count is not None or args.shards is not None
                else "shard_count",
            ),
        )
    except ConfigError as error:
        return _fail("run", str(error))
    config = replace(config, shards=shards, shard_count=count)
    token = os.environ.get("DISCORD_TOKEN", "").strip()
    if not token:
        return _fail(
            "run",
            "DISCORD_TOKEN is not set: put the bot's token in the environment "
            "(it is never read from the config file)",
        )
    logging.basicConfig(stream=sys.stderr, level=level, format=LOG_FORMAT)
    for handler in logging.getLogger().handlers:
        handler.addFilter(ShardFilter())
    return asyncio.run(_owned(config, token, accept_empty=args.accept_empty_database))


async def _owned(config: Any, token: str, *, accept_empty: bool) -> int:
    """Own the database (a second process stops here, naming the first), check it is the one
    meant, say which it is, then serve; the database is let go at the end."""
    from bot.config import shown_database
    from bot.storage import Storage, StorageError
    from bot.storage import owner as ownership

    shown = shown_database(config.database)
    try:
        owned = await ownership.take(config.database, shown, config.shards, config.shard_count)
    except StorageError as error:
        return _fail("run", str(error))
    try:
        empty = None if accept_empty else ownership.empty_file(config.database)
        if empty is not None:
            return _fail("run", empty)
        try:
            storage = await Storage.open(config.database, synchronous=config.sqlite_synchronous)
        except StorageError as error:
            return _fail("run", str(error))
        try:
            log.info("%s", await ownership.startup_line(config.database, shown, storage))
        except Exception as error:  # the database fails already: serving says how
            log.warning("database %s: cannot count its games: %r", shown, error)
        return await _serve(config, token, storage)
    finally:
        if owned is not None:
            await owned.release()


async def _serve(config: Any, token: str, storage: Any) -> int:
    import aiohttp
    import discord

    from bot.bot import ProkuratorBot
    from bot.discord_endpoint import point_from_environment

    if point_from_environment():
        log.warning(
            "discord.py points at %s (DISCORD_API_BASE/DISCORD_GATEWAY_URL)",
            os.environ.get("DISCORD_API_BASE"),
        )
    bot = ProkuratorBot(config, storage=storage)
    loop = asyncio.get_running_loop()
    if sys.platform != "win32":  # asyncio has no signal handlers on Windows
        for signum in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(signum, lambda: asyncio.ensure_future(bot.close()))
    try:
        async with bot:
            await bot.start(token)
    except discord.LoginFailure:
        return _fail("run", "Discord refused the token in DISCORD_TOKEN (login failed)", 1)
    except discord.PrivilegedIntentsRequired:
        return _fail(
            "run", "enable the Server Members intent for the bot in the Discord developer portal", 1
        )
    except (TimeoutError, aiohttp.ClientError, OSError, discord.GatewayNotFound) as error:
        return _fail("run", f"cannot reach Discord at {_api_host()}: {_reason(error)}", 1)
    except discord.HTTPException as error:
        return _fail("run", f"Discord answered {error.status} at login: {error.text or error}", 1)
    finally:
        if not storage.closed:
            await storage.close()
    return 0


def _api_host() -> str:
    from urllib.parse import urlsplit

    from discord.http import Route

    return urlsplit(Route.BASE).netloc or Route.BASE


def _reason(error: BaseException) -> str:
    """What went wrong, in one line (the innermost OS error when there is one)."""
    inner: BaseException | None = error
    while inner is not None and not isinstance(inner, OSError):
        inner = inner.__cause__ or inner.__context__
    chosen = inner if inner is not None else error
    text = str(getattr(chosen, "strerror", None) or chosen) or type(chosen).__name__
    return " ".join(text.split())


def _simulate(args: argparse.Namespace) -> int:
    from bot.simulate import simulate

    try:
        output = simulate(Path(args.file), args.json, args.lang)
    except ScenarioError as error:
        print(f"mafia-bot simulate: {args.file}: {error}", file=sys.stderr)
        return 2
    try:
        print(output)
        sys.stdout.flush()
    except BrokenPipeError:  # `mafia-bot simulate FILE | head`: the reader has seen enough
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return 0


def _export(args: argparse.Namespace) -> int:
    from bot.export import ExportError, export_scenario

    async def read() -> str:
        archived = await _archived(args.database, args.game)
        return export_scenario(archived)

    try:
        text = asyncio.run(read())
    except (_CliError, ExportError) as error:
        return _fail("export", str(error))
    if args.out:
        try:
            Path(args.out).write_text(text, encoding="utf-8")
        except OSError as error:
            return _fail("export", f"cannot write {args.out}: {error}")
        print(f"{args.out}: game {args.game} written; check it with: mafia-bot simulate {args.out}")
    else:
        print(text, end="")
    return 0


def _export_site(args: argparse.Namespace) -> int:
    from bot.config import Config
    from bot.site import SiteError, export_site
    from bot.storage import Storage, StorageError

    async def write() -> str:
        storage = await Storage.open_reading(args.database)  # beside a running bot too
        try:
            return await export_site(storage, Path(args.folder), args.guild, Config().language)
        finally:
            await storage.close()

    try:
        print(asyncio.run(write()))
    except (StorageError, SiteError) as error:
        return _fail("export-site", str(error))
    return 0


class _CliError(Exception):
    """A command line task that cannot be done; the message says why."""


async def _archived(database: str, game_id: int) -> Any:
    """The archived game ``game_id`` of ``database``; one that ended unarchived is archived in
    memory (the bot stores its archive itself). The database is only read: it may be in use by
    a running bot."""
    from bot.archive import ArchiveError, build_archive
    from bot.storage import Storage, StorageError

    try:
        storage = await Storage.open_reading(database)
    except StorageError as error:
        raise _CliError(str(error)) from None
    try:
        archived = await storage.archived_game(game_id)
        source = await storage.archive_source(game_id) if archived is None else None
    finally:
        await storage.close()
    if archived is None and source is not None:
        try:
            archived = build_archive(source)
        except ArchiveError:
            archived = None
    if archived is None:
        raise _CliError(f"game {game_id} is not a finished game of {database}")
    return archived


def _rebuild_stats(args: argparse.Namespace) -> int:
    from bot.archive import Archiver, rebuild_stats
    from bot.config import shown_database
    from bot.storage import Storage, StorageError, is_postgres
    from bot.storage import owner as ownership

    async def rebuild() -> tuple[int, int]:
        # it writes (the archive, the figures): as `run`, it owns the database meanwhile, and a
        # running bot's database is refused, naming the bot
        owned = await ownership.take(args.database, shown_database(args.database), None, None)
        try:
            storage = await Storage.open(args.database)
            try:
                archived = await Archiver(storage).sweep()
                return archived, await rebuild_stats(storage)
            finally:
                await storage.close()
        finally:
            if owned is not None:
                await owned.release()

    if not is_postgres(args.database) and not Path(args.database).exists():
        return _fail("rebuild-stats", f"{args.database}: no such database")
    try:
        archived, counted = asyncio.run(rebuild())
    except StorageError as error:
        return _fail("rebuild-stats", str(error))
    print(
        f"{args.database}: {archived} game(s) archived now; figures and ratings rebuilt "
        f"from {counted} game(s) played to the end"
    )
    return 0


def _backup(args: argparse.Namespace) -> int:
    from bot.backup import BackupError, backup, restore_steps
    from bot.storage import is_postgres

    if is_postgres(args.database):
        return _fail(
            "backup",
            "this copies a SQLite file; for PostgreSQL use its own tool: "
            "pg_dump --format=custom --file=FILE URL (restore: pg_restore --clean "
            "--dbname=URL FILE)",
        )
    database, out = Path(args.database), Path(args.out)
    try:
        made = backup(database, out)
    except BackupError as error:
        return _fail("backup", str(error))
    print(
        f"{database}: backed up to {out} ({made.size / 1024:.0f} KiB, {made.games} game(s), "
        f"{made.open_games} open)"
    )
    print(restore_steps(database, out))
    return 0


def _site_parser(commands: Any) -> None:
    site = commands.add_parser(
        "export-site", help="write a server's season as static pages (index, games, leaderboard)"
    )
    site.add_argument("folder", help="the folder to write the pages in")
    site.add_argument(
        "--database", required=True, help="the bot's SQLite file or postgresql:// URL"
    )
    site.add_argument(
        "--guild", type=int, help="the server (needed when the database holds several)"
    )
    site.set_defaults(handler=_export_site)


def _run_parser(commands: Any) -> None:
    """The ``run`` subcommand's arguments."""
    run = commands.add_parser("run", help="run the bot (token from DISCORD_TOKEN)")
    run.add_argument("--config", help="a YAML config file (optional; see config.example.yaml)")
    run.add_argument("--log-level", help="override the config's log_level")
    run.add_argument(
        "--shards",
        help="the shards this process runs, e.g. 0-3 or 0,2 "
        "(default: the config's shards, else all of them)",
    )
    run.add_argument(
        "--shard-count",
        type=int,
        help="the bot's number of shards in all (needed with --shards unless the "
        "config has shard_count)",
    )
    run.add_argument(
        "--accept-empty-database",
        action="store_true",
        help="start a new database in an existing empty file (refused otherwise: an empty "
        "file where the database should be is usually a restore gone wrong)",
    )
    run.set_defaults(handler=_run)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser with every subcommand."""
    parser = argparse.ArgumentParser(
        prog="mafia-bot", description="Прокуратор: multi-city Mafia on Discord."
    )
    commands = parser.add_subparsers(dest="command", required=True)
    simulate = commands.add_parser("simulate", help="play a scenario file and print what happened")
    simulate.add_argument("file", help="the scenario file (YAML)")
    simulate.add_argument("--json", action="store_true", help="print one JSON object")
    simulate.add_argument(
        "--lang",
        choices=("ru", "en"),
        help="the transcript's language (default: Russian when the system locale, "
        "LANGUAGE/LC_ALL/LC_MESSAGES/LANG, is Russian, else English); "
        "the JSON is the same in every language",
    )
    simulate.set_defaults(handler=_simulate)
    _run_parser(commands)
    check = commands.add_parser("check-config", help="validate a config file without connecting")
    check.add_argument("file", help="the YAML config file")
    check.set_defaults(handler=_check_config)
    export = commands.add_parser(
        "export", help="write a finished game as a scenario file that `simulate` replays"
    )
    export.add_argument(
        "--database", required=True, help="the bot's SQLite file or postgresql:// URL"
    )
    export.add_argument("--game", required=True, type=int, help="the game's number")
    export.add_argument("--out", help="the file to write (default: standard output)")
    export.set_defaults(handler=_export)
    _site_parser(commands)
    rebuild = commands.add_parser(
        "rebuild-stats", help="recompute every player's figures and rating from the archive"
    )
    rebuild.add_argument(
        "--database", required=True, help="the bot's SQLite file or postgresql:// URL"
    )
    rebuild.set_defaults(handler=_rebuild_stats)
    saved = commands.add_parser(
        "backup", help="copy a SQLite database, running or not, consistently (PostgreSQL: pg_dump)"
    )
    saved.add_argument("--database", required=True, help="the bot's SQLite file")
    saved.add_argument("--out", required=True, help="the backup to write (a new file)")
    saved.set_defaults(handler=_backup)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the process exit code."""
    args = build_parser().parse_args(argv)
    code: int = args.handler(args)
    return code


if __name__ == "__main__":
    sys.exit(main())
