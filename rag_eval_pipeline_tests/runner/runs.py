"""Small runs on a test instance, named and tagged like the pipeline's (a job of one op that succeeds or
fails), and the history rows their evaluation would have written: what status, list and resume read."""

import uuid
from pathlib import Path

import dagster as dg
import pandas as pd

from rag_eval_pipeline.core.runs.run_tags import MULTI_PARTITION_TAG_PREFIX, PARTITION_TAG
from rag_eval_pipeline.core.store.warehouse import RETRIEVAL_SUMMARY, Warehouse


@dg.op
def succeeds() -> None:
    pass


@dg.op
def fails() -> None:
    raise dg.Failure("the reranker folder models/missing does not exist: fix the profile")


def job(name: str, op: dg.OpDefinition) -> dg.JobDefinition:
    @dg.job(name=name)
    def made() -> None:
        op()

    return made


def run(instance: dg.DagsterInstance, name: str, tags: dict[str, str], ok: bool = True) -> str:
    result = job(name, succeeds if ok else fails).execute_in_process(
        instance=instance, tags=tags, raise_on_error=False
    )
    return result.run_id


def summary_row(warehouse: Path, run_id: str, chunk_config: str, profile: str, **extra: object) -> None:
    """A retrieval_metrics_summary history file as retrieval_metrics writes it (older ones lack
    evaluation_id and evaluation_mode)."""
    row = {"run_id": run_id, "chunk_config": chunk_config, "profile": profile, "n_questions": 3, **extra}
    for metric, mean in (("span_recall", 0.9), ("span_iou", 0.4), ("recall_at_k", 0.8), ("mrr", 0.7)):
        row |= {f"{metric}_mean": mean, f"{metric}_ci_low": mean - 0.1, f"{metric}_ci_high": mean + 0.05}
    partition = {"chunk_config": chunk_config, "profile": profile}
    Warehouse(warehouse).write_history(pd.DataFrame([row]), RETRIEVAL_SUMMARY, partition, run_id)


def partition(key: str) -> dict[str, str]:
    config, profile = key.split("|")
    return {
        PARTITION_TAG: key,
        f"{MULTI_PARTITION_TAG_PREFIX}chunk_config": config,
        f"{MULTI_PARTITION_TAG_PREFIX}profile": profile,
    }


def started_run(instance: dg.DagsterInstance, name: str, tags: dict[str, str]) -> dg.DagsterRun:
    """A run the instance has as STARTED, as a process leaves it that is killed while executing it."""
    return instance.add_run(
        dg.DagsterRun(job_name=name, run_id=str(uuid.uuid4()), status=dg.DagsterRunStatus.STARTED, tags=tags)
    )
