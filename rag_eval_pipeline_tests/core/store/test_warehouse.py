"""The warehouse layout on disk, byte for byte; one atomic writer of a table's current and history files;
history read as one table by DuckDB, pyarrow and pandas, with files from before the evaluation columns
read as their run's own full evaluation, the same way by every reader."""

from __future__ import annotations

import os
from datetime import UTC, datetime, timedelta
from pathlib import Path

import duckdb
import pandas as pd
import pyarrow.dataset as ds
import pytest

from rag_eval_pipeline.core.errors import ConfigError, StorageError
from rag_eval_pipeline.core.questions.datasets import TokenLevelDataset, TokenLevelExample, read_jsonl_objects
from rag_eval_pipeline.core.store.table_upgrades import (
    evaluation_defaults_view,
    with_evaluation_defaults,
)
from rag_eval_pipeline.core.store.warehouse import WAREHOUSE_ENV, Warehouse, partition_folders
from rag_eval_pipeline.core.types import CharacterSpan, DocumentId, QuestionId

NOW = datetime(2026, 5, 1, 12, 0, tzinfo=UTC)
TWO = {"profile": "dense-top5", "chunk_config": "fixed-200-0"}  # not in sorted order on purpose
SUMMARY = "retrieval_metrics_summary"


def relative(warehouse: Warehouse, path: Path) -> str:
    return path.relative_to(warehouse.base_dir).as_posix()


def test_every_path_of_the_layout(tmp_path: Path):
    w = Warehouse(tmp_path)
    assert partition_folders(TWO) == ["chunk_config=fixed-200-0", "profile=dense-top5"]
    assert relative(w, w.current_path("leaderboard")) == "current/leaderboard.parquet"
    assert (
        relative(w, w.current_path("chunks", {"chunk_config": "a.b"}))
        == "current/chunks/chunk_config=a.b.parquet"
    )
    assert (
        relative(w, w.current_path("retrieval_metrics", TWO))
        == "current/retrieval_metrics/chunk_config=fixed-200-0/profile=dense-top5.parquet"
    )
    assert relative(w, w.history_path("corpus", {}, "run-1")) == "history/corpus/run-1.parquet"
    assert (
        relative(w, w.history_path("retrieval_metrics", TWO, "run-1"))
        == "history/retrieval_metrics/chunk_config=fixed-200-0/profile=dense-top5/run-1.parquet"
    )
    assert (
        relative(w, w.dataset_folder("chunk_level_questions", {"chunk_config": "c"}))
        == "datasets/chunk_level_questions/chunk_config=c"
    )
    reports = w.report_paths("run-1")
    assert (relative(w, reports.current), relative(w, reports.snapshot)) == (
        "reports/leaderboard.html",
        "reports/history/run-1.html",
    )
    assert relative(w, w.anchors_path("golden_token_level")) == "anchors/golden_token_level.json"
    assert relative(w, w.baselines_path) == "baselines/baselines.json"
    assert not tmp_path.exists() or not any(tmp_path.iterdir())  # building a path creates nothing


def test_the_warehouse_is_in_the_project_unless_the_environment_moves_it(tmp_path: Path):
    assert Warehouse.in_project(tmp_path, {}).base_dir == tmp_path / "data" / "warehouse"
    elsewhere = tmp_path / "big-disk"
    assert Warehouse.in_project(tmp_path, {WAREHOUSE_ENV: str(elsewhere)}).base_dir == elsewhere


