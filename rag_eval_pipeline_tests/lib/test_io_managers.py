"""Parquet history is one table to DuckDB, pyarrow.dataset and pandas; writes are atomic."""

from pathlib import Path

import duckdb
import pandas as pd
import pyarrow.dataset as ds

from rag_eval_pipeline.lib.io_managers import history_path, write_parquet_atomically


def write_runs(base: Path) -> None:
    for run in ("run-a", "run-b"):
        for config, profile in (("fixed-200-0", "dense-top5"), ("token-128", "dense-top10")):
            frame = pd.DataFrame(
                {
                    "run_id": [run] * 2,
                    "chunk_config": [config] * 2,
                    "profile": [profile] * 2,
                    "question_id": ["q1", "q2"],
                    "span_recall": [0.5, 1.0],
                }
            )
            write_parquet_atomically(
                frame,
                history_path(base, "retrieval_metrics", {"profile": profile, "chunk_config": config}, run),
            )


def test_history_layout_is_hive_style_one_file_per_run(tmp_path: Path):
    write_runs(tmp_path)
    files = sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*.parquet"))
    assert files[0] == "history/retrieval_metrics/chunk_config=fixed-200-0/profile=dense-top5/run-a.parquet"
    assert len(files) == 4
    assert not list(tmp_path.rglob("*.tmp"))


def test_history_reads_as_one_table_everywhere(tmp_path: Path):
    write_runs(tmp_path)
    folder = tmp_path / "history" / "retrieval_metrics"
    by_duckdb = duckdb.sql(
        f"SELECT chunk_config, profile, count(*) AS n, avg(span_recall) AS recall "
        f"FROM read_parquet('{folder}/**/*.parquet') GROUP BY ALL ORDER BY chunk_config"
    ).df()
    assert by_duckdb["n"].tolist() == [4, 4] and by_duckdb["recall"].tolist() == [0.75, 0.75]
    table = ds.dataset(folder, format="parquet", partitioning="hive").to_table()
    assert table.num_rows == 8 and set(table.column("profile").to_pylist()) == {"dense-top5", "dense-top10"}
    frame = pd.read_parquet(folder, partitioning=None)
    assert len(frame) == 8 and set(frame["run_id"]) == {"run-a", "run-b"}
