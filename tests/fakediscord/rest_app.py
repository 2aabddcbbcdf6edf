"""REST routes about the bot itself: users, the application, the gateway, commands and DMs."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .errors import DiscordError, field_error, invalid_form_body, unknown
from .models import ApplicationCommand
from .routing import RestRequest, RestResponse, Router

if TYPE_CHECKING:
    from .server import FakeDiscord

VALID_LOCALES = frozenset(
    {
        "id",
        "da",
        "de",
        "en-GB",
        "en-US",
        "es-ES",
        "es-419",
        "fr",
        "hr",
        "it",
        "lt",
        "hu",
        "nl",
        "no",
        "pl",
        "pt-BR",
        "ro",
        "fi",
        "sv-SE",
        "vi",
        "tr",
        "cs",
        "el",
        "bg",
        "ru",
        "uk",
        "hi",
        "th",
        "zh-CN",
        "ja",
        "zh-TW",
        "ko",
    }
)
"""Locales Discord accepts in ``*_localizations`` (and sends as ``locale``)."""

OPTION_SUB_COMMAND = 1
OPTION_SUB_COMMAND_GROUP = 2
OPTION_TYPES = range(1, 12)


def is_valid_slash_name(name: str) -> bool:
    """Discord's rule for slash command and option names: 1-32 word characters, lowercase."""
    if not 1 <= len(name) <= 32:
        return False
    for char in name:
        if char in "-_'":
            continue
        if not char.isalnum():
            return False
        if char.lower() != char:
            return False
    return True


def command_errors(command: dict[str, Any]) -> dict[str, Any]:
    """Discord's validation of one application command; an empty dict if it is valid."""
    errors: dict[str, Any] = {}
    command_type = int(command.get("type", 1))
    name = str(command.get("name", ""))
    description = command.get("description") or ""
    if command_type == 1:
        if not is_valid_slash_name(name):
            errors["name"] = field_error(
                "APPLICATION_COMMAND_INVALID_NAME", "Command name is invalid"
            )
        if not 1 <= len(description) <= 100:
            errors["description"] = field_error(
                "BASE_TYPE_BAD_LENGTH", "Must be between 1 and 100 in length."
            )
    else:
        if not 1 <= len(name) <= 32:
            errors["name"] = field_error(
                "BASE_TYPE_BAD_LENGTH", "Must be between 1 and 32 in length."
            )
        if description:
            errors["description"] = field_error(
                "APPLICATION_COMMAND_CONTEXT_MENU_DESCRIPTION",
                "Context menu commands cannot have description",
            )
    errors.update(_localization_errors(command, slash=command_type == 1))
    options = command.get("options") or []
    if options and command_type != 1:
        errors["options"] = field_error(
            "APPLICATION_COMMAND_OPTIONS_FOR_CONTEXT_MENU",
            "Context menu commands cannot have options",
        )
    elif options:
        option_errors = _options_errors(options, depth=0)
        if option_errors:
            errors["options"] = option_errors
    return errors


def _localization_errors(item: dict[str, Any], *, slash: bool) -> dict[str, Any]:
    errors: dict[str, Any] = {}
    for key, is_name in (("name_localizations", True), ("description_localizations", False)):
        localizations = item.get(key)
        if localizations is None:
            continue
        if not isinstance(localizations, dict):
            errors[key] = field_error(
                "DICT_TYPE_CONVERT", "Only dictionaries may be used in a DictType"
            )
            continue
        bad: dict[str, Any] = {}
        for locale, value in localizations.items():
            if locale not in VALID_LOCALES:
                bad[locale] = field_error(
                    "BASE_TYPE_CHOICES",
                    f"Value must be one of ({', '.join(repr(locale) for locale in sorted(VALID_LOCALES))}).",
                )
            elif is_name and slash and not is_valid_slash_name(str(value)):
                bad[locale] = field_error(
                    "APPLICATION_COMMAND_INVALID_NAME", "Command name is invalid"
                )
            elif is_name and not 1 <= len(str(value)) <= 32:
                bad[locale] = field_error(
                    "BASE_TYPE_BAD_LENGTH", "Must be between 1 and 32 in length."
                )
            elif not is_name and not 1 <= len(str(value)) <= 100:
                bad[locale] = field_error(
                    "BASE_TYPE_BAD_LENGTH", "Must be between 1 and 100 in length."
                )
        if bad:
            errors[key] = bad
    return errors


