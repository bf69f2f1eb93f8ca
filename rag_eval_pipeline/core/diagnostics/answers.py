"""What each answer did with its retrieved chunks, for the answer stages of the attribution: the chunks
it cited and whether it was judged correct.

The verdict is the first method in ``VERDICT_METHODS`` whose outcome is ok for that answer: ``hybrid``
(the similarity, with the LLM judge deciding near the threshold: the most careful, when an LLM judges),
then ``keyword`` (every expected keyword present: on the bundled labels it agrees with people most
often offline, kappa 0.70), then ``semantic_dynamic``. A value of 1 is correct, 0 wrong. An answer no
method judged (no reference answer, no keywords) has no verdict; a failed answer cited nothing.
"""

from __future__ import annotations

import pandas as pd

from ..errors import InputError
from ..metrics.names import HYBRID, KEYWORD, SEMANTIC_DYNAMIC
from ..tables import records
from ..types import ChunkId, QuestionId
from .attribution import AnswerOutcome

VERDICT_METHODS = (HYBRID, KEYWORD, SEMANTIC_DYNAMIC)


def answer_outcomes(answers: pd.DataFrame, answer_metrics: pd.DataFrame) -> dict[QuestionId, AnswerOutcome]:
    """Per question of the ``answers`` table, its cited chunks and verdict (see the module)."""
    _require(answers, "answers", ("question_id", "cited_chunk_ids", "status"))
    verdict_columns = [c for m in VERDICT_METHODS for c in (m, f"{m}_status")]
    _require(answer_metrics, "answer_metrics", ("question_id", *verdict_columns))
    verdicts = {str(r["question_id"]): r for r in records(answer_metrics[["question_id", *verdict_columns]])}
    outcomes: dict[QuestionId, AnswerOutcome] = {}
    for row in records(answers[["question_id", "cited_chunk_ids", "status"]]):
        qid = QuestionId(str(row["question_id"]))
        if row["status"] != "ok":
            outcomes[qid] = AnswerOutcome(frozenset(), None, "answer failed")
            continue
        cited = frozenset(ChunkId(str(c)) for c in row["cited_chunk_ids"])
        judged = verdicts.get(qid)
        method = next(
            (m for m in VERDICT_METHODS if judged is not None and judged[f"{m}_status"] == "ok"), None
        )
        if method is None or judged is None:
            outcomes[qid] = AnswerOutcome(cited, None, "no verdict")
        else:
            outcomes[qid] = AnswerOutcome(cited, float(judged[method]) >= 0.5, method)
    return outcomes


def _require(frame: pd.DataFrame, table: str, columns: tuple[str, ...]) -> None:
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise InputError(
            f"the {table} table has no column {', '.join(missing)} (written by an older version?): "
            f"materialize {table} again"
        )
