"""The history as SQL: views over the hive layout, evaluations, references, trends and earlier runs."""

from __future__ import annotations

import os
from pathlib import Path

import duckdb
import pandas as pd
import pytest

from rag_eval_pipeline.core.errors import StorageError
from rag_eval_pipeline.core.metrics.aggregate import summarize_table, summary_columns
from rag_eval_pipeline.core.metrics.reference_copies import ReferenceDuplication
from rag_eval_pipeline.core.store import history as history_module
from rag_eval_pipeline.core.store.history import HistoryError, HistoryStore, PartitionKey
from rag_eval_pipeline.core.store.warehouse import RETRIEVAL_SUMMARY, Warehouse
from rag_eval_pipeline.core.tables import records
from rag_eval_pipeline_tests.history_files import at, constant, retrieval_rows, write_run


def values(recall: float, iou: float, n: int = 4) -> dict[str, dict[str, float]]:
    return {
        "span_recall": {f"q{i}": recall + i / 100 for i in range(n)},
        "span_iou": {f"q{i}": iou for i in range(n)},
    }


@pytest.fixture
def warehouse(tmp_path: Path) -> Path:
    """An old untagged run, then two tagged evaluations of two partitions each (the second in quick
    mode, with fixed-1|top5 run twice)."""
    base = tmp_path / "warehouse"
    write_run(base, retrieval_rows("run-old", "fixed-1", "top5", values(0.5, 0.1), at(0)))
    for run, config, profile, hour in (("run-a1", "fixed-1", "top5", 1), ("run-a2", "fixed-1", "10", 1.1)):
        write_run(
            base,
            retrieval_rows(
                run, config, profile, values(0.6, 0.2), at(hour), evaluation_id="eval-a", mode="full"
            ),
        )
    for run, config, profile, hour in (
        ("run-b1", "fixed-1", "top5", 2),
        ("run-b1-retry", "fixed-1", "top5", 2.2),
        ("run-b2", "fixed-1", "10", 2.1),
    ):
        write_run(
            base,
            retrieval_rows(
                run, config, profile, values(0.7, 0.3), at(hour), evaluation_id="eval-b", mode="quick"
            ),
        )
    Warehouse(base).write_history(
        pd.DataFrame({"rank": [1], "chunk_config": ["fixed-1"], "run_id": ["board-1"]}),
        "leaderboard",
        {},
        "board-1",
    )
    return base


def test_every_table_is_a_view_with_partition_columns_and_evaluation_columns_for_old_rows(
    warehouse: Path,
) -> None:
    with HistoryStore(warehouse) as history:
        assert history.tables == ("leaderboard", "retrieval_metrics", "retrieval_metrics_summary")
        rows = history.query(
            "select run_id, chunk_config, profile, evaluation_id, evaluation_mode, count(*) as n "
            "from retrieval_metrics group by all order by run_id"
        )
        assert rows.to_dict("records") == [
            {
                "run_id": "run-a1",
                "chunk_config": "fixed-1",
                "profile": "top5",
                "evaluation_id": "eval-a",
                "evaluation_mode": "full",
                "n": 4,
            },
            {
                "run_id": "run-a2",
                "chunk_config": "fixed-1",
                "profile": "10",
                "evaluation_id": "eval-a",
                "evaluation_mode": "full",
                "n": 4,
            },
            {
                "run_id": "run-b1",
                "chunk_config": "fixed-1",
                "profile": "top5",
                "evaluation_id": "eval-b",
                "evaluation_mode": "quick",
                "n": 4,
            },
            {
                "run_id": "run-b1-retry",
                "chunk_config": "fixed-1",
                "profile": "top5",
                "evaluation_id": "eval-b",
                "evaluation_mode": "quick",
                "n": 4,
            },
            {
                "run_id": "run-b2",
                "chunk_config": "fixed-1",
                "profile": "10",
                "evaluation_id": "eval-b",
                "evaluation_mode": "quick",
                "n": 4,
            },
            # written before runs were tagged: an evaluation of its own, in full mode
            {
                "run_id": "run-old",
                "chunk_config": "fixed-1",
                "profile": "top5",
                "evaluation_id": "run-old",
                "evaluation_mode": "full",
                "n": 4,
            },
        ]
        # a profile named "10" stays a string, not a number guessed from the folder name
        assert (
            history.query("select typeof(profile) as t from retrieval_metrics limit 1")["t"][0] == "VARCHAR"
        )
        # an unpartitioned table reads too
        assert history.query("select rank from leaderboard")["rank"].tolist() == [1]


