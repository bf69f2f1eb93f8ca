"""Parquet for every table: the current version per partition, plus one history file per run.

current:  <base>/current/<asset>/chunk_config=<c>/profile=<p>.parquet
history:  <base>/history/<asset>/chunk_config=<c>/profile=<p>/<run_id>.parquet   (hive style)
Every file is written to a temporary name and renamed, so a killed run leaves no half file.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import dagster as dg
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
from pydantic import Field
from upath import UPath

from .core.datasets import ChunkLevelDataset, TokenLevelDataset, write_jsonl
from .project import project_dir


def write_parquet_atomically(frame: pd.DataFrame, path: Path) -> None:
    """Plain ``string`` columns (not pandas' ``large_string``), so a column that is also a hive
    partition folder (chunk_config, profile) merges with it when pyarrow reads the history."""
    path.parent.mkdir(parents=True, exist_ok=True)
    table = pa.Table.from_pandas(frame, preserve_index=False)
    schema = pa.schema(
        [pa.field(f.name, pa.string()) if pa.types.is_large_string(f.type) else f for f in table.schema],
        metadata=table.schema.metadata,
    )
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    pq.write_table(table.cast(schema), tmp)
    tmp.replace(path)


def history_path(base_dir: str | Path, table: str, partition: dict[str, str], run_id: str) -> Path:
    folder = Path(base_dir) / "history" / table
    for dimension in sorted(partition):
        folder = folder / f"{dimension}={partition[dimension]}"
    return folder / f"{run_id}.parquet"


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
            for name, value in zip(names, partition.split("/"), strict=True):
                path = path / f"{name}={value}"
            return path
        return path / f"{getattr(definition, 'name', None) or 'partition'}={partition}"

    def dump_to_path(self, context: dg.OutputContext, obj: Any, path: UPath) -> None:
        if not isinstance(obj, pd.DataFrame):
            raise TypeError(
                f"{context.asset_key.to_user_string()} must return a pandas DataFrame, got {type(obj)}"
            )
        current = Path(str(path))
        write_parquet_atomically(obj, current)
        # history mirrors the current layout: current/<asset>/<partition dirs>.parquet ->
        # history/<asset>/<partition dirs>/<run_id>.parquet
        relative = current.relative_to(self.base_dir / "current").with_suffix("")
        write_parquet_atomically(obj, self.base_dir / "history" / relative / f"{context.run_id}.parquet")

    def load_from_path(self, context: dg.InputContext, path: UPath) -> pd.DataFrame:
        return pd.read_parquet(Path(str(path)))

    def get_metadata(self, context: dg.OutputContext, obj: Any) -> dict[str, Any]:
        if isinstance(obj, pd.DataFrame):
            return {"dagster/row_count": len(obj)}
        return {}


def default_warehouse_dir() -> str:
    return os.environ.get("RAG_EVAL_WAREHOUSE_DIR") or str(project_dir() / "data" / "warehouse")


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
        folder = Path(self.base_dir) / "datasets" / name
        for dimension in sorted(partition):
            folder = folder / f"{dimension}={partition[dimension]}"
        write_jsonl(dataset, folder / "history" / f"{run_id}.jsonl")
        write_jsonl(dataset, folder / "current.jsonl")
        return folder / "current.jsonl"
