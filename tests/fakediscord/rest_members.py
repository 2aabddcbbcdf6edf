"""REST routes of a guild's members: listing and searching them, editing one (nick, roles, voice,
timeout, moving), kicking, adding and removing a role; :class:`~.rest_guilds.GuildRoutes`
registers them."""

from __future__ import annotations

import datetime
from typing import TYPE_CHECKING, Any

from . import audit
from .errors import DiscordError, field_error, invalid_form_body, missing_permissions
from .models import VOICE_TYPES, VoiceState
from .permissions import Permission
from .rest_guild_access import GuildAccess
from .routing import RestRequest
from .world import UNSET

if TYPE_CHECKING:
    pass


class MemberRoutes(GuildAccess):
    """The member routes of ``/guilds/...``."""

    # members ------------------------------------------------------------------------

    async def list_members(self, request: RestRequest) -> Any:
        """GET /guilds/{guild_id}/members?limit&after (sorted by user id)."""
        guild = self.fake.state.guild(request.snowflake("guild_id"))
        limit = max(1, min(int(request.query.get("limit", "1")), 1000))
        after = int(request.query.get("after", "0"))
        members = sorted((m for m in guild.members.values() if m.id > after), key=lambda m: m.id)
        return [member.to_payload() for member in members[:limit]]

    async def search_members(self, request: RestRequest) -> Any:
        """GET /guilds/{guild_id}/members/search?query&limit (prefix of username, global name or nick)."""
        guild = self.fake.state.guild(request.snowflake("guild_id"))
        if "query" not in request.query:
            raise invalid_form_body(
                {"query": field_error("BASE_TYPE_REQUIRED", "This field is required")}
            )
        query = request.query["query"].lower()
        limit = max(1, min(int(request.query.get("limit", "1")), 1000))
        found = [
            member
            for member in guild.members.values()
            if member.user.username.lower().startswith(query)
            or (member.user.global_name or "").lower().startswith(query)
            or (member.nick or "").lower().startswith(query)
        ]
        return [member.to_payload() for member in found[:limit]]

    async def get_member(self, request: RestRequest) -> Any:
        """GET /guilds/{guild_id}/members/{user_id}."""
        return self.fake.state.member(
            request.snowflake("guild_id"), request.snowflake("user_id")
        ).to_payload()

    async def edit_own_member(self, request: RestRequest) -> Any:
        """PATCH /guilds/{guild_id}/members/@me {nick}."""
        guild_id = request.snowflake("guild_id")
        self._bot_can(guild_id, Permission.CHANGE_NICKNAME | Permission.MANAGE_NICKNAMES)
        body = request.body()
        before = self.fake.state.member(guild_id, self.fake.bot_user.id).nick
        member = self.fake.update_member(guild_id, self.fake.bot_user.id, nick=body.get("nick"))
        if before != member.nick:
            self.fake.audit(
                guild_id,
                audit.MEMBER_UPDATE,
                member.id,
                reason=request.record.audit_reason,
                changes=[audit.change("nick", before, member.nick)],
            )
        return member.to_payload()

    async def edit_member(self, request: RestRequest) -> Any:
        """PATCH /guilds/{guild_id}/members/{user_id}: nick, roles, mute, deaf, channel_id."""
        state = self.fake.state
        guild_id = request.snowflake("guild_id")
        user_id = request.snowflake("user_id")
        guild = state.guild(guild_id)
        member = state.member(guild_id, user_id)
        body = request.body()
        in_voice = guild.voice_states.get(user_id)
        self._check_nick(guild_id, user_id, body)
        roles = self._body_roles(guild_id, member.roles, body)
        self._check_voice_flags(guild_id, in_voice, body)
        timeout = self._body_timeout(guild_id, user_id, body)
        move_to = self._body_move(guild_id, in_voice, body)
        before = member.to_payload(with_user=False)
        roles_before = list(member.roles)
        updated = self.fake.update_member(
            guild_id,
            user_id,
            nick=body.get("nick", UNSET),
            roles=roles,
            mute=body.get("mute"),
            deaf=body.get("deaf"),
            timed_out_until=timeout,
        )
        reason = request.record.audit_reason
        changed = audit.changes_between(
            before,
            updated.to_payload(with_user=False),
            ("nick", "mute", "deaf", "communication_disabled_until"),
        )
        if changed:
            self.fake.audit(guild_id, audit.MEMBER_UPDATE, user_id, reason=reason, changes=changed)
        if roles is not None:
            self._audit_roles(guild_id, user_id, roles_before, updated.roles, reason)
        if move_to is not UNSET and in_voice is not None:
            self._move_member(guild_id, user_id, move_to, in_voice, reason)
        return updated.to_payload()

    def _check_nick(self, guild_id: int, user_id: int, body: dict[str, Any]) -> None:
        """The bot may change this member's nick, and the nick fits."""
        bot_id = self.fake.bot_user.id
        if "nick" in body:
            self._bot_can(guild_id, Permission.MANAGE_NICKNAMES)
            if user_id != bot_id and self._outranks_bot(guild_id, user_id):
                raise missing_permissions()
            nick = body.get("nick")
            if nick is not None and len(str(nick)) > 32:
                raise invalid_form_body(
                    {"nick": field_error("BASE_TYPE_MAX_LENGTH", "Must be 32 or fewer in length.")}
                )

    def _body_roles(
        self, guild_id: int, current: list[int], body: dict[str, Any]
    ) -> list[int] | None:
        """The member's new roles (None without ``roles``): each one added or removed must be
        below the bot's highest and not managed."""
        state = self.fake.state
        roles = None
        if "roles" in body:
            self._bot_can(guild_id, Permission.MANAGE_ROLES)
            roles = [int(str(role_id)) for role_id in body.get("roles") or []]
            for role_id in set(roles) ^ set(current):
                role = state.role(guild_id, role_id)
                if role.managed:
                    raise DiscordError(400, 50028, "Invalid Role")
                self._check_role_below_bot(guild_id, role_id)
        return roles

    def _check_voice_flags(
        self, guild_id: int, in_voice: VoiceState | None, body: dict[str, Any]
    ) -> None:
        """Muting or deafening needs the permission and a member in voice."""
        for key, permission in (
            ("mute", Permission.MUTE_MEMBERS),
            ("deaf", Permission.DEAFEN_MEMBERS),
        ):
            if body.get(key) is not None:
                self._bot_can(guild_id, permission)
                if in_voice is None:
                    raise DiscordError(400, 40032, "Target user is not connected to voice.")

    def _body_timeout(self, guild_id: int, user_id: int, body: dict[str, Any]) -> Any:
        """The member's new timeout (UNSET without; None lifts it; at most 28 days ahead)."""
        bot_id = self.fake.bot_user.id
        timeout: Any = UNSET
        if "communication_disabled_until" in body:
            self._bot_can(guild_id, Permission.MODERATE_MEMBERS)
            if user_id == bot_id or self._outranks_bot(guild_id, user_id):
                raise missing_permissions()
            timeout = body.get("communication_disabled_until")
            if timeout is not None:
                try:
                    until = datetime.datetime.fromisoformat(str(timeout))
                except ValueError:
                    raise invalid_form_body(
                        {
                            "communication_disabled_until": field_error(
                                "DATE_TIME_TYPE_PARSE", "Could not parse the time."
                            )
                        }
                    ) from None
                if until - datetime.datetime.now(tz=datetime.UTC) > datetime.timedelta(days=28):
                    raise invalid_form_body(
                        {
                            "communication_disabled_until": field_error(
                                "COMMUNICATION_DISABLED_UNTIL_TOO_LONG",
                                "Timeouts can last 28 days at most.",
                            )
                        }
                    )
        return timeout

    def _body_move(self, guild_id: int, in_voice: VoiceState | None, body: dict[str, Any]) -> Any:
        """The voice channel to move the member to (UNSET without; None disconnects him)."""
        state = self.fake.state
        move_to: Any = UNSET
        if "channel_id" in body:
            self._bot_can(guild_id, Permission.MOVE_MEMBERS)
            if in_voice is None:
                raise DiscordError(400, 40032, "Target user is not connected to voice.")
            raw = body.get("channel_id")
            move_to = int(str(raw)) if raw is not None else None
            if move_to is not None:
                target = state.channel(move_to)
                if target.type not in VOICE_TYPES or target.guild_id != guild_id:
                    raise invalid_form_body(
                        {"channel_id": field_error("CHANNEL_TYPE_INVALID", "Not a voice channel")}
                    )
                self._bot_can(guild_id, Permission.CONNECT, move_to)
        return move_to

    def _move_member(
        self,
        guild_id: int,
        user_id: int,
        move_to: int | None,
        in_voice: VoiceState,
        reason: str | None,
    ) -> None:
        """Move (or disconnect) a member in voice, and log it as Discord does."""
        self.fake.set_voice_state(
            guild_id,
            user_id,
            move_to,
            self_mute=in_voice.self_mute,
            self_deaf=in_voice.self_deaf,
        )
        if move_to is None:
            self.fake.audit(
                guild_id, audit.MEMBER_DISCONNECT, None, reason=reason, options={"count": "1"}
            )
        else:
            self.fake.audit(
                guild_id,
                audit.MEMBER_MOVE,
                None,
                reason=reason,
                options={"channel_id": str(move_to), "count": "1"},
            )

    def _audit_roles(
        self, guild_id: int, user_id: int, before: list[int], after: list[int], reason: str | None
    ) -> None:
        guild = self.fake.state.guild(guild_id)

        def named(role_ids: list[int]) -> list[dict[str, str]]:
            return [
                {"id": str(role_id), "name": guild.roles[role_id].name}
                for role_id in role_ids
                if role_id in guild.roles
            ]

        added = [role_id for role_id in after if role_id not in before]
        removed = [role_id for role_id in before if role_id not in after]
        changes = []
        if added:
            changes.append(audit.change("$add", None, named(added)))
        if removed:
            changes.append(audit.change("$remove", None, named(removed)))
        if changes:
            self.fake.audit(
                guild_id, audit.MEMBER_ROLE_UPDATE, user_id, reason=reason, changes=changes
            )

    async def kick_member(self, request: RestRequest) -> Any:
        """DELETE /guilds/{guild_id}/members/{user_id}."""
        state = self.fake.state
        guild_id = request.snowflake("guild_id")
        user_id = request.snowflake("user_id")
        state.guild(guild_id)
        state.member(guild_id, user_id)
        self._bot_can(guild_id, Permission.KICK_MEMBERS)
        if self._outranks_bot(guild_id, user_id):
            raise missing_permissions()
        self.fake.remove_member(guild_id, user_id)
        self.fake.audit(guild_id, audit.MEMBER_KICK, user_id, reason=request.record.audit_reason)
        return None

    async def add_member_role(self, request: RestRequest) -> Any:
        """PUT /guilds/{guild_id}/members/{user_id}/roles/{role_id}."""
        return self._change_member_role(request, add=True)

    async def remove_member_role(self, request: RestRequest) -> Any:
        """DELETE /guilds/{guild_id}/members/{user_id}/roles/{role_id}."""
        return self._change_member_role(request, add=False)

    def _change_member_role(self, request: RestRequest, *, add: bool) -> None:
        guild_id = request.snowflake("guild_id")
        user_id = request.snowflake("user_id")
        role_id = request.snowflake("role_id")
        role = self.fake.state.role(guild_id, role_id)
        self.fake.state.member(guild_id, user_id)
        self._bot_can(guild_id, Permission.MANAGE_ROLES)
        if role.managed or role.is_everyone:
            raise DiscordError(400, 50028, "Invalid Role")
        self._check_role_below_bot(guild_id, role_id)
        before = list(self.fake.state.member(guild_id, user_id).roles)
        if add:
            self.fake.add_member_role(guild_id, user_id, role_id)
        else:
            self.fake.remove_member_role(guild_id, user_id, role_id)
        after = self.fake.state.member(guild_id, user_id).roles
        self._audit_roles(guild_id, user_id, before, after, request.record.audit_reason)
