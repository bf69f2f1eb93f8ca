"""`rag-eval regenerate-questions`: the ingestion job (synthetic_questions, eval_questions,
answer_calibration) again, in process, optionally with another token-level generator for this run only,
for every document or (tagged with them: lib/evaluation_runs.regenerate_tags) for some documents only,
keeping the questions of the others."""

from __future__ import annotations

import sys
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, get_args

import dagster as dg
import yaml

from ..core.errors import ConfigError
from ..core.generation.settings import GenerationSettings, TokenLevelGenerator
from ..core.runs.run_tags import EVALUATION_ID_TAG
from ..core.settings.settings_file import load_settings
from ..lib.evaluation_runs import regenerate_tags
from ..lib.resources import ProjectResource
from ..lib.run_record import cli_trigger_tags
from .in_process import QUIET_LOGS, execute_in_process, process_tags, run_warnings
from .plan import STAGE_JOBS
from .run_failures import RunFailure, failure_of_result


@dataclass(frozen=True)
class RegeneratedQuestions:
    run_id: str
    failure: RunFailure | None
    generator: str = ""
    accepted: int = 0
    rejected: int = 0
    rejected_by_reason: Mapping[str, int] = field(default_factory=dict)
    filters: str = ""  # what the generator's checks and each filter removed (Synthesized.describe_filters)
    evaluation_questions: int | None = None
    evaluate_on: str = ""
    documents: tuple[str, ...] | None = None  # None: every document
    generated: int = 0
    kept: int = 0
    question_count: str = ""  # how many questions were asked for, and why (before the filters)

    def record(self) -> dict[str, object]:
        """The run as one row of --format csv|json."""
        return {
            "run_id": self.run_id,
            "generator": self.generator,
            "accepted": self.accepted,
            "rejected": self.rejected,
            "documents": "all" if self.documents is None else list(self.documents),
            "generated": self.generated if self.documents is not None else self.accepted,
            "kept": self.kept,
            "evaluation_questions": self.evaluation_questions,
            "evaluate_on": self.evaluate_on,
        }

    def describe(self) -> str:
        if self.failure is not None:
            return f"regenerating the questions failed (run {self.run_id}): {self.failure}"
        reasons = ", ".join(f"{k} {v}" for k, v in sorted(self.rejected_by_reason.items()))
        lines = [f"asked for {self.question_count}"] if self.question_count else []
        lines += [
            f"synthetic_questions ({self.generator}): {self.accepted} accepted, {self.rejected} rejected"
            + (f" ({reasons})" if reasons else "")
        ]
        if self.filters:
            lines.append(f"removed by: {self.filters}")
        if self.documents is not None:
            lines.append(
                f"regenerated {len(self.documents)} document(s) ({', '.join(self.documents)}): "
                f"{self.generated} new questions, {self.kept} kept from the other documents"
            )
        lines += [
            f"eval_questions: {self.evaluation_questions} questions from the {self.evaluate_on} set",
        ]
        if self.evaluate_on == "golden":
            lines.append(
                "note: evaluate_on is golden in data/generation.yaml, so the evaluation does not use the "
                "synthetic questions; set it to synthetic or both to use them"
            )
        lines.append(f"run {self.run_id}")
        return "\n".join(lines)


def regenerate_questions(
    instance: dg.DagsterInstance,
    resources: Mapping[str, object] | None = None,
    generator: str | None = None,
    documents: Sequence[str] | None = None,
    evaluation_id: str | None = None,
) -> RegeneratedQuestions:
    """Re-materialize the ingestion job (synthetic_questions, eval_questions, answer_calibration) in
    process; ``generator`` overrides token_level.generator of data/generation.yaml for this run only;
    ``documents``: regenerate the questions of these documents only, keeping the others'.
    ``evaluation_id``: the id the run is tagged with (the HTTP API's request, so `GET /runs/{id}` and
    `rag-eval status ID` find it)."""
    from ..definitions import build_definitions

    base = dict(build_definitions(resources).resources or {})
    project = base["project"]
    assert isinstance(project, ProjectResource)
    with tempfile.TemporaryDirectory(prefix="rag-eval-generation-") as scratch:
        if generator is not None:
            base["project"] = _with_generator(project, generator, Path(scratch))
        job = build_definitions(base).resolve_job_def(STAGE_JOBS["ingestion"])
        result = execute_in_process(
            job,
            instance=instance,
            run_config=QUIET_LOGS,
            tags={
                **regenerate_tags(documents),
                **process_tags(),
                **cli_trigger_tags(),
                **({EVALUATION_ID_TAG: evaluation_id} if evaluation_id else {}),
            },
            raise_on_error=False,
        )
    for line in run_warnings(instance, result.run_id):
        print(f"warning: {line}", file=sys.stderr)
    if not result.success:
        return RegeneratedQuestions(result.run_id, failure_of_result(result))
    synthetic = _metadata(result, "synthetic_questions")
    evaluated = _metadata(result, "eval_questions")
    return RegeneratedQuestions(
        run_id=result.run_id,
        failure=None,
        generator=str(synthetic["generator"]),
        accepted=int(synthetic["n_questions"]),
        rejected=int(synthetic["n_rejected"]),
        rejected_by_reason={str(k): int(v) for k, v in dict(synthetic["rejected_by_reason"]).items()},
        filters=str(synthetic.get("filters", "")),
        evaluation_questions=int(evaluated["n_questions"]),
        evaluate_on=str(evaluated["evaluate_on"]),
        documents=None if documents is None else tuple(documents),
        generated=int(synthetic.get("questions_generated", 0)),
        kept=int(synthetic.get("questions_kept", 0)),
        question_count=str(synthetic.get("question_count", "")),
    )


def _with_generator(project: ProjectResource, generator: str, scratch: Path) -> ProjectResource:
    """The project with a copy of its generation settings whose token-level generator is replaced."""
    generators: tuple[str, ...] = get_args(TokenLevelGenerator)
    if generator not in generators:
        raise ConfigError(f"--generator must be one of {', '.join(generators)}, got {generator!r}")
    source = project.path(project.generation_file)
    load_settings(source, GenerationSettings)  # a broken file fails here, under its own name
    document = (yaml.safe_load(source.read_text(encoding="utf-8")) if source.exists() else None) or {}
    token_level = dict(document.get("token_level") or {})
    token_level["generator"] = generator
    document["token_level"] = token_level
    copy = scratch / "generation.yaml"
    copy.write_text(yaml.safe_dump(document, sort_keys=False, allow_unicode=True), encoding="utf-8")
    return type(project)(**{**project.model_dump(), "generation_file": str(copy)})


def _metadata(result: dg.ExecuteInProcessResult, asset: str) -> dict[str, Any]:
    materializations = result.asset_materializations_for_node(asset)
    if not materializations:
        return {}
    return {k: getattr(v, "value", v) for k, v in materializations[-1].metadata.items()}
