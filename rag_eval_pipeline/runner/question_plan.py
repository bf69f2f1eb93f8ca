"""`rag-eval questions plan`: the project's files, embedder and a throwaway index for the pilot that
core/evaluation/question_plan.py plans from. No Dagster run: the embedder is the one a run would use (the
resource of lib/resources.py, its environment variables and embedding cache), built here directly."""

from __future__ import annotations

import tempfile

import dagster as dg

from ..core.errors import DatasetError
from ..core.evaluation.question_plan import QuestionPlan, QuestionSets, check_detect, plan_questions
from ..core.generation.settings import GenerationSettings
from ..core.progress import Progress, no_progress
from ..core.project.project_files import ProjectFiles
from ..core.questions.datasets import read_jsonl_objects
from ..core.settings.configs import load_pipeline_configs
from ..core.settings.monitoring_settings import MonitoringSettings
from ..core.vector_store.edge import EdgeVectorStore
from ..lib.resources import default_resources


def plan_for_project(
    files: ProjectFiles, detect: float, pilot_size: int | None = None, progress: Progress = no_progress
) -> QuestionPlan:
    """The plan for the project's documents, configs and settings; a file that cannot be read is an
    ``InputError`` naming it, before anything is embedded."""
    check_detect(detect)
    generation = files.load_settings(GenerationSettings)
    leaderboard = files.load_settings(MonitoringSettings).leaderboard
    # the config files as they are: the profile version ledger is a run's to write
    configs = load_pipeline_configs(files.path(files.chunk_configs_file), files.path(files.profiles_file))
    corpus = files.load_corpus()
    sets = question_sets(files, generation)
    with (
        dg.build_resources({"embedder": default_resources()["embedder"]}) as resources,
        tempfile.TemporaryDirectory(prefix="rag-eval-plan-") as folder,
    ):
        store = EdgeVectorStore(folder)
        try:
            return plan_questions(
                corpus,
                configs,
                generation.token_level,
                leaderboard,
                sets,
                resources.embedder.get(progress),
                store,
                detect=detect,
                pilot_size=pilot_size,
                root=files.root,
                progress=progress,
            )
        finally:
            store.close()


def question_sets(files: ProjectFiles, generation: GenerationSettings) -> QuestionSets:
    """What the evaluation uses now (core/generation/sources.py), counted; a golden file asked for and
    missing is what the plan is for (how many to write or import), said, not an error."""
    golden_file = str(files.golden_dataset)
    try:
        sources = files.question_sources(generation)
        golden = sum(1 for _ in read_jsonl_objects(sources.golden_file)) if sources.golden else None
    except DatasetError as exc:  # missing, or holding no question yet
        return QuestionSets(None, golden_file, False, problem=str(exc))
    return QuestionSets(golden, golden_file, sources.synthetic)
