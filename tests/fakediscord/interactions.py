"""Building INTERACTION_CREATE payloads the way Discord does, and following the bot's answers.

A slash command is checked against the command the bot registered (when it
did): unknown or missing options, values outside the choices or the limits,
and channels of the wrong type raise :class:`ValueError` in the test, because
Discord's client would never send them. Options of type user, channel, role,
mentionable and attachment get their ``data.resolved`` entries.
"""

from __future__ import annotations

import secrets
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from .interactions_options import (
    _SCALAR_OPTIONS,
    BUTTON_STYLE_LINK,
    BUTTON_STYLE_PREMIUM,
    COMPONENT_BUTTON,
    COMPONENT_CHANNEL_SELECT,
    COMPONENT_LABEL,
    COMPONENT_MENTIONABLE_SELECT,
    COMPONENT_ROLE_SELECT,
    COMPONENT_STRING_SELECT,
    COMPONENT_TEXT_INPUT,
    COMPONENT_USER_SELECT,
    OPTION_ATTACHMENT,
    OPTION_BOOLEAN,
    OPTION_CHANNEL,
    OPTION_INTEGER,
    OPTION_MENTIONABLE,
    OPTION_NUMBER,
    OPTION_ROLE,
    OPTION_STRING,
    OPTION_SUB_COMMAND,
    OPTION_SUB_COMMAND_GROUP,
    OPTION_USER,
    _check_choices_and_range,
    _modal_answer,
    _scalar_option,
    infer_option_type,
)
from .interactions_results import (
    CALLBACK_AUTOCOMPLETE_RESULT,
    CALLBACK_CHANNEL_MESSAGE,
    CALLBACK_DEFERRED_CHANNEL_MESSAGE,
    CALLBACK_DEFERRED_UPDATE_MESSAGE,
    CALLBACK_MODAL,
    CALLBACK_PONG,
    CALLBACK_UPDATE_MESSAGE,
    Callback,
    InteractionResult,
)
from .messages import upload_limit
from .models import (
    ApplicationCommand,
    Attachment,
    Channel,
    Member,
    Message,
    Role,
    User,
)
from .world import Upload

__all__ = [
    "BUTTON_STYLE_LINK",
    "BUTTON_STYLE_PREMIUM",
    "CALLBACK_AUTOCOMPLETE_RESULT",
    "CALLBACK_CHANNEL_MESSAGE",
    "CALLBACK_DEFERRED_CHANNEL_MESSAGE",
    "CALLBACK_DEFERRED_UPDATE_MESSAGE",
    "CALLBACK_MODAL",
    "CALLBACK_PONG",
    "CALLBACK_UPDATE_MESSAGE",
    "COMPONENT_BUTTON",
    "COMPONENT_CHANNEL_SELECT",
    "COMPONENT_LABEL",
    "COMPONENT_MENTIONABLE_SELECT",
    "COMPONENT_ROLE_SELECT",
    "COMPONENT_STRING_SELECT",
    "COMPONENT_TEXT_INPUT",
    "COMPONENT_USER_SELECT",
    "Callback",
    "INTERACTION_APPLICATION_COMMAND",
    "INTERACTION_AUTOCOMPLETE",
    "INTERACTION_MESSAGE_COMPONENT",
    "INTERACTION_MODAL_SUBMIT",
    "INTERACTION_PING",
    "InteractionBuilder",
    "InteractionResult",
    "OPTION_ATTACHMENT",
    "OPTION_BOOLEAN",
    "OPTION_CHANNEL",
    "OPTION_INTEGER",
    "OPTION_MENTIONABLE",
    "OPTION_NUMBER",
    "OPTION_ROLE",
    "OPTION_STRING",
    "OPTION_SUB_COMMAND",
    "OPTION_SUB_COMMAND_GROUP",
    "OPTION_USER",
    "infer_option_type",
]

if TYPE_CHECKING:
    from .server import FakeDiscord

INTERACTION_PING = 1
INTERACTION_APPLICATION_COMMAND = 2
INTERACTION_MESSAGE_COMPONENT = 3
INTERACTION_AUTOCOMPLETE = 4
INTERACTION_MODAL_SUBMIT = 5