@pytest.mark.parametrize("name", [".", "..", "a/b", ""])
def test_a_name_that_is_not_one_path_component_is_refused_before_anything_is_written(
    tmp_path: Path, name: str
):
    """A table or dataset folder named ``.`` or ``..`` would be its parent; a name with ``/`` leaves
    its folder. With a suffix or a ``dimension=`` prefix ``.`` and ``..`` are harmless, ``/`` is not."""
    w = Warehouse(tmp_path / "warehouse")
    frame = pd.DataFrame({"run_id": ["r"]})
    builders = [
        lambda: w.write_history(frame, name, {}, "r"),
        lambda: w.write_table(frame, name, {"chunk_config": "c"}, "r"),
        lambda: w.write_dataset(TokenLevelDataset(()), name, {}, "r"),
    ]
    if "/" in name:
        builders += [
            lambda: w.write_table(frame, "t", {"chunk_config": name}, "r"),
            lambda: w.write_table(frame, "t", {}, name),
            lambda: w.write_dataset(TokenLevelDataset(()), "d", {"chunk_config": name}, "r"),
            lambda: w.anchors_path(name),
            lambda: w.report_paths(name),
        ]
    for build in builders:
        with pytest.raises(ConfigError, match="one path component"):
            build()
    assert not any(tmp_path.rglob("*"))


def runs_frame(run: str, config: str, profile: str) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "run_id": [run] * 2,
            "chunk_config": [config] * 2,
            "profile": [profile] * 2,
            "question_id": ["q1", "q2"],
            "span_recall": [0.5, 1.0],
        }
    )


def write_runs(w: Warehouse) -> None:
    for run in ("run-a", "run-b"):
        for config, profile in (("fixed-200-0", "dense-top5"), ("token-128", "dense-top10")):
            w.write_table(
                runs_frame(run, config, profile),
                "retrieval_metrics",
                {"profile": profile, "chunk_config": config},
                run,
            )


def test_a_materialization_writes_the_current_file_and_the_run_s_history_file(tmp_path: Path):
    w = Warehouse(tmp_path)
    assert w.read_current("retrieval_metrics", TWO) is None
    write_runs(w)
    files = sorted(relative(w, p) for p in tmp_path.rglob("*.parquet"))
    assert files == [
        "current/retrieval_metrics/chunk_config=fixed-200-0/profile=dense-top5.parquet",
        "current/retrieval_metrics/chunk_config=token-128/profile=dense-top10.parquet",
        "history/retrieval_metrics/chunk_config=fixed-200-0/profile=dense-top5/run-a.parquet",
        "history/retrieval_metrics/chunk_config=fixed-200-0/profile=dense-top5/run-b.parquet",
        "history/retrieval_metrics/chunk_config=token-128/profile=dense-top10/run-a.parquet",
        "history/retrieval_metrics/chunk_config=token-128/profile=dense-top10/run-b.parquet",
    ]
    assert w.current_path("retrieval_metrics", TWO).read_bytes() == (
        w.history_path("retrieval_metrics", TWO, "run-b").read_bytes()
    )
    current = w.read_current("retrieval_metrics", TWO)
    assert current is not None and set(current["run_id"]) == {"run-b"}
    assert not list(tmp_path.rglob("*.tmp"))


def test_history_reads_as_one_table_in_duckdb_pyarrow_and_pandas(tmp_path: Path):
    w = Warehouse(tmp_path)
    write_runs(w)
    folder = w.history_table_dir("retrieval_metrics")
    by_duckdb = duckdb.sql(
        "SELECT chunk_config, profile, count(*) AS n, avg(span_recall) AS recall "
        f"FROM {w.history_source_sql('retrieval_metrics')} GROUP BY ALL ORDER BY chunk_config"
    ).df()
    assert by_duckdb["n"].tolist() == [4, 4] and by_duckdb["recall"].tolist() == [0.75, 0.75]
    table = ds.dataset(folder, format="parquet", partitioning="hive").to_table()
    assert table.num_rows == 8 and set(table.column("profile").to_pylist()) == {"dense-top5", "dense-top10"}
    frame = pd.read_parquet(folder, partitioning=None)
    assert len(frame) == 8 and set(frame["run_id"]) == {"run-a", "run-b"}


