"""Pinned baselines (set, replaced, their change log) and the choice of what a new run is held to."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from rag_eval_pipeline.core.errors import ConfigError, StorageError
from rag_eval_pipeline.core.evaluation.baselines import BaselineStore, choose_baseline
from rag_eval_pipeline.core.store.history import HistoryStore, PartitionKey
from rag_eval_pipeline.core.store.warehouse import Warehouse
from rag_eval_pipeline_tests.history_files import at, constant, retrieval_rows, write_run

P1, P2 = PartitionKey("c", "p1"), PartitionKey("c", "p2")


def write(
    base: Path,
    run: str,
    partition: PartitionKey,
    hour: float,
    *,
    dataset: str = "data-1",
    evaluation_id: str | None = None,
    mode: str | None = None,
) -> None:
    values = {"span_recall": constant(0.5)}
    frame = retrieval_rows(
        run,
        partition.chunk_config,
        partition.profile,
        values,
        at(hour),
        dataset=dataset,
        evaluation_id=evaluation_id,
        mode=mode,
    )
    write_run(base, frame)


def test_pins_are_set_per_partition_replaced_and_every_change_is_kept(tmp_path: Path) -> None:
    for run, partition, evaluation in (("a1", P1, "eval-a"), ("a2", P2, "eval-a"), ("b1", P1, "eval-b")):
        write(tmp_path, run, partition, 1, evaluation_id=evaluation, mode="full")
    store = BaselineStore(tmp_path)
    assert store.pinned() == () and store.changes() == ()
    with HistoryStore(tmp_path) as history:
        first = store.pin(history.resolve("eval-a").runs, at=datetime(2026, 2, 1, tzinfo=UTC))
        assert [(str(c.partition), c.run_id, c.replaced_run_id) for c in first] == [
            ("c|p1", "a1", None),
            ("c|p2", "a2", None),
        ]
        assert store.pin(history.resolve("eval-a").runs) == ()  # pinning the same runs again changes nothing
        replaced = store.pin(history.resolve("b1").runs, at=datetime(2026, 2, 2, tzinfo=UTC))
    assert [(str(c.partition), c.run_id, c.replaced_run_id) for c in replaced] == [("c|p1", "b1", "a1")]
    assert [(b.partition, b.run_id, b.evaluation_id, b.mode) for b in store.pinned()] == [
        (P1, "b1", "eval-b", "full"),
        (P2, "a2", "eval-a", "full"),
    ]
    assert store.get(P1) is not None and store.get(P1).pinned_at == "2026-02-02T00:00:00+00:00"  # type: ignore[union-attr]
    assert [c.run_id for c in store.changes()] == ["a1", "a2", "b1"]
    # one JSON file, rewritten whole by rename: no temporary file stays behind
    document = json.loads(store.path.read_text(encoding="utf-8"))
    assert [b["run_id"] for b in document["baselines"]] == ["b1", "a2"] and len(document["changes"]) == 3
    assert sorted(p.name for p in store.path.parent.iterdir()) == ["baselines.json", "baselines.json.lock"]
    # a second store (another process) reads the same pins
    assert BaselineStore(tmp_path).pinned() == store.pinned()


def test_a_damaged_baselines_file_is_an_error_naming_it(tmp_path: Path) -> None:
    store = BaselineStore(tmp_path)
    store.path.parent.mkdir(parents=True)
    store.path.write_text('{"baselines": [{"run_id": "x"}]}', encoding="utf-8")
    with pytest.raises(ConfigError, match=r"baselines\.json is not a baselines file.*rag-eval baseline set"):
        store.pinned()


def choose(
    base: Path, run_id: str, hour: float, partition: PartitionKey = P1, dataset: str = "data-1"
) -> tuple[str, str | None, str]:
    with HistoryStore(base) as history:
        choice = choose_baseline(
            history, BaselineStore(base), "retrieval_metrics", partition, run_id, dataset, at(hour)
        )
    return choice.source, choice.run.run_id if choice.run else None, choice.detail


def test_without_a_pin_the_previous_full_run_on_the_same_dataset_is_the_baseline(tmp_path: Path) -> None:
    write(tmp_path, "first", P1, 0)
    assert choose(tmp_path, "first", 0)[:2] == ("none", None)
    write(tmp_path, "full-old", P1, 1)
    write(tmp_path, "full", P1, 2, evaluation_id="e-full", mode="full")
    write(tmp_path, "quick", P1, 3, evaluation_id="e-quick", mode="quick")
    write(tmp_path, "new-data", P1, 4, dataset="data-2")
    write(tmp_path, "other-partition", P2, 4.5)
    write(tmp_path, "now", P1, 5)
    source, run, detail = choose(tmp_path, "now", 5)
    assert (source, run) == (
        "previous_run",
        "full",
    ) and "previous full run of c|p1 on dataset data-1" in detail
    # the new dataset's own first run has nothing to compare with
    assert choose(tmp_path, "new-data", 4, dataset="data-2")[:2] == ("none", None)


def test_a_pinned_baseline_wins_and_a_pin_without_rows_is_reported(tmp_path: Path) -> None:
    write(tmp_path, "pinned", P1, 0, evaluation_id="eval-p", mode="quick")
    write(tmp_path, "previous", P1, 1)
    write(tmp_path, "now", P1, 2)
    store = BaselineStore(tmp_path)
    with HistoryStore(tmp_path) as history:
        store.pin(history.resolve("pinned").runs)
    source, run, detail = choose(tmp_path, "now", 2)
    assert (source, run) == ("pinned", "pinned") and "pinned on" in detail

    # the pinned run's files are gone (retention): the check must say so, not fall back silently
    for path in (p for p in Warehouse(tmp_path).history_files() if p.stem == "pinned"):
        path.unlink()
    source, run, detail = choose(tmp_path, "now", 2)
    assert (source, run) == ("pinned", None)
    assert "pinned baseline run pinned (evaluation eval-p) has no rows in retrieval_metrics" in detail

    # another run of the pinned evaluation that wrote the table stands in for it
    write(tmp_path, "pinned-retry", P1, 0.5, evaluation_id="eval-p", mode="quick")
    source, run, detail = choose(tmp_path, "now", 2)
    assert (source, run) == (
        "pinned",
        "pinned-retry",
    ) and "run pinned wrote no retrieval_metrics rows" in detail


def test_the_run_being_checked_is_never_its_own_pinned_baseline(tmp_path: Path) -> None:
    write(tmp_path, "previous", P1, 1)
    write(tmp_path, "now", P1, 2, evaluation_id="eval-now", mode="full")
    store = BaselineStore(tmp_path)
    with HistoryStore(tmp_path) as history:
        store.pin(history.resolve("now").runs)  # pinned, then its check runs again
    assert choose(tmp_path, "now", 2)[:2] == ("previous_run", "previous")


def test_answer_scores_are_held_only_to_runs_with_the_same_reference_answers(tmp_path: Path) -> None:
    for run, hour, answers in (("old-answers", 1, "answers-1"), ("new-answers", 2, "answers-2")):
        frame = retrieval_rows(run, "c", "p1", {"keyword": constant(0.5)}, at(hour), mode="full")
        frame["answers_sha256"] = answers
        write_run(tmp_path, frame, table="answer_metrics")
    with HistoryStore(tmp_path) as history:
        store = BaselineStore(tmp_path)
        same = choose_baseline(history, store, "answer_metrics", P1, "now", "data-1", at(3), "answers-1")
        edited = choose_baseline(history, store, "answer_metrics", P1, "now", "data-1", at(3), "answers-3")
    assert same.run is not None and same.run.run_id == "old-answers"
    assert (edited.source, edited.run) == ("none", None)


def test_a_store_of_the_partition_alone_chooses_as_the_whole_history_does(tmp_path: Path) -> None:
    write(tmp_path, "old", P1, 0)  # no evaluation columns: its own full evaluation
    write(tmp_path, "pinned", P1, 1, evaluation_id="eval-p", mode="quick")
    write(tmp_path, "full", P1, 2, evaluation_id="e-full", mode="full")
    write(tmp_path, "quick", P1, 3, evaluation_id="e-quick", mode="quick")
    write(tmp_path, "new-data", P1, 4, dataset="data-2")
    for hour in range(6):  # the other partition runs later, on the same data and evaluations
        write(tmp_path, f"other-{hour}", P2, hour + 0.5, evaluation_id="eval-p", mode="full")
    store = BaselineStore(tmp_path)
    questions = [("now", 5, "data-1"), ("full", 2, "data-1"), ("old", 0, "data-1"), ("x", 9, "data-2")]

    def choices(partition: PartitionKey | None) -> list[tuple[str, str | None, str, str | None]]:
        with HistoryStore(tmp_path, partition=partition) as history:
            found = [
                choose_baseline(history, store, "retrieval_metrics", P1, run, dataset, at(hour))
                for run, hour, dataset in questions
            ]
            rows = [history.question_rows("retrieval_metrics", [c.run]) for c in found if c.run is not None]
        assert all(set(r["chunk_config"] + "|" + r["profile"]) == {"c|p1"} for r in rows)
        return [(c.source, c.run.run_id if c.run else None, c.detail, str(c.run)) for c in found]

    unpinned = choices(None)
    assert [(source, run) for source, run, _, _ in unpinned] == [
        ("previous_run", "full"),
        ("previous_run", "old"),
        ("none", None),
        ("previous_run", "new-data"),
    ]
    assert choices(P1) == unpinned
    with HistoryStore(tmp_path) as history:
        store.pin(history.resolve("pinned").runs)
    pinned = choices(None)
    assert {(source, run) for source, run, _, _ in pinned} == {("pinned", "pinned")}
    assert choices(P1) == pinned
    for path in (p for p in Warehouse(tmp_path).history_files("retrieval_metrics") if p.stem == "pinned"):
        path.unlink()  # the pinned run is gone: the evaluation's other runs are in P2 only
    gone = choices(None)
    assert {(source, run) for source, run, _, _ in gone} == {("pinned", None)}
    assert choices(P1) == gone

    # a damaged file of the other partition: only a store of the whole history trips over it
    next(
        p for p in Warehouse(tmp_path).history_files("retrieval_metrics") if p.stem == "other-0"
    ).write_bytes(b"x")
    assert choices(P1) == gone
    with pytest.raises(StorageError, match=r"cannot read .*other-0\.parquet.*move it out of the warehouse"):
        choices(None)


def test_a_store_of_another_partition_cannot_choose(tmp_path: Path) -> None:
    write(tmp_path, "run", P2, 0)
    with (
        HistoryStore(tmp_path, partition=P2) as history,
        pytest.raises(ValueError, match=r"a history of partition c\|p2 cannot choose the baseline of c\|p1"),
    ):
        choose_baseline(history, BaselineStore(tmp_path), "retrieval_metrics", P1, "now", "data-1", at(1))