def test_a_null_evaluation_id_in_a_newer_file_reads_as_the_run_id(tmp_path: Path) -> None:
    frame = retrieval_rows("run-x", "c", "p", values(0.5, 0.1), at(0), evaluation_id="e", mode="full")
    frame["evaluation_id"] = None
    frame["evaluation_mode"] = None
    write_run(tmp_path, frame)
    with HistoryStore(tmp_path) as history:
        row = history.query("select distinct evaluation_id, evaluation_mode from retrieval_metrics")
        assert row.to_dict("records") == [{"evaluation_id": "run-x", "evaluation_mode": "full"}]


def test_unknown_tables_and_bad_sql_are_errors_that_list_the_tables(warehouse: Path) -> None:
    with HistoryStore(warehouse) as history:
        with pytest.raises(
            HistoryError,
            match="nope.*history tables: leaderboard, retrieval_metrics, retrieval_metrics_summary",
        ):
            history.query("select * from nope")
        with pytest.raises(HistoryError, match="DuckDB rejected the SQL.*syntax error"):
            history.query("selec 1")
        with pytest.raises(HistoryError, match="no history table 'answer_metrics'"):
            history.question_rows("answer_metrics", [])
    with (
        HistoryStore(warehouse / "missing") as empty,
        pytest.raises(HistoryError, match="no evaluation .* yet"),
    ):
        empty.resolve("eval-a")


def test_evaluations_have_one_row_each_with_their_partitions_mode_and_times(warehouse: Path) -> None:
    with HistoryStore(warehouse) as history:
        evaluations = history.evaluations()
    assert evaluations["evaluation_id"].tolist() == ["run-old", "eval-a", "eval-b"]
    b = evaluations.iloc[2]
    assert (b["mode"], b["n_partitions"], b["n_runs"]) == ("quick", 2, 3)
    assert b["partitions"] == "fixed-1|10, fixed-1|top5"
    assert b["started"] == pd.Timestamp(at(2)) and b["finished"] == pd.Timestamp(at(2.2))


def test_references_resolve_to_evaluations_runs_or_unique_prefixes(warehouse: Path) -> None:
    with HistoryStore(warehouse) as history:
        b = history.resolve("eval-b")
        assert b.kind == "evaluation" and b.evaluation_id == "eval-b"
        # one run per partition: a partition run twice in an evaluation counts with its last run
        assert {str(r.partition): r.run_id for r in b.runs} == {
            "fixed-1|10": "run-b2",
            "fixed-1|top5": "run-b1-retry",
        }
        assert {r.mode for r in b.runs} == {"quick"}

        run = history.resolve("run-a2")
        assert run.kind == "run" and run.evaluation_id == "eval-a"
        assert [(r.run_id, r.partition) for r in run.runs] == [("run-a2", PartitionKey("fixed-1", "10"))]

        assert history.resolve("run-o").runs[0].run_id == "run-old"  # unique prefix
        assert history.resolve("eval-a").partitions == (
            PartitionKey("fixed-1", "10"),
            PartitionKey("fixed-1", "top5"),
        )

        assert history.resolve("run-b1").runs[0].run_id == "run-b1"  # an exact id wins over longer ones
        with pytest.raises(
            HistoryError, match="'run-b' is ambiguous: it starts run run-b1, run run-b1-retry, run run-b2"
        ):
            history.resolve("run-b")
        with pytest.raises(
            HistoryError, match="no evaluation or run 'zzz'.*recent evaluations: eval-b, eval-a, run-old"
        ):
            history.resolve("zzz")


def test_question_rows_are_those_of_the_resolved_runs_only(warehouse: Path) -> None:
    with HistoryStore(warehouse) as history:
        rows = history.question_rows("retrieval_metrics", history.resolve("eval-b"))
    assert sorted(set(rows["run_id"])) == ["run-b1-retry", "run-b2"] and len(rows) == 8