def test_one_partition_s_history_is_read_without_opening_another_partition_s_files(tmp_path: Path):
    w = Warehouse(tmp_path)
    write_runs(w)
    other = {"chunk_config": "token-128", "profile": "dense-top10"}
    assert relative(w, w.history_partition_dir("retrieval_metrics", TWO)) == (
        "history/retrieval_metrics/chunk_config=fixed-200-0/profile=dense-top5"
    )
    assert w.history_partition_dir("retrieval_metrics") == w.history_table_dir("retrieval_metrics")
    # another partition's file is damaged: the whole table no longer reads, this partition still does
    w.history_path("retrieval_metrics", other, "run-a").write_bytes(b"not parquet")
    with pytest.raises(duckdb.Error):
        duckdb.sql(f"SELECT count(*) FROM {w.history_source_sql('retrieval_metrics')}").fetchall()
    rows = duckdb.sql(
        "SELECT chunk_config, profile, run_id, count(*) AS n "
        f"FROM {w.history_source_sql('retrieval_metrics', TWO)} GROUP BY ALL ORDER BY run_id"
    ).fetchall()
    assert rows == [("fixed-200-0", "dense-top5", "run-a", 2), ("fixed-200-0", "dense-top5", "run-b", 2)]
    w.write_history(pd.DataFrame({"run_id": ["r1"]}), SUMMARY, other, "r1")
    assert w.history_tables(TWO) == ("retrieval_metrics",)
    assert w.history_tables(other) == ("retrieval_metrics", SUMMARY)
    assert w.history_tables({"chunk_config": "new", "profile": "p"}) == ()


def test_a_failed_write_of_the_pair_replaces_neither_file(tmp_path: Path):
    w = Warehouse(tmp_path)
    w.write_table(pd.DataFrame({"version": [1]}), "t", {}, "run-1")
    w.history_table_dir("t").joinpath("run-1.parquet").unlink()
    w.history_table_dir("t").rmdir()
    w.history_table_dir("t").write_text("a file where the table's history folder goes", encoding="utf-8")
    with pytest.raises(StorageError) as failed:
        w.write_table(pd.DataFrame({"version": [2]}), "t", {}, "run-2")
    assert (failed.value.path, failed.value.operation) == (str(w.history_table_dir("t")), "create folder")
    current = w.read_current("t")
    assert current is not None and current["version"].tolist() == [1]
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["current", "history", "t", "t.parquet"]


def test_a_generated_dataset_is_the_current_file_and_a_copy_per_run(tmp_path: Path):
    w = Warehouse(tmp_path)
    span = CharacterSpan(DocumentId("a.md"), 0, 4, "text")
    dataset = TokenLevelDataset((TokenLevelExample(QuestionId("q1"), "a question", (span,), {}),))
    current = w.write_dataset(dataset, "synthetic_questions", {}, "run-1")
    w.write_dataset(dataset, "chunk_level_questions", {"chunk_config": "c"}, "run-2")
    assert relative(w, current) == "datasets/synthetic_questions/current.jsonl"
    copies = w.dataset_history_files()
    assert [relative(w, p) for p in copies] == [
        "datasets/chunk_level_questions/chunk_config=c/history/run-2.jsonl",
        "datasets/synthetic_questions/history/run-1.jsonl",
    ]
    assert [w.dataset_of(p) for p in copies] == ["chunk_level_questions", "synthetic_questions"]
    assert copies[1].read_bytes() == current.read_bytes()
    assert [obj["metadata"]["question_id"] for _, obj in read_jsonl_objects(current)] == ["q1"]


