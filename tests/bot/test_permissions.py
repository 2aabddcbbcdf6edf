"""The one permission list: the invite is what the overwrites use plus what the calls need, the
README shows it, and every bit has its name as Discord's client gives it in both languages."""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import parse_qs, urlparse

import discord

from bot.i18n import catalogue
from bot.permissions import (
    BOT,
    CALLS,
    EVERYONE_DENY,
    FLAGS,
    HOST,
    INVITE,
    LISTEN,
    OVERWRITE_BITS,
    READ,
    TRIBUNE_SILENCE,
    VOICE,
    WRITE,
    bits,
    invite_url,
    missing,
)
from tests.fakediscord.permissions import DEFAULT_BOT_PERMISSIONS, Permission

README = Path(__file__).resolve().parents[2] / "README.md"


def test_the_invite_is_the_overwrites_bits_and_the_calls_needs_nothing_more():
    assert (
        OVERWRITE_BITS.value
        == (READ | WRITE | TRIBUNE_SILENCE | VOICE | LISTEN | HOST | BOT | EVERYONE_DENY).value
    )
    assert INVITE.value == (OVERWRITE_BITS | CALLS).value
    # the tribune denies the dead Create Events, so the bot holds it, and /mafia schedule uses it
    assert INVITE.create_events and not INVITE.manage_events
    assert not INVITE.administrator and not INVITE.view_audit_log
    assert INVITE.manage_roles and INVITE.manage_channels
    assert not OVERWRITE_BITS.manage_roles  # Discord refuses Manage Roles in an overwrite


def test_the_fake_grants_the_bot_exactly_the_invite():
    # the fake Discord writes its default grant out itself (it imports no product code): a bit
    # added to the invite must be added there too, or every test through the fake runs without it
    assert INVITE.value == DEFAULT_BOT_PERMISSIONS, [
        bit.name for bit in Permission if bit & (INVITE.value ^ DEFAULT_BOT_PERMISSIONS)
    ]


def test_the_invite_link():
    url = urlparse(invite_url(1234))
    query = parse_qs(url.query)
    assert (url.scheme, url.netloc, url.path) == ("https", "discord.com", "/oauth2/authorize")
    assert query == {
        "client_id": ["1234"],
        "permissions": [str(INVITE.value)],
        "scope": ["bot applications.commands"],
    }


def test_every_permission_the_bot_names_has_its_discord_name_in_both_languages():
    for bit in bits(INVITE) + [1 << 3, 1 << 7]:
        flag = FLAGS[bit]
        for language in ("ru", "en"):
            assert f"permission.{flag}" in catalogue(language), (language, flag)
    assert missing(discord.Permissions(INVITE.value & ~(1 << 4))) == ["manage_channels"]
    assert missing(discord.Permissions(administrator=True)) == []


def test_the_readme_shows_the_invite_and_what_each_permission_is_for():
    text = README.read_text(encoding="utf-8")
    section = text[text.index("## Inviting the bot") :]
    section = section[: section.index("\n## ", 3)]
    assert f"permissions={INVITE.value}&scope=bot+applications.commands" in section
    rows = [
        line
        for line in section.splitlines()
        if re.match(r"^\| [^-|]", line) and "Permission (en)" not in line
    ]
    named = {(cells[1].strip(), cells[2].strip()) for cells in (row.split("|") for row in rows)}
    wanted = {
        (catalogue("ru")[f"permission.{FLAGS[bit]}"], catalogue("en")[f"permission.{FLAGS[bit]}"])
        for bit in bits(INVITE)
    }
    assert named == wanted
    assert all(row.split("|")[3].strip() for row in rows)  # each says what it is for
