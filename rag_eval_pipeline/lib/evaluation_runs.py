"""What ties the many Dagster runs of one evaluation together, and how a run picks quick or full mode.

An evaluation over every partition is one Dagster run per partition; they share the run tag
``rag_eval/evaluation_id`` (core/runs/evaluation_ids.py; set by `rag-eval run` and the nightly schedule),
which history rows carry as ``evaluation_id`` so `rag-eval compare` can compare whole evaluations.
Quick mode is chosen by run config on the ``evaluation`` resource, so the launchpad, schedules and
the CLI all select it the same way: ``{"resources": {"evaluation": {"config": {"mode": "quick"}}}}``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

import dagster as dg
from pydantic import Field

from ..core.errors import ConfigError
from ..core.questions.datasets import TokenLevelDataset
from ..core.questions.sampling import sample_questions
from ..core.runs.run_tags import (
    COMMAND_TAG,
    EVALUATION_ID_TAG,
    MODE_TAG,
    REGENERATE_COMMAND,
    REGENERATE_DOCUMENTS_TAG,
)
from ..core.settings.monitoring_settings import EVALUATION_MODES, EvaluationMode, QuickSettings


def documents_to_regenerate(tags: Mapping[str, str]) -> tuple[str, ...] | None:
    """The documents a regenerate run is about (None: every document), from its tag; a tag that is not a
    non-empty JSON list of document ids is bad input naming it."""
    text = tags.get(REGENERATE_DOCUMENTS_TAG)
    if text is None:
        return None
    try:
        value = json.loads(text)
    except ValueError:
        value = None
    if not isinstance(value, list) or not value or not all(isinstance(d, str) and d for d in value):
        raise ConfigError(
            f"run tag {REGENERATE_DOCUMENTS_TAG} must be a JSON list of document ids, e.g. "
            f'["ops/on_call.md"]; got {text!r}'
        )
    return tuple(dict.fromkeys(value))


def regenerate_tags(documents: Sequence[str] | None = None) -> dict[str, str]:
    """The tags of a regenerate run (of every document, or of ``documents`` only)."""
    tags = {COMMAND_TAG: REGENERATE_COMMAND}
    if documents is not None:
        tags[REGENERATE_DOCUMENTS_TAG] = json.dumps(list(documents), ensure_ascii=False)
    return tags


class EvaluationModeResource(dg.ConfigurableResource):
    """full: every question; quick: a seeded sample (data/monitoring.yaml `quick`, or these fields)."""

    mode: str = Field(default="full", description="full | quick")
    sample_size: int | None = Field(default=None, description="quick mode: questions (default: settings)")
    seed: int | None = Field(default=None, description="quick mode: sample seed (default: settings)")

    def checked_mode(self) -> EvaluationMode:
        if self.mode not in EVALUATION_MODES:
            raise ConfigError(
                f"run config resources.evaluation.config.mode must be one of {', '.join(EVALUATION_MODES)}, "
                f"got {self.mode!r}"
            )
        return "quick" if self.mode == "quick" else "full"

    def select(self, dataset: TokenLevelDataset, quick: QuickSettings) -> TokenLevelDataset:
        """The questions this run evaluates: all of them, or quick mode's sample."""
        if self.checked_mode() == "full":
            return dataset
        size = self.sample_size if self.sample_size is not None else quick.sample_size
        seed = self.seed if self.seed is not None else quick.seed
        if size < 1:
            raise ConfigError(f"resources.evaluation.config.sample_size must be >= 1, got {size}")
        return sample_questions(dataset, size, seed)


def evaluation_run_config(mode: EvaluationMode = "full", sample_size: int | None = None) -> dict[str, Any]:
    config: dict[str, Any] = {"mode": mode}
    if sample_size is not None:
        config["sample_size"] = sample_size
    return {"resources": {"evaluation": {"config": config}}}


def evaluation_config_of(run_config: Mapping[str, Any]) -> dict[str, Any]:
    """What the ``evaluation`` resource of a run's config asks for, defaults filled in: two runs with
    equal ones evaluated the same questions (runner and lib/freshness.py compare them)."""
    config = run_config.get("resources", {}).get("evaluation", {}).get("config", {}) or {}
    return {
        "mode": config.get("mode", "full"),
        "sample_size": config.get("sample_size"),
        "seed": config.get("seed"),
    }


def evaluation_tags(evaluation_id: str, mode: EvaluationMode) -> dict[str, str]:
    return {EVALUATION_ID_TAG: evaluation_id, MODE_TAG: mode}


def evaluation_id_of(run: dg.DagsterRun) -> str:
    """The evaluation a run belongs to; a run launched on its own is an evaluation of one partition."""
    return run.tags.get(EVALUATION_ID_TAG) or run.run_id


def superseded_runs(instance: dg.DagsterInstance, run: dg.DagsterRun) -> tuple[str, ...]:
    """The other runs of ``run``'s evaluation (none outside one): a table partition ``run`` writes
    replaces their history of it (core/store/warehouse.py), so `run --resume` does not count it twice.

    Looked up once a run (a partition's run writes eight tables): the runs it replaces were created
    before it; one of its evaluation created later is newer and must keep its files anyway."""
    evaluation_id = run.tags.get(EVALUATION_ID_TAG)
    if not evaluation_id:
        return ()
    key = (run.run_id, evaluation_id)
    if key not in _SUPERSEDED:
        filters = dg.RunsFilter(tags={EVALUATION_ID_TAG: evaluation_id})
        _SUPERSEDED[key] = tuple(r for r in instance.get_run_ids(filters) if r != run.run_id)
        while len(_SUPERSEDED) > REMEMBERED_RUNS:
            del _SUPERSEDED[next(iter(_SUPERSEDED))]  # the oldest first
    return _SUPERSEDED[key]


# (run id, evaluation id) -> ``superseded_runs``, for the runs this process executed most recently
REMEMBERED_RUNS = 64
_SUPERSEDED: dict[tuple[str, str], tuple[str, ...]] = {}
