"""``FakeDiscord``: the HTTP server (REST under ``/api/v10``, the gateway, a CDN) and its test API."""

from __future__ import annotations

import asyncio
import contextlib
import json
import math
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

from aiohttp import BodyPartReader, hdrs, web

from .errors import DiscordError, invalid_form_body
from .faults import Fault, FaultInjector, compile_path
from .gateway import Gateway, GatewaySession
from .interactions import (
    INTERACTION_APPLICATION_COMMAND,
    INTERACTION_AUTOCOMPLETE,
    INTERACTION_MESSAGE_COMPONENT,
    INTERACTION_MODAL_SUBMIT,
    InteractionBuilder,
    InteractionResult,
)
from .invalid import InvalidRequests
from .models import Member, Message, User
from .ratelimits import GlobalLimit, RateLimits
from .recording import CallRecord, MultipartPart, Recorder, RecordFile, record_entry
from .rest_app import AppRoutes
from .rest_channels import ChannelRoutes
from .rest_events import EventRoutes
from .rest_guilds import GuildRoutes
from .rest_interactions import InteractionRoutes
from .routing import RestRequest, RestResponse, Route, Router
from .spec import OpenApiSpec, Operation, Violation, default_spec, errors_tree
from .state import DiscordState
from .world import World

T = TypeVar("T")

#: how many times its ``timeout`` :meth:`FakeDiscord.wait_until` waits at most for a bot that
#: keeps making REST calls without meeting the condition
PATIENCE = 6

_DEFAULT_SPEC: Any = object()
RESPONSE_FINDINGS: list[str] = []
"""Every answer of any fake in this process that disagreed with the spec's response schema, as
``"METHOD path -> status: violation"``: a bug of the fake (the pytest plugin fails the test)."""

API_PREFIX = "/api/v10"
MAX_BODY = 256 * 1024 * 1024


