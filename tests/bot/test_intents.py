"""One class per kind of outbox item: each reads back exactly what it stores, and every kind the
outbox carries out has its class."""

from __future__ import annotations

import inspect

from hypothesis import given
from hypothesis import strategies as st

from bot.outbox import calls
from bot.outbox.intents import (
    INTENTS,
    CreateChannel,
    CreateRole,
    DeleteChannel,
    DeleteRole,
    Edit,
    EditChannel,
    MemberRole,
    Overwrite,
    Picture,
    Send,
    Sweep,
    Transcript,
    Voice,
    intent_of,
)

ids = st.integers(min_value=1, max_value=2**63 - 1)
refs = st.one_of(ids, st.sampled_from(["city:0", "role:alive", "mafia:1", "category"]))
lanes = st.sampled_from(["", "provision", "permissions", "messages"])
bodies = st.dictionaries(
    st.sampled_from(["content", "name", "path", "topic", "language"]), st.text(max_size=20)
)

intents = st.one_of(
    st.builds(Send, bodies, st.one_of(st.none(), refs), st.none(), st.none(), lane=lanes),
    st.builds(Send, bodies, st.none(), ids, st.none(), lane=lanes),
    st.builds(Send, bodies, refs, st.none(), st.text(min_size=1, max_size=10), lane=lanes),
    st.builds(Edit, st.text(min_size=1, max_size=10), bodies, lane=lanes),
    st.builds(Voice, refs, bodies, lane=lanes),
    st.builds(Picture, refs, bodies, lane=lanes),
    st.builds(Transcript, ids, bodies, lane=lanes),
    st.builds(Overwrite, refs, refs, st.booleans(), ids, ids, st.just(False), lane=lanes),
    st.builds(
        Overwrite, refs, refs, st.booleans(), st.just(0), st.just(0), st.just(True), lane=lanes
    ),
    st.builds(MemberRole, ids, ids, refs, st.booleans(), lane=lanes),
    st.builds(CreateRole, ids, st.text(min_size=1, max_size=10), bodies, lane=lanes),
    st.builds(CreateChannel, ids, st.text(min_size=1, max_size=10), bodies, lane=lanes),
    st.builds(DeleteRole, ids, refs, lane=lanes),
    st.builds(DeleteChannel, refs, lane=lanes),
    st.builds(EditChannel, refs, bodies, lane=lanes),
    st.builds(Sweep, ids, bodies, lane=lanes),
)


@given(intents)
def test_an_intent_reads_back_as_it_was_stored(intent: object) -> None:
    item = intent.item()  # type: ignore[attr-defined]
    assert item.kind == type(intent).kind  # type: ignore[attr-defined]
    assert intent_of(item) == intent


def test_the_stored_form_is_what_the_outbox_reads() -> None:
    item = Overwrite("city:0", 42, member=True, allow=1024, deny=2048).item()
    assert (item.kind, item.target, item.payload) == (
        "overwrite",
        {"channel_id": "city:0", "id": 42, "type": 1},
        {"allow": "1024", "deny": "2048"},
    )
    item = MemberRole(1, 2, "role:dead", add=False, lane="permissions").item()
    assert (item.target, item.payload, item.queue) == (
        {"guild_id": 1, "user_id": 2, "role": "role:dead"},
        {"add": False},
        "permissions",
    )
    assert Send({"content": "hi"}, user=7).item().target == {"user_id": 7}


def test_every_kind_the_outbox_carries_out_has_its_class() -> None:
    carried = {
        name.removeprefix("_")
        for name, _ in inspect.getmembers(calls.DiscordCalls, inspect.iscoroutinefunction)
    }
    handled = {"voice", "picture", "transcript"}  # carried out by their cogs' handlers
    assert set(INTENTS) - handled <= carried
    assert set(INTENTS) >= handled
