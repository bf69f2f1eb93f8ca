"""What a step reads from the project, failing with a clear message on bad input: a chunk config or
profile by name, the names configured now, the settings files, the LLM, and the questions it evaluates."""

from __future__ import annotations

import dagster as dg
import pandas as pd

from ..core.errors import InputError
from ..core.evaluation.document_scope import DocumentScope
from ..core.generation.settings import GenerationSettings
from ..core.leaderboard.ranking import ConfiguredNames
from ..core.llm.client import LLMClient
from ..core.project.project_files import S
from ..core.questions.datasets import TokenLevelDataset
from ..core.settings.configs import ChunkConfig, RetrievalProfile
from ..core.settings.monitoring_settings import MonitoringSettings
from ..core.tables import questions_from_frame
from .evaluation_runs import EvaluationModeResource
from .resources import LLMResource, ProjectResource
from .step_failures import bad_input_failure, input_errors_fail_the_step

# The concurrency pool of every step that calls the LLM.
LLM_POOL = "llm"


def chunk_config_for(project: ProjectResource, name: str) -> ChunkConfig:
    with input_errors_fail_the_step():
        return project.load_configs().chunk_config(name)


def profile_for(project: ProjectResource, name: str) -> RetrievalProfile:
    with input_errors_fail_the_step():
        return project.load_configs().profile(name)


def configured_names(project: ProjectResource, log: dg.DagsterLogManager) -> ConfiguredNames | None:
    """The chunk configs and profiles configured now, for the summary assets that span every partition
    (removed ones included: their partitions and history are kept). None, with a warning, when the
    config files cannot be read: a summary still runs, it just cannot tell what was removed."""
    try:
        configs = project.load_configs()
    except InputError as exc:
        log.warning(f"the config files could not be read, so no partition counts as removed: {exc}")
        return None
    return ConfiguredNames(
        frozenset(c.name for c in configs.chunk_configs), frozenset(p.name for p in configs.profiles)
    )


def evaluated_questions(
    project: ProjectResource,
    evaluation: EvaluationModeResource,
    eval_questions: pd.DataFrame,
    chunk_config: str,
) -> TokenLevelDataset:
    """The questions this run evaluates: those the chunk config's documents answer (all of them for a
    config over the whole corpus: core/evaluation/document_scope.py), all or quick mode's seeded sample of them (the
    same in every asset of the partition, so retrieval, metrics and answers cover the same questions)."""
    questions = document_scope(project, chunk_config).questions(questions_from_frame(eval_questions))
    if not len(questions):
        raise bad_input_failure(
            f"{chunk_config} applies to documents no evaluation question is about (every question has a "
            f"reference elsewhere): add questions about its documents, or apply it to more documents "
            f"(`rag-eval chunk-configs apply {chunk_config} --document DOC`)"
        )
    with input_errors_fail_the_step():
        if evaluation.checked_mode() == "full":
            return questions
        return evaluation.select(questions, project.load_settings(MonitoringSettings).quick)


def document_scope(project: ProjectResource, chunk_config: str) -> DocumentScope:
    """The documents the chunk config covers (its ``documents``, else every document)."""
    return DocumentScope.of(chunk_config_for(project, chunk_config))


def step_settings(project: ProjectResource, cls: type[S]) -> S:
    """The project's settings file of ``cls`` (GenerationSettings, AnswerSettings, MonitoringSettings,
    SearchSettings), read inside a step: a broken file fails the step with its error, which names the
    file and the key, not with a stack trace. Every step reads its settings through here."""
    with input_errors_fail_the_step():
        return project.load_settings(cls)


def required_llm_client(
    project: ProjectResource, llm: LLMResource, needed_by: str, otherwise: str
) -> LLMClient:
    """The configured LLM, or a step failure saying who needs one and how to provide it."""
    with input_errors_fail_the_step():
        client = llm.client(step_settings(project, GenerationSettings).llm)
    if client is None:
        raise bad_input_failure(
            f"{needed_by}, but no LLM is configured: set OPENAI_API_KEY (and OPENAI_BASE_URL for another "
            f"server), install the local model with `make local-llm`, or {otherwise}"
        )
    return client