def _options_errors(options: list[dict[str, Any]], *, depth: int) -> dict[str, Any]:
    errors: dict[str, Any] = {}
    if len(options) > 25:
        return field_error("BASE_TYPE_MAX_LENGTH", "Must be 25 or fewer in length.")
    seen: set[str] = set()
    optional_seen = False
    kinds = {
        int(option.get("type", 0)) in (OPTION_SUB_COMMAND, OPTION_SUB_COMMAND_GROUP)
        for option in options
    }
    if len(kinds) > 1:
        return field_error(
            "APPLICATION_COMMAND_OPTIONS_TYPE_INVALID",
            "Sub-command and sub-command group option types are mutually exclusive to all other types",
        )
    for index, option in enumerate(options):
        option_type = int(option.get("type", 0))
        one = _option_head_errors(option, seen, depth)
        children = option.get("options") or []
        if option_type in (OPTION_SUB_COMMAND, OPTION_SUB_COMMAND_GROUP):
            one.update(_subcommand_errors(option_type, children, depth))
        else:
            required = bool(option.get("required"))
            if required and optional_seen:
                one["required"] = field_error(
                    "APPLICATION_COMMAND_OPTIONS_REQUIRED_INVALID",
                    "Required options must be placed before non-required options",
                )
            optional_seen = optional_seen or not required
            one.update(_choices_errors(option))
        if one:
            errors[str(index)] = one
    return errors


def _option_head_errors(option: dict[str, Any], seen: set[str], depth: int) -> dict[str, Any]:
    """An option's type, name (unique among its siblings, added to ``seen``), description,
    localizations and nesting depth."""
    one: dict[str, Any] = {}
    option_type = int(option.get("type", 0))
    name = str(option.get("name", ""))
    if option_type not in OPTION_TYPES:
        one["type"] = field_error(
            "BASE_TYPE_CHOICES", "Value must be one of (1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11)."
        )
    if not is_valid_slash_name(name):
        one["name"] = field_error("APPLICATION_COMMAND_INVALID_NAME", "Command name is invalid")
    elif name in seen:
        one["name"] = field_error(
            "APPLICATION_COMMAND_OPTIONS_NAME_ALREADY_EXISTS", "Option name already exists"
        )
    seen.add(name)
    if not 1 <= len(str(option.get("description") or "")) <= 100:
        one["description"] = field_error(
            "BASE_TYPE_BAD_LENGTH", "Must be between 1 and 100 in length."
        )
    one.update(_localization_errors(option, slash=True))
    if option_type == OPTION_SUB_COMMAND_GROUP and depth > 0:
        one["type"] = field_error(
            "APPLICATION_COMMAND_OPTION_TYPE_INVALID", "Sub-command groups cannot be nested"
        )
    if option_type == OPTION_SUB_COMMAND and depth > 1:
        one["type"] = field_error(
            "APPLICATION_COMMAND_OPTION_TYPE_INVALID", "Sub-commands cannot be nested this deep"
        )
    return one


def _subcommand_errors(
    option_type: int, children: list[dict[str, Any]], depth: int
) -> dict[str, Any]:
    """A sub-command's or group's ``options``: a group holds only sub-commands."""
    if option_type == OPTION_SUB_COMMAND_GROUP and any(
        int(child.get("type", 0)) != OPTION_SUB_COMMAND for child in children
    ):
        return {
            "options": field_error(
                "APPLICATION_COMMAND_OPTION_TYPE_INVALID",
                "Sub-command groups may only contain sub-commands",
            )
        }
    if children:
        nested = _options_errors(children, depth=depth + 1)
        if nested:
            return {"options": nested}
    return {}


def _choices_errors(option: dict[str, Any]) -> dict[str, Any]:
    """An option's choices: at most 25, not with autocomplete, names of 1 to 100 characters."""
    one: dict[str, Any] = {}
    choices = option.get("choices") or []
    if len(choices) > 25:
        one["choices"] = field_error("BASE_TYPE_MAX_LENGTH", "Must be 25 or fewer in length.")
    if choices and option.get("autocomplete"):
        one["autocomplete"] = field_error(
            "APPLICATION_COMMAND_AUTOCOMPLETE_CHOICES",
            "Autocomplete cannot be set if choices are present",
        )
    for choice_index, choice in enumerate(choices):
        choice_errors: dict[str, Any] = {}
        if not 1 <= len(str(choice.get("name", ""))) <= 100:
            choice_errors["name"] = field_error(
                "BASE_TYPE_BAD_LENGTH", "Must be between 1 and 100 in length."
            )
        for locale, value in (choice.get("name_localizations") or {}).items():
            if locale not in VALID_LOCALES or not 1 <= len(str(value)) <= 100:
                choice_errors.setdefault("name_localizations", {})[locale] = field_error(
                    "BASE_TYPE_BAD_LENGTH", "Must be between 1 and 100 in length."
                )
        if choice_errors:
            one.setdefault("choices", {})[str(choice_index)] = choice_errors
    return one


