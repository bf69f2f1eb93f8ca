"""The warehouse (core/store/warehouse.py owns its layout) as Dagster sees it: the IO manager that stores
every asset's table as its current version plus one history file per run, and the resource assets use
for what they write besides their output (per-run summaries, generated datasets, the anchor ledger).
A write that fails (full disk, read-only folder) fails the step with the path and the OS error.
"""

from __future__ import annotations

import logging
from collections.abc import Collection, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import dagster as dg
import pandas as pd
from pydantic import Field
from upath import UPath

from ..core.errors import StorageError
from ..core.project.project_files import project_dir
from ..core.questions.datasets import ChunkLevelDataset, TokenLevelDataset
from ..core.store.warehouse import LEADERBOARD, WAREHOUSE_ENV, Partition, Warehouse
from .evaluation_runs import superseded_runs


@contextmanager
def warehouse_writes() -> Iterator[None]:
    """A warehouse write that fails (full disk, read-only file system) fails the step with the path,
    the OS error and the remedy, instead of a traceback."""
    try:
        yield
    except StorageError as exc:
        raise dg.Failure(str(exc.or_else(f"point {WAREHOUSE_ENV} elsewhere"))) from exc


def _partition(definition: dg.PartitionsDefinition | None, key: str) -> Partition:
    """A Dagster partition key as the warehouse's dimension -> value. In ``get_path_for_partition`` a
    multi key arrives as its values joined by ``/`` in dimension-name order; elsewhere as the key."""
    if definition is None:
        return {}
    if isinstance(key, dg.MultiPartitionKey):
        return dict(key.keys_by_dimension)
    if isinstance(definition, dg.MultiPartitionsDefinition):
        names = sorted(d.name for d in definition.partitions_defs)
        return dict(zip(names, key.split("/"), strict=True))
    return {getattr(definition, "name", None) or "partition": key}


def _reads_partitions_by_key(context: dg.InputContext) -> bool:
    """An input typed as a mapping (``dict[str, pd.DataFrame]``) over a partitioned asset: it reads
    partition key -> table, for any number of partitions (the leaderboard reads every evaluated one)."""
    if not (context.has_asset_key and context.has_asset_partitions):
        return False
    typing_type = context.dagster_type.typing_type
    return typing_type is dict or getattr(typing_type, "__origin__", None) in (dict, Mapping)


def _superseded(context: dg.OutputContext) -> tuple[str, ...]:
    """The runs whose history of this output the run replaces (``superseded_runs``); none for an output
    handled outside a run step (a context built by hand)."""
    try:
        step = context.step_context
    except dg.DagsterInvariantViolationError:
        return ()
    return superseded_runs(step.instance, step.dagster_run)


class _NoDebugLines(logging.Filter):
    """Drops the DEBUG lines of Dagster's UPathIOManager ("Loading 1 partitions...", "Loading file
    from ...", "Writing file at ..."): each is an event stored in the run's log (28 of a partition run's
    115), and the LOADED_INPUT / HANDLED_OUTPUT events already say what was read and written (the path
    is in the output's metadata). Dagster's own events pass whatever their level."""

    def filter(self, record: logging.LogRecord) -> bool:
        return record.levelno > logging.DEBUG or hasattr(record, "dagster_event")


@contextmanager
def _without_debug_lines(context: dg.InputContext | dg.OutputContext) -> Iterator[None]:
    try:
        log: logging.Logger | None = context.log
    except dg.DagsterInvariantViolationError:  # a context built without a log manager
        log = None
    quiet = _NoDebugLines()
    if log is not None:
        log.addFilter(quiet)
    try:
        yield
    finally:
        if log is not None:
            log.removeFilter(quiet)


