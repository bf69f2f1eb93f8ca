"""Which question sets a step's evaluation uses (core/generation/sources.py), read from the project: the
same decision in ``synthetic_questions`` (compute or skip) and ``eval_questions`` (what to load)."""

from __future__ import annotations

from ..core.generation.settings import GenerationSettings
from ..core.generation.sources import QuestionSources
from .resources import ProjectResource
from .step_failures import input_errors_fail_the_step


def question_sources_for(project: ProjectResource, settings: GenerationSettings) -> QuestionSources:
    """ProjectFiles.question_sources; a named golden file that is missing fails the step as bad input."""
    with input_errors_fail_the_step():
        return project.files().question_sources(settings)
