"""Compares two ``FAKEDISCORD_RECORD`` files: the REST traffic of the same tests before and after
a change, ignoring ids and timing.

A refactor must not change what the bot asks of Discord. Record the suite (or part of it) on both
trees and compare::

    FAKEDISCORD_RECORD=/tmp/before.jsonl python -m pytest tests/cogs tests/bot   # old tree
    FAKEDISCORD_RECORD=/tmp/after.jsonl python -m pytest tests/cogs tests/bot    # new tree
    python tests/fakediscord/compare.py /tmp/before.jsonl /tmp/after.jsonl

Each test's calls that change something are compared as a multiset of method, route, status and
body, with snowflakes, nonces, timestamps and the times in custom ids replaced by placeholders. Left out, as timing: their
order, the reads (a reconciler pass, a lookup whose cache lagged) and the edits of a message (a
burst of edits is sent as its newest). The suite's deals repeat per test
(``tests.harness.repeatable_seeds``), so the texts compare too. A test that ran on one side only is listed, not
compared. The exit status is 1 when some test's calls differ.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections import Counter, defaultdict
from collections.abc import Iterable
from pathlib import Path
from typing import Any

#: ids Discord gives (and the fake's): 15 digits or more
SNOWFLAKE = re.compile(r"\d{15,}")
#: the outbox's nonces carry its item ids
NONCE = re.compile(r"\bob\d+\b")
#: ISO timestamps (scheduled events, timeouts) and Discord's ``<t:unix:style>`` in texts
TIMESTAMP = re.compile(
    r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(\+00:00|Z)?|(?<=<t:)\d+(?=(:[a-zA-Z])?>)"
)
#: a time in milliseconds inside a custom id (a confirmation's: when it was asked)
MILLIS = re.compile(r"(?<=:)\d{13}(?=:|$)")
#: edits of a message: how many are sent is timing (a burst is coalesced into the newest)
EDITS = ("/messages/{message_id}", "/messages/@original")

Call = tuple[str, str, int, str]


def normalised(value: Any) -> Any:
    """A request body with what varies from run to run replaced by placeholders."""
    if isinstance(value, dict):
        return {key: normalised(item) for key, item in sorted(value.items())}
    if isinstance(value, list):
        return [normalised(item) for item in value]
    if isinstance(value, int) and not isinstance(value, bool) and value >= 10**14:
        return "#"
    if isinstance(value, str):
        value = MILLIS.sub("ms", SNOWFLAKE.sub("#", value))
        return TIMESTAMP.sub("T", NONCE.sub("ob#", value))
    return value


#: an interaction's token in the paths of its answer: the callback, or the edit of a deferral
ANSWER_PATH = re.compile(
    r"^/(?:interactions/\d+|webhooks/\d+)/([^/]+)/(?:callback|messages/@original)$"
)


def calls_by_test(lines: Iterable[str]) -> dict[str, Counter[Call]]:
    """Each test's changing calls, normalised, counted. An interaction's answer counts once, as
    what it finally said: answered at once, or deferred and then edited, is timing."""
    found: dict[str, Counter[Call]] = defaultdict(Counter)
    answers: dict[tuple[str, str], Any] = {}
    for line in lines:
        if not line.strip():
            continue
        entry = json.loads(line)
        test = str(entry.get("test") or "?").removesuffix(" (call)").removesuffix(" (setup)")
        answer = ANSWER_PATH.match(str(entry["path"]))
        if answer is not None and entry["method"] in ("POST", "PATCH"):
            said = _said(entry)
            if said is not None:
                answers[(test, answer.group(1))] = said
            continue
        route = SNOWFLAKE.sub("#", str(entry.get("route") or entry["path"]))
        if entry["method"] == "GET" or (entry["method"] == "PATCH" and route.endswith(EDITS)):
            continue
        body = normalised(entry.get("json"))
        parts = [(p["name"], p["content_type"]) for p in entry.get("parts", [])]
        call = (
            entry["method"],
            route,
            int(entry["status"]),
            json.dumps([body, parts], sort_keys=True, ensure_ascii=False),
        )
        found[test][call] += 1
    for (test, _), said in answers.items():
        found[test][("ANSWER", "", 200, json.dumps(said, sort_keys=True, ensure_ascii=False))] += 1
    return found


def _said(entry: dict[str, Any]) -> Any:
    """What an answer's call says, normalised; None for a bare deferral or a refused call."""
    if int(entry["status"]) >= 300:
        return None
    body = entry.get("json") or {}
    data = body.get("data", {}) if "type" in body else body
    if body.get("type") in (5, 6) or not isinstance(data, dict):
        return None
    kept = {key: data[key] for key in ("content", "components", "embeds") if data.get(key)}
    return normalised(kept) if kept else None


def differences(before: dict[str, Counter[Call]], after: dict[str, Counter[Call]]) -> list[str]:
    """What differs, a line per test (calls only before: ``-``, only after: ``+``)."""
    lines = []
    for test in sorted(before.keys() & after.keys()):
        gone, new = before[test] - after[test], after[test] - before[test]
        if not gone and not new:
            continue
        lines.append(f"{test}: {sum(gone.values())} call(s) gone, {sum(new.values())} new")
        for sign, calls in (("-", gone), ("+", new)):
            for (method, route, status, body), count in sorted(calls.items()):
                lines.append(f"  {sign}{count} {method} {route} {status} {body[:300]}")
    return lines


def main(argv: list[str] | None = None) -> int:
    """Print the comparison; 1 when some test's calls differ."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("before", type=Path)
    parser.add_argument("after", type=Path)
    args = parser.parse_args(argv)
    before = calls_by_test(args.before.read_text(encoding="utf-8").splitlines())
    after = calls_by_test(args.after.read_text(encoding="utf-8").splitlines())
    found = differences(before, after)
    both = before.keys() & after.keys()
    calls = sum(sum(before[test].values()) for test in both)
    print(
        f"{len(both)} test(s) on both sides, {calls} changing call(s) before; "
        f"{len(before.keys() - after.keys())} only before, {len(after.keys() - before.keys())} "
        f"only after; {sum(1 for line in found if not line.startswith(' '))} differ"
    )
    for test in sorted(before.keys() ^ after.keys()):
        print(f"  only {'before' if test in before else 'after'}: {test}")
    print("\n".join(found))
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
