"""History retention on real Parquet files: whole until full_rows_days, a seeded sample of whole
questions until sampled_rows_days, then deleted; aggregates untouched; a dry run changes nothing;
applying twice changes nothing the second time."""

from __future__ import annotations

import hashlib
import json
import os
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from rag_eval_pipeline.core.questions.datasets import TokenLevelDataset, TokenLevelExample
from rag_eval_pipeline.core.settings.monitoring_settings import RetentionSettings
from rag_eval_pipeline.core.store.retention import (
    MARK,
    apply_retention,
    plan_retention,
    read_mark,
    sample_positions,
)
from rag_eval_pipeline.core.store.warehouse import Warehouse
from rag_eval_pipeline.core.types import CharacterSpan, DocumentId, QuestionId

NOW = datetime(2026, 6, 1, 3, 0, tzinfo=UTC)
SETTINGS = RetentionSettings(full_rows_days=30, sampled_rows_days=90, sampled_rows=6, seed=11)
PARTITION = {"chunk_config": "fixed-60-0", "profile": "top2"}
QUESTIONS = [f"q{i:02d}" for i in range(12)]
AGES = {"young": 10, "middle": 40, "old": 100}  # run id -> days ago


def metrics_rows(run: str, now: datetime = NOW) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "run_id": run,
            "created_at": now - timedelta(days=AGES[run]),
            **PARTITION,
            "question_id": QUESTIONS,
            "span_iou": [i / 12 for i in range(12)],
        }
    )


def results_rows(run: str, now: datetime = NOW) -> pd.DataFrame:
    """Three ranked chunks per question: a sample must keep a question's ranking whole."""
    return pd.DataFrame(
        {
            "run_id": run,
            "created_at": now - timedelta(days=AGES[run]),
            **PARTITION,
            "question_id": [q for q in QUESTIONS for _ in range(3)],
            "rank": [r for _ in QUESTIONS for r in (1, 2, 3)],
            "chunk_id": [f"{q}-c{r}" for q in QUESTIONS for r in (1, 2, 3)],
        }
    )


def write_warehouse(base: Path, now: datetime = NOW) -> dict[str, Path]:
    w = Warehouse(base)
    paths: dict[str, Path] = {}
    for run in AGES:
        paths[f"metrics/{run}"] = w.write_history(metrics_rows(run, now), "retrieval_metrics", PARTITION, run)
        paths[f"results/{run}"] = w.write_history(results_rows(run, now), "retrieval_results", PARTITION, run)
        summary = pd.DataFrame([{"run_id": run, "created_at": now - timedelta(days=AGES[run]), **PARTITION}])
        paths[f"summary/{run}"] = w.write_history(summary, "retrieval_metrics_summary", PARTITION, run)
    w.write_table(metrics_rows("old", now), "leaderboard", {}, "old")  # current/ is not history
    paths["leaderboard/old"] = w.history_path("leaderboard", {}, "old")
    # no created_at: the age is the file's modification time
    corpus = pd.DataFrame({"doc_id": [f"d{i}" for i in range(20)], "text": "x"})
    paths["corpus/middle"] = w.write_history(corpus, "corpus", {}, "middle")
    stamp = (now - timedelta(days=40)).timestamp()
    os.utime(paths["corpus/middle"], (stamp, stamp))
    # a generated dataset's current file and its copy of the run: the copy is history, kept whole
    span = CharacterSpan(DocumentId("d0"), 0, 1, "x")
    questions = TokenLevelDataset(
        tuple(TokenLevelExample(QuestionId(q), q, (span,), {}) for q in ("q1", "q2"))
    )
    current = w.write_dataset(questions, "synthetic_questions", {}, "old")
    (paths["dataset/old"],) = w.dataset_history_files()
    for path in (paths["dataset/old"], current):
        os.utime(path, (0, 0))
    return paths


def snapshot(base: Path) -> dict[str, tuple[str, float]]:
    return {
        str(p.relative_to(base)): (hashlib.sha256(p.read_bytes()).hexdigest(), p.stat().st_mtime)
        for p in sorted(base.rglob("*"))
        if p.is_file()
    }