class InteractionBuilder:
    """Makes Discord-shaped interaction payloads from the fake's state."""

    def __init__(self, fake: FakeDiscord) -> None:
        self.fake = fake

    # envelope -----------------------------------------------------------------------

    def envelope(
        self,
        interaction_type: int,
        *,
        guild_id: int | None,
        channel_id: int | None,
        user_id: int,
        locale: str | None,
        guild_locale: str | None,
        interaction_id: int | None,
    ) -> dict[str, Any]:
        """The fields every interaction has: ids, token, channel, member or user, permissions.

        ``locale`` is the member's client's; None: a client that speaks the guild's preferred
        locale (en-US outside a guild, Discord's own default)."""
        state = self.fake.state
        state.user(user_id)  # an unknown user fails here, in a guild or not
        if locale is None:
            locale = state.guild(guild_id).preferred_locale if guild_id is not None else "en-US"
        payload: dict[str, Any] = {
            "id": str(interaction_id or state.new_id()),
            "application_id": str(state.application_id),
            "type": interaction_type,
            "token": "aW50ZXJhY3Rpb246" + secrets.token_urlsafe(48),
            "version": 1,
            "locale": locale,
            "entitlements": [],
            "entitlement_sku_ids": [],
        }
        if guild_id is not None:
            payload.update(self._guild_fields(guild_id, channel_id, user_id, guild_locale))
        else:
            payload.update(self._dm_fields(user_id))
        return payload

    def _guild_fields(
        self, guild_id: int, channel_id: int | None, user_id: int, guild_locale: str | None
    ) -> dict[str, Any]:
        """An interaction's fields in a guild: the guild, the channel, the member and the
        permissions of both."""
        state = self.fake.state
        guild = state.guild(guild_id)
        member = state.member(guild_id, user_id)
        channel = (
            state.channel(channel_id) if channel_id is not None else self.default_channel(guild_id)
        )
        if channel.guild_id != guild_id:
            raise ValueError(f"channel {channel.id} is not in guild {guild_id}")
        member_permissions = state.permissions_for(guild_id, channel.id, user_id)
        return {
            "guild_id": str(guild_id),
            "guild": {
                "id": str(guild_id),
                "locale": guild_locale or guild.preferred_locale,
                "features": [],
            },
            "guild_locale": guild_locale or guild.preferred_locale,
            "channel_id": str(channel.id),
            "channel": {**channel.to_payload(), "permissions": str(member_permissions)},
            "member": member.to_payload(permissions=member_permissions),
            "app_permissions": str(state.permissions_for(guild_id, channel.id, state.bot_user.id)),
            "authorizing_integration_owners": {"0": str(guild_id)},
            "context": 0,
            "attachment_size_limit": upload_limit(guild.premium_tier),
        }

    def _dm_fields(self, user_id: int) -> dict[str, Any]:
        """An interaction's fields in the user's DM with the bot."""
        channel = self.fake.open_dm(user_id)
        return {
            "channel_id": str(channel.id),
            "channel": channel.to_payload(),
            "user": self.fake.state.user(user_id).to_payload(),
            "app_permissions": str(0),
            "authorizing_integration_owners": {"0": "0"},
            "context": 1,
            "attachment_size_limit": upload_limit(0),
        }

    def default_channel(self, guild_id: int) -> Channel:
        """The guild's system channel, else its first text channel."""
        guild = self.fake.state.guild(guild_id)
        if guild.system_channel_id is not None:
            channel = self.fake.state.channels.get(guild.system_channel_id)
            if channel is not None and not channel.deleted:
                return channel
        for channel in self.fake.state.guild_channels(guild_id):
            if channel.type == 0:
                return channel
        raise ValueError(f"guild {guild_id} has no text channel; pass channel_id")

    # application commands -----------------------------------------------------------------

    def find_command(
        self, guild_id: int | None, name: str, command_type: int
    ) -> ApplicationCommand | None:
        """The registered command (guild commands first, then global ones)."""
        tables: list[dict[int, ApplicationCommand]] = []
        if guild_id is not None:
            tables.append(self.fake.state.guild_commands.get(guild_id, {}))
        tables.append(self.fake.state.global_commands)
        for table in tables:
            for command in table.values():
                if command.name == name and command.type == command_type:
                    return command
        return None

    def command_data(
        self,
        payload: dict[str, Any],
        command: str,
        options: Mapping[str, Any],
        *,
        focused: str | None = None,
    ) -> dict[str, Any]:
        """``data`` of a slash command (or its autocomplete) like ``"mafia vote"`` with typed options."""
        guild_id = int(payload["guild_id"]) if payload.get("guild_id") else None
        parts = command.split()
        if not parts:
            raise ValueError("empty command")
        registered = self.find_command(guild_id, parts[0], 1)
        resolved: dict[str, dict[str, Any]] = {}
        wrappers: list[tuple[str, int]] = []
        schema: list[dict[str, Any]] | None = None
        if registered is not None:
            schema = list(registered.data.get("options") or [])
            for part in parts[1:]:
                spec = next(
                    (
                        o
                        for o in schema
                        if o.get("name") == part
                        and o.get("type") in (OPTION_SUB_COMMAND, OPTION_SUB_COMMAND_GROUP)
                    ),
                    None,
                )
                if spec is None:
                    names = [o.get("name") for o in schema]
                    raise ValueError(
                        f"/{' '.join(parts[: parts.index(part)])} has no subcommand {part!r} (it has {names})"
                    )
                wrappers.append((part, int(spec["type"])))
                schema = list(spec.get("options") or [])
            if any(o.get("type") in (OPTION_SUB_COMMAND, OPTION_SUB_COMMAND_GROUP) for o in schema):
                raise ValueError(f"/{command} needs a subcommand")
        elif len(parts) == 2:
            wrappers = [(parts[1], OPTION_SUB_COMMAND)]
        elif len(parts) == 3:
            wrappers = [(parts[1], OPTION_SUB_COMMAND_GROUP), (parts[2], OPTION_SUB_COMMAND)]
        elif len(parts) > 3:
            raise ValueError(f"too many words in {command!r}")
        leaf = self._leaf_options(payload, schema, options, resolved, focused)
        nested: list[dict[str, Any]] = leaf
        for name, option_type in reversed(wrappers):
            nested = [{"name": name, "type": option_type, "options": nested}]
        data: dict[str, Any] = {
            "id": str(registered.id if registered is not None else self.fake.state.new_id()),
            "name": parts[0],
            "type": 1,
            "options": nested,
        }
        if resolved:
            data["resolved"] = resolved
        if guild_id is not None:
            data["guild_id"] = str(guild_id)
        return data

    def _leaf_options(
        self,
        payload: dict[str, Any],
        schema: list[dict[str, Any]] | None,
        given: Mapping[str, Any],
        resolved: dict[str, dict[str, Any]],
        focused: str | None,
    ) -> list[dict[str, Any]]:
        by_name = {str(o["name"]): o for o in schema} if schema is not None else None
        options: list[dict[str, Any]] = []
        for name, value in given.items():
            spec: dict[str, Any] = {}
            if by_name is not None:
                if name not in by_name:
                    raise ValueError(f"unknown option {name!r} (the command has {sorted(by_name)})")
                spec = by_name[name]
                option_type = int(spec["type"])
            else:
                option_type = infer_option_type(value)
            if name == focused:
                options.append(
                    {
                        "name": name,
                        "type": option_type,
                        "value": value if option_type != OPTION_STRING else str(value),
                        "focused": True,
                    }
                )
                continue
            converted = self._convert(payload, option_type, name, value, spec, resolved)
            options.append({"name": name, "type": option_type, "value": converted})
        if focused is not None and focused not in given:
            raise ValueError(
                f"the focused option {focused!r} needs a value (what the user typed so far)"
            )
        if by_name is not None and focused is None:
            missing = [n for n, o in by_name.items() if o.get("required") and n not in given]
            if missing:
                raise ValueError(f"missing required option(s) {missing}")
        return options

    def _convert(
        self,
        payload: dict[str, Any],
        option_type: int,
        name: str,
        value: Any,
        spec: dict[str, Any],
        resolved: dict[str, dict[str, Any]],
    ) -> Any:
        if option_type in _SCALAR_OPTIONS:
            converted = _scalar_option(option_type, name, value, spec)
        else:
            converted = self._model_option(payload, option_type, name, value, spec, resolved)
        _check_choices_and_range(option_type, name, converted, spec)
        return converted

    def _model_option(
        self,
        payload: dict[str, Any],
        option_type: int,
        name: str,
        value: Any,
        spec: dict[str, Any],
        resolved: dict[str, dict[str, Any]],
    ) -> str:
        """The id an option of a user, channel, role, mentionable or attachment sends, its
        object added to ``resolved``."""
        state = self.fake.state
        guild_id = int(payload["guild_id"]) if payload.get("guild_id") else None
        user_id = int((payload.get("member") or {}).get("user", payload.get("user", {})).get("id"))
        if option_type == OPTION_USER:
            return str(self._resolve_user(guild_id, payload, value, resolved))
        if option_type == OPTION_CHANNEL:
            channel = state.channel(value.id if isinstance(value, Channel) else int(value))
            allowed = spec.get("channel_types")
            if allowed and channel.type not in allowed:
                raise ValueError(
                    f"option {name!r} takes channels of types {allowed}, not {channel.type}"
                )
            permissions = (
                state.permissions_for(guild_id, channel.id, user_id) if guild_id is not None else 0
            )
            resolved.setdefault("channels", {})[str(channel.id)] = {
                **channel.to_payload(),
                "permissions": str(permissions),
            }
            return str(channel.id)
        if option_type == OPTION_ROLE:
            return str(self._resolve_role(guild_id, value, resolved))
        if option_type == OPTION_MENTIONABLE:
            if isinstance(value, Role) or (
                guild_id is not None
                and int(getattr(value, "id", value)) in state.guild(guild_id).roles
            ):
                return str(self._resolve_role(guild_id, value, resolved))
            return str(self._resolve_user(guild_id, payload, value, resolved))
        if option_type == OPTION_ATTACHMENT:
            attachment = self._upload(int(payload["channel_id"]), value)
            resolved.setdefault("attachments", {})[str(attachment.id)] = attachment.to_payload()
            return str(attachment.id)
        raise ValueError(f"option {name!r} has unsupported type {option_type}")

    def _resolve_user(
        self,
        guild_id: int | None,
        payload: dict[str, Any],
        value: Any,
        resolved: dict[str, dict[str, Any]],
    ) -> int:
        state = self.fake.state
        user_id = value.id if isinstance(value, User | Member) else int(value)
        user = state.user(user_id)
        resolved.setdefault("users", {})[str(user.id)] = user.to_payload()
        if guild_id is not None:
            member = state.guild(guild_id).members.get(user.id)
            if member is not None:
                permissions = state.permissions_for(guild_id, int(payload["channel_id"]), user.id)
                resolved.setdefault("members", {})[str(user.id)] = member.to_payload(
                    with_user=False, permissions=permissions
                )
        return user.id

    def _resolve_role(
        self, guild_id: int | None, value: Any, resolved: dict[str, dict[str, Any]]
    ) -> int:
        if guild_id is None:
            raise ValueError("roles only exist in guilds")
        role = self.fake.state.role(guild_id, value.id if isinstance(value, Role) else int(value))
        resolved.setdefault("roles", {})[str(role.id)] = role.to_payload()
        return role.id

    def _upload(self, channel_id: int, value: Any) -> Attachment:
        if isinstance(value, Attachment):
            return value
        if not isinstance(value, Upload):
            raise ValueError(f"an attachment option takes an Upload, not {value!r}")
        return self.fake.make_attachment(
            channel_id, value.filename, value.data, content_type=value.content_type, ephemeral=True
        )

    def context_menu_data(
        self, payload: dict[str, Any], name: str, target: User | Member | Message
    ) -> dict[str, Any]:
        """``data`` of a user (type 2) or message (type 3) context-menu command."""
        guild_id = int(payload["guild_id"]) if payload.get("guild_id") else None
        resolved: dict[str, dict[str, Any]] = {}
        if isinstance(target, Message):
            command_type = 3
            resolved["messages"] = {str(target.id): self.fake.message_payload(target)}
            target_id = target.id
        else:
            command_type = 2
            target_id = self._resolve_user(guild_id, payload, target, resolved)
        registered = self.find_command(guild_id, name, command_type)
        data: dict[str, Any] = {
            "id": str(registered.id if registered is not None else self.fake.state.new_id()),
            "name": name,
            "type": command_type,
            "target_id": str(target_id),
            "resolved": resolved,
        }
        if guild_id is not None:
            data["guild_id"] = str(guild_id)
        return data

    # components and modals ------------------------------------------------------------

    def component_data(
        self,
        payload: dict[str, Any],
        message: Message,
        custom_id: str,
        values: Sequence[Any] | None,
    ) -> dict[str, Any]:
        """``data`` of a button click (``values`` None) or a select (``values`` a list)."""
        component = message.find_component(custom_id)
        if component is None:
            raise ValueError(
                f"message {message.id} has no component {custom_id!r} (it has {message.custom_ids()})"
            )
        if component.get("disabled"):
            raise ValueError(f"component {custom_id!r} is disabled")
        component_type = int(component["type"])
        data: dict[str, Any] = {"custom_id": custom_id, "component_type": component_type}
        if component_type == COMPONENT_BUTTON:
            if component.get("style") in (BUTTON_STYLE_LINK, BUTTON_STYLE_PREMIUM):
                raise ValueError(f"button {custom_id!r} does not send interactions")
            if values is not None:
                raise ValueError(f"{custom_id!r} is a button: click it without values")
            return data
        if values is None:
            raise ValueError(f"{custom_id!r} is a select menu: pass values")
        low = int(component.get("min_values", 1))
        high = int(component.get("max_values", 1))
        if not low <= len(values) <= high:
            raise ValueError(f"select {custom_id!r} takes {low}..{high} values, got {len(values)}")
        if component_type == COMPONENT_STRING_SELECT:
            allowed = [str(option.get("value")) for option in component.get("options") or []]
            for value in values:
                if str(value) not in allowed:
                    raise ValueError(
                        f"select {custom_id!r} has no option {value!r} (it has {allowed})"
                    )
            data["values"] = [str(value) for value in values]
            return data
        resolved: dict[str, dict[str, Any]] = {}
        guild_id = message.guild_id
        chosen: list[str] = []
        for value in values:
            if component_type == COMPONENT_USER_SELECT:
                chosen.append(str(self._resolve_user(guild_id, payload, value, resolved)))
            elif component_type == COMPONENT_ROLE_SELECT:
                chosen.append(str(self._resolve_role(guild_id, value, resolved)))
            elif component_type == COMPONENT_CHANNEL_SELECT:
                chosen.append(
                    str(self._convert(payload, OPTION_CHANNEL, custom_id, value, {}, resolved))
                )
            else:
                chosen.append(
                    str(self._convert(payload, OPTION_MENTIONABLE, custom_id, value, {}, resolved))
                )
        data["values"] = chosen
        data["resolved"] = resolved
        return data

    def modal_data(
        self, modal: dict[str, Any], values: Mapping[str, str | Sequence[str]]
    ) -> dict[str, Any]:
        """``data`` of a modal submission filling the modal's inputs with ``values`` by custom id."""
        known: set[str] = set()

        def answer(component: dict[str, Any]) -> dict[str, Any] | None:
            return _modal_answer(component, values, known)

        rows: list[dict[str, Any]] = []
        for component in modal.get("components") or []:
            component_type = int(component.get("type", 0))
            if component_type == 1:
                children = [
                    a for a in (answer(child) for child in component.get("components") or []) if a
                ]
                rows.append({"type": 1, "id": component.get("id", 0), "components": children})
            elif component_type == COMPONENT_LABEL and isinstance(component.get("component"), dict):
                inner = answer(component["component"])
                if inner is not None:
                    rows.append(
                        {"type": COMPONENT_LABEL, "id": component.get("id", 0), "component": inner}
                    )
        unknown_ids = set(values) - known
        if unknown_ids:
            raise ValueError(
                f"the modal has no input(s) {sorted(unknown_ids)} (it has {sorted(known)})"
            )
        return {"custom_id": modal["custom_id"], "components": rows}
