"""The fake Discord's pytest plugin: strict answers, and one line about the schema check.

Loaded for the whole suite by ``tests/conftest.py``. Every test fails (at
teardown) if a fake answered it with a body that disagrees with the OpenAPI
spec's response schema, since that is a bug of the fake that discord.py might
hide. At the end of the run one line says how many requests the spec checked
(and what the check cost), or that the schema check was skipped because the
spec file is absent.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from .server import RESPONSE_FINDINGS
from .spec import default_spec, spec_status


@pytest.fixture(autouse=True)
def fake_discord_answers_follow_the_spec() -> Iterator[None]:
    """Fails the test if any fake's answer during it disagreed with the spec's response schema."""
    start = len(RESPONSE_FINDINGS)
    yield
    found = RESPONSE_FINDINGS[start:]
    if found:
        shown = "\n".join(found[:20])
        pytest.fail(f"the fake Discord answered {len(found)} time(s) against the spec:\n{shown}", pytrace=False)


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """One line: the schema check's figures, or that it was skipped."""
    spec = default_spec()
    if spec is None:
        terminalreporter.write_line(spec_status())
        return
    if spec.checked:
        each = spec.seconds / spec.checked * 1e6
        line = (
            f"fakediscord: {spec.checked} REST requests checked against the OpenAPI spec "
            f"in {spec.seconds:.2f} s ({each:.0f} µs each)"
        )
        if spec.responses_checked:
            answer = spec.response_seconds / spec.responses_checked * 1e6
            line += f"; {spec.responses_checked} answers in {spec.response_seconds:.2f} s ({answer:.0f} µs each)"
        terminalreporter.write_line(line)
