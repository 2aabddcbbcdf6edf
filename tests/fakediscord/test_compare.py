"""The record comparison ignores ids, nonces, order and reads, and sees a changed call."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.fakediscord.compare import calls_by_test, differences, main


def line(method: str, path: str, body: object, test: str = "t.py::a (call)") -> str:
    return json.dumps(
        {"method": method, "path": path, "route": None, "json": body, "status": 200, "test": test}
    )


BEFORE = [
    line("POST", "/channels/1577707750987792400/messages", {"content": "hi", "nonce": "ob3"}),
    line(
        "PUT",
        "/guilds/1577707750987792401/members/1577707750987792402/roles/1577707750987792403",
        None,
    ),
    line("GET", "/guilds/1577707750987792401/channels", None),
]


def test_ids_nonces_order_and_reads_do_not_count() -> None:
    after = [
        line(
            "PUT",
            "/guilds/1677707750987792401/members/1677707750987792402/roles/1677707750987792409",
            None,
        ),
        line("POST", "/channels/1677707750987792400/messages", {"content": "hi", "nonce": "ob17"}),
    ]
    assert differences(calls_by_test(BEFORE), calls_by_test(after)) == []


def test_a_changed_body_or_a_call_more_is_seen(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    after = [
        line(
            "POST", "/channels/1577707750987792400/messages", {"content": "hello", "nonce": "ob3"}
        ),
        BEFORE[1],
        BEFORE[1],
    ]
    found = differences(calls_by_test(BEFORE), calls_by_test(after))
    assert found[0] == "t.py::a: 1 call(s) gone, 2 new"
    assert any('"hello"' in each and each.startswith("  +1 POST") for each in found)
    assert any(each.startswith("  +1 PUT") for each in found)
    (tmp_path / "b").write_text("\n".join(BEFORE))
    (tmp_path / "a").write_text("\n".join(after))
    assert main([str(tmp_path / "b"), str(tmp_path / "a")]) == 1
    assert "1 differ" in capsys.readouterr().out
