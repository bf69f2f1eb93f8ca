"""LangSmith from the assets, through the real `langsmith` client against a local server: the evaluation
dataset is uploaded once, every evaluated partition is an experiment whose URL is in the metrics and
their metadata, and LangSmith being down never fails the evaluation."""

from pathlib import Path

import pytest

from rag_eval_pipeline.lib.resources import LangSmithResource
from rag_eval_pipeline_tests.conftest import latest_metadata, tiny_resources
from rag_eval_pipeline_tests.evaluations import evaluate_board
from rag_eval_pipeline_tests.instances import instance_for_tests
from rag_eval_pipeline_tests.langsmith_server import API_KEY, Fault, langsmith_server

pytestmark = pytest.mark.slow


def test_evaluations_become_experiments_on_the_uploaded_dataset(tiny_project: Path, tmp_path: Path) -> None:
    with langsmith_server() as (url, state):
        resources = tiny_resources(tiny_project, tmp_path)
        resources["langsmith"] = LangSmithResource(api_key=API_KEY, endpoint=url, timeout_s=2.0)
        with instance_for_tests() as instance:
            board, failures = evaluate_board(
                instance,
                chunk_configs=["fixed-60-0"],
                profiles=["top2", "top4"],
                resources=resources,
                show_progress=False,
            )
            assert failures == [] and board is not None
            uploaded = latest_metadata(instance, "eval_questions")
            metrics = latest_metadata(instance, "retrieval_metrics", "fixed-60-0|top2")
            evaluate_board(  # the same partition again: a new experiment, no new examples
                instance,
                chunk_configs=["fixed-60-0"],
                profiles=["top2"],
                resources=resources,
                show_progress=False,
                force=True,
            )
            again = latest_metadata(instance, "eval_questions")
        examples = state.dataset_examples("rag-eval-golden")
        experiments = [s for s in state.sessions.values() if s.get("reference_dataset_id")]
    assert len(examples) == 4  # uploaded once: the second run found them unchanged
    assert uploaded["langsmith"].startswith("uploaded: 4 created") and "4 unchanged" in again["langsmith"]
    assert len(experiments) == 3  # two partitions, then one of them again
    names = sorted(s["name"] for s in experiments)
    assert names[0].startswith("fixed-60-0 x top2 ") and names[2].startswith("fixed-60-0 x top4 ")
    top2 = next(
        s for s in experiments if s["name"] == metrics["langsmith"].split(":")[0].removeprefix("experiment ")
    )
    runs = state.runs_of(top2["id"])
    assert len(runs) == 4 and {r["reference_example_id"] for r in runs} == {e["id"] for e in examples}
    scores = [f for f in state.feedback.values() if f["run_id"] in {r["id"] for r in runs}]
    assert {"span_recall", "span_iou", "mrr"} <= {f["key"] for f in scores}
    assert metrics["experiment_url"].startswith("http") and top2["id"] in metrics["experiment_url"]
    assert set(board["experiment_url"]) != {""}


def test_langsmith_down_is_reported_and_the_evaluation_still_lands(
    tiny_project: Path, tmp_path: Path
) -> None:
    with langsmith_server() as (url, state):
        state.faults = [Fault(status=500, times=1000)]
        resources = tiny_resources(tiny_project, tmp_path)
        resources["langsmith"] = LangSmithResource(api_key=API_KEY, endpoint=url, timeout_s=1.0)
        with instance_for_tests() as instance:
            board, failures = evaluate_board(
                instance,
                chunk_configs=["fixed-60-0"],
                profiles=["top2"],
                resources=resources,
                show_progress=False,
            )
            questions = latest_metadata(instance, "eval_questions")
            metrics = latest_metadata(instance, "retrieval_metrics", "fixed-60-0|top2")
    assert failures == [] and board is not None and len(board) == 1
    assert questions["langsmith"].startswith("upload failed") and API_KEY not in questions["langsmith"]
    assert metrics["langsmith"].startswith("experiment not logged") and "span_iou" in metrics
