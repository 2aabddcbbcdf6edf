"""A local fake Discord for end-to-end tests with the real, unmodified discord.py.

One aiohttp server on 127.0.0.1 serves the REST API (under ``/api/v10``), the
gateway websocket (``/gateway``, JSON text frames) and a CDN for attachments
(``/attachments/...``). It keeps a model of Discord (users, guilds, roles,
members, channels with permission overwrites, threads, messages with their
files, DM channels, voice states, application commands, the audit log),
checks permissions like Discord, records every call, and can inject faults.
The bot may run in this process or in another one: it only needs the two URLs.

It refuses what Discord refuses:

- every REST request is checked against Discord's OpenAPI spec (route and
  method, path and query parameters, the JSON body or a multipart's
  ``payload_json``, every constraint) and refused as Discord does: 400, code
  50035 and the ``errors`` tree (:mod:`.spec`; two documented quirks pass:
  permission sets as strings, snowflakes as numbers). The spec is
  ``$FAKEDISCORD_OPENAPI`` or ``<repo>/../shared/discord-api/openapi.json``;
  without it the suite says once that the schema check was skipped and the
  hand-written rules still hold;
- the fake's answers are checked against the spec's response schemas; the
  pytest plugin (:mod:`.plugin`, loaded by ``tests/conftest.py``) fails a test
  that got an answer the spec disagrees with;
- Discord's documented rules no schema states (:mod:`.messages`: content,
  embed, component, mention and attachment limits; callback and autocomplete
  limits; 15-minute interaction tokens) and permission rules (an overwrite
  allows or denies only bits the bot holds, in the guild on create and in the
  parent category on edit; Manage Roles in overwrites for administrators;
  roles only below the bot's highest and with bits it holds; 250 roles; voice
  channels' text chat has the text implicit denials);
- the gateway closes a connection that sends more than 120 frames in 60 s
  (4008) or whose heartbeat is later than ``gateway.heartbeat_grace`` (1000,
  resumable);
- channels a member (the bot too) cannot view reach him obfuscated (name
  ``___hidden___``, flag CHANNEL_OBFUSCATED, one @everyone overwrite denying
  View Channel); Get Guild Channels omits them.

Recording the traffic (environment variables, read when a fake is created)::

    FAKEDISCORD_RECORD=FILE        # append one JSON line per REST call served: method, path,
                                   # route, query, json (a multipart's payload_json), multipart,
                                   # parts (name, filename, content_type, size), status, response,
                                   # fault, test (the pytest test that made it)
    FAKEDISCORD_RECORD_FILES=DIR   # with it: every uploaded file saved as DIR/<line>-<part><ext>,
                                   # e.g. 17-files[0].ogg (the line of its record in FILE)

Any number of fakes, in one process or several, append to the same FILE
safely (a lock and ``flock``; line numbers stay right). Re-check a record
against the spec (distinct violations by route, rule, count and tests, the
fake's other 4xx answers, the check's cost)::

    python tests/fakediscord/spec_check.py FILE

Starting and pointing discord.py at it::

    fake = FakeDiscord()                         # token "fake-bot-token"
    world = build_standard_guild(fake)           # or fake.create_guild(...), ...
    await fake.start()
    point_discord_py_at(fake.api_base, fake.gateway_url)   # in-process bot
    # a bot in a subprocess gets DISCORD_API_BASE=fake.api_base, DISCORD_GATEWAY_URL=fake.gateway_url
    async with running_client(fake, bot):        # starts it, waits for on_ready, closes it
        ...
    await fake.close()

or use the pytest fixtures ``fake_guild`` (a :class:`StandardGuild`) and
``fake_discord`` from :mod:`tests.fakediscord.fixtures`.

Building the world (:class:`World` methods on the fake; each dispatches the
gateway event Discord would send to a connected bot)::

    create_user(username, *, global_name=None, bot=False, accepts_dms=True) -> User
    create_guild(name="Test Guild", *, owner=None, preferred_locale="en-US",
                 bot_permissions=DEFAULT_BOT_PERMISSIONS,
                 everyone_permissions=DEFAULT_EVERYONE_PERMISSIONS, premium_tier=0) -> Guild
    add_member(guild_id, user_or_username, *, roles=(), nick=None) -> Member
    remove_member(guild_id, user_id)
    create_role(guild_id, name, *, permissions=0, color=0, hoist=False, mentionable=False) -> Role
    update_role(guild_id, role_id, *, name, permissions, color, hoist, mentionable, position) -> Role
    move_role(guild_id, role_id, position) -> Role   # a person drags it; the others shift
    delete_role(guild_id, role_id); set_bot_permissions(guild_id, permissions) -> Role
    update_member(guild_id, user_id, *, nick, roles, mute, deaf, timed_out_until) -> Member
    add_member_role(guild_id, user_id, role_id); remove_member_role(guild_id, user_id, role_id)
    create_channel(guild_id, name, type=ChannelType.GUILD_TEXT, *, parent_id=None,
                   overwrites=None, topic=None, position=None, ...) -> Channel
    update_channel(channel_id, **changes); delete_channel(channel_id)
    set_overwrite(channel_id, Overwrite(id, type, allow, deny)); delete_overwrite(channel_id, target_id)
    post_message(channel_id, author_id, content="", *, embeds=None, files=()) -> Message
    set_voice_state(guild_id, user_id, channel_id | None, *, self_mute=False, self_deaf=False)
    create_thread(parent_id, name, *, owner_id, private=False, members=()) -> Channel
    add_thread_member(thread_id, user_id); remove_thread_member(thread_id, user_id)
    voice_server = <object with .endpoint and .expect(guild_id, channel_id, user_id, session_id) -> token>

Reading it::

    fake.state                      # DiscordState: users, guilds, channels, messages, commands...
    guild(id), channel(id), member(guild_id, user_id), user(id), message(id)
    find_channel(guild_id, name), find_role(guild_id, name)
    permissions_for(guild_id, channel_id | None, user_id) -> int    # Discord's algorithm
    client_view(user_id, guild_id=None) -> ClientView   # what that member's client receives:
        # .channels (obfuscated where he cannot view), .threads, .roles (with "members"),
        # .members, .audit_log (with reasons; only with View Audit Log), .messages he can read,
        # .sees(channel_id), .role_members(role_id), .dump(), .contains(text), .administrator
    audit_log.of_guild(guild_id) -> [AuditEntry]   # the bot's REST changes, newest first
    messages(channel_id=None, *, dm_user_id=None, kind=None, ephemeral=None,
             author_id=None, interaction_id=None, include_deleted=False) -> list[Message]
    calls(method=None, route=None, *, path=None, status=None, since=None) -> list[CallRecord]
    last_call(method=None, route=None, *, path=None) -> CallRecord
    gateway.events(name=None), gateway.log, gateway.received, gateway.count(kind)
    voice_requests                  # every op 4 the bot sent
    invalid                         # InvalidRequests: the 401, 403 and 429 (not shared) answers
        # by its clock: .total, .recent(), .peak() in any 10 minutes, .summary(); the plugin
        # fails a test past 100 (1 % of Discord's ban), @pytest.mark.invalid_requests(N) aside

``fake.state.channels`` holds threads as well (``channel.is_thread``);
``fake.state.guild_threads(guild_id)`` lists them.

Routes are templates like ``/channels/{channel_id}/messages``; a
:class:`CallRecord` has ``method, path, route, params, query, headers, json,
parts (MultipartPart: name, filename, content_type, data), status, response,
response_headers, time, duration, fault``. A :class:`Message` has ``kind``
(``"channel"``, ``"interaction"``, ``"followup"``, ``"user"``), ``content,
embeds, components, attachments`` (with their ``data`` bytes), ``flags``,
``ephemeral``, ``loading``, ``edits`` (earlier versions), ``deleted``, ``text``.

Driving the bot (each returns an :class:`InteractionResult` once the bot
acknowledged, or once Discord refused its callback, unless ``wait=False``)::

    await fake.slash(guild_id, user_id, "mafia new", {"cities": 2, "host": member},
                     channel_id=None, locale="ru", guild_locale=None, interaction_id=None)
    await fake.autocomplete(guild_id, user_id, "mafia join", "city", "Mo", options=None)
    await fake.click(message, "custom-id", user_id)
    await fake.select(message, "custom-id", ["value", ...], user_id)
    await fake.submit_modal(result_that_opened_it, {"input-custom-id": "text"})
    await fake.context_menu(guild_id, user_id, "Report", target_member_or_message)
    await fake.resend(result)       # the same interaction id and token again
    # locale: the member's client's (each of them takes locale=...); by default the guild's
    # preferred locale, en-US outside a guild

    result.callback_type, result.content, result.embeds, result.components, result.flags,
    result.ephemeral, result.text, result.choices, result.modal, result.original,
    result.followups, result.attempts, result.describe()
    await result.wait_callback()    # the accepted initial response
    await result.wait_original()    # a deferred answer, finished by an edit or the first followup
    await result.wait_followups(count)

Faults and the gateway::

    fault = fake.fail(method, path_regex, status=429 | 500 | 503 | ..., count=1,
                      retry_after=0.05, global_=False, *, code=0, message=None)
    fake.delay(method, path_regex, seconds, count=None); fault = fake.hang(method, path_regex)
    fake.forget_nonces()            # Discord's enforced-nonce memory runs out (stored messages never
                                    # carry their nonce: GET messages leaves it out, as Discord does)
    fault.release(); fake.clear_faults(); fault.hits
    fake.rate_limits.limit / .window / .enforce          # X-RateLimit-* on every answer
    fake.global_limit.limit / .window / .enforce / .rejected / .most_in_window
                                    # Discord's 50 requests a second (interaction endpoints aside)
    fake.interaction_ack_deadline = 3.0; fake.interaction_token_lifetime = 900.0
    fake.recommended_shards = 1; fake.spec (None: schema check off); fake.check_responses
    fake.open_interaction(payload)   # an interaction with id and token, delivered to no bot
    fake.gateway.heartbeat_interval_ms / .heartbeat_grace / .send_limit / .send_window
    fake.gateway.ack_heartbeats / .allowed_privileged_intents
    fake.gateway.history             # every connection: .sends, .max_sends_in_window, .heartbeats,
                                     # .max_heartbeat_lateness, .close_code, .close_reason, .closed_by
    fake.gateway.sends_per_connection, .max_sends_in_window, .max_heartbeat_lateness,
    fake.gateway.closes (code, reason, by), .rate_limited, .heartbeat_timeouts
    await fake.drop_gateway(code=4000, resumable=True); fake.request_reconnect()
    await fake.wait_until(predicate, timeout=5.0); await fake.wait_for_session()
    await fake.wait_for_call(method, route, count=1); await fake.wait_for_message(channel_id, where=...)
"""

