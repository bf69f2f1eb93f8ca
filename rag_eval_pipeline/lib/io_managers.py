"""Parquet for every table: the current version per partition, plus one history file per run.

current:  <base>/current/<asset>/chunk_config=<c>/profile=<p>.parquet
history:  <base>/history/<asset>/chunk_config=<c>/profile=<p>/<run_id>.parquet   (hive style)
Every file is written to a temporary name and renamed (core/files.py), so a killed run leaves no half
file; a write that fails (full disk, read-only folder) fails the step with the path and the OS error.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import dagster as dg
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
from pydantic import Field
from upath import UPath

from ..core.datasets import ChunkLevelDataset, TokenLevelDataset, write_jsonl
from ..core.errors import StorageError
from ..core.files import write_files_atomically
from ..core.paths import child_path
from ..core.redaction import redact_frame
from ..project import project_dir

WAREHOUSE_ENV = "RAG_EVAL_WAREHOUSE_DIR"


def write_parquet_atomically(frame: pd.DataFrame, path: Path, *copies: Path) -> None:
    """``frame`` to ``path`` and to each of ``copies`` (a run's history file): all of them are replaced,
    or none (a full disk fails before any rename). Plain ``string`` columns (not pandas'
    ``large_string``), so a column that is also a hive partition folder (chunk_config, profile) merges
    with it when pyarrow reads the history."""
    frame = redact_frame(frame)  # no configured secret reaches a table (core/redaction.py)
    table = pa.Table.from_pandas(frame, preserve_index=False)
    schema = pa.schema(
        [pa.field(f.name, pa.string()) if pa.types.is_large_string(f.type) else f for f in table.schema],
        metadata=table.schema.metadata,
    )
    written: list[Path] = []

    def write(temporary: Path) -> None:
        if written:
            shutil.copyfile(written[0], temporary)
        else:
            pq.write_table(table.cast(schema), temporary)
        written.append(temporary)

    write_files_atomically([(target, write) for target in (path, *copies)])


@contextmanager
def warehouse_writes() -> Iterator[None]:
    """A warehouse write that fails (full disk, read-only file system) fails the step with the path,
    the OS error and the remedy, instead of a traceback."""
    try:
        yield
    except StorageError as exc:
        raise dg.Failure(str(exc.or_else(f"point {WAREHOUSE_ENV} elsewhere"))) from exc


def history_path(base_dir: str | Path, table: str, partition: dict[str, str], run_id: str) -> Path:
    folders = [f"{dimension}={partition[dimension]}" for dimension in sorted(partition)]
    return child_path(Path(base_dir) / "history" / table, *folders, f"{run_id}.parquet")


class ParquetIOManager(dg.UPathIOManager):
    extension = ".parquet"

    def __init__(self, base_dir: str) -> None:
        self.base_dir = Path(base_dir)
        super().__init__(base_path=UPath(self.base_dir / "current"))

    def get_path_for_partition(
        self, context: dg.InputContext | dg.OutputContext, path: UPath, partition: str
    ) -> UPath:
        definition = context.asset_partitions_def
        if isinstance(definition, dg.MultiPartitionsDefinition):
            names = sorted(d.name for d in definition.partitions_defs)
            folders = [f"{name}={value}" for name, value in zip(names, partition.split("/"), strict=True)]
            return child_path(path, *folders)
        return child_path(path, f"{getattr(definition, 'name', None) or 'partition'}={partition}")

    def dump_to_path(self, context: dg.OutputContext, obj: Any, path: UPath) -> None:
        if not isinstance(obj, pd.DataFrame):
            raise TypeError(
                f"{context.asset_key.to_user_string()} must return a pandas DataFrame, got {type(obj)}"
            )
        current = Path(str(path))
        # history mirrors the current layout: current/<asset>/<partition dirs>.parquet ->
        # history/<asset>/<partition dirs>/<run_id>.parquet
        relative = current.relative_to(self.base_dir / "current").with_suffix("")
        with warehouse_writes():
            write_parquet_atomically(
                obj, current, self.base_dir / "history" / relative / f"{context.run_id}.parquet"
            )

    def load_from_path(self, context: dg.InputContext, path: UPath) -> pd.DataFrame:
        return pd.read_parquet(Path(str(path)))

    def get_metadata(self, context: dg.OutputContext, obj: Any) -> dict[str, Any]:
        if isinstance(obj, pd.DataFrame):
            return {"dagster/row_count": len(obj)}
        return {}


def default_warehouse_dir() -> str:
    return os.environ.get(WAREHOUSE_ENV) or str(project_dir() / "data" / "warehouse")


class ParquetIOManagerFactory(dg.ConfigurableIOManagerFactory):
    """``base_dir`` holds current/ and history/; the default is data/warehouse in the project."""

    base_dir: str = Field(default_factory=default_warehouse_dir)

    def create_io_manager(self, context: dg.InitResourceContext) -> ParquetIOManager:
        return ParquetIOManager(self.base_dir)


class WarehouseResource(dg.ConfigurableResource):
    """For tables an asset writes besides its output (e.g. the per-run summary rows)."""

    base_dir: str = Field(default_factory=default_warehouse_dir)

    def write_history(self, frame: pd.DataFrame, table: str, partition: dict[str, str], run_id: str) -> Path:
        path = history_path(self.base_dir, table, partition, run_id)
        with warehouse_writes():
            write_parquet_atomically(frame, path)
        return path

    def write_dataset(
        self,
        dataset: TokenLevelDataset | ChunkLevelDataset,
        name: str,
        partition: dict[str, str],
        run_id: str,
    ) -> Path:
        """A generated dataset as JSONL (the schema `rag-eval` and LangSmith import): the current file
        ``datasets/<name>/<partition dirs>/current.jsonl`` and a copy per run next to it."""
        folders = [f"{dimension}={partition[dimension]}" for dimension in sorted(partition)]
        folder = child_path(Path(self.base_dir) / "datasets", name, *folders)
        with warehouse_writes():
            write_jsonl(dataset, folder / "history" / f"{run_id}.jsonl")
            write_jsonl(dataset, folder / "current.jsonl")
        return folder / "current.jsonl"


def read_current_leaderboard(resources: Mapping[str, object] | None) -> pd.DataFrame | None:
    """The leaderboard the last leaderboard run wrote (None before there is one), from the IO manager
    among ``resources`` (the default one when there is none)."""
    factory = (resources or {}).get("io_manager") or ParquetIOManagerFactory()
    assert isinstance(factory, ParquetIOManagerFactory)
    path = Path(factory.base_dir) / "current" / "leaderboard.parquet"
    return pd.read_parquet(path) if path.exists() else None
