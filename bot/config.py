"""The bot's configuration: embedded defaults, an optional YAML file on top.

Every key is documented in ``config.example.yaml``. A bad file is refused
with one :class:`ConfigError` naming the key and the problem.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields, replace
from functools import partial
from pathlib import Path
from typing import Any
from zoneinfo import available_timezones

from bot.durations import MAX_DURATION, BadDuration, seconds_in
from bot.pacing import GLOBAL_LIMIT
from bot.yamlfile import YamlFileError, read_yaml
from rules import RuleError, RuleOptions

LANGUAGES = ("ru", "en")
LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")


class ConfigError(Exception):
    """A configuration that cannot be used; the message names the key and the problem."""


@dataclass(frozen=True)
class Timers:
    """Phase durations in seconds (0: no timer, the host moves on) and reminders."""

    discussion: int = 900
    voting: int = 300
    night: int = 600
    execution: int = 600
    """How long a day waits for the host's ``/host execute`` before the city executes by lot."""
    leave_strike: int = 0
    """How long after a player leaves the game (or the server) the Procurator strikes him out
    (0: never; the host decides)."""
    hostless_lobby: int = 900
    """How long a lobby whose host left the server waits for someone to take his place
    (``/host take``) before it closes itself."""
    reminders: tuple[int, ...] = (300, 60)


@dataclass(frozen=True)
class LastWord:
    """The last word: waiting for the nominee, uploads."""

    join_timeout: int = 60
    dave_timeout: int = 15
    progress_every: int = 5
    max_upload_mib: int = 25
    leave_grace: int = 30
    """Seconds a nominee who steps out of the voice channel has to come back to the same last word."""
    reconnect_attempts: int = 3
    """Fresh voice connections tried in a row when the bot's own drops while recording."""
    reconnect_give_up: int = 20
    """Seconds after the bot's voice link drops while recording until it is given up, whatever
    is under way (what was said is posted, ending with the last audio heard)."""


@dataclass(frozen=True)
class Channels:
    """Who may read city channels and what happens to channels at the end."""

    everyone_reads: bool = True
    at_end: str = "keep"
    archive_after: int = 86400
    """Seconds after a game's end (kept channels) until its channels and roles are replaced by a
    transcript in the guild's archive channel (0: never; a lobby setting, ``/host setup``)."""


@dataclass(frozen=True)
class Fairness:
    """What one member may ask of a game: how fast, and how soon after the timer moved it on."""

    burst: int = 20
    """Commands a member may send in one game at once (0: no limit)."""
    per_minute: int = 60
    """After the burst, this many a minute (the burst refills at this pace)."""
    stage_settle: float = 2.0
    """Seconds after the timer began a stage in which a person's stage move (``/host next``,
    ``/host execute``) is refused: it was sent before he could have seen that stage."""


@dataclass(frozen=True)
class Config:
    """The whole configuration with its defaults."""

    database: Path | str = Path("prokurator.sqlite3")
    """A SQLite file, or a ``postgresql://`` URL (a str) for several processes sharing one server."""
    shards: tuple[int, ...] | None = None
    """The shards this process runs (None: all of them, as many as Discord recommends)."""
    shard_count: int | None = None
    """How many shards the bot has in all (None: as many as Discord recommends)."""
    language: str = "ru"
    time_zone: str = "UTC"
    """The IANA time zone a game's page shows its times in (``Europe/Moscow``)."""
    log_level: str = "INFO"
    host_role: str | None = None
    snapshot_every: int = 50
    sqlite_synchronous: str = "full"
    """SQLite's ``synchronous``: ``full`` (a commit is on the disk when it returns: it survives a
    power loss) or ``normal`` (on the disk at the next checkpoint: only a killed process is
    survived). PostgreSQL flushes every commit itself."""
    rest_per_second: int = GLOBAL_LIMIT
    """The bot's global limit of REST calls a second (Discord's 50, unless Discord raised it);
    a process serving some of the shards keeps to their share (:mod:`bot.pacing`)."""
    call_timeout: int = 15
    """Seconds a REST call of the outbox may take before it is given up and tried again; a
    restarted process waits as long before it looks for what the previous one was making."""
    timers: Timers = field(default_factory=Timers)
    last_word: LastWord = field(default_factory=LastWord)
    channels: Channels = field(default_factory=Channels)
    fairness: Fairness = field(default_factory=Fairness)
    rules: RuleOptions = field(default_factory=RuleOptions)

    @property
    def data_folder(self) -> Path:
        """Where the process keeps its files (last-word recordings): the SQLite file's folder,
        or the working directory when the database is a PostgreSQL server."""
        if isinstance(self.database, str):
            return Path.cwd()
        return self.database.resolve().parent

    @property
    def log_level_number(self) -> int:
        """The logging level as the logging module's number."""
        level: int = logging.getLevelName(self.log_level)
        return level


