"""The id of one evaluation (all the Dagster runs of one `rag-eval run`): its runs carry it as a tag and
its history rows as ``evaluation_id``, so `rag-eval status`, `compare` and the UI see them as one."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime


def new_evaluation_id() -> str:
    """Sortable and readable: eval-20261122T020000-1a2b3c."""
    return f"eval-{datetime.now(UTC):%Y%m%dT%H%M%S}-{uuid.uuid4().hex[:6]}"


def nightly_evaluation_id(scheduled: datetime) -> str:
    """The same for every tick of one scheduled time (nightly-20261122T0200), so its run keys make a
    retried tick a no-op."""
    return f"nightly-{scheduled:%Y%m%dT%H%M}"
