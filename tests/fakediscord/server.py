"""``FakeDiscord``: the HTTP server (REST under ``/api/v10``, the gateway, a CDN) and its test API."""

from __future__ import annotations

import asyncio
import json
import math
import time
from typing import Any

from aiohttp import BodyPartReader, hdrs, web

from .driving import PATIENCE, Driving
from .errors import DiscordError, invalid_form_body
from .faults import Fault, FaultInjector, compile_path
from .gateway import Gateway
from .interactions import (
    InteractionBuilder,
    InteractionResult,
)
from .invalid import InvalidRequests
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

__all__ = ["API_PREFIX", "MAX_BODY", "PATIENCE", "RESPONSE_FINDINGS", "FakeDiscord"]

_DEFAULT_SPEC: Any = object()
RESPONSE_FINDINGS: list[str] = []
"""Every answer of any fake in this process that disagreed with the spec's response schema, as
``"METHOD path -> status: violation"``: a bug of the fake (the pytest plugin fails the test)."""

API_PREFIX = "/api/v10"
MAX_BODY = 256 * 1024 * 1024


class FakeDiscord(Driving):
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
        self._register_routes()
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

    def _register_routes(self) -> None:
        """The REST routes (by area) and the CDN's."""
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

    # recording and faults --------------------------------------------------------------

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
        refused = await self._faults_for(record, route)
        if refused is not None:
            return refused
        headers: dict[str, str] = {}
        if rate_limited:
            refused = self._rate_limit(record, route, headers)
            if refused is not None:
                return refused
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
        return await self._answer(route, record, headers)

    async def _faults_for(
        self, record: CallRecord, route: Route
    ) -> tuple[int, Any, dict[str, str]] | None:
        """Apply the faults the test injected for this call: delays, a hang, or a failure (its
        answer; None to serve the call)."""
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
        return None

    def _rate_limit(
        self, record: CallRecord, route: Route, headers: dict[str, str]
    ) -> tuple[int, Any, dict[str, str]] | None:
        """Count the call against the global limit and its route's bucket (their headers go
        into ``headers``); a 429 answer when over either."""
        if route.auth:
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
        bucket_headers, over = self.rate_limits.hit(f"{record.method} {route.template}", major)
        headers.update(bucket_headers)
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
        return None

    async def _answer(
        self, route: Route, record: CallRecord, headers: dict[str, str]
    ) -> tuple[int, Any, dict[str, str]]:
        """Serve the call with its route's handler."""
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