def test_previous_full_run_skips_quick_runs_other_datasets_later_runs_and_itself(tmp_path: Path) -> None:
    write_run(
        tmp_path, retrieval_rows("full-1", "c", "p", values(0.5, 0.1), at(0), evaluation_id="e1", mode="full")
    )
    write_run(tmp_path, retrieval_rows("other-data", "c", "p", values(0.5, 0.1), at(1), dataset="data-2"))
    write_run(
        tmp_path,
        retrieval_rows("quick-1", "c", "p", values(0.5, 0.1), at(2), evaluation_id="e2", mode="quick"),
    )
    write_run(tmp_path, retrieval_rows("other-partition", "c", "q", values(0.5, 0.1), at(2.5)))
    write_run(tmp_path, retrieval_rows("now", "c", "p", values(0.5, 0.1), at(3)))
    write_run(tmp_path, retrieval_rows("later", "c", "p", values(0.5, 0.1), at(4)))
    with HistoryStore(tmp_path) as history:
        found = history.previous_full_run("retrieval_metrics", PartitionKey("c", "p"), "data-1", at(3), "now")
        assert found is not None and (found.run_id, found.evaluation_id, found.mode) == (
            "full-1",
            "e1",
            "full",
        )
        assert (
            history.previous_full_run("retrieval_metrics", PartitionKey("c", "p"), "data-1", at(0), "full-1")
            is None
        )
        assert (
            history.previous_full_run("retrieval_metrics", PartitionKey("c", "p"), "data-3", at(9), "x")
            is None
        )


