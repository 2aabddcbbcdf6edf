"""The per-member, per-game token bucket of bot.fairness, on a fake clock."""

from __future__ import annotations

import pytest

from bot import fairness
from bot.config import Fairness
from bot.fairness import CommandLimit, TooFast


def limit(burst: int = 3, per_minute: int = 6) -> tuple[CommandLimit, list[float]]:
    now = [100.0]
    return CommandLimit(Fairness(burst=burst, per_minute=per_minute), clock=lambda: now[0]), now


def test_a_burst_then_the_refill_pace_each_member_and_game_apart():
    bucket, now = limit()
    for _ in range(3):
        bucket.admit(1, 7)
    with pytest.raises(TooFast) as refused:
        bucket.admit(1, 7)
    assert refused.value.params == {"count": 10}  # 6 a minute: the next one in 10 s
    bucket.admit(1, 8)  # another member
    bucket.admit(2, 7)  # the same member in another game
    now[0] += 4
    with pytest.raises(TooFast) as refused:
        bucket.admit(1, 7)
    assert refused.value.params == {"count": 6}
    now[0] += 6
    bucket.admit(1, 7)
    now[0] += 3600  # refilled to the burst, never beyond it
    for _ in range(3):
        bucket.admit(1, 7)
    with pytest.raises(TooFast):
        bucket.admit(1, 7)


def test_what_changed_nothing_is_given_back_and_no_burst_means_no_limit():
    bucket, _ = limit(burst=1)
    bucket.admit(1, 7)
    bucket.refund(1, 7)
    bucket.admit(1, 7)
    bucket.refund(1, 7)
    bucket.refund(1, 7)  # never more than the burst
    bucket.admit(1, 7)
    with pytest.raises(TooFast):
        bucket.admit(1, 7)
    off, _ = limit(burst=0)
    for _ in range(1000):
        off.admit(1, 7)


def test_full_buckets_are_forgotten_when_many_are_kept(monkeypatch):
    monkeypatch.setattr(fairness, "KEEP", 10)
    bucket, now = limit()
    for member in range(10):
        bucket.admit(1, member)
    now[0] += 60  # all full again
    bucket.admit(1, 99)
    assert list(bucket._buckets) == [(1, 99)]