#: the most shards accepted (Discord's largest bots run a few thousand)
MAX_SHARDS = 65536


def parse_shards(key: str, value: Any) -> tuple[int, ...]:
    """Shard ids from ``3``, ``"0-3"``, ``"0,2,5-7"`` or a list of ids, sorted, each once.

    Raises:
        ConfigError: naming ``key`` and what is wrong.
    """
    if isinstance(value, bool):
        raise ConfigError(f"{key}: must be shard numbers like 0-3 or 0,2,5, got {value!r}")
    if isinstance(value, int):
        parts: list[Any] = [value]
    elif isinstance(value, list):
        parts = value
    elif isinstance(value, str):
        parts = [part.strip() for part in value.split(",")]
    else:
        raise ConfigError(f"{key}: must be shard numbers like 0-3 or 0,2,5, got {value!r}")
    found: set[int] = set()
    for part in parts:
        if isinstance(part, int) and not isinstance(part, bool):
            low = high = part
        elif isinstance(part, str) and re.fullmatch(r"\d+", part):
            low = high = int(part)
        elif isinstance(part, str) and re.fullmatch(r"\d+\s*-\s*\d+", part):
            low, high = (int(bound) for bound in part.split("-"))
            if low > high:
                raise ConfigError(f"{key}: the range {part!r} runs backwards")
        else:
            raise ConfigError(f"{key}: {part!r} is not a shard number or a range like 0-3")
        if low < 0 or high >= MAX_SHARDS:
            raise ConfigError(f"{key}: shard numbers go from 0 to {MAX_SHARDS - 1}, got {part!r}")
        found.update(range(low, high + 1))
    if not found:
        raise ConfigError(f"{key}: names no shard")
    return tuple(sorted(found))


def check_shards(
    shards: tuple[int, ...] | None,
    shard_count: int | None,
    *,
    names: tuple[str, str] = ("shards", "shard_count"),
) -> None:
    """Shards given need their count, and each must be below it (``names``: how the two are
    called where they were given, for the message).

    Raises:
        ConfigError: what is missing or out of range.
    """
    shards_name, count_name = names
    if shards is not None and shard_count is None:
        raise ConfigError(f"{shards_name}: needs {count_name}, the bot's number of shards in all")
    if shards is not None and shard_count is not None:
        beyond = [shard for shard in shards if shard >= shard_count]
        if beyond:
            raise ConfigError(
                f"{shards_name}: shard {beyond[0]} does not exist with "
                f"{count_name} {shard_count} (shards are 0 to {shard_count - 1})"
            )


def _check_int(key: str, value: Any, low: int, high: int | None = None) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ConfigError(f"{key}: must be a whole number, got {value!r}")
    if value < low or (high is not None and value > high):
        bound = f"from {low} to {high}" if high is not None else f"at least {low}"
        raise ConfigError(f"{key}: must be {bound}, got {value}")
    return value


def _check_seconds(key: str, value: Any, high: float) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ConfigError(f"{key}: must be a number of seconds, got {value!r}")
    if not 0 <= value <= high:
        raise ConfigError(f"{key}: must be from 0 to {high:g}, got {value}")
    return float(value)