def test_a_partition_s_first_run_has_no_previous_run_and_connects_to_no_database(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The regression check of a partition's first run: its own file is the only one, so nothing is
    read and DuckDB is not even connected to; once an earlier run is there, it is found."""
    connect, opened = history_module.partition_connection, []

    def counting_connect() -> duckdb.DuckDBPyConnection:
        opened.append(1)
        return connect()

    monkeypatch.setattr(history_module, "partition_connection", counting_connect)
    partition = PartitionKey("c", "p")
    write_run(tmp_path, retrieval_rows("now", "c", "p", values(0.5, 0.1), at(3)))
    with HistoryStore(tmp_path, partition=partition) as history:
        assert history.previous_full_run("retrieval_metrics", partition, "data-1", at(3), "now") is None
    assert opened == []
    write_run(tmp_path, retrieval_rows("full-1", "c", "p", values(0.5, 0.1), at(0)))
    with HistoryStore(tmp_path, partition=partition) as history:
        found = history.previous_full_run("retrieval_metrics", partition, "data-1", at(3), "now")
    assert found is not None and found.run_id == "full-1" and len(opened) == 1


def test_stores_of_partitions_share_one_database_and_see_only_their_own_views(tmp_path: Path) -> None:
    """A regression check's store connects to the process's database (opening one is 20 ms a check),
    each with its own temporary views: two partitions' stores open together read their own files, and
    closing one leaves the other's views; a user's SQL needs a store of the whole history, whose
    settings are its own."""
    one, two = PartitionKey("c", "one"), PartitionKey("c", "two")
    write_run(tmp_path, retrieval_rows("run-1", "c", "one", values(0.5, 0.1), at(0)))
    write_run(tmp_path, retrieval_rows("run-2", "c", "two", values(0.7, 0.1), at(1)))
    with HistoryStore(tmp_path, partition=one) as first:
        assert [r.run_id for r in first.runs()] == ["run-1"]
        with HistoryStore(tmp_path, partition=two) as second:
            assert [r.run_id for r in second.runs()] == ["run-2"]
            assert [r.run_id for r in first.runs()] == ["run-1"]
            with pytest.raises(HistoryError, match="a store of one partition cannot run a user's SQL"):
                second.query("select 1")
        assert set(first.question_rows("retrieval_metrics", first.runs())["run_id"]) == {"run-1"}
        fresh = history_module.partition_connection()  # another connection sees none of its views
        assert fresh.sql(
            "select count(*) from duckdb_views() where view_name like 'retrieval%'"
        ).fetchall() == [(0,)]
        fresh.close()
    with HistoryStore(tmp_path) as everything:
        assert set(everything.query("select distinct run_id from retrieval_metrics")["run_id"]) == {
            "run-1",
            "run-2",
        }
    with HistoryStore(tmp_path, partition=one) as again:  # the whole history's lock is not the shared one's
        assert [r.run_id for r in again.runs()] == ["run-1"]


def test_trend_is_the_summary_mean_and_interval_per_partition_over_time(warehouse: Path) -> None:
    with HistoryStore(warehouse) as history:
        trend = history.trend("span_recall")
        top5 = history.trend("span_recall", partition=PartitionKey("fixed-1", "top5"))
        with pytest.raises(HistoryError, match="has no metric 'nope'; its metrics: span_recall, span_iou"):
            history.trend("nope")
        with pytest.raises(
            HistoryError, match="no partition fixed-1|nope; partitions: fixed-1|10, fixed-1|top5"
        ):
            history.trend("span_iou", partition=PartitionKey("fixed-1", "nope"))
        with pytest.raises(HistoryError, match="known metrics: span_iou, span_recall"):
            history.summary_table_for("keyword")
    assert len(trend) == 6 and set(trend["chunk_config"] + "|" + trend["profile"]) == {
        "fixed-1|top5",
        "fixed-1|10",
    }
    assert top5["run_id"].tolist() == ["run-old", "run-a1", "run-b1", "run-b1-retry"]
    assert top5["evaluation_mode"].tolist() == ["full", "full", "quick", "quick"]
    # the mean of 0.5, 0.51, 0.52, 0.53 and of the same plus 0.1 / 0.2
    assert top5["mean"].tolist() == pytest.approx([0.515, 0.615, 0.715, 0.715])
    assert (top5["ci_low"] < top5["mean"]).all() and (top5["mean"] < top5["ci_high"]).all()
    assert top5["n"].tolist() == [4, 4, 4, 4]


def test_a_store_of_one_partition_reads_only_that_partition_s_files(warehouse: Path) -> None:
    top5 = PartitionKey("fixed-1", "top5")
    # a damaged file in another partition's folder: the whole history no longer reads ...
    damaged = Warehouse(warehouse).history_path(
        "retrieval_metrics", {"chunk_config": "fixed-1", "profile": "10"}, "bad"
    )
    damaged.write_bytes(b"not parquet")
    with HistoryStore(warehouse) as everything, pytest.raises(StorageError) as unreadable:
        everything.runs()
    assert str(unreadable.value).startswith(f"cannot read {damaged}: ")  # which file, and what to do
    assert str(unreadable.value).endswith(
        "move it out of the warehouse (the history then lacks that run's rows) or restore it from a backup"
    )
    # ... but a store of this partition never opens it
    with HistoryStore(warehouse, partition=top5) as history:
        assert history.partition == top5
        assert history.tables == (
            "retrieval_metrics",
            "retrieval_metrics_summary",
        )  # leaderboard: no partition
        assert [r.run_id for r in history.runs()] == ["run-old", "run-a1", "run-b1", "run-b1-retry"]
        assert {r.partition for r in history.runs()} == {top5}
        assert history.find_run("run-a2") is None  # a run of the other partition
        found = history.find_run("run-a1", ("retrieval_metrics",))
        assert found is not None and (found.evaluation_id, found.mode) == ("eval-a", "full")
        rows = history.question_rows("retrieval_metrics", [found])
        assert set(rows["run_id"]) == {"run-a1"} and len(rows) == 4
        assert set(rows["chunk_config"] + "|" + rows["profile"]) == {"fixed-1|top5"}
        latest = history.latest_run_of("retrieval_metrics", "eval-b", top5)
        assert latest is not None and latest.run_id == "run-b1-retry"
        with pytest.raises(
            HistoryError, match="no history table 'leaderboard' .* for partition fixed-1\\|top5"
        ):
            history.question_rows("leaderboard", [])
    with HistoryStore(warehouse, partition=PartitionKey("fixed-1", "new")) as empty:
        assert empty.tables == () and empty.runs() == []
        assert (
            empty.previous_full_run("retrieval_metrics", PartitionKey("fixed-1", "new"), "data-1", at(9), "x")
            is None
        )


def test_summary_columns_added_later_read_as_null_in_older_files(tmp_path: Path) -> None:
    # an old run's summary has no population std and no duplication counts; a newer one has both
    write_run(tmp_path, retrieval_rows("run-old", "c", "p", values(0.5, 0.1), at(0)))
    new = retrieval_rows("run-new", "c", "p", values(0.6, 0.2), at(1), evaluation_id="e", mode="full")
    write_run(tmp_path, new, summary=False)
    summaries = summarize_table(records(new[["span_recall", "span_iou"]]), ["span_recall", "span_iou"])
    row = {c: new[c].iloc[0] for c in ("run_id", "created_at", "evaluation_id", "evaluation_mode")}
    row |= {"n_questions": len(new), **ReferenceDuplication(1, 2, 3).run_columns()}
    row |= summary_columns(summaries)
    Warehouse(tmp_path).write_history(
        pd.DataFrame([row]), RETRIEVAL_SUMMARY, {"chunk_config": "c", "profile": "p"}, "run-new"
    )
    with HistoryStore(tmp_path) as history:
        rows = history.query(
            "select run_id, span_iou_std_pop, duplicated_references from retrieval_metrics_summary "
            "order by created_at"
        )
        assert rows["run_id"].tolist() == ["run-old", "run-new"]
        assert pd.isna(rows["span_iou_std_pop"].iloc[0]) and rows["span_iou_std_pop"].iloc[1] == 0.0
        assert pd.isna(rows["duplicated_references"].iloc[0]) and rows["duplicated_references"].iloc[1] == 2
        assert history.summary_metrics(RETRIEVAL_SUMMARY) == ["span_recall", "span_iou"]
        assert history.trend("span_recall")["run_id"].tolist() == ["run-old", "run-new"]
    read = Warehouse(tmp_path).read_history(RETRIEVAL_SUMMARY, ["run_id", "span_recall_std_pop"])
    by_run = dict(zip(read.frame["run_id"], read.frame["span_recall_std_pop"], strict=True))
    assert pd.isna(by_run["run-old"])
    assert by_run["run-new"] == pytest.approx(summaries["span_recall"].std_population)


def dated_run(base: Path, run_id: str, created_hours: float, written_hours: float, **kwargs: object) -> None:
    """A run of c|p created at ``at(created_hours)`` whose history file was written at ``written_hours``."""
    rows = retrieval_rows(run_id, "c", "p", {"span_recall": constant(0.5)}, at(created_hours), **kwargs)  # type: ignore[arg-type]
    path = write_run(base, rows, summary=False)
    written = at(written_hours).timestamp()
    os.utime(path, (written, written))


def previous(base: Path, before_hours: float, *, scoped: bool) -> str | None:
    partition = PartitionKey("c", "p")
    with HistoryStore(base, partition=partition if scoped else None) as history:
        run = history.previous_full_run("retrieval_metrics", partition, "data-1", at(before_hours), "now")
        return None if run is None else run.run_id


def test_a_partitions_previous_run_is_found_in_its_newest_files_without_reading_the_old_ones(
    tmp_path: Path,
) -> None:
    base = tmp_path / "warehouse"
    for i in range(40):  # a long history, each file written a minute after its run started
        dated_run(base, f"old-{i:02d}", i, i + 1 / 60, evaluation_id=f"e{i}", mode="full")
    dated_run(base, "quick", 40, 40.02, evaluation_id="eq", mode="quick")  # not a full run: skipped
    dated_run(base, "other-data", 41, 41.02, evaluation_id="ed", mode="full", dataset="data-2")
    dated_run(base, "now", 42, 42.02, evaluation_id="en", mode="full")
    assert previous(base, 42, scoped=True) == previous(base, 42, scoped=False) == "old-39"
    assert previous(base, 20.5, scoped=True) == previous(base, 20.5, scoped=False) == "old-20"
    # the old files are not opened: damaged (their dates kept), they would fail the read
    for i in range(30):
        partition = {"chunk_config": "c", "profile": "p"}
        path = Warehouse(base).history_path("retrieval_metrics", partition, f"old-{i:02d}")
        dates = (path.stat().st_atime, path.stat().st_mtime)
        path.write_bytes(b"not parquet")
        os.utime(path, dates)
    with HistoryStore(base, partition=PartitionKey("c", "p")) as history:
        run = history.previous_full_run("retrieval_metrics", PartitionKey("c", "p"), "data-1", at(42), "now")
        assert run is not None and run.run_id == "old-39"
        rows = history.question_rows("retrieval_metrics", [run])  # that run's file alone
        assert set(rows["run_id"]) == {"old-39"} and len(rows) == 10
        assert "__file" not in rows.columns


def test_a_file_dated_a_little_before_its_run_by_another_clock_is_still_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(history_module, "RECENT_FILES_FIRST", 1)  # rounds of 1, 4, 16 files
    base = tmp_path / "warehouse"
    for i in range(10):
        dated_run(base, f"old-{i}", i, i + 0.01, evaluation_id=f"e{i}", mode="full")
    for i in range(4):  # the newest files: quick runs, not candidates
        dated_run(base, f"quick-{i}", 20 + i, 20 + i + 0.01, evaluation_id=f"q{i}", mode="quick")
    dated_run(base, "earlier", 19.9, 19.95, evaluation_id="a", mode="full")
    # created after "earlier" but dated by a clock 6 minutes behind: written "before" earlier was created
    dated_run(base, "later", 19.92, 19.92 - 0.1, evaluation_id="b", mode="full")
    assert previous(base, 30, scoped=True) == previous(base, 30, scoped=False) == "later"
