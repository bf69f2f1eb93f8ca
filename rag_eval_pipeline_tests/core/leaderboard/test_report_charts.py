"""The report's chart helpers: time ticks with distinct labels and the date said once, a distinct colour
per series, the front of the scatter, and labels placed where they cover nothing."""

from __future__ import annotations

import itertools

import pandas as pd
import pytest

from rag_eval_pipeline.core.leaderboard.render_html import (
    TABLEAU_10,
    Box,
    overlaps,
    place_label,
    series_colours,
    time_ticks,
)


def ns(stamp: str) -> float:
    return float(pd.Timestamp(stamp, tz="UTC").value)


@pytest.mark.parametrize(
    ("low", "high", "labels", "title"),
    [
        # one evaluation of sixteen partitions: minutes apart, the date once, in the title
        (
            "2026-11-27 22:04:10",
            "2026-11-27 22:05:30",
            ["22:04:30", "22:05:00", "22:05:30"],
            "(UTC, 2026-11-27)",
        ),
        (
            "2026-11-27 22:04:00",
            "2026-11-27 22:20:00",
            ["22:05", "22:10", "22:15", "22:20"],
            "(UTC, 2026-11-27)",
        ),
        ("2026-11-23 10:00", "2026-11-27 22:00", ["Nov 24", "Nov 25", "Nov 26", "Nov 27"], "(UTC, 2026)"),
        ("2026-11-27 20:00", "2026-11-28 09:00", ["Nov 27 21:00", "Nov 28 00:00", "Nov 28 03:00"], "(UTC)"),
    ],
)
def test_time_ticks_fall_on_round_times_with_distinct_labels(
    low: str, high: str, labels: list[str], title: str
) -> None:
    ticks, axis_title = time_ticks(ns(low), ns(high))
    assert [text for _, text in ticks][: len(labels)] == labels
    assert axis_title.endswith(title)
    texts = [text for _, text in ticks]
    assert len(texts) == len(set(texts)) and 1 <= len(texts) <= 6
    assert all(ns(low) <= value <= ns(high) for value, _ in ticks)


def test_time_ticks_of_runs_within_a_second_or_over_years_stay_few_and_distinct() -> None:
    ticks, _ = time_ticks(ns("2026-11-27 22:04:10"), ns("2026-11-27 22:04:10.2"))
    assert len(ticks) == 1
    ticks, title = time_ticks(ns("2024-01-01"), ns("2026-06-01"))
    texts = [text for _, text in ticks]
    assert len(texts) <= 6 and len(set(texts)) == len(texts) and texts[0].startswith("2024-")
    assert title == "evaluated on (UTC)"


@pytest.mark.parametrize("n", [1, 4, 10, 11, 16, 20, 23])
def test_every_series_gets_its_own_colour(n: int) -> None:
    colours = series_colours(n)
    assert len(colours) == n == len(set(colours))
    assert all(len(c) == 7 and c.startswith("#") for c in colours)
    if n <= 10:
        assert colours == list(TABLEAU_10[:n])
    else:  # hue steps: neighbours in the legend are far apart on the wheel
        rgb = [tuple(int(c[i : i + 2], 16) for i in (1, 3, 5)) for c in colours]
        assert (
            min(sum(abs(a - b) for a, b in zip(x, y, strict=True)) for x, y in itertools.pairwise(rgb)) > 90
        )


def test_labels_go_where_they_cover_nothing_or_nowhere() -> None:
    area: Box = (0, 0, 800, 300)
    taken: list[Box] = [(391, 141, 409, 159)]  # the point itself
    spots = [place_label("recursive-400-50 × dense-top5", 400, 150, taken, area) for _ in range(8)]
    placed = [s for s in spots if s is not None]
    assert len(placed) >= 4 and len(taken) == 1 + len(placed)
    assert not any(overlaps(a, b) for a, b in itertools.combinations(taken, 2))
    # no room left near the point: no label rather than one on top of another
    crowded: list[Box] = [(0, 0, 800, 300)]
    assert place_label("x", 400, 150, crowded, area) is None and len(crowded) == 1
    # a label never leaves the plot
    edge = place_label("a-long-chunk-config-name", 795, 150, [], area)
    assert edge is not None and edge[2] == "end"
