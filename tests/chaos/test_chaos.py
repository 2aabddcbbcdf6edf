"""The bounded chaos test: three guilds play while the bot is SIGKILLed and Discord misbehaves.

About a minute: random legal commands in three guilds, the bot process killed
every few seconds and started again (six times; ``CHAOS_KILLS=N`` for more),
429s, 5xx, slow answers, gateway drops and forgotten nonces injected by the
fake; the host's strike-outs and ends confirmed by pressing "Yes" (or
declined, or left unanswered); then every game is its log's replay, every
acknowledged command is in the log once (or in the game's record), every
intent was carried out once, and no channel or role is left that no game owns
(:mod:`tests.chaos.harness`). The seed is random per run and printed on
failure; ``CHAOS_SEED=N`` runs one again.
"""

from __future__ import annotations

import os
import random
import sys
from pathlib import Path

import pytest

from tests.chaos.harness import Chaos

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="SIGKILL")

#: kills rather than seconds: a loaded machine restarts the bot slower, and each kill is the point
KILLS = int(os.environ.get("CHAOS_KILLS", "6"))


# the fake injects 429s by the dozen (a misbehaving Discord, not the bot's doing): Discord counts
# them as invalid requests, the budget of a bot's own (100 in 10 minutes) is not the point here
@pytest.mark.invalid_requests(1000)
async def test_chaos_loses_doubles_and_orphans_nothing(tmp_path: Path):
    seed = int(os.environ.get("CHAOS_SEED") or random.SystemRandom().randrange(2**32))
    chaos = Chaos(tmp_path, seed, guilds=3, players=8)
    figures = await chaos.run(kills=KILLS)
    report = f"{figures.summary()}\n(run again with CHAOS_SEED={seed})"
    assert figures.problems == [], (
        report
        + "\n"
        + "\n".join(figures.problems[:40])
        + "\nthe bot's log ends:\n"
        + chaos.bot.tail()
    )
    # the run did what it is for: the bot was killed, commands were applied, games were played
    assert figures.kills == KILLS, report
    assert figures.acknowledged >= 50, report
    assert figures.intents >= 50, report
    assert figures.games >= 3, report
    # and the host's confirmations were answered: a strike-out or an end happens on its "Yes"
    assert figures.answered["host kill (Yes)"] + figures.answered["host end (Yes)"] >= 1, report
    print(report)
