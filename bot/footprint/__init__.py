"""A game's footprint on Discord, declared, and the one reconciler that keeps Discord to it.

:func:`declared` derives from a game what should exist now: its roles, its
channels with their role overwrites, and which game role each member holds
(his city's living role or its quiet twin alive, the dead role dead, the
spectators' role watching), and whether the game is over (every channel
read-only, the tribune silent, the rooms revealed if the host chose so).
Provisioning (:func:`provision_plan`) makes it; a death and a co-host added
or removed are the difference between the footprint before and after
(:func:`member_changes`), stored with the command, and so are a replacement,
a swap to a quiet twin (:func:`quiet_items`), a spectator's seat
(:func:`watch_items`) and a quiet night's start and end (a house rule: the
footprint by night has the city channels read-only, :func:`quiet_night_items`);
a quiet twin and the spectators' role, made mid-game,
are made as the footprint declares them (:func:`role_made_items`); the end's
lock is the difference between the footprint of the game running and over
(:func:`end_items`). After any of them, and whatever people do,
:class:`Reconciler` compares the footprint with what Discord shows and
repairs the difference through the outbox:

* a game channel deleted by a person is made again, with the overwrites it
  should have now, and the bot says in it that its earlier history is gone
  (a category made again takes its channels back);
* a game role deleted is made again, its overwrites put back everywhere,
  given again to whoever should hold it;
* a member without the game role he should hold gets it (a player who left
  the server and came back: Discord took his roles), one holding a game role
  he should not loses it;
* a game role above the bot's highest role (Discord then refuses to give or
  take it, 403/50013) is worked around: each member it misplaces gets member
  overwrites on the channels where game roles have overwrites, so that he may
  do there exactly what his right role allows, and the host is told in his
  log what to drag where; once the role is below the bot again the
  overwrites go and the roles are put right;
* a game role's overwrite, or @everyone's, someone edited is put back;
* whatever else lets a member do in a game channel (its category included) more than the
  rules allow him now, computed as Discord computes it (a member overwrite, an overwrite for a
  server role, a game role given to someone who does not play), is taken back, and what the
  bot cannot take back (Administrator, the owner) is told to the host once with the fix
  (:mod:`bot.footprint.effective`);
* a member who gains Administrator or Manage Roles during the game (who then
  sees the hidden rooms, or can give himself a game role) is reported in the
  host's log;
* at Discord's caps (250 roles, 500 channels) nothing fails open
  (:mod:`bot.footprint.room`): what is made comes before what it replaces,
  a making Discord refuses leaves members with what they had (they and the
  host are told), and what the guild has no room for waits, noted, until
  a role or channel is deleted, then is made again (the host told both times);
* after the end, while the game's channels are kept (until a transcript
  replaces them), its lock and the spectators' overwrites are put back, and
  who holds which game role; nothing of a finished game is made again.

It runs on the gateway's own events (channels, roles and members created,
updated or deleted; members joining and leaving), on a refused intent, and
when a guild becomes available (so after a restart), a burst of events
coalesced into one pass, and only while the game's provisioning and
permission lanes are idle (an intent under way is not a difference). A
difference seen in the cache is confirmed by REST before it is repaired.
"""

from bot.footprint.changes import (
    cohost_items,
    death_items,
    end_items,
    made_mid_game,
    member_changes,
    quiet_items,
    quiet_night_items,
    replacement_items,
    role_made_items,
    watch_items,
)
from bot.footprint.declared import (
    SPECTATORS_KEY,
    Footprint,
    Path,
    PlaceSpec,
    RoleSpec,
    Seat,
    declared,
)
from bot.footprint.diff import POWERS, Observed, Repairs, observe, powers_of, repairs, standin
from bot.footprint.making import (
    create_channel_item,
    create_role_item,
    provision_plan,
    rollback_plan,
)
from bot.footprint.reconciler import CHANGING_LANES, SETTLE, Reconciler
from bot.footprint.record import kept_after_end

__all__ = [
    "CHANGING_LANES",
    "POWERS",
    "SETTLE",
    "SPECTATORS_KEY",
    "Footprint",
    "Observed",
    "Path",
    "PlaceSpec",
    "Reconciler",
    "Repairs",
    "RoleSpec",
    "Seat",
    "cohost_items",
    "create_channel_item",
    "create_role_item",
    "death_items",
    "declared",
    "end_items",
    "kept_after_end",
    "made_mid_game",
    "member_changes",
    "observe",
    "powers_of",
    "provision_plan",
    "quiet_items",
    "quiet_night_items",
    "repairs",
    "replacement_items",
    "role_made_items",
    "rollback_plan",
    "standin",
    "watch_items",
]
