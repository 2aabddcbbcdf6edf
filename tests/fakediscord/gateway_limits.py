"""What the fake gateway holds a client to beyond the 120 sends a minute (``gateway.py``): the
identify concurrency of ``max_concurrency`` buckets, and Request Guild Members (op 8) — its
100 ``user_ids`` and the per-guild rate limit of the all-member form, answered with a
``RATE_LIMITED`` dispatch instead of member chunks.

Discord's rules, as this module reads them:

- **Identify** (topics/gateway.mdx, Session Start Limit and Sharding for Large Bots): a shard's
  bucket is ``shard_id % max_concurrency``, and each bucket may IDENTIFY once every 5 seconds,
  across every process of the bot. An IDENTIFY that comes too soon gets an Invalid Session
  (op 9, ``d: false``), as ``../shared/DISCORD_FACTS.md`` says; the client identifies again later.
- **Request Guild Members** (events/gateway-events.mdx): ``user_ids`` names up to 100 members;
  a request for *all* of a guild's members (``query: ""`` and ``limit: 0``, no ``user_ids``)
  is rate limited per guild; over the limit Discord dispatches ``RATE_LIMITED`` with ``opcode``
  8, ``retry_after`` (seconds) and ``meta`` (``guild_id``, the request's ``nonce``) and sends no
  chunks. Requests by ``user_ids`` or by a name prefix are not under that limit, only under the
  connection's 120 sends. The size of the all-member limit is not documented: one request per
  guild every :data:`ALL_MEMBERS_WINDOW` seconds is the fake's choice
  (``fake.gateway.limits.all_members_window``).

A request with more than 100 ``user_ids`` is not answered here and is logged (``log`` kind
``bad-member-request``): Discord does not document what it does with one, and a client must not
send it.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

IDENTIFY_INTERVAL = 5.0
"""Seconds between two IDENTIFYs of one ``max_concurrency`` bucket (Discord: 5)."""
MAX_CONCURRENCY = 1
"""``session_start_limit.max_concurrency`` of ``GET /gateway/bot`` (Discord: 1 for most bots)."""
ALL_MEMBERS_WINDOW = 30.0
"""Seconds between two all-member requests for one guild (the fake's choice, see above)."""
MAX_USER_IDS = 100
"""``user_ids`` one Request Guild Members may name (Discord: 100)."""
CHUNK_SIZE = 1000
"""Members per GUILD_MEMBERS_CHUNK (Discord: up to 1,000)."""


@dataclass
class LimitEvent:
    """Something the limits refused: an identify too soon, a member request rate limited..."""

    kind: str
    detail: str
    time: float


@dataclass
class GatewayLimits:
    """The gateway's limits besides the send limit, with a clock a test may replace."""

    clock: Callable[[], float] = time.monotonic
    """The limits' time (seconds, monotonic), with :attr:`offset`: :meth:`now`."""
    offset: float = 0.0
    """Seconds :meth:`pass_time` added to the clock."""
    max_concurrency: int = MAX_CONCURRENCY
    identify_interval: float = IDENTIFY_INTERVAL
    all_members_window: float = ALL_MEMBERS_WINDOW
    identifies: list[tuple[float, int]] = field(default_factory=list)
    """Each IDENTIFY admitted: (time, bucket)."""
    events: list[LimitEvent] = field(default_factory=list)
    """Every refusal, oldest first."""
    _bucket_last: dict[int, float] = field(default_factory=dict)
    _all_members_last: dict[int, float] = field(default_factory=dict)

    def now(self) -> float:
        """What "now" is for the limits and the send window."""
        return self.clock() + self.offset

    def pass_time(self, seconds: float) -> None:
        """Let ``seconds`` pass for the limits at once (a test's restart that took that long)."""
        self.offset += seconds

    def bucket(self, shard: tuple[int, int] | None) -> int:
        """The identify bucket of a shard (no shard: shard 0)."""
        shard_id = shard[0] if shard else 0
        return shard_id % max(1, self.max_concurrency)

    def admit_identify(self, shard: tuple[int, int] | None) -> bool:
        """Whether an IDENTIFY of this shard may start a session now (and count it if so)."""
        now = self.now()
        bucket = self.bucket(shard)
        last = self._bucket_last.get(bucket)
        if last is not None and now - last < self.identify_interval:
            self.events.append(
                LimitEvent("identify-too-soon", f"bucket {bucket}, {now - last:.3f} s", now)
            )
            return False
        self._bucket_last[bucket] = now
        self.identifies.append((now, bucket))
        return True

    def member_request_retry_after(self, guild_id: int, data: dict[str, Any]) -> float | None:
        """Seconds to wait if this member request is over the all-member limit, else None (and
        an all-member request is counted)."""
        if not is_all_members(data):
            return None
        now = self.now()
        last = self._all_members_last.get(guild_id)
        if last is not None and now - last < self.all_members_window:
            retry_after = self.all_members_window - (now - last)
            self.events.append(LimitEvent("members-rate-limited", f"guild {guild_id}", now))
            return retry_after
        self._all_members_last[guild_id] = now
        return None

    def count(self, kind: str) -> int:
        """Refusals of this kind so far (``identify-too-soon``, ``members-rate-limited``...)."""
        return sum(1 for event in self.events if event.kind == kind)

    @property
    def identifies_too_soon(self) -> int:
        """IDENTIFYs answered with Invalid Session because their bucket identified < 5 s before."""
        return self.count("identify-too-soon")

    @property
    def members_rate_limited(self) -> int:
        """Member requests answered with RATE_LIMITED."""
        return self.count("members-rate-limited")

    @property
    def bad_member_requests(self) -> int:
        """Member requests refused as malformed (more than 100 ``user_ids``, no guild...)."""
        return self.count("bad-member-request")


def is_all_members(data: dict[str, Any]) -> bool:
    """Whether a Request Guild Members asks for every member: ``query`` "" and ``limit`` 0,
    without ``user_ids``."""
    return data.get("user_ids") is None and data.get("query") == "" and not data.get("limit")


def rate_limited_payload(guild_id: int, data: dict[str, Any], retry_after: float) -> dict[str, Any]:
    """The RATE_LIMITED dispatch's data for a member request refused for ``retry_after`` s."""
    meta: dict[str, Any] = {"guild_id": str(guild_id)}
    if data.get("nonce") is not None:
        meta["nonce"] = data["nonce"]
    return {"opcode": 8, "retry_after": round(retry_after, 3), "meta": meta}


def wanted_ids(data: dict[str, Any]) -> list[int] | None:
    """The ``user_ids`` a request names (one id or a list), None without any; raises ValueError
    when one is not a snowflake."""
    user_ids = data.get("user_ids")
    if user_ids is None:
        return None
    return [int(str(uid)) for uid in (user_ids if isinstance(user_ids, list) else [user_ids])]


def member_chunks(members: dict[int, Any], data: dict[str, Any]) -> list[dict[str, Any]]:
    """The GUILD_MEMBERS_CHUNK payloads (``guild_id`` left to the caller) answering a request
    for ``members`` (a guild's: id → member with ``to_payload``, ``user``, ``nick``)."""
    wanted = wanted_ids(data)
    not_found: list[str] = []
    if wanted is not None:
        found = [members[uid] for uid in wanted if uid in members]
        not_found = [str(uid) for uid in wanted if uid not in members]
    else:
        prefix = str(data.get("query") or "").lower()
        found = [
            member
            for member in members.values()
            if not prefix
            or member.user.username.lower().startswith(prefix)
            or (member.nick or "").lower().startswith(prefix)
            or (member.user.global_name or "").lower().startswith(prefix)
        ]
        limit = int(data.get("limit") or 0)
        if limit:
            found = found[:limit]
    parts = [found[i : i + CHUNK_SIZE] for i in range(0, len(found), CHUNK_SIZE)] or [[]]
    payloads = []
    for index, part in enumerate(parts):
        payload: dict[str, Any] = {
            "members": [member.to_payload() for member in part],
            "chunk_index": index,
            "chunk_count": len(parts),
        }
        if index == 0 and not_found:
            payload["not_found"] = not_found
        if data.get("nonce") is not None:
            payload["nonce"] = data["nonce"]
        if data.get("presences"):
            payload["presences"] = []
        payloads.append(payload)
    return payloads