class ParquetIOManager(dg.UPathIOManager):
    """current/<asset>[/<partition folders>].parquet, read and replaced per partition; every write also
    keeps the run's copy in history/ (``Warehouse.write_table``)."""

    extension = ".parquet"

    def load_input(self, context: dg.InputContext) -> Any:
        with _without_debug_lines(context):
            loaded = super().load_input(context)
        if not _reads_partitions_by_key(context):
            return loaded
        # Dagster hands over one partition's frame bare, and None for none: an input over all the
        # partitions gets a mapping whatever their number (one chunk config x one profile is one).
        keys = context.asset_partition_keys
        if loaded is None:
            return {}
        if len(keys) == 1 and not isinstance(loaded, Mapping):
            return {keys[0]: loaded}
        return loaded

    def handle_output(self, context: dg.OutputContext, obj: Any) -> None:
        with _without_debug_lines(context):
            super().handle_output(context, obj)

    def __init__(self, base_dir: str) -> None:
        self.warehouse = Warehouse(Path(base_dir))
        super().__init__(base_path=UPath(self.warehouse.current_dir))

    def get_path_for_partition(
        self, context: dg.InputContext | dg.OutputContext, path: UPath, partition: str
    ) -> UPath:
        """The partition's current file as the warehouse lays it out (``Warehouse.current_path``), without
        its extension, which the base class adds."""
        table = context.asset_key.to_user_string()
        current = self.warehouse.current_path(table, _partition(context.asset_partitions_def, partition))
        return UPath(current.with_suffix(""))

    def dump_to_path(self, context: dg.OutputContext, obj: Any, path: UPath) -> None:
        if not isinstance(obj, pd.DataFrame):
            raise TypeError(
                f"{context.asset_key.to_user_string()} must return a pandas DataFrame, got {type(obj)}"
            )
        partition = (
            _partition(context.asset_partitions_def, context.asset_partition_key)
            if context.has_asset_partitions
            else {}
        )
        with warehouse_writes():  # the same file as ``path``: both are the warehouse's current_path
            self.warehouse.write_table(
                obj, context.asset_key.to_user_string(), partition, context.run_id, _superseded(context)
            )

    def load_from_path(self, context: dg.InputContext, path: UPath) -> pd.DataFrame:
        try:
            return self.warehouse.read_file(Path(str(path)))
        except StorageError as exc:  # a damaged file: its path and `--force`, not pyarrow's words alone
            raise dg.Failure(str(exc)) from exc

    def get_metadata(self, context: dg.OutputContext, obj: Any) -> dict[str, Any]:
        if isinstance(obj, pd.DataFrame):
            return {"dagster/row_count": len(obj)}
        return {}


def default_warehouse_dir() -> str:
    return str(Warehouse.in_project(project_dir()).base_dir)


class ParquetIOManagerFactory(dg.ConfigurableIOManagerFactory):
    """``base_dir`` is the warehouse; the default is data/warehouse in the project."""

    base_dir: str = Field(default_factory=default_warehouse_dir)

    def create_io_manager(self, context: dg.InitResourceContext) -> ParquetIOManager:
        return ParquetIOManager(self.base_dir)


class WarehouseResource(dg.ConfigurableResource):
    """For what an asset writes besides its output (the per-run summary rows, generated datasets) and
    the files kept beside the tables (the anchor ledger, baselines, history)."""

    base_dir: str = Field(default_factory=default_warehouse_dir)

    def layout(self) -> Warehouse:
        return Warehouse(Path(self.base_dir))

    def write_history(
        self,
        frame: pd.DataFrame,
        table: str,
        partition: Partition,
        run_id: str,
        supersedes: Collection[str] = (),
    ) -> Path:
        """``supersedes``: the earlier runs of the evaluation (``superseded_runs``), whose history of
        this table and partition the write replaces."""
        with warehouse_writes():
            return self.layout().write_history(frame, table, partition, run_id, supersedes)

    def write_dataset(
        self,
        dataset: TokenLevelDataset | ChunkLevelDataset,
        name: str,
        partition: Partition,
        run_id: str,
        supersedes: Collection[str] = (),
    ) -> Path:
        """A generated dataset as JSONL (``Warehouse.write_dataset``); returns its current file."""
        with warehouse_writes():
            return self.layout().write_dataset(dataset, name, partition, run_id, supersedes)


def read_current_leaderboard(resources: Mapping[str, object] | None) -> pd.DataFrame | None:
    """The leaderboard the last leaderboard run wrote (None before there is one), from the IO manager
    among ``resources`` (the default one when there is none)."""
    factory = (resources or {}).get("io_manager") or ParquetIOManagerFactory()
    assert isinstance(factory, ParquetIOManagerFactory)
    return Warehouse(Path(factory.base_dir)).read_current(LEADERBOARD)
