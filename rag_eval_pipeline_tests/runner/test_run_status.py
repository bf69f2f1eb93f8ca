"""`rag-eval status` and `list` over runs made here: runs grouped by evaluation (older runs without an
evaluation id are one of their own), failures with their cause, the metrics each evaluation wrote."""

from pathlib import Path

import pytest

from rag_eval_pipeline.core.runs.run_tags import EVALUATION_ID_TAG, MODE_TAG
from rag_eval_pipeline.runner.run_status import (
    UnknownReference,
    evaluation_status,
    find_runs,
    format_evaluations,
    recent_evaluations,
)
from rag_eval_pipeline_tests.instances import instance_for_tests
from rag_eval_pipeline_tests.runner.runs import partition, run, summary_row


def test_status_and_list_group_runs_by_evaluation(tmp_path: Path) -> None:
    warehouse = tmp_path / "warehouse"
    quick = {EVALUATION_ID_TAG: "eval-a", MODE_TAG: "quick"}
    with instance_for_tests() as instance:
        run(instance, "ingestion_job", quick)
        good = run(instance, "evaluation_job", quick | partition("c1|p1"))
        summary_row(warehouse, good, "c1", "p1", evaluation_id="eval-a", evaluation_mode="quick")
        run(instance, "evaluation_job", quick | partition("c1|p2"), ok=False)
        run(instance, "ingestion_job", {EVALUATION_ID_TAG: "eval-ab", MODE_TAG: "full"})
        lone = run(instance, "evaluation_job", partition("c2|p1"))  # launched on its own, before ids
        summary_row(warehouse, lone, "c2", "p1")

        listed = recent_evaluations(instance, limit=10)
        assert [s.evaluation_id for s in listed] == [lone, "eval-ab", "eval-a"]
        eval_a = listed[2]
        assert (len(eval_a.runs), eval_a.mode, eval_a.partitions) == (3, "quick", "2")
        assert (eval_a.counts["succeeded"], eval_a.counts["failed"]) == (2, 1)
        table = format_evaluations(listed)
        assert "evaluation_job c2|p1" in table.splitlines()[2]
        assert [s.evaluation_id for s in recent_evaluations(instance, limit=1)] == [lone]

        status = evaluation_status(instance, "eval-a", warehouse)
        assert status.startswith("evaluation eval-a (quick): 3 runs, 2 succeeded, 1 failed")
        assert "FAILURE" in status
        assert "fails: the reranker folder models/missing does not exist: fix the profile" in status
        metrics = status.split("retrieval metrics", 1)[1].splitlines()
        assert metrics[3].split()[:4] == ["c1", "p1", "quick", "3"]
        assert "0.900 [0.80-0.95]" in metrics[3]
        assert len(metrics) == 4  # the lone run's row is not part of eval-a

        lone_status = evaluation_status(instance, lone[:8], warehouse)  # a prefix of a run id
        assert lone_status.startswith(f"run {lone}: evaluation_job c2|p1")
        assert lone_status.split("retrieval metrics", 1)[1].splitlines()[3].split()[:4] == [
            "c2",
            "p1",
            "full",
            "3",
        ]

        assert find_runs(instance, "eval-ab").kind == "evaluation"  # exact before prefix
        with pytest.raises(UnknownReference, match="matches 2 runs or evaluations"):
            find_runs(instance, "eval-")
        with pytest.raises(UnknownReference, match="no run and no evaluation matches 'nope'"):
            find_runs(instance, "nope")


def test_an_evaluation_whose_failed_run_succeeded_on_resume_has_succeeded(tmp_path: Path) -> None:
    """`run --resume` runs a failed partition again under the same evaluation id: once it succeeded, the
    evaluation has succeeded (the failed run is still counted, and shown as succeeded later)."""
    tags = {EVALUATION_ID_TAG: "eval-r", MODE_TAG: "full"}
    with instance_for_tests() as instance:
        run(instance, "ingestion_job", tags)
        run(instance, "evaluation_job", tags | partition("c1|p1"))
        failed = run(instance, "evaluation_job", tags | partition("c1|p2"), ok=False)
        run(instance, "evaluation_job", tags | partition("c2|p1"), ok=False)  # another partition
        (before,) = recent_evaluations(instance)
        assert before.state == "failed"

        resumed = run(instance, "evaluation_job", tags | partition("c1|p2"))
        (partly,) = recent_evaluations(instance)
        assert partly.state == "failed"  # c2|p1 has not succeeded yet

        run(instance, "evaluation_job", tags | partition("c2|p1"))
        (after,) = recent_evaluations(instance)
        assert after.state == "succeeded" and after.record()["status"] == "succeeded"
        assert (after.counts["succeeded"], after.counts["failed"]) == (4, 2)
        status = evaluation_status(instance, "eval-r", tmp_path / "warehouse")
        assert status.splitlines()[1] == "status: succeeded"
        assert f"FAILED {failed[:8]} evaluation_job c1|p2: " in status
        assert f"(succeeded later: run {resumed[:8]})" in status
        assert "--resume" not in status  # nothing left to resume
