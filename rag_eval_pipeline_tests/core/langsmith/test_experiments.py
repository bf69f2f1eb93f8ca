"""log_experiment through the real langsmith Client: a project on the dataset, runs linked to examples,
one feedback per metric."""

from __future__ import annotations

import math
from collections.abc import Iterator

import langsmith
import pytest

from rag_eval_pipeline.core.langsmith import ExperimentRow, LangSmithError, log_experiment, upload_dataset
from rag_eval_pipeline.core.questions.datasets import TokenLevelDataset
from rag_eval_pipeline_tests.langsmith_server import TENANT_ID, Fault, LangSmithState, langsmith_server


@pytest.fixture
def server() -> Iterator[tuple[str, LangSmithState]]:
    with langsmith_server() as pair:  # the example protocol does not matter here
        yield pair


def rows_for(dataset: TokenLevelDataset) -> list[ExperimentRow]:
    """Distinct, question-dependent values, so a score on the wrong run cannot pass unnoticed."""
    return [
        ExperimentRow(
            e.question_id,
            outputs={"retrieved_chunk_ids": [f"chunk_{i}", f"chunk_{i + 10}"], "answer": f"answer {i}"},
            scores={
                "span_recall": 0.1 * (i + 1),
                "mrr": 1 / (i + 2),
                "span_iou": math.nan if i == 0 else 0.25 + i / 7,
            },
        )
        for i, e in enumerate(dataset)
    ]


def test_experiment_links_runs_to_examples_and_scores_to_runs(
    client: langsmith.Client, state: LangSmithState, token_dataset: TokenLevelDataset
) -> None:
    uploaded = upload_dataset(client, token_dataset, "golden")
    rows = rows_for(token_dataset)

    report = log_experiment(
        client, "golden", "recursive-800-100@top5", rows, {"chunk_config": "recursive-800-100", "k": 5}
    )

    session = state.session_named("recursive-800-100@top5")
    assert report.name == "recursive-800-100@top5"
    assert report.experiment_id == session["id"]
    assert session["reference_dataset_id"] == uploaded.dataset_id
    assert session["extra"]["metadata"]["chunk_config"] == "recursive-800-100"
    assert session["extra"]["metadata"]["k"] == 5
    assert session["extra"]["metadata"]["dataset_version"]
    assert session["end_time"] is not None  # marked finished
    assert session["evaluator_keys"] == ["mrr", "span_iou", "span_recall"]
    assert report.url == (
        f"{client.api_url}/o/{TENANT_ID}/datasets/{uploaded.dataset_id}/compare?selectedSessions={session['id']}"
    )

    examples = {e["id"]: e for e in state.dataset_examples("golden")}
    runs = state.runs_of(session["id"])
    assert report.n_runs == len(runs) == len(rows)
    by_question = {}
    for run in runs:
        example = examples[run["reference_example_id"]]
        question_id = example["metadata"]["question_id"]
        assert run["extra"]["metadata"]["question_id"] == question_id
        assert run["inputs"] == example["inputs"]
        by_question[question_id] = run
    assert sorted(by_question) == sorted(r.question_id for r in rows)

    feedback = list(state.feedback.values())
    assert report.n_feedback == len(feedback) == 3 * len(rows) - 1
    assert report.n_skipped_scores == 1  # the NaN
    for row in rows:
        run = by_question[row.question_id]
        assert run["outputs"] == row.outputs
        scores = {f["key"]: f["score"] for f in feedback if f["run_id"] == run["id"]}
        expected = {k: v for k, v in row.scores.items() if not math.isnan(v)}
        assert scores == pytest.approx(expected, abs=1e-4)  # the SDK rounds scores to 4 decimals
        assert all(f["session_id"] == session["id"] for f in feedback if f["run_id"] == run["id"])


def test_logging_the_same_name_again_makes_a_suffixed_experiment(
    client: langsmith.Client, state: LangSmithState, token_dataset: TokenLevelDataset
) -> None:
    upload_dataset(client, token_dataset, "golden")
    rows = rows_for(token_dataset)
    first = log_experiment(client, "golden", "nightly", rows, {})
    second = log_experiment(client, "golden", "nightly", rows[:2], {})

    assert first.name == "nightly"
    assert second.name.startswith("nightly-") and len(second.name) == len("nightly-") + 6
    assert second.experiment_id != first.experiment_id
    assert len(state.runs_of(first.experiment_id)) == len(rows)  # the first experiment is untouched
    assert len(state.runs_of(second.experiment_id)) == 2


def test_rows_for_questions_missing_from_the_dataset_are_refused_before_any_write(
    client: langsmith.Client, state: LangSmithState, token_dataset: TokenLevelDataset
) -> None:
    upload_dataset(client, token_dataset, "golden")
    writes = len(state.writes())
    rows = [*rows_for(token_dataset), ExperimentRow("not-uploaded", {}, {"mrr": 1.0})]  # type: ignore[arg-type]

    with pytest.raises(
        LangSmithError,
        match=r"1 question\(s\) of experiment 'x' are not in dataset 'golden' \('not-uploaded'\): upload",
    ):
        log_experiment(client, "golden", "x", rows, {})
    assert len(state.writes()) == writes
    with pytest.raises(LangSmithError, match=r"no dataset named 'other'"):
        log_experiment(client, "other", "x", rows[:1], {})
    with pytest.raises(LangSmithError, match=r"two rows for question 'tiny-1'"):
        log_experiment(client, "golden", "x", [rows[0], rows[0]], {})


def test_a_failure_half_way_raises_instead_of_leaving_a_silent_gap(
    client: langsmith.Client, state: LangSmithState, token_dataset: TokenLevelDataset
) -> None:
    upload_dataset(client, token_dataset, "golden")
    state.faults.append(Fault(status=503, method="POST", path="/feedback", times=100))

    with pytest.raises(LangSmithError) as raised:
        log_experiment(client, "golden", "broken", rows_for(token_dataset), {})
    message = str(raised.value)
    assert message.startswith("LangSmith: logging experiment 'broken' on dataset 'golden' failed:")
    assert "503" in message
    assert state.session_named("broken")["end_time"] is None  # never marked finished
