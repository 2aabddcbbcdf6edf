"""The product's computation of effective permissions (:mod:`bot.footprint.effective`) is
Discord's documented algorithm: on random guilds it agrees with the fake's own, written apart
(``tests/fakediscord/permissions.py``), bit for bit, owners, administrators, timeouts and the
implicit rules included."""

from __future__ import annotations

import random

from bot.footprint.effective import ALL, Person, Scene, effective
from tests.fakediscord.permissions import (
    ALL_PERMISSIONS,
    TIMED_OUT_PERMISSIONS,
    Overwrite,
    Permission,
    apply_overwrites,
    base_permissions,
)

GUILD = 1000
BITS = [int(bit) for bit in Permission]
KINDS = (0, 2, 4, 5, 13)


def some_bits(rng: random.Random, odds: float) -> int:
    value = 0
    for bit in BITS:
        if rng.random() < odds:
            value |= bit
    return value


def test_the_product_computes_what_the_fake_computes_on_random_guilds():
    rng = random.Random(28)
    assert ALL == ALL_PERMISSIONS
    for _ in range(3000):
        roles = {GUILD: some_bits(rng, 0.4)}
        roles.update({role: some_bits(rng, 0.08) for role in range(1, 6)})
        user, owner = 7, rng.choice([7, 8])
        held = frozenset(r for r in range(1, 6) if rng.random() < 0.4)
        targets = [(0, GUILD), *((0, r) for r in range(1, 6)), (1, user), (1, 9)]
        overwrites = [
            Overwrite(target, kind, allow=some_bits(rng, 0.15), deny=some_bits(rng, 0.15))
            for kind, target in targets
            if rng.random() < 0.5
        ]
        kind, timed_out = rng.choice(KINDS), rng.random() < 0.2
        scene = Scene(
            guild=GUILD,
            owner=owner,
            me=99,
            roles=roles,
            positions={},
            names={},
            places={5: (kind, None, {(o.type, o.id): (o.allow, o.deny) for o in overwrites})},
            people={user: Person(held, timed_out)},
        )
        base = base_permissions(
            is_owner=user == owner,
            everyone_permissions=roles[GUILD],
            role_permissions=[roles[r] for r in held],
        )
        expected = apply_overwrites(
            base,
            guild_id=GUILD,
            member_id=user,
            member_role_ids=held,
            overwrites=overwrites,
            is_text_channel=kind in (0, 5, 2, 13),
            is_voice_channel=kind in (2, 13),
        )
        if timed_out and base != ALL_PERMISSIONS:
            expected &= TIMED_OUT_PERMISSIONS
        assert effective(scene, user, 5) == expected, (roles, held, overwrites, kind, owner)
