"""An evaluation id reads as the time it was made, and two made in the same second differ; a nightly
one is the same for every tick of one scheduled time."""

import re
from datetime import UTC, datetime

from rag_eval_pipeline.core.runs.evaluation_ids import new_evaluation_id, nightly_evaluation_id


def test_an_evaluation_id_reads_as_its_time_and_is_unique() -> None:
    first, second = new_evaluation_id(), new_evaluation_id()
    assert re.fullmatch(r"eval-\d{8}T\d{6}-[0-9a-f]{6}", first)
    assert first != second


def test_a_nightly_id_is_its_scheduled_time() -> None:
    night = datetime(2026, 11, 22, 2, 0, 30, tzinfo=UTC)
    assert nightly_evaluation_id(night) == nightly_evaluation_id(night) == "nightly-20261122T0200"
