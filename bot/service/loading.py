"""Loading a game from storage: the snapshot used only if it holds and the log replays to it;
a game that cannot be rebuilt is kept broken and its host told (the package docstring says
how)."""

from __future__ import annotations

import json
import logging

from bot.i18n import t
from bot.outbox.intents import Send
from bot.service.live import (
    Broken,
    LiveGame,
    rules_version,
)
from bot.service.registry import (
    GameRegistry,
)
from bot.storage import (
    DamagedLog,
    GameRecord,
    GameState,
    StoredSnapshot,
)
from rules import (
    Game,
    RuleError,
    Setup,
    command_from_dict,
)

log = logging.getLogger(__name__)


class GameLoading(GameRegistry):
    """Restore and rebuild games from storage."""

    async def restore(self) -> list[LiveGame]:
        """Load every open game: snapshot + replay of the log after it (see the module docstring)."""
        restored = []
        for record in await self.storage.open_games():
            try:
                restored.append(await self._load(record))
            except Exception:
                log.exception("game %s could not be restored; it stays stored as it is", record.id)
        return restored

    async def _load(self, record: GameRecord) -> LiveGame:
        live = LiveGame(record, language=await self.language(record.guild_id))
        if record.damaged is not None:
            live.broken = Broken("broken.unreadable_game")
        elif (
            record.state == GameState.RUNNING
            and record.setup is not None
            and record.seed is not None
        ):
            try:
                live.game = await self._rebuild(record)
            except Broken as why:
                live.broken = why
            else:
                for restorer in self.restorers:
                    await restorer(live)
        self._keep(live)
        if live.broken is not None:
            log.error("game %s is broken and can only be closed: %s", record.id, live.broken)
            await self._tell_broken(live)
        return live

    async def _tell_broken(self, live: LiveGame) -> None:
        """Tell the host, once per reason, in the game's log channel or else the lobby's."""
        assert live.broken is not None
        why = t(live.language, live.broken.key, **live.broken.params)
        key = f"broken:{live.id}"
        if await self.storage.meta(key) == why:
            return
        channel = live.record.channels.get("log") or live.record.lobby.get("channel_id")
        if channel:
            text = t(live.language, "broken.notice", game=live.id, reason=why)
            await self.storage.add_outbox(
                live.id,
                [Send({"content": text, "allowed_mentions": {"parse": []}}, int(channel)).item()],
            )
        await self.storage.set_meta(key, why)
        self._committed(live)

    async def finished_game(self, record: GameRecord) -> Game:
        """A finished game (no longer in memory) as its log makes it.

        Raises:
            Broken: the setup, or a command of the log, does not replay.
        """
        return await self._rebuild(record)

    async def _rebuild(self, record: GameRecord) -> Game:
        """The game as its log makes it, through its newest sound snapshot.

        Raises:
            Broken: the setup, or a command of the log, does not replay.
        """
        assert record.setup is not None and record.seed is not None
        try:
            setup = Setup.from_dict(record.setup)
            Game.create(setup, record.seed)
        except (RuleError, KeyError, TypeError, ValueError) as error:
            log.error("game %s: its setup does not make a game: %s", record.id, error)
            raise Broken("broken.setup") from None

        def fresh() -> Game:
            return Game.create(setup, int(record.seed or 0))

        stored = await self.storage.snapshots(record.id, limit=2)
        game, after = fresh(), 0
        latest = self._snapshot_game(record.id, stored[0]) if stored else None
        if latest is not None:
            newest = stored[0]
            previous = None
            if len(stored) > 1 and newest.rules_version == rules_version():
                previous = self._snapshot_game(record.id, stored[1], quiet=True)
            base, base_seq = (previous, stored[1].seq) if previous is not None else (fresh(), 0)
            replayed, _ = await self._replay(record.id, base, base_seq, upto=newest.seq)
            if replayed != latest and base_seq:
                replayed, _ = await self._replay(record.id, fresh(), 0, upto=newest.seq)
            if replayed != latest:
                log.error(
                    "game %s: snapshot %s disagrees with the replay of its log; the log wins",
                    record.id,
                    newest.seq,
                )
            game, after = replayed, newest.seq
        game, last = await self._replay(record.id, game, after)
        record.command_count = last
        return game

    def _snapshot_game(
        self, game_id: int, snapshot: StoredSnapshot, *, quiet: bool = False
    ) -> Game | None:
        """The game a stored snapshot holds, or None (logged) if it is not sound."""
        level = logging.DEBUG if quiet else logging.WARNING
        if snapshot.checksum is None:  # written before snapshots had checksums: expected once
            log.info(
                "game %s: snapshot %s has no checksum; the log is replayed", game_id, snapshot.seq
            )
            return None
        if not snapshot.intact:
            log.log(
                level,
                "game %s: snapshot %s does not match its checksum; the log is replayed",
                game_id,
                snapshot.seq,
            )
            return None
        try:
            return Game.from_dict(json.loads(snapshot.text))
        except (RuleError, KeyError, TypeError, ValueError) as error:
            log.log(
                level,
                "game %s: snapshot %s is unreadable (%s); the log is replayed",
                game_id,
                snapshot.seq,
                error,
            )
            return None

    async def _replay(
        self, game_id: int, game: Game, after: int, upto: int | None = None
    ) -> tuple[Game, int]:
        """Apply the log's commands after ``after`` (up to ``upto``) to ``game``; returns it and
        the last seq applied.

        Raises:
            Broken: a row is unreadable or the rules refuse a command.
        """
        try:
            rows = await self.storage.commands(game_id, after, upto)
        except DamagedLog as error:
            log.error("%s", error)
            raise Broken("broken.unreadable_command", seq=error.seq) from None
        last = after
        for row in rows:
            try:
                command = command_from_dict(row.command)
            except (RuleError, KeyError, TypeError, ValueError) as error:
                log.error("game %s: stored command %s is unreadable: %r", game_id, row.seq, error)
                raise Broken("broken.unreadable_command", seq=row.seq) from None
            try:
                game.apply(command)
            except RuleError as error:
                log.error(
                    "game %s: stored command %s is refused on replay (%s)", game_id, row.seq, error
                )
                raise Broken("broken.refused_command", seq=row.seq, code=error.code) from None
            last = row.seq
        return game, last
