"""One judge's word on one query: every judgement they made of it, layered by what each one read.

A judge may judge a query more than once: again over the whole pool (a change of mind), over only the
passages a new chunk config added, or, for the LLM judge, one passage per judgement. So the judgements
of a (query, judge) are layered in the order made: a later judgement overrides the earlier ones on the
text it read, and leaves their word on the text it did not read. Re-judging everything replaces
everything; judging the new passages adds to what was judged; an LLM judge's per-passage judgements add
up, and a passage graded again keeps its latest grade.

Judgements are expected re-anchored (core/judging/reanchor.py) and stale ones left out.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from ..spans import Merged, merge_intervals
from .intervals import subtract, union
from .types import RELEVANT_GRADE, JudgeKind, Judgement, JudgeName, QueryId, Verdict


@dataclass(frozen=True)
class JudgeView:
    """What one judge said about one query, all their judgements together.

    ``read``: every character they read; ``spans``: the answering text still standing (merged);
    ``relevant``: the text they hold relevant, for agreement: a person's spans; for an LLM judgement
    with a grade, the whole range it graded when the grade is at least RELEVANT_GRADE (its spans
    otherwise). ``verdict`` is ``answers`` while an answering span stands, else the latest verdict."""

    query_id: QueryId
    judge: JudgeName
    kind: JudgeKind
    verdict: Verdict
    read: Merged
    spans: Merged
    relevant: Merged
    judged_at: str  # the latest judgement's time
    judgements: tuple[Judgement, ...]


def judge_views(judgements: Iterable[Judgement]) -> dict[QueryId, list[JudgeView]]:
    """Per query (in the order first judged), one view per judge (sorted by name)."""
    grouped: dict[QueryId, dict[JudgeName, list[Judgement]]] = {}
    for judgement in judgements:
        grouped.setdefault(judgement.query_id, {}).setdefault(judgement.judge, []).append(judgement)
    return {
        query_id: [_view(by_judge[judge]) for judge in sorted(by_judge)]
        for query_id, by_judge in grouped.items()
    }


def read_by_query(views: Mapping[QueryId, list[JudgeView]]) -> dict[QueryId, Merged]:
    """Every character some judge read, per query."""
    return {q: union(*(v.read for v in vs)) for q, vs in views.items()}


def _view(judgements: list[Judgement]) -> JudgeView:
    read: Merged = {}
    spans: Merged = {}
    relevant: Merged = {}
    # newest first: each judgement keeps only what no later judgement of the same judge read
    for judgement in reversed(judgements):
        own_spans = merge_intervals(judgement.spans)
        own_read = union(merge_intervals(judgement.read), own_spans)  # a span selected was read
        if judgement.kind == "llm" and judgement.grade is not None:
            own_relevant = own_read if judgement.grade >= RELEVANT_GRADE else {}
        else:
            own_relevant = own_spans
        spans = union(spans, subtract(own_spans, read))
        relevant = union(relevant, subtract(own_relevant, read))
        read = union(read, own_read)
    latest = judgements[-1]
    return JudgeView(
        latest.query_id,
        latest.judge,
        latest.kind,
        "answers" if spans else latest.verdict,
        read,
        spans,
        relevant,
        max(j.judged_at for j in judgements),
        tuple(judgements),
    )
