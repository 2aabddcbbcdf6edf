"""The test's side of :class:`~tests.fakediscord.server.FakeDiscord`: waiting for the bot (on its
progress, not on wall time), finding the REST calls it made, and members using the bot's
commands, buttons, selects and modals."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

from .gateway import GatewaySession
from .interactions import (
    INTERACTION_APPLICATION_COMMAND,
    INTERACTION_AUTOCOMPLETE,
    INTERACTION_MESSAGE_COMPONENT,
    INTERACTION_MODAL_SUBMIT,
    InteractionBuilder,
    InteractionResult,
)
from .models import Member, Message, User
from .recording import CallRecord, Recorder
from .world import World

T = TypeVar("T")

#: how many times its ``timeout`` :meth:`FakeDiscord.wait_until` waits at most for a bot that
#: keeps making REST calls without meeting the condition
PATIENCE = 6


class Driving(World):
    """What a test does with the fake Discord besides building its world: wait for the bot and
    act as its members. :class:`~tests.fakediscord.server.FakeDiscord` sets up what is
    declared here."""

    recorder: Recorder
    answered: int
    _change: asyncio.Event
    builder: InteractionBuilder
    interactions: dict[int, InteractionResult]
    interactions_by_token: dict[str, InteractionResult]

    def notify(self) -> None:
        """Wakes every :meth:`wait_until` (called on each REST call, gateway frame and answer)."""
        self._change.set()
        self._change = asyncio.Event()

    def progress(self) -> tuple[int, int]:
        """What the bot has done: REST calls answered, messages to the voice server."""
        return self.answered, len(getattr(self.voice_server, "bot_messages", ()))

    async def wait_until(
        self, predicate: Callable[[], T | None], timeout: float = 5.0, message: str | None = None
    ) -> T:
        """Waits until ``predicate()`` is truthy and returns its value.

        The predicate is re-checked after every change the fake sees and at
        least every 20 ms (so it may also look at the bot's own state).
        ``timeout`` is how long the bot may go without a REST call answered
        (or a message to the voice server, when one is attached): a bot still
        at work (a loaded machine runs it slower) is waited for, up to
        :data:`PATIENCE` times ``timeout`` in all; a stuck one fails as soon.
        """
        loop = asyncio.get_running_loop()
        started = loop.time()
        deadline = started + timeout
        ceiling = started + PATIENCE * timeout
        progress = self.progress()
        while True:
            change = self._change
            value = predicate()
            if value:
                return value
            if self.progress() != progress:
                progress = self.progress()
                deadline = min(ceiling, loop.time() + timeout)
            remaining = deadline - loop.time()
            if remaining <= 0:
                raise TimeoutError(
                    message or f"condition not met ({timeout} s without the bot doing anything)"
                )
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(change.wait(), min(remaining, 0.02))

    async def wait_for_session(self, timeout: float = 5.0) -> GatewaySession:
        """Waits until a bot has IDENTIFYed (or RESUMEd) and is connected; returns the newest session."""

        def connected() -> GatewaySession | None:
            sessions = [s for s in self.gateway.sessions.values() if s.connected]
            return max(sessions, key=lambda s: s.identified_at) if sessions else None

        return await self.wait_until(connected, timeout, "no bot connected to the fake gateway")

    async def wait_for_call(
        self,
        method: str | None = None,
        route: str | None = None,
        *,
        path: str | None = None,
        status: int | None = None,
        count: int = 1,
        timeout: float = 5.0,
    ) -> CallRecord:
        """Waits for the ``count``-th matching REST call to be answered and returns it."""

        def found() -> CallRecord | None:
            records = [r for r in self.calls(method, route, path=path, status=status) if r.status]
            return records[count - 1] if len(records) >= count else None

        return await self.wait_until(
            found,
            timeout,
            f"no {count} call(s) {method} {route or path}; calls so far:\n{self.recorder.describe()}",
        )

    async def wait_for_message(
        self,
        channel_id: int | None = None,
        *,
        dm_user_id: int | None = None,
        where: Callable[[Message], bool] | None = None,
        count: int = 1,
        timeout: float = 5.0,
    ) -> Message:
        """Waits for the ``count``-th message (matching ``where``) in a channel or the bot's DMs with a user."""

        def found() -> Message | None:
            messages = [
                m
                for m in self.messages(channel_id, dm_user_id=dm_user_id)
                if where is None or where(m)
            ]
            return messages[count - 1] if len(messages) >= count else None

        return await self.wait_until(
            found, timeout, f"no message in channel {channel_id} / DM {dm_user_id}"
        )

    def calls(
        self,
        method: str | None = None,
        route: str | None = None,
        *,
        path: str | None = None,
        status: int | None = None,
        since: float | None = None,
    ) -> list[CallRecord]:
        """REST calls so far matching the filters (see :meth:`Recorder.find`)."""
        return self.recorder.find(method, route, path=path, status=status, since=since)

    def last_call(
        self, method: str | None = None, route: str | None = None, *, path: str | None = None
    ) -> CallRecord:
        """The latest matching REST call (AssertionError listing all calls if there is none)."""
        found = self.calls(method, route, path=path)
        if not found:
            raise AssertionError(
                f"no call {method} {route or path}; calls:\n{self.recorder.describe()}"
            )
        return found[-1]

    async def send_interaction(
        self,
        payload: dict[str, Any],
        *,
        wait: bool = True,
        timeout: float = 5.0,
        triggered_by: InteractionResult | None = None,
    ) -> InteractionResult:
        """Dispatches a ready-made INTERACTION_CREATE payload and (by default) waits until the bot
        acknowledged it, or until Discord refused its callback (``result.attempts`` tells why).
        ``triggered_by`` is, for a modal submission, the interaction that opened the modal."""
        result = InteractionResult(self, payload)
        result.triggered_by = triggered_by
        self.interactions[result.id] = result
        self.interactions_by_token[result.token] = result
        self._deliver(result)
        if wait:
            await result.wait_answered(timeout)
        return result

    def open_interaction(self, payload: dict[str, Any]) -> InteractionResult:
        """Registers an interaction (its id and token) without delivering it to any bot, for tests
        that answer it by hand through the REST API."""
        result = InteractionResult(self, payload)
        self.interactions[result.id] = result
        self.interactions_by_token[result.token] = result
        return result

    def _deliver(self, result: InteractionResult) -> None:
        session = self.gateway.interaction_session(result.guild_id)
        if session is None:
            raise RuntimeError("no bot session on the fake gateway to deliver the interaction to")
        self.gateway.dispatch(
            "INTERACTION_CREATE", result.payload, guild_id=result.guild_id, only=session
        )

    async def resend(
        self, result: InteractionResult, *, wait: bool = False, timeout: float = 1.0
    ) -> InteractionResult:
        """Delivers the same interaction (same id and token) again, as a flaky network might."""
        result.deliveries += 1
        attempts_before = len(result.attempts)
        self._deliver(result)
        if wait:
            await self.wait_until(
                lambda: len(result.attempts) > attempts_before,
                timeout,
                "the bot did not answer the re-sent interaction",
            )
        return result

    async def slash(
        self,
        guild_id: int | None,
        user_id: int,
        command: str,
        options: Mapping[str, Any] | None = None,
        *,
        channel_id: int | None = None,
        locale: str | None = None,
        guild_locale: str | None = None,
        interaction_id: int | None = None,
        wait: bool = True,
        timeout: float = 5.0,
    ) -> InteractionResult:
        """A member runs a slash command, e.g. ``await fake.slash(g, u, "mafia new", {"cities": 2})``.

        ``command`` is the command name followed by the subcommand group and
        subcommand; ``options`` maps option names to values (``User``/
        ``Member`` or ids for users, ``Channel``, ``Role``, ``Upload`` for
        attachments). ``guild_id`` None runs it in the bot's DMs. Returns once
        the bot acknowledged, or once its callback was refused (unless ``wait``
        is False).
        """
        payload = self.builder.envelope(
            INTERACTION_APPLICATION_COMMAND,
            guild_id=guild_id,
            channel_id=channel_id,
            user_id=user_id,
            locale=locale,
            guild_locale=guild_locale,
            interaction_id=interaction_id,
        )
        payload["data"] = self.builder.command_data(payload, command, options or {})
        return await self.send_interaction(payload, wait=wait, timeout=timeout)

    async def autocomplete(
        self,
        guild_id: int | None,
        user_id: int,
        command: str,
        focused: str,
        value: Any,
        options: Mapping[str, Any] | None = None,
        *,
        channel_id: int | None = None,
        locale: str | None = None,
        guild_locale: str | None = None,
        wait: bool = True,
        timeout: float = 5.0,
    ) -> InteractionResult:
        """A member types ``value`` into the autocompleted option ``focused``; ``result.choices`` has the answer."""
        payload = self.builder.envelope(
            INTERACTION_AUTOCOMPLETE,
            guild_id=guild_id,
            channel_id=channel_id,
            user_id=user_id,
            locale=locale,
            guild_locale=guild_locale,
            interaction_id=None,
        )
        payload["data"] = self.builder.command_data(
            payload, command, {**(options or {}), focused: value}, focused=focused
        )
        return await self.send_interaction(payload, wait=wait, timeout=timeout)

    async def context_menu(
        self,
        guild_id: int | None,
        user_id: int,
        name: str,
        target: User | Member | Message,
        *,
        channel_id: int | None = None,
        locale: str | None = None,
        wait: bool = True,
        timeout: float = 5.0,
    ) -> InteractionResult:
        """A member uses a user (target ``User``/``Member``) or message (target ``Message``) context menu."""
        payload = self.builder.envelope(
            INTERACTION_APPLICATION_COMMAND,
            guild_id=guild_id,
            channel_id=channel_id,
            user_id=user_id,
            locale=locale,
            guild_locale=None,
            interaction_id=None,
        )
        payload["data"] = self.builder.context_menu_data(payload, name, target)
        return await self.send_interaction(payload, wait=wait, timeout=timeout)

    async def click(
        self,
        message: Message | int,
        custom_id: str,
        user_id: int,
        *,
        locale: str | None = None,
        wait: bool = True,
        timeout: float = 5.0,
    ) -> InteractionResult:
        """A user clicks the button ``custom_id`` on a message the bot posted."""
        return await self._component(message, custom_id, user_id, None, locale, wait, timeout)

    async def select(
        self,
        message: Message | int,
        custom_id: str,
        values: Sequence[Any],
        user_id: int,
        *,
        locale: str | None = None,
        wait: bool = True,
        timeout: float = 5.0,
    ) -> InteractionResult:
        """A user picks ``values`` in the select menu ``custom_id`` (option values, or users/roles/channels)."""
        return await self._component(
            message, custom_id, user_id, list(values), locale, wait, timeout
        )

    async def _component(
        self,
        message: Message | int,
        custom_id: str,
        user_id: int,
        values: list[Any] | None,
        locale: str | None,
        wait: bool,
        timeout: float,
    ) -> InteractionResult:
        target = self.message(message) if isinstance(message, int) else message
        if target.deleted:
            raise ValueError(f"message {target.id} was deleted")
        payload = self.builder.envelope(
            INTERACTION_MESSAGE_COMPONENT,
            guild_id=target.guild_id,
            channel_id=target.channel_id if target.guild_id is not None else None,
            user_id=user_id,
            locale=locale,
            guild_locale=None,
            interaction_id=None,
        )
        payload["message"] = self.message_payload(target)
        payload["data"] = self.builder.component_data(payload, target, custom_id, values)
        return await self.send_interaction(payload, wait=wait, timeout=timeout)

    async def submit_modal(
        self,
        source: InteractionResult,
        values: Mapping[str, str | Sequence[str]],
        *,
        user_id: int | None = None,
        locale: str | None = None,
        wait: bool = True,
        timeout: float = 5.0,
    ) -> InteractionResult:
        """Submits the modal the bot opened in answer to ``source``, filling inputs by custom id."""
        modal = source.modal
        if modal is None:
            raise ValueError(
                f"interaction {source.id} was not answered with a modal ({source.describe()})"
            )
        payload = self.builder.envelope(
            INTERACTION_MODAL_SUBMIT,
            guild_id=source.guild_id,
            channel_id=source.channel_id if source.guild_id is not None else None,
            user_id=user_id or source.user_id,
            locale=locale,
            guild_locale=None,
            interaction_id=None,
        )
        if source.source_message_id is not None:
            payload["message"] = self.message_payload(self.message(source.source_message_id))
        payload["data"] = self.builder.modal_data(modal, values)
        return await self.send_interaction(payload, wait=wait, timeout=timeout, triggered_by=source)
