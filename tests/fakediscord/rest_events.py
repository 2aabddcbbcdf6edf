"""REST routes of guild scheduled events (``resources/guild-scheduled-event``), as Discord enforces
them:

- creating needs CREATE_EVENTS (the guild-level permission; an EXTERNAL event has no channel);
  editing or deleting one the bot created needs CREATE_EVENTS, another member's MANAGE_EVENTS;
- an EXTERNAL event (``entity_type`` 3) has no ``channel_id``, and needs ``entity_metadata.location``
  (1-100 characters) and ``scheduled_end_time``; ``privacy_level`` is 2 (GUILD_ONLY), the only one;
- its start is in the future and its end after its start;
- its status moves only SCHEDULED → ACTIVE or CANCELED, ACTIVE → COMPLETED;
- the interested users (``GET .../users``) come 1 to 100 at a time (default 100), in user id
  order, after or before a user id, with their member object if ``with_member``;
- an unknown event is 404 10070.

Discord sends GUILD_SCHEDULED_EVENT_* gateway events only to clients with the
GUILD_SCHEDULED_EVENTS intent; the bot does not ask for it (it reads the interested users by
REST when it needs them), so this fake sends none. Tests mark members interested with
:meth:`EventRoutes.mark_interested`, as a member's "Interested" click does.
"""

from __future__ import annotations

import datetime
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .errors import DiscordError, field_error, invalid_form_body, missing_permissions
from .permissions import Permission
from .routing import RestRequest, Router

if TYPE_CHECKING:
    from .server import FakeDiscord

SCHEDULED, ACTIVE, COMPLETED, CANCELED = 1, 2, 3, 4
EXTERNAL = 3
GUILD_ONLY = 2
#: the status changes Discord allows
MOVES = {SCHEDULED: {ACTIVE, CANCELED}, ACTIVE: {COMPLETED}}
MOST_USERS = 100


def unknown_event() -> DiscordError:
    """404 10070: no such scheduled event in the guild."""
    return DiscordError(404, 10070, "Unknown Guild Scheduled Event")


@dataclass
class ScheduledEvent:
    """One guild scheduled event."""

    id: int
    guild_id: int
    creator_id: int
    name: str
    description: str | None
    start: datetime.datetime
    end: datetime.datetime | None
    entity_type: int
    location: str | None
    channel_id: int | None = None
    status: int = SCHEDULED
    interested: set[int] = field(default_factory=set)

    def to_payload(
        self, creator: dict[str, Any] | None = None, *, user_count: bool = False
    ) -> dict[str, Any]:
        """Discord's guild scheduled event object."""
        payload: dict[str, Any] = {
            "id": str(self.id),
            "guild_id": str(self.guild_id),
            "name": self.name,
            "description": self.description,
            "channel_id": str(self.channel_id) if self.channel_id is not None else None,
            "creator_id": str(self.creator_id),
            "image": None,
            "scheduled_start_time": self.start.isoformat(),
            "scheduled_end_time": self.end.isoformat() if self.end is not None else None,
            "status": self.status,
            "entity_type": self.entity_type,
            "entity_id": None,
            "recurrence_rule": None,
            "privacy_level": GUILD_ONLY,
            "guild_scheduled_event_exceptions": [],
            "entity_metadata": {"location": self.location} if self.location is not None else None,
        }
        if creator is not None:
            payload["creator"] = creator
        if user_count:
            payload["user_count"] = len(self.interested)
        return payload


def _time(body: dict[str, Any], key: str) -> datetime.datetime | None:
    raw = body.get(key)
    if raw is None:
        return None
    try:
        value = datetime.datetime.fromisoformat(str(raw).replace("Z", "+00:00"))
    except ValueError:
        raise invalid_form_body(
            {key: field_error("DATE_TIME_TYPE_CONVERT", "Could not parse the date.")}
        ) from None
    return value if value.tzinfo is not None else value.replace(tzinfo=datetime.UTC)