from .client_view import ClientView
from .errors import DiscordError
from .faults import Fault
from .fixtures import StandardGuild, build_standard_guild
from .gateway import Gateway, GatewayEvent, GatewaySession
from .harness import running_client
from .interactions import Callback, InteractionResult
from .models import (
    ApplicationCommand,
    Attachment,
    Channel,
    ChannelType,
    Guild,
    Member,
    Message,
    Role,
    User,
    VoiceState,
)
from .permissions import (
    DEFAULT_BOT_PERMISSIONS,
    DEFAULT_EVERYONE_PERMISSIONS,
    Overwrite,
    Permission,
)
from .pointing import point_discord_py_at
from .recording import CallRecord, MultipartPart
from .server import FakeDiscord
from .state import DiscordState
from .world import Upload, VoiceServerLike, World

__all__ = [
    "DEFAULT_BOT_PERMISSIONS",
    "DEFAULT_EVERYONE_PERMISSIONS",
    "ApplicationCommand",
    "Attachment",
    "CallRecord",
    "Callback",
    "Channel",
    "ChannelType",
    "ClientView",
    "DiscordError",
    "DiscordState",
    "FakeDiscord",
    "Fault",
    "Gateway",
    "GatewayEvent",
    "GatewaySession",
    "Guild",
    "InteractionResult",
    "Member",
    "Message",
    "MultipartPart",
    "Overwrite",
    "Permission",
    "Role",
    "StandardGuild",
    "Upload",
    "User",
    "VoiceServerLike",
    "VoiceState",
    "World",
    "build_standard_guild",
    "point_discord_py_at",
    "running_client",
]
