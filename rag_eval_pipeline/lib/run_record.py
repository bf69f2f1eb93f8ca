"""The run record's facts the tech spec asks for, kept as Dagster run tags (so the UI, the GraphQL API and
`rag-eval status|list` read the same): how a run was triggered and by whom, the profiles it ran with,
and how many questions it evaluated.

- trigger and who: `rag-eval` tags its runs ``cli`` with ``user@host`` (``cli_trigger_tags``), or ``api``
  with the API token's name for the runs an HTTP request starts (`rag-eval serve`); Dagster
  tags the others itself (a schedule's, a sensor's, a backfill's, and none for a run launched from the
  UI or its API): ``trigger_of`` reads both.
- the profiles at run start: ``{name: "v<version> <hash>"}``, from the version ledger; the settings of
  each version are in data/profile_versions.json (`rag-eval profiles show NAME`). `rag-eval` tags them
  when it creates the run; an evaluation run started elsewhere tags its own when its first step reads
  its profile (``record_step_facts``).
- the questions: how many the partition's evaluation set holds, and how many a quick run sampled.
- a cancel request (`rag-eval cancel`): when and by whom.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Literal

import dagster as dg

from ..core.runs.caller import current_caller
from ..core.runs.run_tags import (
    API_TRIGGER,
    AUTOMATION_TAG,
    BACKFILL_TAG,
    CLI_TRIGGER,
    PROFILE_SNAPSHOT_TAG,
    QUESTION_COUNT_TAG,
    QUESTION_SAMPLE_TAG,
    SCHEDULE_TAG,
    SENSOR_TAG,
    TRIGGER_TAG,
    TRIGGERED_BY_TAG,
    USER_TAG,
)
from ..core.settings.configs import RetrievalProfile

Trigger = Literal["cli", "api", "schedule", "sensor", "ui"]


def cli_trigger_tags() -> dict[str, str]:
    """The tags of a run `rag-eval` creates: triggered from the command line, by this user on this host,
    or, for an HTTP API request (`rag-eval serve`), through the API by the token's name
    (core/runs/caller.py)."""
    caller = current_caller()
    return {TRIGGER_TAG: caller.trigger, TRIGGERED_BY_TAG: caller.who}


def profile_snapshot(profiles: Iterable[RetrievalProfile]) -> dict[str, str]:
    """The tag recording each profile's version and settings hash at run start."""
    snapshot = {p.name: f"v{p.version} {p.config_hash}" for p in profiles}
    return {PROFILE_SNAPSHOT_TAG: json.dumps(snapshot, sort_keys=True)}


@dataclass(frozen=True)
class RunFacts:
    """The record fields of one run, as its tags say (empty or None where a run does not say)."""

    trigger: Trigger
    triggered_by: str
    profiles: Mapping[str, str]  # name -> "v<version> <hash>"
    question_count: int | None
    sample_size: int | None

    @staticmethod
    def of(tags: Mapping[str, str]) -> RunFacts:
        trigger, by = trigger_of(tags)
        return RunFacts(
            trigger,
            by,
            snapshot_of(tags),
            _count(tags.get(QUESTION_COUNT_TAG)),
            _count(tags.get(QUESTION_SAMPLE_TAG)),
        )


def trigger_of(tags: Mapping[str, str]) -> tuple[Trigger, str]:
    """How a run was triggered and by whom or what: `rag-eval`'s own tag, else Dagster's."""
    if tags.get(TRIGGER_TAG) == CLI_TRIGGER:
        return "cli", tags.get(TRIGGERED_BY_TAG, "")
    if tags.get(TRIGGER_TAG) == API_TRIGGER:
        return "api", tags.get(TRIGGERED_BY_TAG, "")
    if SCHEDULE_TAG in tags:
        return "schedule", tags[SCHEDULE_TAG]
    if SENSOR_TAG in tags:
        return "sensor", tags[SENSOR_TAG]
    if AUTOMATION_TAG in tags:
        return "sensor", "automation"
    if BACKFILL_TAG in tags:
        return "ui", f"backfill {tags[BACKFILL_TAG]}" + (f" by {tags[USER_TAG]}" if USER_TAG in tags else "")
    return "ui", tags.get(USER_TAG, "launchpad or GraphQL API")


def snapshot_of(tags: Mapping[str, str]) -> dict[str, str]:
    try:
        value = json.loads(tags.get(PROFILE_SNAPSHOT_TAG, "{}"))
    except ValueError:
        return {}
    return {str(k): str(v) for k, v in value.items()} if isinstance(value, dict) else {}


def _count(text: str | None) -> int | None:
    return int(text) if text is not None and text.isdigit() else None


def record_step_facts(
    context: dg.AssetExecutionContext,
    profile: RetrievalProfile,
    question_count: int,
    sampled: int | None,
) -> None:
    """Tags the run an evaluation step executes in with the profile it read (unless the run was created
    with a snapshot) and the questions it evaluates: the record of a run the UI, a sensor or the
    schedule started says it too."""
    tags = {QUESTION_COUNT_TAG: str(question_count)}
    if sampled is not None:
        tags[QUESTION_SAMPLE_TAG] = str(sampled)
    if PROFILE_SNAPSHOT_TAG not in context.run.tags:
        tags.update(profile_snapshot([profile]))
    context.instance.add_run_tags(context.run.run_id, tags)
