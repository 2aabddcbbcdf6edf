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

from .invalid import BUDGET, WINDOW, made_since, made_so_far
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
        pytest.fail(
            f"the fake Discord answered {len(found)} time(s) against the spec:\n{shown}",
            pytrace=False,
        )


def pytest_configure(config: pytest.Config) -> None:
    """Declare the marker of a test with an invalid-request budget of its own."""
    config.addinivalue_line(
        "markers",
        "invalid_requests(budget): the most 401/403/429 answers the test's fakes may give in "
        f"any 10 minutes (default {BUDGET}: 1 % of Discord's ban threshold)",
    )


@pytest.fixture(autouse=True)
def fake_discord_invalid_requests_in_budget(request: pytest.FixtureRequest) -> Iterator[None]:
    """Fails the test if a fake made during it answered more invalid requests (401, 403, 429 not
    of the shared scope) in any 10 minutes of its clock than the budget: Discord bans an IP at
    10,000, for every server the bot serves (:mod:`.invalid`)."""
    start = made_so_far()
    yield
    marker = request.node.get_closest_marker("invalid_requests")
    budget = int(marker.args[0]) if marker is not None and marker.args else BUDGET
    for counter in made_since(start):
        peak = counter.peak(WINDOW)
        if peak > budget:
            pytest.fail(
                f"the fake Discord answered {peak} invalid requests within 10 minutes "
                f"(budget {budget}); the commonest:\n{counter.summary()}",
                pytrace=False,
            )


_FIGURES = ("checked", "seconds", "responses_checked", "response_seconds")
#: the figures of the workers that finished, when pytest-xdist runs the tests in several processes
_workers: dict[str, float] = dict.fromkeys(_FIGURES, 0)


def pytest_sessionfinish(session: pytest.Session) -> None:
    """In a pytest-xdist worker: hand this process's figures to the controller."""
    output = getattr(session.config, "workeroutput", None)
    spec = default_spec()
    if output is not None and spec is not None:
        output["fakediscord"] = {name: getattr(spec, name) for name in _FIGURES}


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: object, error: object) -> None:
    """In pytest-xdist's controller: add up a finished worker's figures."""
    figures = getattr(node, "workeroutput", {}).get("fakediscord", {})
    for name in _FIGURES:
        _workers[name] += figures.get(name, 0)


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """One line: the schema check's figures (of every worker process), or that it was skipped."""
    spec = default_spec()
    if spec is None:
        terminalreporter.write_line(spec_status())
        return
    checked, seconds, answers, answer_seconds = (
        getattr(spec, name) + _workers[name] for name in _FIGURES
    )
    if checked:
        each = seconds / checked * 1e6
        line = (
            f"fakediscord: {int(checked)} REST requests checked against the OpenAPI spec "
            f"in {seconds:.2f} s ({each:.0f} µs each)"
        )
        if answers:
            answer = answer_seconds / answers * 1e6
            line += f"; {int(answers)} answers in {answer_seconds:.2f} s ({answer:.0f} µs each)"
        terminalreporter.write_line(line)
