"""Building INTERACTION_CREATE payloads the way Discord does, and following the bot's answers.

A slash command is checked against the command the bot registered (when it
did): unknown or missing options, values outside the choices or the limits,
and channels of the wrong type raise :class:`ValueError` in the test, because
Discord's client would never send them. Options of type user, channel, role,
mentionable and attachment get their ``data.resolved`` entries.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .messages import upload_limit
from .models import (
    MESSAGE_FLAG_EPHEMERAL,
    ApplicationCommand,
    Attachment,
    Channel,
    Member,
    Message,
    Role,
    User,
)
from .recording import MultipartPart
from .snowflake import snowflake_time
from .world import Upload

if TYPE_CHECKING:
    from .server import FakeDiscord

INTERACTION_PING = 1
INTERACTION_APPLICATION_COMMAND = 2
INTERACTION_MESSAGE_COMPONENT = 3
INTERACTION_AUTOCOMPLETE = 4
INTERACTION_MODAL_SUBMIT = 5

CALLBACK_PONG = 1
CALLBACK_CHANNEL_MESSAGE = 4
CALLBACK_DEFERRED_CHANNEL_MESSAGE = 5
CALLBACK_DEFERRED_UPDATE_MESSAGE = 6
CALLBACK_UPDATE_MESSAGE = 7
CALLBACK_AUTOCOMPLETE_RESULT = 8
CALLBACK_MODAL = 9

OPTION_SUB_COMMAND = 1
OPTION_SUB_COMMAND_GROUP = 2
OPTION_STRING = 3
OPTION_INTEGER = 4
OPTION_BOOLEAN = 5
OPTION_USER = 6
OPTION_CHANNEL = 7
OPTION_ROLE = 8
OPTION_MENTIONABLE = 9
OPTION_NUMBER = 10
OPTION_ATTACHMENT = 11

COMPONENT_BUTTON = 2
COMPONENT_STRING_SELECT = 3
COMPONENT_TEXT_INPUT = 4
COMPONENT_USER_SELECT = 5
COMPONENT_ROLE_SELECT = 6
COMPONENT_MENTIONABLE_SELECT = 7
COMPONENT_CHANNEL_SELECT = 8
COMPONENT_LABEL = 18

BUTTON_STYLE_LINK = 5
BUTTON_STYLE_PREMIUM = 6


@dataclass
class Callback:
    """One ``POST /interactions/{id}/{token}/callback`` the bot made (accepted or not)."""

    type: int
    data: dict[str, Any]
    status: int
    time: float
    files: list[MultipartPart] = field(default_factory=list)
    error_code: int | None = None


class InteractionResult:
    """An interaction the fake sent, and everything the bot answered to it.

    ``callback`` is the accepted initial response; ``original`` the message it
    created or updated (a deferred answer is "loading" until the bot edits
    it or sends its first followup, which Discord turns into an edit of the
    original); ``followups`` the later webhook messages.
    """

    def __init__(self, fake: FakeDiscord, payload: dict[str, Any]) -> None:
        self.fake = fake
        self.payload = payload
        self.id = int(payload["id"])
        self.token = str(payload["token"])
        self.type = int(payload["type"])
        self.guild_id = int(payload["guild_id"]) if payload.get("guild_id") else None
        self.channel_id = int(payload["channel_id"])
        user = payload["member"]["user"] if "member" in payload else payload["user"]
        self.user_id = int(user["id"])
        # Discord's 3 s run from when it created the interaction (its snowflake's time): one the
        # gateway delivers late has that much less left (a snowflake from the future, none less)
        created = snowflake_time(self.id).timestamp()
        self.sent_at = time.monotonic() - max(0.0, time.time() - created)
        """When Discord created it, on the monotonic clock (its deadlines count from there)."""
        self.deliveries = 1
        self.callback: Callback | None = None
        self.attempts: list[Callback] = []
        """Every callback request, including refused ones (a second acknowledgement, a late one)."""
        self.original_message_id: int | None = None
        self.followup_ids: list[int] = []
        message = payload.get("message")
        self.source_message_id = int(message["id"]) if message else None
        self.triggered_by: InteractionResult | None = None
        """For a modal submission: the interaction whose answer opened the modal."""

    def __repr__(self) -> str:
        return f"<InteractionResult id={self.id} type={self.type} callback={self.callback_type}>"

    # reading ------------------------------------------------------------------------

    @property
    def callback_type(self) -> int | None:
        """The accepted callback's type (4 message, 5 deferred, 6 deferred update, 7 update, 8 choices, 9 modal)."""
        return self.callback.type if self.callback is not None else None

    @property
    def deferred(self) -> bool:
        """Whether the bot first answered with a deferral (type 5 or 6)."""
        return self.callback_type in (
            CALLBACK_DEFERRED_CHANNEL_MESSAGE,
            CALLBACK_DEFERRED_UPDATE_MESSAGE,
        )

    @property
    def original(self) -> Message | None:
        """The interaction's original message as it is now (None if there is none or it was deleted)."""
        if self.original_message_id is None:
            return None
        message = self.fake.state.messages.get(self.original_message_id)
        return None if message is None or message.deleted else message

    @property
    def followups(self) -> list[Message]:
        """Followup messages still standing, oldest first."""
        messages = [self.fake.state.messages.get(message_id) for message_id in self.followup_ids]
        return [m for m in messages if m is not None and not m.deleted]

    @property
    def messages(self) -> list[Message]:
        """The original message (if any) followed by the followups."""
        original = self.original
        return ([original] if original is not None else []) + self.followups

    @property
    def content(self) -> str:
        """The original message's content (or the callback's, when it created no message)."""
        original = self.original
        if original is not None:
            return original.content
        if self.callback is not None:
            return str(self.callback.data.get("content") or "")
        return ""

    @property
    def embeds(self) -> list[dict[str, Any]]:
        """The original message's embeds."""
        original = self.original
        if original is not None:
            return original.embeds
        return list(self.callback.data.get("embeds") or []) if self.callback is not None else []

    @property
    def components(self) -> list[dict[str, Any]]:
        """The original message's components."""
        original = self.original
        if original is not None:
            return original.components
        return list(self.callback.data.get("components") or []) if self.callback is not None else []

    @property
    def flags(self) -> int:
        """The original message's flags."""
        original = self.original
        if original is not None:
            return original.flags
        return int(self.callback.data.get("flags") or 0) if self.callback is not None else 0

    @property
    def ephemeral(self) -> bool:
        """Whether the answer is visible to the invoking user only."""
        return bool(self.flags & MESSAGE_FLAG_EPHEMERAL)

    @property
    def text(self) -> str:
        """All readable text of the original message (content, embeds, labels)."""
        original = self.original
        return original.text if original is not None else self.content

    @property
    def choices(self) -> list[dict[str, Any]]:
        """Autocomplete choices (callback type 8)."""
        if self.callback is None or self.callback.type != CALLBACK_AUTOCOMPLETE_RESULT:
            return []
        return list(self.callback.data.get("choices") or [])

    @property
    def modal(self) -> dict[str, Any] | None:
        """The modal the bot opened (callback type 9): ``custom_id``, ``title``, ``components``."""
        if self.callback is None or self.callback.type != CALLBACK_MODAL:
            return None
        return self.callback.data

    # waiting ------------------------------------------------------------------------

    async def wait_callback(self, timeout: float = 5.0) -> Callback:
        """Waits for the bot's accepted initial response."""
        return await self.fake.wait_until(
            lambda: self.callback,
            timeout,
            f"no callback for interaction {self.id} ({self.describe()})",
        )

    async def wait_answered(self, timeout: float = 5.0) -> None:
        """Waits until the bot acknowledged the interaction or a callback of its was refused
        (then ``callback`` is None and ``attempts`` says why)."""
        await self.fake.wait_until(
            lambda: self.callback is not None or bool(self.attempts),
            timeout,
            f"the bot did not answer interaction {self.id} ({self.describe()})",
        )

    async def wait_final(self, timeout: float = 5.0) -> None:
        """Waits for the bot's answer as the user ends up reading it: the initial response, and
        when that was a deferral ("thinking…") the edit that replaces it. A command the
        bot deferred is applied after its deferral, so a test that goes on before the edit may
        look at a game the command has not changed yet."""
        await self.wait_callback(timeout)
        if self.deferred:
            await self.wait_original(timeout)

    async def wait_original(self, timeout: float = 5.0) -> Message:
        """Waits until the original message exists and is no longer "thinking"."""
        await self.wait_callback(timeout)

        def finished() -> Message | None:
            original = self.original
            return original if original is not None and not original.loading else None

        return await self.fake.wait_until(
            finished,
            timeout,
            f"the original answer of interaction {self.id} never finished ({self.describe()})",
        )

    async def wait_followups(self, count: int = 1, timeout: float = 5.0) -> list[Message]:
        """Waits until at least ``count`` followup messages exist."""
        return await self.fake.wait_until(
            lambda: self.followups if len(self.followups) >= count else None,
            timeout,
            f"interaction {self.id} got {len(self.followups)} followups, wanted {count}",
        )

    def describe(self) -> str:
        """What happened so far, for failure messages."""
        parts = [f"type {self.type}", f"{len(self.attempts)} callback attempt(s)"]
        parts.extend(
            f"callback type {a.type} -> {a.status}"
            + (f" (code {a.error_code})" if a.error_code else "")
            for a in self.attempts
        )
        return ", ".join(parts)


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
        user = state.user(user_id)
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
            guild = state.guild(guild_id)
            member = state.member(guild_id, user_id)
            channel = (
                state.channel(channel_id)
                if channel_id is not None
                else self.default_channel(guild_id)
            )
            if channel.guild_id != guild_id:
                raise ValueError(f"channel {channel.id} is not in guild {guild_id}")
            member_permissions = state.permissions_for(guild_id, channel.id, user_id)
            payload.update(
                {
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
                    "app_permissions": str(
                        state.permissions_for(guild_id, channel.id, state.bot_user.id)
                    ),
                    "authorizing_integration_owners": {"0": str(guild_id)},
                    "context": 0,
                    "attachment_size_limit": upload_limit(guild.premium_tier),
                }
            )
        else:
            channel = self.fake.open_dm(user_id)
            payload.update(
                {
                    "channel_id": str(channel.id),
                    "channel": channel.to_payload(),
                    "user": user.to_payload(),
                    "app_permissions": str(0),
                    "authorizing_integration_owners": {"0": "0"},
                    "context": 1,
                    "attachment_size_limit": upload_limit(0),
                }
            )
        return payload

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
        state = self.fake.state
        guild_id = int(payload["guild_id"]) if payload.get("guild_id") else None
        user_id = int((payload.get("member") or {}).get("user", payload.get("user", {})).get("id"))
        converted: Any
        if option_type == OPTION_STRING:
            converted = str(value)
            if "min_length" in spec and len(converted) < int(spec["min_length"]):
                raise ValueError(f"option {name!r} is shorter than {spec['min_length']}")
            if "max_length" in spec and len(converted) > int(spec["max_length"]):
                raise ValueError(f"option {name!r} is longer than {spec['max_length']}")
        elif option_type == OPTION_INTEGER:
            if isinstance(value, bool) or not isinstance(value, int):
                raise ValueError(f"option {name!r} takes an integer, not {value!r}")
            converted = value
        elif option_type == OPTION_NUMBER:
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise ValueError(f"option {name!r} takes a number, not {value!r}")
            converted = value
        elif option_type == OPTION_BOOLEAN:
            if not isinstance(value, bool):
                raise ValueError(f"option {name!r} takes a boolean, not {value!r}")
            converted = value
        elif option_type == OPTION_USER:
            converted = str(self._resolve_user(guild_id, payload, value, resolved))
        elif option_type == OPTION_CHANNEL:
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
            converted = str(channel.id)
        elif option_type == OPTION_ROLE:
            converted = str(self._resolve_role(guild_id, value, resolved))
        elif option_type == OPTION_MENTIONABLE:
            if isinstance(value, Role) or (
                guild_id is not None
                and int(getattr(value, "id", value)) in state.guild(guild_id).roles
            ):
                converted = str(self._resolve_role(guild_id, value, resolved))
            else:
                converted = str(self._resolve_user(guild_id, payload, value, resolved))
        elif option_type == OPTION_ATTACHMENT:
            attachment = self._upload(int(payload["channel_id"]), value)
            resolved.setdefault("attachments", {})[str(attachment.id)] = attachment.to_payload()
            converted = str(attachment.id)
        else:
            raise ValueError(f"option {name!r} has unsupported type {option_type}")
        choices = spec.get("choices")
        if choices and converted not in [choice.get("value") for choice in choices]:
            raise ValueError(
                f"option {name!r} must be one of {[c.get('value') for c in choices]}, not {converted!r}"
            )
        if option_type in (OPTION_INTEGER, OPTION_NUMBER):
            if "min_value" in spec and converted < spec["min_value"]:
                raise ValueError(f"option {name!r} is below {spec['min_value']}")
            if "max_value" in spec and converted > spec["max_value"]:
                raise ValueError(f"option {name!r} is above {spec['max_value']}")
        return converted

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
            custom_id = component.get("custom_id")
            component_type = int(component.get("type", 0))
            if custom_id is None:
                return None
            known.add(str(custom_id))
            if component_type == COMPONENT_TEXT_INPUT:
                text = values.get(str(custom_id), component.get("value") or "")
                if not isinstance(text, str):
                    raise ValueError(f"text input {custom_id!r} takes a string")
                if component.get("required", True) and not text:
                    raise ValueError(f"text input {custom_id!r} is required")
                if "max_length" in component and len(text) > int(component["max_length"]):
                    raise ValueError(
                        f"text input {custom_id!r} is longer than {component['max_length']}"
                    )
                if text and "min_length" in component and len(text) < int(component["min_length"]):
                    raise ValueError(
                        f"text input {custom_id!r} is shorter than {component['min_length']}"
                    )
                return {
                    "type": component_type,
                    "id": component.get("id", 0),
                    "custom_id": custom_id,
                    "value": text,
                }
            chosen = values.get(str(custom_id), [])
            if isinstance(chosen, str):
                chosen = [chosen]
            return {
                "type": component_type,
                "id": component.get("id", 0),
                "custom_id": custom_id,
                "values": list(chosen),
            }

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


def infer_option_type(value: Any) -> int:
    """The option type for a Python value, when the command was not registered."""
    if isinstance(value, bool):
        return OPTION_BOOLEAN
    if isinstance(value, int):
        return OPTION_INTEGER
    if isinstance(value, float):
        return OPTION_NUMBER
    if isinstance(value, str):
        return OPTION_STRING
    if isinstance(value, User | Member):
        return OPTION_USER
    if isinstance(value, Channel):
        return OPTION_CHANNEL
    if isinstance(value, Role):
        return OPTION_ROLE
    if isinstance(value, Upload | Attachment):
        return OPTION_ATTACHMENT
    raise ValueError(
        f"cannot tell the option type of {value!r}; register the command or pass a model object"
    )
