"""Re-checks a ``FAKEDISCORD_RECORD`` file against Discord's OpenAPI spec and prints what it refuses.

    python tests/fakediscord/spec_check.py RECORD.jsonl [--spec openapi.json] [--no-responses]

Every recorded request is validated again, as the fake did while serving it
(with the same documented quirks), and every answer against the response
schema of its status. The output lists the distinct violations, each as
method, route, location, field (list indices shown as ``*``), rule, how many
requests and the first tests they came from; then the other 4xx answers the
fake gave (its hand-written rules and permission checks), grouped the same
way; then the cost of the check per request. The exit status is 1 when the
spec refuses any request, else 0.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter, defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.fakediscord.spec import OpenApiSpec, default_spec, spec_status  # noqa: E402

_MAX_TESTS = 3


def _test_name(entry: dict[str, Any]) -> str:
    test = str(entry.get("test") or "?")
    return test.split(" (")[0]


def main(argv: list[str] | None = None) -> int:
    """Runs the check; returns the exit status."""
    args = _parser().parse_args(argv)
    spec = OpenApiSpec.load(args.spec) if args.spec else default_spec()
    if spec is None:
        print(spec_status())
        return 2
    tally = _Tally()
    for entry in _entries(args.record, args.skip_tests):
        tally.total += 1
        _check_entry(spec, entry, tally, responses=not args.no_responses)
    print(f"{tally.total} requests in {args.record}; the spec refuses {tally.refused}.")
    _table(
        "Requests the spec refuses (method route, where, field, rule, code):",
        tally.requests,
        tally.tests,
    )
    if not args.no_responses:
        _table("Answers of the fake that disagree with the spec:", tally.answers, tally.tests)
    _table(
        "Other 4xx answers (the fake's own rules; method route, status, code, first error):",
        tally.refusals,
        tally.tests,
    )
    if spec.checked:
        print(
            f"Cost of the check: {spec.seconds / spec.checked * 1e6:.0f} µs per request ({spec.checked} requests)."
        )
    if spec.responses_checked:
        print(
            f"Cost of the answer check: {spec.response_seconds / spec.responses_checked * 1e6:.0f} µs per answer."
        )
    return 1 if tally.refused else 0


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("record", type=Path, help="a FAKEDISCORD_RECORD file (JSON lines)")
    parser.add_argument(
        "--spec", type=Path, help="the OpenAPI file (default: as the fake finds it)"
    )
    parser.add_argument("--no-responses", action="store_true", help="check requests only")
    parser.add_argument(
        "--skip-tests",
        metavar="PREFIX",
        action="append",
        default=[],
        help="leave out calls made by tests whose id starts with PREFIX (e.g. the "
        "fake's own tests, which send wrong requests on purpose: "
        "tests/fakediscord/)",
    )
    return parser


@dataclass
class _Tally:
    """What the check found so far: findings by kind and key, and the tests behind each."""

    requests: Counter[tuple[str, ...]] = field(default_factory=Counter)
    answers: Counter[tuple[str, ...]] = field(default_factory=Counter)
    refusals: Counter[tuple[str, ...]] = field(default_factory=Counter)
    tests: dict[tuple[str, ...], list[str]] = field(default_factory=lambda: defaultdict(list))
    total: int = 0
    refused: int = 0


def _entries(record: Path, skip_tests: list[str]) -> Iterator[dict[str, Any]]:
    """The record's calls, leaving out those of the tests skipped."""
    with record.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                entry = json.loads(line)
            except ValueError:
                print(f"line {number}: not JSON", file=sys.stderr)
                continue
            if any(str(entry.get("test") or "").startswith(prefix) for prefix in skip_tests):
                continue
            yield entry


def _check_entry(
    spec: OpenApiSpec, entry: dict[str, Any], tally: _Tally, *, responses: bool
) -> None:
    """Check one recorded call (its request, and its answer when ``responses``) into ``tally``."""
    method = str(entry["method"])
    result = spec.check_request(
        method,
        str(entry["path"]),
        {str(k): str(v) for k, v in (entry.get("query") or {}).items()},
        entry.get("json"),
        multipart=bool(entry.get("multipart") or entry.get("parts")),
        part_names=[str(part.get("name")) for part in entry.get("parts") or []],
    )
    route = (
        result.operation.template if result.operation else str(entry.get("route") or entry["path"])
    )
    if result.violations:
        tally.refused += 1
    for violation in result.violations:
        key = (
            "request",
            method,
            route,
            violation.location,
            violation.pattern,
            violation.rule,
            violation.code,
        )
        tally.requests[key] += 1
        _remember(tally.tests, key, entry)
    status = int(entry.get("status") or 0)
    fault = entry.get("fault")
    if (
        responses
        and result.operation is not None
        and status
        and (not fault or str(fault).startswith("delay"))
    ):
        for violation in spec.check_response(result.operation, status, entry.get("response")):
            key = (
                "answer",
                method,
                route,
                str(status),
                violation.pattern,
                violation.rule,
                violation.code,
            )
            tally.answers[key] += 1
            _remember(tally.tests, key, entry)
    if 400 <= status < 500 and not result.violations and not fault:
        response = entry.get("response")
        body: dict[str, Any] = response if isinstance(response, dict) else {}
        key = ("refusal", method, route, str(status), str(body.get("code")), _first_error(body), "")
        tally.refusals[key] += 1
        _remember(tally.tests, key, entry)


def _remember(
    tests: dict[tuple[str, ...], list[str]], key: tuple[str, ...], entry: dict[str, Any]
) -> None:
    name = _test_name(entry)
    if name not in tests[key] and len(tests[key]) < _MAX_TESTS:
        tests[key].append(name)


def _first_error(body: dict[str, Any]) -> str:
    """The first leaf of an ``errors`` tree as ``field.path: CODE``, or the message."""
    errors = body.get("errors")
    path: list[str] = []
    node = errors
    while isinstance(node, dict):
        if "_errors" in node:
            first = node["_errors"][0] if node["_errors"] else {}
            return f"{'.'.join(path) or '<root>'}: {first.get('code')}"
        key = next(iter(node), None)
        if key is None:
            break
        path.append("*" if str(key).isdigit() else str(key))
        node = node[key]
    return str(body.get("message") or "")


def _table(
    title: str, counts: Counter[tuple[str, ...]], tests: dict[tuple[str, ...], list[str]]
) -> None:
    print()
    print(title)
    if not counts:
        print("  none")
        return
    for key, count in sorted(counts.items(), key=lambda item: (-item[1], item[0])):
        _, method, route, where, field, rule, code = key
        described = " ".join(part for part in (where, field, rule, code) if part)
        print(f"  {count:6d}  {method} {route}  {described}")
        print(f"          in {', '.join(tests[key])}")


if __name__ == "__main__":
    sys.exit(main())
