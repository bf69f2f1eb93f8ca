"""A table's data version is its content: who ran it, when, and how long it took do not change it."""

from __future__ import annotations

import pandas as pd

from rag_eval_pipeline.lib.provenance import content_version


def test_latencies_and_run_ids_leave_the_data_version_alone():
    rows = {"question_id": ["q1", "q2"], "chunk_id": ["c1", "c2"], "rank": [1, 1]}
    first = pd.DataFrame({**rows, "run_id": ["a", "a"], "search_ms": [1.5, 2.0], "latency_ms": [1.5, 2.0]})
    again = pd.DataFrame({**rows, "run_id": ["b", "b"], "search_ms": [9.0, 0.5], "latency_ms": [9.0, 0.5]})
    assert content_version(first) == content_version(again)
    changed = again.assign(chunk_id=["c1", "c3"])
    assert content_version(changed) != content_version(first)


def test_any_table_gets_a_version_by_its_content_also_one_arrow_cannot_hold():
    """Tables are hashed as Arrow writes them; a column of mixed cells (no Arrow type) by its text."""
    lists = pd.DataFrame({"chunk_ids": [["c1", "c2"], []], "score": [0.5, None]}, index=[7, 3])
    assert content_version(lists) == content_version(lists.reset_index(drop=True).copy())
    assert content_version(lists) != content_version(lists.assign(chunk_ids=[["c1"], []]))
    mixed = pd.DataFrame({"value": [1, "one", 2.5], "rank": [1, 2, 3]})
    assert content_version(mixed) == content_version(mixed.copy())
    assert content_version(mixed) != content_version(mixed.assign(value=[1, "two", 2.5]))
