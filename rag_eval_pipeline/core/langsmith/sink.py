"""An evaluation's results as a LangSmith experiment: one run per question, one feedback per metric.

Used as the ``experiment`` of ``TokenLevelEvaluation.run`` / ``ChunkLevelEvaluation.run`` and by the
Dagster metrics asset. A LangSmith failure is kept in ``error`` and the URL is None: the evaluation
itself never fails because of LangSmith.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ..evaluation.evaluation import EvaluationResult
from ..types import QuestionId
from .errors import LangSmithError
from .experiments import ExperimentReport, ExperimentRow, log_experiment

if TYPE_CHECKING:  # langsmith takes about 0.4 s to import: only where LangSmith is used
    from langsmith import Client


class LangSmithExperimentSink:
    def __init__(
        self,
        client: Client,
        dataset_name: str,
        experiment_name: str,
        metadata: Mapping[str, Any] | None = None,
    ) -> None:
        self.client = client
        self.dataset_name = dataset_name
        self.experiment_name = experiment_name
        self.metadata = dict(metadata or {})
        self.report: ExperimentReport | None = None
        self.error: str | None = None

    def __call__(self, result: EvaluationResult) -> str | None:
        rows = [
            ExperimentRow(
                r.question_id,
                {
                    "retrieved": [
                        {"chunk_id": h.chunk_id, "doc_id": h.doc_id, "start": h.start, "end": h.end}
                        for h in r.retrieved
                    ]
                },
                dict(r.metrics),
            )
            for r in result.raw_results
        ]
        return self.log(rows)

    def log(self, rows: Sequence[ExperimentRow]) -> str | None:
        try:
            self.report = log_experiment(
                self.client, self.dataset_name, self.experiment_name, rows, self.metadata
            )
        except LangSmithError as exc:
            self.error = str(exc)
            return None
        return self.report.url


def experiment_rows(
    scores: Mapping[QuestionId, Mapping[str, float]], outputs: Mapping[QuestionId, Mapping[str, Any]]
) -> list[ExperimentRow]:
    return [ExperimentRow(qid, dict(outputs.get(qid, {})), dict(values)) for qid, values in scores.items()]