def test_files_are_kept_sampled_or_deleted_by_age_and_aggregates_are_untouched(tmp_path: Path):
    paths = write_warehouse(tmp_path)
    summaries_before = {
        k: p.read_bytes() for k, p in paths.items() if k.startswith(("summary/", "leaderboard/"))
    }
    plan = plan_retention(tmp_path, SETTINGS, NOW)
    assert {d.path for d in plan.decisions} == set(paths.values())  # no current file, no current.jsonl
    actions = {k: next(d.action for d in plan.decisions if d.path == p) for k, p in paths.items()}
    assert actions == {
        "metrics/young": "keep",
        "metrics/middle": "sample",
        "metrics/old": "delete",
        "results/young": "keep",
        "results/middle": "sample",
        "results/old": "delete",
        "summary/young": "keep",
        "summary/middle": "keep",
        "summary/old": "keep",
        "leaderboard/old": "keep",  # 100 days old, but an aggregate
        "corpus/middle": "sample",  # by its modification time
        "dataset/old": "keep",
    }
    totals = plan.totals()
    assert (totals["files_to_sample"], totals["files_to_delete"]) == (3, 2)
    assert totals["rows_removed"] == (12 - 6) + (36 - 6) + (20 - 6) + 12 + 36
    assert (
        totals["bytes_to_delete"] == paths["metrics/old"].stat().st_size + paths["results/old"].stat().st_size
    )
    assert "| retrieval_results | 1 | 1 | 1 | 108 | 42 |" in plan.markdown()

    corpus_mtime = paths["corpus/middle"].stat().st_mtime
    result = apply_retention(plan)
    assert sorted(result.deleted) == sorted([paths["metrics/old"], paths["results/old"]])
    assert result.totals()["rows_removed"] == totals["rows_removed"]
    assert result.totals()["bytes_freed"] > 0
    assert not paths["metrics/old"].exists() and paths["metrics/young"].exists()
    assert len(pd.read_parquet(paths["metrics/young"])) == 12

    metrics = pd.read_parquet(paths["metrics/middle"])
    results = pd.read_parquet(paths["results/middle"])
    assert len(metrics) == 6 and len(results) == 6
    # whole questions: each kept question has its three ranks, and the same questions in every table
    assert results.groupby("question_id")["rank"].apply(list).map(lambda r: r == [1, 2, 3]).all()
    assert set(results["question_id"]) <= set(metrics["question_id"])
    assert list(metrics.columns) == list(metrics_rows("middle").columns)  # same schema, file order
    assert list(metrics["question_id"]) == sorted(metrics["question_id"])
    mark = read_mark(pq.read_schema(paths["metrics/middle"]).metadata)
    assert mark is not None and (mark["sampled_rows"], mark["of_rows"], mark["seed"]) == (6, 12, 11)
    assert len(pd.read_parquet(paths["corpus/middle"])) == 6
    assert paths["corpus/middle"].stat().st_mtime == pytest.approx(corpus_mtime)  # age survives the rewrite

    for key, content in summaries_before.items():
        assert paths[key].read_bytes() == content
    assert paths["dataset/old"].exists()
    assert not list(tmp_path.rglob("*.tmp"))


def test_the_sample_is_seeded_and_the_same_in_every_file(tmp_path: Path):
    paths = write_warehouse(tmp_path)
    apply_retention(plan_retention(tmp_path, SETTINGS, NOW))
    first = list(pd.read_parquet(paths["metrics/middle"])["question_id"])

    other = tmp_path / "other"
    again = write_warehouse(other)
    apply_retention(plan_retention(other, SETTINGS, NOW))
    assert list(pd.read_parquet(again["metrics/middle"])["question_id"]) == first

    reseeded = tmp_path / "reseeded"
    third = write_warehouse(reseeded)
    apply_retention(plan_retention(reseeded, RetentionSettings(30, 90, 6, seed=12), NOW))
    assert list(pd.read_parquet(third["metrics/middle"])["question_id"]) != first


