"""The jobs' executor chosen by run config: in the run's process, or each step on a Dask worker under a
slot of its pool claimed on the instance (a Dask cluster of worker threads in this process; the slow
test_distributed.py runs worker processes on PostgreSQL)."""

# no `from __future__ import annotations`: Dagster reads the op context's annotation at definition

import threading
from collections.abc import Iterator
from typing import Any

import dagster as dg
import pytest

from rag_eval_pipeline.lib.executor import DASK_SCHEDULER_ENV, dask_run_config, rag_eval_executor
from rag_eval_pipeline_tests.instances import instance_for_tests

MAIN_THREAD = threading.main_thread().ident


@dg.op
def where() -> int | None:
    """The thread the step ran in."""
    return threading.get_ident()


@dg.op(pool="llm")
def in_pool(context: dg.OpExecutionContext, upstream: int | None) -> list[str]:
    """The steps holding a slot of the pool ``llm`` while this one runs."""
    del upstream
    info = context.instance.event_log_storage.get_concurrency_info("llm")
    return [slot.step_key for slot in info.claimed_slots]


@dg.job(executor_def=rag_eval_executor)
def two_steps() -> None:
    in_pool(where())


def two_steps_job() -> dg.JobDefinition:
    return two_steps


@pytest.fixture
def instance(tmp_path: Any) -> Iterator[dg.DagsterInstance]:
    overrides = {"concurrency": {"pools": {"default_limit": 1}}}
    with instance_for_tests(temp_dir=str(tmp_path), overrides=overrides) as instance:
        yield instance


def run(instance: dg.DagsterInstance, run_config: dict[str, Any]) -> dict[str, Any]:
    """The job executed as the instance executes a launched run; its steps' outputs by step."""
    with dg.execute_job(dg.reconstructable(two_steps_job), instance, run_config=run_config) as result:
        assert result.success
        return {step: result.output_for_node(step) for step in ("where", "in_pool")}


def test_by_default_and_with_in_process_the_steps_run_in_the_run_s_process(
    instance: dg.DagsterInstance, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.delenv(DASK_SCHEDULER_ENV, raising=False)
    for run_config in ({}, {"execution": {"config": {"in_process": {}}}}):
        result = run(instance, run_config)
        assert result["where"] == MAIN_THREAD


def test_naming_both_executors_is_refused(instance: dg.DagsterInstance):
    both = {"execution": {"config": {"in_process": {}, "dask": {"address": "tcp://127.0.0.1:1"}}}}
    with pytest.raises(dg.DagsterInvalidConfigError, match="names both in_process and dask"):
        dg.execute_job(dg.reconstructable(two_steps_job), instance, run_config=both, raise_on_error=True)


@pytest.mark.parametrize("by", ["run config", "environment"])
def test_with_dask_each_step_runs_on_a_worker_under_a_slot_of_its_pool(
    instance: dg.DagsterInstance, monkeypatch: pytest.MonkeyPatch, by: str
):
    from dask.distributed import LocalCluster

    with LocalCluster(n_workers=1, threads_per_worker=1, processes=False, dashboard_address=None) as cluster:
        if by == "environment":
            monkeypatch.setenv(DASK_SCHEDULER_ENV, cluster.scheduler_address)
            result = run(instance, {})
        else:
            monkeypatch.delenv(DASK_SCHEDULER_ENV, raising=False)
            result = run(instance, dask_run_config(cluster.scheduler_address))
    assert result["where"] != MAIN_THREAD  # a worker's thread
    # the pooled step held the pool's one slot (claimed on the worker), and gave it back
    assert result["in_pool"] == ["in_pool"]
    info = instance.event_log_storage.get_concurrency_info("llm")
    assert info.slot_count == 1 and info.claimed_slots == []
