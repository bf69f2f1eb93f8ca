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