class EventRoutes:
    """``/guilds/{guild_id}/scheduled-events/...`` routes."""

    def __init__(self, fake: FakeDiscord) -> None:
        self.fake = fake
        self.events: dict[int, ScheduledEvent] = {}

    def register(self, router: Router) -> None:
        """Adds these routes to the router."""
        base = "/guilds/{guild_id}/scheduled-events"
        router.add("GET", base, self.list_events)
        router.add("POST", base, self.create_event)
        router.add("GET", base + "/{event_id}", self.get_event)
        router.add("PATCH", base + "/{event_id}", self.edit_event)
        router.add("DELETE", base + "/{event_id}", self.delete_event)
        router.add("GET", base + "/{event_id}/users", self.list_users)

    # for tests ----------------------------------------------------------------------

    def mark_interested(self, event_id: int, user_id: int, interested: bool = True) -> None:
        """A member presses "Interested" on the event (or takes it back)."""
        event = self.events[event_id]
        self.fake.state.member(event.guild_id, user_id)
        (event.interested.add if interested else event.interested.discard)(user_id)

    def of_guild(self, guild_id: int) -> list[ScheduledEvent]:
        """The guild's events, oldest first."""
        return [event for event in self.events.values() if event.guild_id == guild_id]

    # helpers ------------------------------------------------------------------------

    def _event(self, request: RestRequest) -> ScheduledEvent:
        guild_id = request.snowflake("guild_id")
        self.fake.state.guild(guild_id)
        event = self.events.get(request.snowflake("event_id"))
        if event is None or event.guild_id != guild_id:
            raise unknown_event()
        return event

    def _bot_has(self, guild_id: int, permission: int) -> bool:
        granted = self.fake.state.permissions_for(guild_id, None, self.fake.bot_user.id)
        return bool(granted & (permission | Permission.ADMINISTRATOR))

    def _may_change(self, event: ScheduledEvent) -> None:
        own = event.creator_id == self.fake.bot_user.id
        needed = (
            Permission.CREATE_EVENTS | Permission.MANAGE_EVENTS if own else Permission.MANAGE_EVENTS
        )
        if not self._bot_has(event.guild_id, needed):
            raise missing_permissions()

    def _creator(self) -> dict[str, Any]:
        return self.fake.bot_user.to_payload()

    @staticmethod
    def _check_external(
        name: str | None,
        location: Any,
        start: datetime.datetime | None,
        end: datetime.datetime | None,
        channel_id: Any,
        *,
        now: datetime.datetime,
        check_start: bool,
    ) -> None:
        errors: dict[str, Any] = {}
        if name is not None and not 1 <= len(name) <= 100:
            errors["name"] = field_error(
                "BASE_TYPE_BAD_LENGTH", "Must be between 1 and 100 in length."
            )
        if channel_id is not None:
            errors["channel_id"] = field_error(
                "GUILD_SCHEDULED_EVENT_CHANNEL_ID_INVALID",
                "An external event cannot have a channel.",
            )
        if not isinstance(location, str) or not 1 <= len(location) <= 100:
            errors["entity_metadata"] = {
                "location": field_error(
                    "BASE_TYPE_REQUIRED",
                    "An external event needs a location of 1 to 100 characters.",
                )
            }
        if end is None:
            errors["scheduled_end_time"] = field_error(
                "BASE_TYPE_REQUIRED", "An external event needs an end time."
            )
        if check_start and start is not None and start <= now:
            errors["scheduled_start_time"] = field_error(
                "GUILD_SCHEDULED_EVENT_SCHEDULE_PAST", "Cannot schedule event in the past."
            )
        if start is not None and end is not None and end <= start:
            errors["scheduled_end_time"] = field_error(
                "GUILD_SCHEDULED_EVENT_END_BEFORE_START",
                "Cannot schedule event to end before starting.",
            )
        if errors:
            raise invalid_form_body(errors)

    # routes -------------------------------------------------------------------------

    async def list_events(self, request: RestRequest) -> Any:
        """GET /guilds/{guild_id}/scheduled-events."""
        guild_id = request.snowflake("guild_id")
        self.fake.state.guild(guild_id)
        counts = request.flag("with_user_count")
        return [
            event.to_payload(self._creator(), user_count=counts)
            for event in self.of_guild(guild_id)
        ]

    async def get_event(self, request: RestRequest) -> Any:
        """GET /guilds/{guild_id}/scheduled-events/{event_id}."""
        return self._event(request).to_payload(
            self._creator(), user_count=request.flag("with_user_count")
        )

    async def create_event(self, request: RestRequest) -> Any:
        """POST /guilds/{guild_id}/scheduled-events."""
        guild_id = request.snowflake("guild_id")
        self.fake.state.guild(guild_id)
        if not self._bot_has(guild_id, Permission.CREATE_EVENTS):
            raise missing_permissions()
        body = request.body()
        if body.get("privacy_level") != GUILD_ONLY:
            raise invalid_form_body(
                {"privacy_level": field_error("BASE_TYPE_CHOICES", "Value must be one of (2,).")}
            )
        entity_type = body.get("entity_type")
        start, end = _time(body, "scheduled_start_time"), _time(body, "scheduled_end_time")
        if start is None:
            raise invalid_form_body(
                {
                    "scheduled_start_time": field_error(
                        "BASE_TYPE_REQUIRED", "This field is required"
                    )
                }
            )
        location = (body.get("entity_metadata") or {}).get("location")
        now = datetime.datetime.fromtimestamp(time.time(), tz=datetime.UTC)
        if entity_type == EXTERNAL:
            self._check_external(
                str(body.get("name") or ""),
                location,
                start,
                end,
                body.get("channel_id"),
                now=now,
                check_start=True,
            )
        else:
            raise invalid_form_body(
                {
                    "entity_type": field_error(
                        "BASE_TYPE_CHOICES", "This fake makes only EXTERNAL events (3)."
                    )
                }
            )
        event = ScheduledEvent(
            id=self.fake.state.new_id(),
            guild_id=guild_id,
            creator_id=self.fake.bot_user.id,
            name=str(body["name"]),
            description=body.get("description"),
            start=start,
            end=end,
            entity_type=EXTERNAL,
            location=str(location),
        )
        self.events[event.id] = event
        return event.to_payload(self._creator())

    async def edit_event(self, request: RestRequest) -> Any:
        """PATCH /guilds/{guild_id}/scheduled-events/{event_id}."""
        event = self._event(request)
        self._may_change(event)
        body = request.body()
        if event.status in (COMPLETED, CANCELED):
            raise DiscordError(400, 180000, "Cannot modify a finished event")
        status = body.get("status")
        if (
            status is not None
            and status != event.status
            and status not in MOVES.get(event.status, set())
        ):
            raise invalid_form_body(
                {
                    "status": field_error(
                        "GUILD_SCHEDULED_EVENT_INVALID_STATUS_TRANSITION",
                        "Invalid status transition.",
                    )
                }
            )
        start = _time(body, "scheduled_start_time") or event.start
        end = _time(body, "scheduled_end_time") if "scheduled_end_time" in body else event.end
        location = (body.get("entity_metadata") or {}).get("location", event.location)
        now = datetime.datetime.fromtimestamp(time.time(), tz=datetime.UTC)
        self._check_external(
            body.get("name"),
            location,
            start,
            end,
            body.get("channel_id"),
            now=now,
            check_start="scheduled_start_time" in body,
        )
        event.name = str(body.get("name", event.name))
        event.description = body.get("description", event.description)
        event.start, event.end, event.location = start, end, str(location)
        if status is not None:
            event.status = int(status)
        return event.to_payload(self._creator())

    async def delete_event(self, request: RestRequest) -> Any:
        """DELETE /guilds/{guild_id}/scheduled-events/{event_id}."""
        event = self._event(request)
        self._may_change(event)
        del self.events[event.id]
        return None

    async def list_users(self, request: RestRequest) -> Any:
        """GET /guilds/{guild_id}/scheduled-events/{event_id}/users."""
        event = self._event(request)
        raw = request.query.get("limit", str(MOST_USERS))
        if not raw.isdigit() or not 1 <= int(raw) <= MOST_USERS:
            raise invalid_form_body(
                {
                    "limit": field_error(
                        "NUMBER_TYPE_MAX", f"int value should be between 1 and {MOST_USERS}."
                    )
                }
            )
        users = sorted(event.interested)
        after, before = request.query.get("after"), request.query.get("before")
        if after is not None and after.isdigit():
            users = [user for user in users if user > int(after)]
        if before is not None and before.isdigit():
            users = [user for user in users if user < int(before)][-int(raw) :]
        users = users[: int(raw)]
        with_member = request.flag("with_member")
        result = []
        for user_id in users:
            member = self.fake.state.guild(event.guild_id).members.get(user_id)
            if member is None:
                continue  # left the server: Discord drops them
            row: dict[str, Any] = {
                "guild_scheduled_event_id": str(event.id),
                "user_id": str(user_id),
                "user": member.user.to_payload(),
                "response": 1,
            }
            if with_member:
                row["member"] = member.to_payload()
            result.append(row)
        return result
