"""The recording timeline (bot/voice/timeline.py): RTP time between anchors, arrival time at them."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bot.voice.timeline import Placement, Timeline

RATE = 48_000
FRAME = 960


def stream(
    timeline: Timeline, ssrc: int, count: int, *, seq: int, ts: int, at: float, skip: int = 0
) -> list[Placement | None]:
    """``count`` packets of 20 ms, sent and received in real time from ``at``."""
    return [
        timeline.place(ssrc, seq + i, ts + i * FRAME, at + (i + skip) * 0.02, FRAME)
        for i in range(count)
    ]


def positions(placed: list[Placement | None]) -> list[int]:
    return [p.position for p in placed if p is not None]


def test_a_stream_follows_rtp_time_from_where_it_arrived() -> None:
    timeline = Timeline(100.0)
    placed = timeline.place(7, 65_530, 2**32 - 960, 100.25, FRAME)
    later = stream(timeline, 7, 20, seq=65_531, ts=0, at=100.27)
    assert placed == Placement(64, round(0.25 * RATE))
    assert positions(later) == [placed.position + (i + 1) * FRAME for i in range(20)]
    assert [p.sequence for p in later if p] == list(range(65, 85)), "wraps are unwrapped"
    assert timeline.streams == 1 and timeline.reanchors == 0


def test_jitter_within_the_tolerance_does_not_move_anything() -> None:
    timeline = Timeline(0.0)
    placed = [
        timeline.place(1, i, 5_000 + i * FRAME, i * 0.02 + (0.4 if i % 2 else 0.0), FRAME)
        for i in range(100)
    ]
    assert positions(placed) == [i * FRAME for i in range(100)]
    assert timeline.reanchors == 0


def test_a_new_ssrc_begins_where_it_arrived_whatever_its_counters() -> None:
    timeline = Timeline(0.0)
    first = stream(timeline, 1, 50, seq=100, ts=1_000, at=0.0)
    # He reconnects: 1.3 s later, new SSRC, counters anywhere (here behind the old ones).
    second = stream(timeline, 2, 50, seq=7, ts=12, at=2.3)
    assert positions(first)[-1] == 49 * FRAME
    assert positions(second) == [round(2.3 * RATE) + i * FRAME for i in range(50)]
    sequences = [p.sequence for p in first + second if p]
    assert sequences == sorted(sequences) and len(set(sequences)) == 100
    assert timeline.streams == 2


def test_a_new_stream_never_overlaps_what_is_placed() -> None:
    timeline = Timeline(0.0)
    stream(timeline, 1, 50, seq=0, ts=0, at=0.0)
    # The new SSRC arrives "early" by the clock (jitter on the old one): it follows the old one.
    placed = timeline.place(2, 9, 9, 0.5, FRAME)
    assert placed is not None and placed.position == 50 * FRAME


@pytest.mark.parametrize("jump", [-30.0, -1.5, 1.5, 3600.0])
def test_a_timestamp_jump_re_anchors_at_the_arrival_time(jump: float) -> None:
    timeline = Timeline(0.0)
    before = stream(timeline, 1, 100, seq=0, ts=480_000, at=0.0)
    after = stream(
        timeline, 1, 100, seq=100, ts=480_000 + 100 * FRAME + round(jump * RATE), at=0.0, skip=100
    )
    assert positions(before + after) == [i * FRAME for i in range(200)]
    assert timeline.reanchors == 1 and timeline.streams == 1


def test_a_silent_sender_whose_timestamps_stood_still_gets_its_pause() -> None:
    timeline = Timeline(0.0)
    stream(timeline, 1, 10, seq=0, ts=0, at=0.0)
    # Five seconds without packets, and the timestamps carry on as if none passed.
    resumed = stream(timeline, 1, 10, seq=10, ts=10 * FRAME, at=5.2)
    assert positions(resumed)[0] == round(5.2 * RATE)


def test_late_packets_keep_the_anchor_they_were_sent_under() -> None:
    timeline = Timeline(0.0)
    stream(timeline, 1, 10, seq=0, ts=0, at=0.0)
    jumped = timeline.place(1, 11, 11 * FRAME + 10 * RATE, 0.22, FRAME)
    late = timeline.place(1, 10, 10 * FRAME, 0.23, FRAME)
    assert jumped is not None and late is not None
    assert late.position == 10 * FRAME, "placed by the anchor before the jump"
    assert jumped.position == 11 * FRAME
    assert late.sequence < jumped.sequence


def test_a_late_packet_with_a_wild_timestamp_is_discarded() -> None:
    timeline = Timeline(0.0)
    stream(timeline, 1, 10, seq=100, ts=0, at=0.0)
    assert timeline.place(1, 95, 3600 * RATE, 0.21, FRAME) is None
    assert timeline.place(1, 96, 0, 5.0, FRAME) is None, "five seconds late"
    assert timeline.discarded == 2 and timeline.end == 10 * FRAME


def test_a_sequence_restart_on_the_same_ssrc_is_a_new_stream() -> None:
    timeline = Timeline(0.0)
    first = stream(timeline, 1, 600, seq=30_000, ts=0, at=0.0)
    restarted = stream(timeline, 1, 10, seq=0, ts=0, at=12.5)
    assert positions(restarted) == [round(12.5 * RATE) + i * FRAME for i in range(10)]
    assert min(p.sequence for p in restarted if p) > max(p.sequence for p in first if p)
    assert timeline.streams == 2


def test_packets_from_before_the_start_are_refused() -> None:
    timeline = Timeline(10.0)
    first = timeline.place(1, 5, 5 * FRAME, 10.05, FRAME)
    earlier = timeline.place(1, 1, 1 * FRAME, 10.06, FRAME)
    assert first is not None and first.position == round(0.05 * RATE)
    assert earlier is None


def test_tolerance_must_be_positive() -> None:
    with pytest.raises(ValueError):
        Timeline(0.0, tolerance=0)


@given(
    st.lists(
        st.tuples(
            st.integers(1, 3),
            st.integers(0, 0xFFFF),
            st.integers(0, 0xFFFFFFFF),
            st.floats(0, 300, allow_nan=False),
        ),
        max_size=200,
    )
)
def test_any_arrivals_give_placements_within_reach_of_the_arrival_clock(
    arrivals: list[tuple[int, int, int, float]],
) -> None:
    timeline = Timeline(0.0)
    latest = 0.0
    for ssrc, seq, ts, at in arrivals:
        latest = max(latest, at)
        end_before = timeline.end
        placed = timeline.place(ssrc, seq, ts, at, FRAME)
        if placed is not None:
            assert placed.position >= 0
            # Never further ahead of what has arrived than the tolerance allows
            # (counted from the furthest anchor: what is placed, or the clock).
            assert placed.position <= max(round(latest * RATE), end_before) + 2 * RATE


def test_a_stream_begun_after_the_end_comes_back_to_the_clock() -> None:
    """Hypothesis's find: a stream put after another one (3 s ahead of its arrival) whose next
    packet comes 25 s later used to stay those 3 s ahead for good."""
    timeline = Timeline(0.0)
    timeline.place(1, 0, 0, 3.0, FRAME)
    begun = timeline.place(2, 0, 0, 0.0, FRAME)
    assert begun is not None and begun.position == round(3.0 * RATE) + FRAME
    later = timeline.place(2, 1, 1_242_880, 25.0, FRAME)
    assert later is not None and later.position == round(25.0 * RATE)
    assert timeline.reanchors == 1