def test_a_dry_run_changes_nothing_and_applying_twice_changes_nothing_more(tmp_path: Path):
    write_warehouse(tmp_path)
    before = snapshot(tmp_path)
    plan = plan_retention(tmp_path, SETTINGS, NOW)  # the dry run is the plan alone
    assert plan.count("sample") == 3 and snapshot(tmp_path) == before

    apply_retention(plan)
    after_first = snapshot(tmp_path)
    assert after_first != before
    # the next day: the sampled files are not sampled again, nothing else is due
    later = plan_retention(tmp_path, SETTINGS, NOW + timedelta(days=1))
    assert later.count("sample") == 0 and later.count("delete") == 0
    assert (
        sum("already sampled" in d.reason for d in later.decisions) == 3
    )  # the corpus file too (mtime kept)
    result = apply_retention(later)
    assert result.sampled == () and result.deleted == ()
    assert snapshot(tmp_path) == after_first

    # past sampled_rows_days even the sampled files go; the aggregates stay
    much_later = plan_retention(tmp_path, SETTINGS, NOW + timedelta(days=91))
    apply_retention(much_later)
    w = Warehouse(tmp_path)
    assert {w.table_of(p) for p in w.history_files()} == {"retrieval_metrics_summary", "leaderboard"}
    # emptied partition folders go too, the table folder stays
    assert not (w.history_table_dir("retrieval_metrics") / "chunk_config=fixed-60-0").exists()
    assert w.history_table_dir("retrieval_metrics").is_dir()


def test_a_file_that_changed_since_the_plan_is_skipped_and_listed(tmp_path: Path):
    paths = write_warehouse(tmp_path)
    plan = plan_retention(tmp_path, SETTINGS, NOW)
    paths["metrics/old"].unlink()
    result = apply_retention(plan)
    assert any(str(paths["metrics/old"]) in s and "gone" in s for s in result.skipped)
    assert paths["results/old"] not in result.sampled and not paths["results/old"].exists()


def test_sample_positions_keep_whole_keys_within_the_limit():
    table = pd.DataFrame({"question_id": ["a"] * 4 + ["b"] * 2 + ["c"] * 3 + ["d"]})
    arrow = pa.Table.from_pandas(table)
    for n in range(0, 11):
        chosen = sample_positions(arrow, n, seed=3)
        assert len(chosen) <= n and chosen == sorted(chosen)
        keys = table["question_id"].iloc[chosen]
        for key in set(keys):
            assert (keys == key).sum() == (table["question_id"] == key).sum()  # whole keys only
    assert sample_positions(arrow, 10, seed=3) == list(range(10))
    # a key larger than the sample still yields rows rather than nothing
    assert len(sample_positions(pa.Table.from_pandas(pd.DataFrame({"question_id": ["a"] * 5})), 2, 3)) == 2
    # no key column: positions by seed
    plain = pa.Table.from_pandas(pd.DataFrame({"x": range(10)}))
    assert (
        sample_positions(plain, 4, 1) == sample_positions(plain, 4, 1)
        and len(sample_positions(plain, 4, 1)) == 4
    )


def test_the_mark_is_json_in_the_parquet_metadata(tmp_path: Path):
    paths = write_warehouse(tmp_path)
    apply_retention(plan_retention(tmp_path, SETTINGS, NOW))
    metadata = pq.read_schema(paths["results/middle"]).metadata
    assert json.loads(metadata[MARK])["key"] == "question_id"
    assert b"pandas" in metadata  # the pandas schema metadata is kept


def test_a_pinned_baselines_rows_are_kept_whole_at_any_age(tmp_path: Path):
    paths = write_warehouse(tmp_path)
    plan = plan_retention(tmp_path, SETTINGS, NOW, keep_run_ids={"old", "middle"})
    actions = {k: next(d.action for d in plan.decisions if d.path == p) for k, p in paths.items()}
    for table in ("metrics", "results"):
        assert actions[f"{table}/old"] == actions[f"{table}/middle"] == "keep"
        assert actions[f"{table}/young"] == "keep"
    apply_retention(plan)
    assert len(pd.read_parquet(paths["results/old"])) == len(QUESTIONS) * 3


def test_the_question_set_health_rows_are_kept_and_its_rows_per_question_pruned(tmp_path: Path):
    """question_set_health is one row per run (an aggregate, kept at any age); its table per question
    ages like every per-question table."""
    w = Warehouse(tmp_path)
    old = {"run_id": "old", "created_at": NOW - timedelta(days=AGES["old"])}
    kept = w.write_history(pd.DataFrame([{**old, "n_questions": 12}]), "question_set_health", {}, "old")
    per_question = pd.DataFrame({**old, "question_id": QUESTIONS, "term_overlap": 0.5})
    pruned = w.write_history(per_question, "question_set_health_questions", {}, "old")
    actions = {d.path: d.action for d in plan_retention(tmp_path, SETTINGS, NOW).decisions}
    assert actions == {kept: "keep", pruned: "delete"}
