"""The runner's in-process execution: a job's in-process form is built once for its runs (Dagster built
it, and the run's snapshot from it, at every run), and a run of every asset of its job selects none."""

from __future__ import annotations

from typing import Any

import dagster as dg
import pytest

from rag_eval_pipeline.lib.stages import JOB_ASSETS
from rag_eval_pipeline.runner.in_process import execute_in_process, run_selection
from rag_eval_pipeline.runner.plan import PlannedRun
from rag_eval_pipeline_tests.instances import instance_for_tests


@dg.asset
def first() -> int:
    return 1


@dg.asset
def second(first: int) -> int:
    return first + 1


class Offset(dg.ConfigurableResource):
    by: int = 0


@dg.asset
def shifted(offset: Offset) -> int:
    return 10 + offset.by


def test_a_jobs_in_process_form_is_built_once_for_its_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    built: list[tuple[object, object]] = []
    build = dg.JobDefinition.as_ephemeral_job

    def counting(self: dg.JobDefinition, *args: Any, **kwargs: Any) -> dg.JobDefinition:
        built.append((kwargs.get("asset_selection"), kwargs.get("resource_defs")))
        return build(self, *args, **kwargs)

    monkeypatch.setattr(dg.JobDefinition, "as_ephemeral_job", counting)
    defs = dg.Definitions(
        assets=[first, second, shifted],
        jobs=[dg.define_asset_job("pair", ["first", "second"]), dg.define_asset_job("one", ["shifted"])],
        resources={"offset": Offset()},
    )
    pair, one = defs.resolve_job_def("pair"), defs.resolve_job_def("one")
    with instance_for_tests() as instance:
        runs = [execute_in_process(pair, instance=instance) for _ in range(3)]
        assert [r.output_for_node("second") for r in runs] == [2, 2, 2]
        assert len(built) == 1  # three runs, one in-process job (and so one snapshot)
        only = [
            execute_in_process(pair, instance=instance, asset_selection=[dg.AssetKey("first")]) for _ in "ab"
        ]
        assert all(r.success for r in only) and len(built) == 2  # one more for the selection, kept too
        recorded = instance.get_run_by_id(only[1].run_id)
        assert recorded is not None and recorded.asset_selection == {dg.AssetKey("first")}
        assert execute_in_process(one, instance=instance).output_for_node("shifted") == 10
        assert len(built) == 3  # each job its own
        # resources given with a run are that run's alone: its in-process job is not kept
        given = [
            execute_in_process(one, instance=instance, resources={"offset": Offset(by=n)}) for n in (1, 2)
        ]
        assert [r.output_for_node("shifted") for r in given] == [11, 12] and len(built) == 5
        assert execute_in_process(one, instance=instance).output_for_node("shifted") == 10


def test_a_run_of_every_asset_of_its_job_selects_none() -> None:
    planned = PlannedRun.of("evaluation", "fixed-60-0", "top4")
    every = JOB_ASSETS[planned.job_name]
    assert run_selection(planned, every) is None
    assert run_selection(planned, reversed(every)) is None
    assert run_selection(planned, ["answers", "answer_metrics"]) == [
        dg.AssetKey("answer_metrics"),
        dg.AssetKey("answers"),
    ]
