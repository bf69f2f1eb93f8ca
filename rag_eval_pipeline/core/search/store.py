"""A race's scores as search history in the warehouse, one Parquet file per candidate and unit:
``history/search_scores/candidate=<key>/search=<id>/<round-N|final>.parquet``, written atomically
before the race moves on. A killed search finds them again (race.py), and `rag-eval query` reads them as
the table ``search_scores``, eliminated candidates included."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from ..store.warehouse import Warehouse, partition_folders
from .candidates import CandidateKey
from .race import FINAL, Spend, Unit

SEARCH_SCORES = "search_scores"
# One row per candidate and search: its settings and fate (core/search/outcome.py)
SEARCH_CANDIDATES = "search_candidates"
# What a search paid over all its runs (one row, replaced as it goes)
SEARCH_SPEND = "search_spend"
SPEND_FIELDS = ("texts_embedded", "texts_indexed", "queries", "llm_usd", "seconds")


def unit_name(unit: Unit) -> str:
    return "final" if unit == FINAL else f"round-{unit}"


class WarehouseResultStore:
    def __init__(self, warehouse: Warehouse, search_id: str) -> None:
        self.warehouse = warehouse
        self.search_id = search_id

    def _path(self, key: CandidateKey, unit: Unit) -> Path:
        partition = {"search": self.search_id, "candidate": key}
        return self.warehouse.history_path(SEARCH_SCORES, partition, unit_name(unit))

    def load(self, key: CandidateKey, unit: Unit) -> pd.DataFrame | None:
        path = self._path(key, unit)
        if not path.exists():
            return None
        frame = pd.read_parquet(path)
        return frame.drop(columns=["search", "candidate", "unit"], errors="ignore")

    def save(self, key: CandidateKey, unit: Unit, frame: pd.DataFrame) -> None:
        self.warehouse.write_history(
            frame.assign(unit=unit_name(unit)),
            SEARCH_SCORES,
            {"search": self.search_id, "candidate": key},
            unit_name(unit),
        )

    def _spend_path(self) -> Path:
        return self.warehouse.history_path(SEARCH_SPEND, {"search": self.search_id}, "spend")

    def load_spend(self) -> Spend:
        """What the earlier runs of this search paid (nothing for a new search)."""
        path = self._spend_path()
        if not path.exists():
            return Spend()
        row = pd.read_parquet(path).iloc[0]
        return Spend(**{f: type(getattr(Spend(), f))(row[f]) for f in SPEND_FIELDS})

    def save_spend(self, spend: Spend) -> None:
        frame = pd.DataFrame([{f: getattr(spend, f) for f in SPEND_FIELDS}])
        self.warehouse.write_history(frame, SEARCH_SPEND, {"search": self.search_id}, "spend")

    def units(self) -> int:
        """How many units are stored (what a resumed search need not pay for again)."""
        (folder,) = partition_folders({"search": self.search_id})  # candidate=<key>/search=<id>/<unit>
        return sum(1 for p in self.warehouse.history_files(SEARCH_SCORES) if folder in p.parts)