class AppRoutes:
    """Users, application info, gateway discovery, application commands and DM channels."""

    def __init__(self, fake: FakeDiscord) -> None:
        self.fake = fake

    def register(self, router: Router) -> None:
        """Adds these routes to the router."""
        router.add("GET", "/users/@me", self.get_me)
        router.add("GET", "/users/{user_id}", self.get_user)
        router.add("GET", "/users/@me/guilds", self.get_my_guilds)
        router.add("POST", "/users/@me/channels", self.open_dm)
        router.add("GET", "/oauth2/applications/@me", self.get_application)
        router.add("GET", "/applications/@me", self.get_application)
        router.add("GET", "/gateway", self.get_gateway, auth=False)
        router.add("GET", "/gateway/bot", self.get_gateway_bot)
        for prefix in (
            "/applications/{application_id}",
            "/applications/{application_id}/guilds/{guild_id}",
        ):
            router.add("GET", prefix + "/commands", self.list_commands)
            router.add("PUT", prefix + "/commands", self.bulk_overwrite_commands)
            router.add("POST", prefix + "/commands", self.create_command)
            router.add("GET", prefix + "/commands/{command_id}", self.get_command)
            router.add("PATCH", prefix + "/commands/{command_id}", self.edit_command)
            router.add("DELETE", prefix + "/commands/{command_id}", self.delete_command)

    async def get_me(self, request: RestRequest) -> Any:
        """GET /users/@me."""
        return {
            **self.fake.bot_user.to_payload(),
            "verified": True,
            "mfa_enabled": False,
            "email": None,
            "locale": "en-US",
        }

    async def get_user(self, request: RestRequest) -> Any:
        """GET /users/{user_id}."""
        return self.fake.state.user(request.snowflake("user_id")).to_payload()

    async def get_my_guilds(self, request: RestRequest) -> Any:
        """GET /users/@me/guilds."""
        bot_id = self.fake.bot_user.id
        return [
            {
                "id": str(guild.id),
                "name": guild.name,
                "icon": None,
                "banner": None,
                "owner": guild.owner_id == bot_id,
                "permissions": str(self.fake.state.guild_permissions(guild.id, bot_id)),
                "features": [],
            }
            for guild in self.fake.state.guilds.values()
        ]

    async def open_dm(self, request: RestRequest) -> Any:
        """POST /users/@me/channels {recipient_id}."""
        recipient = request.body().get("recipient_id")
        if recipient is None:
            raise invalid_form_body(
                {"recipient_id": field_error("BASE_TYPE_REQUIRED", "This field is required")}
            )
        user = self.fake.state.user(int(str(recipient)))
        return self.fake.open_dm(user.id).to_payload()

    async def get_application(self, request: RestRequest) -> Any:
        """GET /oauth2/applications/@me."""
        state = self.fake.state
        return {
            "id": str(state.application_id),
            "name": state.application_name,
            "icon": None,
            "description": "",
            "summary": "",
            "type": None,
            "bot": self.fake.bot_user.to_payload(),
            "rpc_origins": [],
            "bot_public": True,
            "bot_require_code_grant": False,
            "owner": state.owner.to_payload(),
            "verify_key": "0" * 64,
            "team": None,
            "flags": state.application_flags,
            "flags_new": str(state.application_flags),
            "tags": [],
            "install_params": {"scopes": ["bot", "applications.commands"], "permissions": "0"},
            "integration_types_config": {"0": {}},
            "interactions_endpoint_url": None,
            "redirect_uris": [],
            "approximate_guild_count": len(state.guilds),
            "approximate_user_install_count": 0,
            "approximate_user_authorization_count": 0,
            "role_connections_verification_url": None,
            "explicit_content_filter": 0,
            "eligible_oauth2_scopes": ["bot", "applications.commands"],
        }

    async def get_gateway(self, request: RestRequest) -> Any:
        """GET /gateway."""
        return {"url": self.fake.gateway_url}

    async def get_gateway_bot(self, request: RestRequest) -> Any:
        """GET /gateway/bot."""
        return {
            "url": self.fake.gateway_url,
            "shards": self.fake.recommended_shards,
            "session_start_limit": {
                "total": 1000,
                "remaining": 999,
                "reset_after": 86_400_000,
                "max_concurrency": self.fake.gateway.limits.max_concurrency,
            },
        }

    # application commands ------------------------------------------------------------

    def _table(self, request: RestRequest) -> tuple[dict[int, ApplicationCommand], int | None]:
        if request.snowflake("application_id") != self.fake.application_id:
            raise unknown("Application")
        if "guild_id" not in request.params:
            return self.fake.state.global_commands, None
        guild_id = request.snowflake("guild_id")
        self.fake.state.guild(guild_id)
        return self.fake.state.guild_commands.setdefault(guild_id, {}), guild_id

    async def list_commands(self, request: RestRequest) -> Any:
        """GET .../commands (``with_localizations`` keeps the localisation dicts)."""
        table, _ = self._table(request)
        payloads = [command.to_payload() for command in table.values()]
        if not request.flag("with_localizations"):
            for payload in payloads:
                payload.pop("name_localizations", None)
                payload.pop("description_localizations", None)
        return payloads

    async def bulk_overwrite_commands(self, request: RestRequest) -> Any:
        """PUT .../commands: replaces the whole list, keeping ids of commands with the same name and type."""
        table, guild_id = self._table(request)
        body = request.json if request.json is not None else []
        if not isinstance(body, list):
            raise invalid_form_body(
                {
                    "_errors": [
                        {
                            "code": "LIST_TYPE_CONVERT",
                            "message": "Only iterables may be used in a ListType",
                        }
                    ]
                }
            )
        if len(body) > 100:
            raise invalid_form_body(
                {
                    "_errors": [
                        {
                            "code": "BASE_TYPE_MAX_LENGTH",
                            "message": "Must be 100 or fewer in length.",
                        }
                    ]
                }
            )
        errors: dict[str, Any] = {}
        seen: set[tuple[str, int]] = set()
        for index, command in enumerate(body):
            one = command_errors(command)
            key = (str(command.get("name")), int(command.get("type", 1)))
            if key in seen:
                one["name"] = field_error(
                    "APPLICATION_COMMANDS_DUPLICATE_NAME",
                    f"Application command names must be unique: {key[0]}",
                )
            seen.add(key)
            if one:
                errors[str(index)] = one
        if errors:
            raise invalid_form_body(errors)
        existing = {(command.name, command.type): command for command in table.values()}
        table.clear()
        for command_data in body:
            key = (str(command_data.get("name")), int(command_data.get("type", 1)))
            previous = existing.get(key)
            command = self._make(command_data, guild_id, previous)
            table[command.id] = command
        return [command.to_payload() for command in table.values()]

    def _make(
        self, data: dict[str, Any], guild_id: int | None, previous: ApplicationCommand | None
    ) -> ApplicationCommand:
        clean = {
            key: value
            for key, value in data.items()
            if key not in ("id", "application_id", "guild_id", "version")
        }
        if previous is not None and previous.data == clean:
            return previous
        return ApplicationCommand(
            id=previous.id if previous is not None else self.fake.state.new_id(),
            application_id=self.fake.application_id,
            guild_id=guild_id,
            data=clean,
            version=self.fake.state.new_id(),
        )

    async def create_command(self, request: RestRequest) -> Any:
        """POST .../commands: creates or replaces the command with that name (201 when new)."""
        table, guild_id = self._table(request)
        data = request.body()
        errors = command_errors(data)
        if errors:
            raise invalid_form_body(errors)
        key = (str(data.get("name")), int(data.get("type", 1)))
        previous = next((c for c in table.values() if (c.name, c.type) == key), None)
        command = self._make(data, guild_id, previous)
        table[command.id] = command
        return RestResponse(status=200 if previous is not None else 201, body=command.to_payload())

    def _command(
        self, request: RestRequest
    ) -> tuple[dict[int, ApplicationCommand], ApplicationCommand]:
        table, _ = self._table(request)
        command = table.get(request.snowflake("command_id"))
        if command is None:
            raise unknown("application command")
        return table, command

    async def get_command(self, request: RestRequest) -> Any:
        """GET .../commands/{command_id}."""
        _, command = self._command(request)
        return command.to_payload()

    async def edit_command(self, request: RestRequest) -> Any:
        """PATCH .../commands/{command_id}."""
        table, command = self._command(request)
        merged = {**command.data, **request.body()}
        errors = command_errors(merged)
        if errors:
            raise invalid_form_body(errors)
        updated = self._make(merged, command.guild_id, command)
        table[updated.id] = updated
        return updated.to_payload()

    async def delete_command(self, request: RestRequest) -> Any:
        """DELETE .../commands/{command_id}."""
        table, command = self._command(request)
        del table[command.id]
        return None


def ensure(condition: bool, error: DiscordError) -> None:
    """Raises ``error`` unless ``condition`` holds."""
    if not condition:
        raise error
