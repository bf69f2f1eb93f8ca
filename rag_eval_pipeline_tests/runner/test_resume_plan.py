"""What `rag-eval run --resume` plans: the runs an evaluation still lacks, after failing the runs whose
process is gone; it refuses while a run of the evaluation is alive."""

import dataclasses
from pathlib import Path

import dagster as dg
import pytest

from rag_eval_pipeline.core.errors import InputError
from rag_eval_pipeline.core.project.project_files import ProjectFiles
from rag_eval_pipeline.core.runs.processes import ProcessIdentity
from rag_eval_pipeline.core.runs.run_tags import EVALUATION_ID_TAG, MODE_TAG, PARTITION_TAG, PROCESS_TAG
from rag_eval_pipeline.runner.plan import EvaluationRequest
from rag_eval_pipeline.runner.resume import plan_resume
from rag_eval_pipeline.runner.run_failures import failure_of_run
from rag_eval_pipeline.runner.run_status import UnknownReference
from rag_eval_pipeline_tests.instances import instance_for_tests
from rag_eval_pipeline_tests.runner.runs import partition, run, started_run


def test_resume_marks_dead_runs_failed_refuses_live_ones_and_replans_untagged_evaluations(
    tiny_project: Path,
) -> None:
    configs = ProjectFiles(tiny_project).load_configs()
    me = ProcessIdentity.current()
    with instance_for_tests() as instance:
        # the nightly schedule's evaluations carry no selection: they resume the runs they made
        nightly = {EVALUATION_ID_TAG: "nightly-1", MODE_TAG: "quick"}
        run(instance, "evaluation_job", nightly | partition("fixed-60-0|top2"))
        run(instance, "evaluation_job", nightly | partition("fixed-60-0|top4"), ok=False)
        resume = plan_resume(instance, "nightly-1", configs)
        assert [r.label for r in resume.to_run] == ["evaluate fixed-60-0 x top4", "leaderboard"]
        assert (resume.request.mode, resume.evaluated_before) == ("quick", True)
        assert EvaluationRequest.of_tags(resume.request.tags()) is None  # still replanned from runs

        # a run whose process is gone (here: the pid now belongs to a process started later) is failed
        planned = EvaluationRequest("eval-k", "full", ("fixed-60-0",), ("top2",))
        dead = dataclasses.replace(me, start_ticks=str(int(me.start_ticks) - 1)).to_text()
        for job_name in ("ingestion_job", "chunking_job"):
            run(
                instance,
                job_name,
                planned.tags() | ({PARTITION_TAG: "fixed-60-0"} if "chunk" in job_name else {}),
            )
        killed = started_run(
            instance, "evaluation_job", planned.tags() | partition("fixed-60-0|top2") | {PROCESS_TAG: dead}
        )
        resume = plan_resume(instance, "eval-k", configs)
        assert [r.label for r in resume.to_run] == ["evaluate fixed-60-0 x top2", "leaderboard"]
        assert resume.evaluated_before is False
        assert instance.get_run_by_id(killed.run_id).status == dg.DagsterRunStatus.FAILURE
        assert "is gone" in str(failure_of_run(instance, killed.run_id))

        # a run whose process lives (this one) is in progress: no resume races it
        started_run(instance, "leaderboard_job", planned.tags() | {PROCESS_TAG: me.to_text()})
        with pytest.raises(InputError, match="still has 1 run"):
            plan_resume(instance, "eval-k", configs)
        with pytest.raises(UnknownReference, match="no evaluation 'eval-nope'"):
            plan_resume(instance, "eval-nope", configs)