def test_a_run_replaces_the_history_of_the_earlier_runs_of_its_evaluation_it_supersedes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    """`run --resume` after a run was killed between two steps: the resumed run's history file of a
    table partition replaces the killed run's (same evaluation), so the evaluation holds it once; a run
    of another evaluation (`--force` makes a new one) and other tables and partitions keep theirs."""
    w = Warehouse(tmp_path)
    other = {"chunk_config": "fixed-200-0", "profile": "hybrid-top5"}
    w.write_table(pd.DataFrame({"run_id": ["old"]}), "retrieval_results", TWO, "old")  # eval-a
    w.write_table(pd.DataFrame({"run_id": ["killed"]}), "retrieval_results", TWO, "killed")  # eval-b
    w.write_table(pd.DataFrame({"run_id": ["killed"]}), "retrieval_results", other, "killed")
    w.write_history(pd.DataFrame({"run_id": ["killed"]}), SUMMARY, TWO, "killed")
    w.write_table(pd.DataFrame({"run_id": ["resumed"]}), "retrieval_results", TWO, "resumed", ("killed",))
    w.write_history(pd.DataFrame({"run_id": ["resumed"]}), SUMMARY, TWO, "resumed", ("killed", "resumed"))
    assert [(p.parent.name, p.stem) for p in w.history_files("retrieval_results")] == [
        ("profile=dense-top5", "old"),
        ("profile=dense-top5", "resumed"),
        ("profile=hybrid-top5", "killed"),  # a partition the resumed run did not write
    ]
    assert [p.stem for p in w.history_files(SUMMARY)] == ["resumed"]
    # the partition's folder is listed once, whatever the number of runs in the evaluation: no path is
    # built (and checked against links) for each of them
    built: list[str] = []
    history_path = Warehouse.history_path

    def counted(self: Warehouse, table: str, partition: dict[str, str], run_id: str) -> Path:
        built.append(run_id)
        return history_path(self, table, partition, run_id)

    monkeypatch.setattr(Warehouse, "history_path", counted)
    many = [f"never-wrote-it-{i}" for i in range(50)]
    w.write_history(pd.DataFrame({"run_id": ["again"]}), SUMMARY, TWO, "again", (*many, "resumed"))
    assert built == ["again"] and [p.stem for p in w.history_files(SUMMARY)] == ["again"]
    current = w.read_current("retrieval_results", TWO)
    assert current is not None and current["run_id"].tolist() == ["resumed"]

    span = CharacterSpan(DocumentId("a.md"), 0, 4, "text")
    dataset = TokenLevelDataset((TokenLevelExample(QuestionId("q1"), "a question", (span,), {}),))
    w.write_dataset(dataset, "synthetic_questions", {}, "killed")
    w.write_dataset(dataset, "synthetic_questions", {}, "resumed", ("killed",))
    assert [p.stem for p in w.dataset_history_files()] == ["resumed"]


def test_a_current_file_that_is_not_parquet_is_an_error_naming_it_and_the_rebuild(tmp_path: Path):
    w = Warehouse(tmp_path)
    current = w.write_table(pd.DataFrame({"version": [1]}), "chunks", {"chunk_config": "c"}, "run-1")
    current.write_bytes(current.read_bytes()[:40])  # truncated
    with pytest.raises(StorageError) as failed:
        w.read_current("chunks", {"chunk_config": "c"})
    assert str(failed.value).startswith(f"cannot read {current}: ArrowInvalid: ")
    assert ": `rag-eval run --force` rebuilds it (its asset writes it again from its inputs)" in str(
        failed.value
    )


def test_listing_skips_temporary_files_of_writes_in_progress(tmp_path: Path):
    w = Warehouse(tmp_path)
    w.write_history(pd.DataFrame({"run_id": ["r1"]}), "corpus", {}, "r1")
    w.write_history(pd.DataFrame({"run_id": ["r1"]}), SUMMARY, TWO, "r1")
    in_progress = w.history_table_dir("chunks") / f".r2.parquet.{os.getpid()}.tmp"
    in_progress.parent.mkdir(parents=True)
    in_progress.write_bytes(b"half")
    (w.history_dir / ".hidden.parquet").write_bytes(b"not ours")
    assert w.history_tables() == ("corpus", SUMMARY)
    files = w.history_files()
    assert [relative(w, p) for p in files] == [
        "history/corpus/r1.parquet",
        f"history/{SUMMARY}/chunk_config=fixed-200-0/profile=dense-top5/r1.parquet",
    ]
    assert [w.table_of(p) for p in files] == ["corpus", SUMMARY]
    assert w.history_files("corpus") == files[:1] and w.history_files("chunks") == []


def summary(run: str, days: int, **columns: object) -> pd.DataFrame:
    return pd.DataFrame(
        [
            {
                "run_id": run,
                "created_at": NOW - timedelta(days=days),
                "n_questions": 4,
                "span_iou_mean": 0.5,
                **columns,
            }
        ]
    )