class FakeDiscord(World):
    """A local Discord for end-to-end tests: REST, gateway and CDN on 127.0.0.1.

    Build the world with the :class:`~tests.fakediscord.world.World` methods
    (``create_guild``, ``add_member``, ``create_channel``...), start it, point
    discord.py at :attr:`api_base` and :attr:`gateway_url`, then drive the bot
    with :meth:`slash`, :meth:`click`, :meth:`select`, :meth:`autocomplete`,
    :meth:`submit_modal` and read what it did with :meth:`calls` and
    :meth:`messages`.
    """

    def __init__(
        self,
        *,
        token: str = "fake-bot-token",
        bot_name: str = "Prokurator",
        heartbeat_interval_ms: int = 41250,
        interaction_ack_deadline: float = 3.0,
        rate_limit: int = 50,
        rate_limit_window: float = 1.0,
        openapi: OpenApiSpec | None = _DEFAULT_SPEC,
    ) -> None:
        self.token = token
        """The bot token the fake accepts (REST ``Authorization: Bot <token>`` and IDENTIFY)."""
        super().__init__(
            DiscordState(bot_name=bot_name, application_name=bot_name),
            Gateway(self, heartbeat_interval_ms=heartbeat_interval_ms),
        )
        self.recorder = Recorder()
        self.invalid = InvalidRequests()
        """The invalid requests answered (401, 403, 429 not shared), per 10 minutes of its clock."""
        self.faults = FaultInjector()
        self.rate_limits = RateLimits(rate_limit, rate_limit_window)
        self.global_limit = GlobalLimit()
        """Discord's global limit: 50 requests a second, interaction endpoints aside."""
        self.recommended_shards = 1
        """The shard count ``GET /gateway/bot`` recommends (used by AutoShardedClient)."""
        self.interaction_ack_deadline = interaction_ack_deadline
        """Seconds the bot has to acknowledge an interaction (Discord: 3)."""
        self.interaction_token_lifetime = 15 * 60.0
        """Seconds an interaction's token takes followups and edits (Discord: 15 minutes)."""
        self.interactions: dict[int, InteractionResult] = {}
        self.interactions_by_token: dict[str, InteractionResult] = {}
        self.builder = InteractionBuilder(self)
        self.router = Router()
        self.guild_routes = GuildRoutes(self)
        self.channel_routes = ChannelRoutes(self)
        self.event_routes = EventRoutes(self)
        """Guild scheduled events (``mark_interested`` plays a member's "Interested")."""
        for routes in (
            AppRoutes(self),
            self.guild_routes,
            self.channel_routes,
            self.event_routes,
            InteractionRoutes(self),
        ):
            routes.register(self.router)
        self._cdn_router = Router()
        self._cdn_router.add(
            "GET",
            "/attachments/{channel_id}/{attachment_id}/{filename}",
            self._serve_attachment,
            auth=False,
        )
        self._runner: web.AppRunner | None = None
        self._change = asyncio.Event()
        self.answered = 0
        """REST calls answered so far: the bot's progress, as :meth:`wait_until` measures it."""
        self.port = 0
        self.spec: OpenApiSpec | None = default_spec() if openapi is _DEFAULT_SPEC else openapi
        """Discord's OpenAPI spec every request is checked against (None: the schema check is off)."""
        self.check_responses = True
        """Whether the fake's answers are checked against the spec's response schemas too."""
        self.record_file = RecordFile.from_environment()
        """Where ``$FAKEDISCORD_RECORD`` asks every served call to be appended."""

    # lifecycle ----------------------------------------------------------------------

    async def start(self, host: str = "127.0.0.1", port: int = 0) -> FakeDiscord:
        """Starts serving on ``host`` (a free port unless given)."""
        app = web.Application(client_max_size=MAX_BODY)
        app.router.add_route("GET", "/gateway", self.gateway.handle)
        app.router.add_route("GET", "/attachments/{tail:.*}", self._handle_cdn)
        app.router.add_route("*", API_PREFIX + "/{tail:.*}", self._handle_api)
        runner = web.AppRunner(app, access_log=None, shutdown_timeout=1.0)
        await runner.setup()
        site = web.TCPSite(runner, host, port)
        await site.start()
        self._runner = runner
        self.port = int(runner.addresses[0][1])
        self.base_url = f"http://{host}:{self.port}"
        return self

    async def close(self) -> None:
        """Releases held calls, closes gateway connections and stops the server."""
        self.faults.clear()
        await self.gateway.close()
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def __aenter__(self) -> FakeDiscord:
        return await self.start()

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    @property
    def api_base(self) -> str:
        """``http://127.0.0.1:PORT/api/v10``: the value for ``discord.http.Route.BASE``."""
        return self.base_url + API_PREFIX

    # change notification and waiting ---------------------------------------------------

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

    # recording and faults --------------------------------------------------------------

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

    def fail(
        self,
        method: str | None,
        path_regex: str,
        status: int = 500,
        count: int | None = 1,
        retry_after: float = 0.05,
        global_: bool = False,
        *,
        code: int = 0,
        message: str | None = None,
    ) -> Fault:
        """Makes the next ``count`` matching calls (None: all) fail with ``status``.

        ``path_regex`` must match the whole path after ``/api/v10`` or the
        route template. A 429 carries Discord's body (``retry_after``,
        ``global``) and headers (``Retry-After``, ``X-RateLimit-*``,
        ``X-RateLimit-Global`` and ``X-RateLimit-Scope: global`` when
        ``global_``, and ``Via`` which discord.py needs to trust it). Other
        statuses answer ``{"code": code, "message": message}``.
        """
        return self.faults.add(
            Fault(
                kind="fail",
                method=method.upper() if method else None,
                pattern=compile_path(path_regex),
                count=count,
                status=status,
                code=code,
                message=message,
                retry_after=retry_after,
                global_=global_,
            )
        )

    def delay(
        self, method: str | None, path_regex: str, seconds: float, count: int | None = None
    ) -> Fault:
        """Adds ``seconds`` of latency to matching calls."""
        return self.faults.add(
            Fault(
                kind="delay",
                method=method.upper() if method else None,
                pattern=compile_path(path_regex),
                count=count,
                seconds=seconds,
            )
        )

    def hang(self, method: str | None, path_regex: str, count: int | None = 1) -> Fault:
        """Holds matching calls without answering until ``fault.release()`` or the fake closes."""
        return self.faults.add(
            Fault(
                kind="hang",
                method=method.upper() if method else None,
                pattern=compile_path(path_regex),
                count=count,
            )
        )

    def forget_nonces(self) -> None:
        """Discord's memory of enforced nonces runs out ("a few minutes"), as during a long outage
        of the bot: a message posted again with the same nonce is then a second message."""
        self.channel_routes.enforced_nonces.clear()

    def clear_faults(self) -> None:
        """Removes every fault (held calls are released)."""
        self.faults.clear()

    # gateway control -------------------------------------------------------------------

    async def drop_gateway(self, code: int = 4000, resumable: bool = True) -> None:
        """Closes the bot's gateway connection(s) from the server side (see :meth:`Gateway.drop`)."""
        await self.gateway.drop(code=code, resumable=resumable)

    def request_reconnect(self) -> None:
        """Sends op 7 RECONNECT: the client reconnects and RESUMEs."""
        self.gateway.request_reconnect()

    # interactions ----------------------------------------------------------------------

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

    # HTTP handling ---------------------------------------------------------------------

    async def _handle_api(self, request: web.Request) -> web.StreamResponse:
        path = "/" + request.match_info["tail"]
        return await self._handle(request, path, self.router, rate_limited=True)

    async def _handle_cdn(self, request: web.Request) -> web.StreamResponse:
        return await self._handle(request, request.path, self._cdn_router, rate_limited=False)

    async def _handle(
        self, request: web.Request, path: str, router: Router, *, rate_limited: bool
    ) -> web.StreamResponse:
        started = time.monotonic()
        route, params, other_method = router.resolve(request.method, path)
        record = CallRecord(
            method=request.method,
            path=path,
            route=route.template if route is not None else path,
            params=params,
            query=dict(request.query),
            headers=dict(request.headers),
            json=None,
            parts=[],
            time=started,
        )
        self.recorder.add(record)
        headers: dict[str, str] = {"Via": "1.1 google"}
        operation: list[Operation] = []
        try:
            record.json, record.parts = await self._read_body(request)
            self.notify()
            status, body, extra = await self._serve(
                request, record, route, other_method, rate_limited, operation
            )
        except DiscordError as error:
            status, body, extra = error.status, error.body(), {}
        headers.update(extra)
        if (
            operation
            and self.spec is not None
            and self.check_responses
            and (record.fault is None or record.fault.startswith("delay"))
        ):
            record.response_violations = self.spec.check_response(
                operation[0], status, body if not isinstance(body, bytes) else None
            )
            RESPONSE_FINDINGS.extend(
                f"{record.method} {record.path} -> {status}: {v}"
                for v in record.response_violations
            )
        record.status = status
        record.response = body if not isinstance(body, bytes) else None
        record.duration = time.monotonic() - started
        if isinstance(body, bytes):
            raw = body
        elif body is None:
            raw = b""
        else:
            raw = json.dumps(body).encode()
            headers["Content-Type"] = "application/json"
        record.response_headers = dict(headers)
        if rate_limited:
            self.invalid.note(status, headers, f"{record.method} {record.route} -> {status}")
        if self.record_file is not None and rate_limited:
            self.record_file.append(record_entry(record), record.files)
        self.answered += 1
        self.notify()
        return web.Response(status=status, body=raw or None, headers=headers)

    async def _read_body(self, request: web.Request) -> tuple[Any, list[MultipartPart]]:
        content_type = request.headers.get(hdrs.CONTENT_TYPE, "")
        if content_type.startswith("multipart/"):
            parts: list[MultipartPart] = []
            reader = await request.multipart()
            while True:
                part = await reader.next()
                if part is None:
                    break
                if not isinstance(part, BodyPartReader):
                    continue
                data = await part.read(decode=False)
                parts.append(
                    MultipartPart(
                        name=part.name or "",
                        filename=part.filename,
                        content_type=part.headers.get(hdrs.CONTENT_TYPE),
                        data=bytes(data),
                    )
                )
            payload = next((p for p in parts if p.name == "payload_json"), None)
            try:
                body = json.loads(payload.data) if payload is not None else None
            except ValueError:
                raise DiscordError(400, 50109, "The request body contains invalid JSON.") from None
            return body, parts
        raw = await request.read()
        if not raw:
            return None, []
        if content_type.startswith("application/json"):
            try:
                return json.loads(raw), []
            except ValueError:
                raise DiscordError(400, 50109, "The request body contains invalid JSON.") from None
        return None, []

    async def _serve(
        self,
        request: web.Request,
        record: CallRecord,
        route: Route | None,
        other_method: bool,
        rate_limited: bool,
        operation_found: list[Operation],
    ) -> tuple[int, Any, dict[str, str]]:
        # ``rate_limited`` marks the API (the CDN is neither rate limited nor in the spec).
        spec = self.spec if rate_limited else None
        found = spec.find(record.method, record.path) if spec is not None else None
        if found is not None and found[0] is not None:
            operation_found.append(found[0])
            record.spec_route = found[0].template
        if route is None:
            if other_method:
                raise DiscordError(405, 0, "405: Method Not Allowed")
            raise DiscordError(404, 0, "404: Not Found")
        if spec is not None and not operation_found:
            # The fake serves it, Discord does not: answer as Discord would, and say so.
            record.violations.append(
                Violation(
                    "route",
                    (),
                    "route",
                    "UNKNOWN_ROUTE",
                    f"{record.method} {route.template} is not in the spec",
                )
            )
            raise DiscordError(404, 0, "404: Not Found")
        if route.auth and request.headers.get(hdrs.AUTHORIZATION) != f"Bot {self.token}":
            raise DiscordError(401, 0, "401: Unauthorized")
        delays, blocking = self.faults.take(record.method, record.path, route.template)
        for fault in delays:
            record.fault = f"delay {fault.seconds}"
            await asyncio.sleep(fault.seconds)
        if blocking is not None and blocking.kind == "hang":
            record.fault = "hang"
            self.notify()
            await blocking.wait_released()
        elif blocking is not None:
            record.fault = f"fail {blocking.status}"
            return self._fault_answer(blocking, route)
        headers: dict[str, str] = {}
        if rate_limited and route.auth:
            over_global = self.global_limit.hit(route.template)
            if over_global is not None:  # not a fault: a refusal the bot brought on itself
                body = {
                    "message": "You are being rate limited.",
                    "code": 0,
                    "retry_after": round(over_global, 3),
                    "global": True,
                }
                return (
                    429,
                    body,
                    {
                        "Retry-After": str(max(1, math.ceil(over_global))),
                        "X-RateLimit-Global": "true",
                        "X-RateLimit-Scope": "global",
                    },
                )
        if rate_limited:
            major = "+".join(
                record.params[key]
                for key in (
                    "channel_id",
                    "guild_id",
                    "application_id",
                    "interaction_token",
                    "interaction_id",
                )
                if key in record.params
            )
            headers, over = self.rate_limits.hit(f"{record.method} {route.template}", major)
            if over is not None:
                record.fault = "rate limited"
                body = {
                    "message": "You are being rate limited.",
                    "code": 0,
                    "retry_after": round(over, 3),
                    "global": False,
                }
                headers.update(
                    {"Retry-After": str(max(1, math.ceil(over))), "X-RateLimit-Scope": "user"}
                )
                return 429, body, headers
        if spec is not None:
            checked = spec.check_request(
                record.method,
                record.path,
                record.query,
                record.json,
                multipart=bool(record.parts),
                part_names=[part.name for part in record.parts],
                found=found,
            )
            if checked.violations:
                record.violations = checked.violations
                error = invalid_form_body(errors_tree(checked.violations))
                return error.status, error.body(), headers
        rest_request = RestRequest(
            method=record.method,
            path=record.path,
            route=route.template,
            params=record.params,
            query=record.query,
            headers=record.headers,
            json=record.json,
            parts=record.parts,
            record=record,
        )
        answer = await route.handler(rest_request)
        if isinstance(answer, RestResponse):
            headers.update(answer.headers)
            return answer.status, answer.body, headers
        if answer is None:
            return 204, None, headers
        return 200, answer, headers

    def _fault_answer(self, fault: Fault, route: Route) -> tuple[int, Any, dict[str, str]]:
        if fault.status != 429:
            message = fault.message or f"{fault.status}: {_REASONS.get(fault.status, 'Error')}"
            return fault.status, {"message": message, "code": fault.code}, {}
        body: dict[str, Any] = {
            "message": fault.message or "You are being rate limited.",
            "retry_after": fault.retry_after,
            "global": fault.global_,
        }
        if fault.code:
            body["code"] = fault.code
        headers = {"Retry-After": str(max(1, math.ceil(fault.retry_after)))}
        if fault.global_:
            headers.update({"X-RateLimit-Global": "true", "X-RateLimit-Scope": "global"})
        else:
            headers.update(
                {
                    "X-RateLimit-Limit": str(self.rate_limits.limit),
                    "X-RateLimit-Remaining": "0",
                    "X-RateLimit-Reset": f"{time.time() + fault.retry_after:.3f}",
                    "X-RateLimit-Reset-After": f"{fault.retry_after:.3f}",
                    "X-RateLimit-Bucket": self.rate_limits.bucket_hash(route.template),
                    "X-RateLimit-Scope": "user",
                }
            )
        return 429, body, headers

    async def _serve_attachment(self, request: RestRequest) -> RestResponse:
        attachment = self.state.attachments.get(request.snowflake("attachment_id"))
        if attachment is None or attachment.filename != request.params["filename"]:
            raise DiscordError(404, 0, "404: Not Found")
        return RestResponse(
            status=200,
            body=attachment.data,
            headers={"Content-Type": attachment.content_type or "application/octet-stream"},
        )


_REASONS = {
    400: "Bad Request",
    401: "Unauthorized",
    403: "Forbidden",
    404: "Not Found",
    500: "Internal Server Error",
    502: "Bad Gateway",
    503: "Service Unavailable",
    504: "Gateway Timeout",
}