def _check_bool(key: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise ConfigError(f"{key}: must be true or false, got {value!r}")
    return value


def _section(key: str, value: Any) -> Mapping[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise ConfigError(f"{key}: must be a mapping, got {value!r}")
    return value


def _unknown(prefix: str, data: Mapping[str, Any], known: tuple[str, ...]) -> None:
    for key in data:
        if key not in known:
            raise ConfigError(f"{prefix}{key}: unknown key (known: {', '.join(known)})")


def config_from_dict(data: Any) -> Config:
    """Build a config from parsed YAML, the defaults filling what is absent.

    Raises:
        ConfigError: naming the first bad key and its problem.
    """
    data = _section("config", data)
    top = tuple(f.name for f in fields(Config))
    _unknown("", data, top)
    config = Config()
    values: dict[str, Any] = {}
    for key, parse in _SCALARS.items():
        if key in data and (data[key] is not None or key not in _NULLABLE):
            values[key] = parse(data[key])
        if key == "shard_count":  # the two go together: checked before the keys after them
            check_shards(values.get("shards"), values.get("shard_count"))
    for key, section_of in _SECTIONS.items():
        if key in data:
            values[key] = section_of(_section(key, data[key]), getattr(config, key))
    return replace(config, **values)


def _database(value: Any) -> Path | str:
    if not isinstance(value, str) or not value:
        raise ConfigError(f"database: must be a file path or a postgresql:// URL, got {value!r}")
    return database_setting(value)


def _language(value: Any) -> str:
    if value not in LANGUAGES:
        raise ConfigError(f"language: must be one of {', '.join(LANGUAGES)}, got {value!r}")
    return str(value)


def _time_zone(value: Any) -> str:
    if not isinstance(value, str) or value not in available_timezones():
        raise ConfigError(
            f"time_zone: must be an IANA time zone such as Europe/Moscow or UTC, got {value!r}"
        )
    return value


def _log_level(value: Any) -> str:
    level = str(value).upper()
    if level not in LOG_LEVELS:
        raise ConfigError(f"log_level: must be one of {', '.join(LOG_LEVELS)}, got {value!r}")
    return level


def _host_role(value: Any) -> str | None:
    if value is not None and not isinstance(value, str):
        raise ConfigError(f"host_role: must be a role name, got {value!r}")
    return value


def _synchronous(value: Any) -> str:
    synchronous = str(value).lower()
    if synchronous not in ("full", "normal"):
        raise ConfigError(f"sqlite_synchronous: must be full or normal, got {value!r}")
    return synchronous


#: the top-level keys that are one value each, and how each is read
_SCALARS: dict[str, Callable[[Any], Any]] = {
    "database": _database,
    "shards": partial(parse_shards, "shards"),
    "shard_count": lambda value: _check_int("shard_count", value, 1, MAX_SHARDS),
    "language": _language,
    "time_zone": _time_zone,
    "log_level": _log_level,
    "host_role": _host_role,
    "snapshot_every": lambda value: _check_int("snapshot_every", value, 1),
    "sqlite_synchronous": _synchronous,
    "rest_per_second": lambda value: _check_int("rest_per_second", value, 1),
    "call_timeout": lambda value: _check_int("call_timeout", value, 1, 120),
}
#: the keys whose null means "the default"
_NULLABLE = ("shards", "shard_count")


def _check_duration(key: str, value: Any, *, allow_zero: bool) -> int:
    """Seconds of a timer written as the commands take it: ``600``, ``10m``, ``1h30m``, ``10м``."""
    if isinstance(value, bool) or not isinstance(value, int | str):
        raise ConfigError(f"{key}: must be seconds or a duration such as 10m, got {value!r}")
    try:
        return seconds_in(value, allow_zero=allow_zero)
    except BadDuration:
        low = 0 if allow_zero else 1
        raise ConfigError(
            f"{key}: must be seconds or a duration such as 10m or 1h30m, from {low} to "
            f"{MAX_DURATION} seconds (a week), got {value!r}"
        ) from None


def _timers(section: Mapping[str, Any], default: Timers) -> Timers:
    _unknown("timers.", section, tuple(f.name for f in fields(Timers)))
    timers: dict[str, Any] = {}
    for name in ("discussion", "voting", "night", "execution", "leave_strike", "hostless_lobby"):
        if name in section:
            timers[name] = _check_duration(f"timers.{name}", section[name], allow_zero=True)
    if "reminders" in section:
        raw = section["reminders"]
        if not isinstance(raw, list):
            raise ConfigError(f"timers.reminders: must be a list of durations, got {raw!r}")
        timers["reminders"] = tuple(
            sorted(
                {_check_duration("timers.reminders", r, allow_zero=False) for r in raw},
                reverse=True,
            )
        )
    return replace(default, **timers)


def _last_word(section: Mapping[str, Any], default: LastWord) -> LastWord:
    _unknown("last_word.", section, tuple(f.name for f in fields(LastWord)))
    limits = {
        "join_timeout": (5, 600),
        "dave_timeout": (1, 120),
        "progress_every": (1, 60),
        "max_upload_mib": (1, 25),
        "leave_grace": (0, 170),
        "reconnect_attempts": (0, 10),
        "reconnect_give_up": (1, 120),
    }
    return replace(
        default,
        **{name: _check_int(f"last_word.{name}", section[name], *limits[name]) for name in section},
    )


def _channels(section: Mapping[str, Any], default: Channels) -> Channels:
    _unknown("channels.", section, tuple(f.name for f in fields(Channels)))
    channels: dict[str, Any] = {}
    if "everyone_reads" in section:
        channels["everyone_reads"] = _check_bool(
            "channels.everyone_reads", section["everyone_reads"]
        )
    if "at_end" in section:
        if section["at_end"] not in ("keep", "delete"):
            raise ConfigError(f"channels.at_end: must be keep or delete, got {section['at_end']!r}")
        channels["at_end"] = section["at_end"]
    if "archive_after" in section:
        channels["archive_after"] = _check_int(
            "channels.archive_after", section["archive_after"], 0, 31_536_000
        )
    return replace(default, **channels)


def _fairness(section: Mapping[str, Any], default: Fairness) -> Fairness:
    _unknown("fairness.", section, tuple(f.name for f in fields(Fairness)))
    fairness: dict[str, Any] = {}
    for name in ("burst", "per_minute"):
        if name in section:
            fairness[name] = _check_int(f"fairness.{name}", section[name], 0, 10_000)
    if "stage_settle" in section:
        fairness["stage_settle"] = _check_seconds(
            "fairness.stage_settle", section["stage_settle"], 60
        )
    result = replace(default, **fairness)
    if result.burst and not result.per_minute:
        raise ConfigError("fairness.per_minute: must be at least 1 when fairness.burst is set")
    return result


def _rules(section: Mapping[str, Any], default: RuleOptions) -> RuleOptions:
    try:
        return RuleOptions.from_dict(section)
    except RuleError as error:
        raise ConfigError(
            f"rules.{error.params.get('option', '?')}: bad value {error.params.get('value')}"
        ) from None


#: the sections, in the order they are checked, and how each is read on top of its default
_SECTIONS: dict[str, Callable[[Mapping[str, Any], Any], Any]] = {
    "timers": _timers,
    "last_word": _last_word,
    "channels": _channels,
    "fairness": _fairness,
    "rules": _rules,
}


def database_setting(value: str) -> Path | str:
    """A ``database:`` value: a PostgreSQL URL stays text, anything else is a SQLite path.

    Raises:
        ConfigError: a URL of another scheme, or a PostgreSQL URL without a database name.
    """
    from urllib.parse import urlsplit

    if re.match(r"^[a-z][a-z0-9+.-]*://", value):
        parts = urlsplit(value)
        if parts.scheme not in ("postgresql", "postgres"):
            raise ConfigError(
                f"database: {parts.scheme}:// is not supported (a SQLite file path "
                "or a postgresql:// URL)"
            )
        if not parts.path.strip("/"):
            raise ConfigError(
                "database: the postgresql:// URL names no database "
                "(postgresql://user:password@host/NAME)"
            )
        return value
    return Path(value)


def shown_database(database: Path | str) -> str:
    """The ``database:`` value to print or log: a URL's password replaced by ``***``."""
    return re.sub(r"//([^:/@]+):[^/]*@", r"//\1:***@", str(database))


def load_config(path: Path | None) -> Config:
    """The defaults, or the defaults with the YAML file at ``path`` on top.

    Raises:
        ConfigError: the file cannot be read, is not YAML, or has a bad key.
    """
    if path is None:
        return Config()
    if not path.exists():
        raise ConfigError(
            f"cannot read {path}: there is no such file; start one from the example: "
            f"cp config.example.yaml {path}"
        )
    try:
        data, _ = read_yaml(path)
    except YamlFileError as error:
        raise ConfigError(f"{path}: {error}") from None
    return config_from_dict(data)