def write_generations(w: Warehouse) -> None:
    """A summary file from before the evaluation columns, one with them, one with them empty."""
    p1, p2 = (
        {"chunk_config": "fixed-60-0", "profile": "top2"},
        {"chunk_config": "fixed-60-0", "profile": "top4"},
    )
    w.write_history(summary("old", 3, chunk_config="fixed-60-0", profile="top2"), SUMMARY, p1, "old")
    w.write_history(
        summary(
            "new",
            1,
            chunk_config="fixed-60-0",
            profile="top2",
            evaluation_id="eval-1",
            evaluation_mode="quick",
        ),
        SUMMARY,
        p1,
        "new",
    )
    blank = summary("blank", 2, evaluation_id="", evaluation_mode=pd.NA).astype({"evaluation_mode": "string"})
    w.write_history(blank, SUMMARY, p2, "blank")  # nor partition columns: those are in its folders


EXPECTED = {("blank", "blank", "full"), ("new", "eval-1", "quick"), ("old", "old", "full")}


def test_old_files_read_as_their_run_s_own_full_evaluation_in_every_reader(tmp_path: Path):
    w = Warehouse(tmp_path)
    write_generations(w)
    columns = ("run_id", "evaluation_id", "evaluation_mode")

    read = w.read_history(SUMMARY, (*columns, "chunk_config", "profile"))
    assert {tuple(r) for r in read.frame[list(columns)].itertuples(index=False)} == EXPECTED
    assert read.frame.set_index("run_id").loc["blank", "profile"] == "top4"

    source = w.history_source_sql(SUMMARY)
    union = [str(row[0]) for row in duckdb.sql(f"DESCRIBE SELECT * FROM {source}").fetchall()]
    by_sql = duckdb.sql(f"SELECT {evaluation_defaults_view(union)[0]} FROM {source}").df()
    assert {tuple(r) for r in by_sql[list(columns)].itertuples(index=False)} == EXPECTED

    runs = [
        ("old", {"chunk_config": "fixed-60-0", "profile": "top2"}),
        ("new", {"chunk_config": "fixed-60-0", "profile": "top2"}),
        ("blank", {"chunk_config": "fixed-60-0", "profile": "top4"}),
        ("never-written", {"chunk_config": "fixed-60-0", "profile": "top4"}),
    ]
    by_run = w.read_runs(SUMMARY, runs)
    assert {tuple(r) for r in by_run[list(columns)].itertuples(index=False)} == EXPECTED
    assert w.read_runs(SUMMARY, runs[3:]).empty


@pytest.mark.parametrize(
    "columns",
    [
        ["doc_id", "text"],  # not a run's table: as it is
        ["run_id", "recall"],  # before the evaluation columns: both added
        ["evaluation_mode", "run_id", "recall"],  # one of them: the other added
        ["run_id", "evaluation_id", "recall", "evaluation_mode"],  # both: replaced in place
    ],
)
def test_a_view_s_columns_are_known_without_asking_duckdb(columns: list[str]):
    select, derived = evaluation_defaults_view(columns)
    frame = pd.DataFrame({c: ["x"] for c in columns})  # noqa: F841 (read by DuckDB below)
    con = duckdb.connect()
    con.execute(f"CREATE VIEW v AS SELECT {select} FROM frame")
    assert derived == [str(row[0]) for row in con.sql("DESCRIBE v").fetchall()]


def test_the_rule_leaves_frames_without_runs_alone_and_the_caller_s_frame_unchanged():
    assert list(with_evaluation_defaults(pd.DataFrame({"doc_id": ["a"]})).columns) == ["doc_id"]
    assert evaluation_defaults_view(["doc_id", "text"])[0] == "*"
    old = pd.DataFrame({"run_id": ["r1", "r2"], "evaluation_id": [None, "e"]})
    new = with_evaluation_defaults(old)
    assert new.to_dict("list") == {
        "run_id": ["r1", "r2"],
        "evaluation_id": ["r1", "e"],
        "evaluation_mode": ["full"] * 2,
    }
    assert old["evaluation_id"].isna().tolist() == [True, False] and "evaluation_mode" not in old.columns


def test_a_history_read_fills_missing_columns_takes_partitions_from_folders_and_lists_unreadable_files(
    tmp_path: Path,
):
    w = Warehouse(tmp_path)
    columns = (
        "run_id",
        "created_at",
        "chunk_config",
        "profile",
        "evaluation_id",
        "evaluation_mode",
        "span_iou_mean",
    )
    missing = w.read_history(SUMMARY, columns)
    assert missing.frame.empty and list(missing.frame.columns) == list(columns) and missing.files == 0

    write_generations(w)
    broken = w.history_path(SUMMARY, {"chunk_config": "fixed-60-0", "profile": "top2"}, "broken")
    broken.write_bytes(b"not parquet")
    # a file without run_id or a metric column: the run is its file name, the metric NaN
    lean = pd.DataFrame([{"created_at": NOW}])
    w.write_history(lean, SUMMARY, {"chunk_config": "fixed-60-0", "profile": "top4"}, "lean")

    history = w.read_history(SUMMARY, columns)
    frame = history.frame.set_index("run_id")
    assert history.files == 5 and sorted(frame.index) == ["blank", "lean", "new", "old"]
    assert len(history.unreadable) == 1 and history.unreadable[0].startswith(str(broken))
    assert (frame.loc["lean", "chunk_config"], frame.loc["lean", "profile"]) == ("fixed-60-0", "top4")
    assert frame.loc["lean", "evaluation_id"] == "lean" and pd.isna(frame.loc["lean", "span_iou_mean"])
    assert frame.loc["new", "span_iou_mean"] == pytest.approx(0.5)


def test_a_damaged_file_is_named_by_every_reader_with_what_to_do(tmp_path: Path):
    """A run's history file cannot be made again; a current version is, by its asset's next run."""
    w = Warehouse(tmp_path)
    pair = {"chunk_config": "fixed-60-0", "profile": "top2"}
    w.write_table(pd.DataFrame({"run_id": ["run-1"], "x": [1.0]}), "retrieval_metrics", pair, "run-1")
    for path in (
        w.current_path("retrieval_metrics", pair),
        w.history_path("retrieval_metrics", pair, "run-1"),
    ):
        path.write_bytes(path.read_bytes()[:40])  # cut short
    with pytest.raises(StorageError) as current:
        w.read_current("retrieval_metrics", pair)
    with pytest.raises(StorageError) as history:
        w.read_runs("retrieval_metrics", [("run-1", pair)])
    damaged = w.history_path("retrieval_metrics", pair, "run-1")
    assert str(history.value) == (
        f"cannot read {damaged}: ArrowInvalid: Could not open Parquet input source: Parquet magic bytes not "
        "found in footer. Either the file is corrupted or this is not a parquet file: it holds one run's "
        "rows of retrieval_metrics and cannot be made again: move it out of the warehouse (the history "
        "then lacks that run's rows) or restore it from a backup"
    )
    assert str(current.value).startswith(f"cannot read {w.current_path('retrieval_metrics', pair)}: ")
    assert str(current.value).endswith(
        ": `rag-eval run --force` rebuilds it (its asset writes it again from its inputs); its history "
        "files keep every earlier run"
    )
    (listed,) = w.read_history("retrieval_metrics", ("run_id", "x")).unreadable  # listed, not raised
    assert listed.startswith(f"{damaged}: ArrowInvalid: ") and listed.endswith("or restore it from a backup")


def test_no_configured_secret_reaches_a_table_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    key = "sk-proj-Tq7Wm2Xc9Vb4Nz1Lk8Jh5Gf3Ds6Ap0"
    monkeypatch.setenv("OPENAI_API_KEY", key)
    w = Warehouse(tmp_path)
    frame = pd.DataFrame({"run_id": ["r1", "r1"], "detail": [f"401: {key}", "fine"]})
    w.write_table(frame, "answers", {}, "r1")
    for path in (w.current_path("answers"), w.history_path("answers", {}, "r1")):
        assert pd.read_parquet(path)["detail"].tolist() == ["401: [redacted OPENAI_API_KEY]", "fine"]
    assert frame["detail"][0] == f"401: {key}"  # the caller's frame is left alone
