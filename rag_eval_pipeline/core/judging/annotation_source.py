"""The judging files as the annotation page reads and writes them while it runs.

queries.jsonl and pool.jsonl are re-read when they change on disk (pooling may run again while a person
annotates: the page then shows the new pool, and a save made against the old one is refused), and the
judgements are re-read on every request, since another annotator's server may append to the same file.
The corpus is the one loaded at start: what the page shows and what a save is checked against are the
same text.

The queue puts the queries with text nobody read first (``unread_first``), as the judgements stand when
it is built, so a query keeps its place while the page runs. With a focus (`rag-eval annotate --holes`,
core/judging/hole_focus.py) the queue is the focus's passages in its order, fixed for the server's life.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ..corpus.corpus import Corpus
from .agreement import PairAgreement, judgements_agreement
from .annotation import AnnotationWork, build_work, judgement_from_request, unread_first
from .hole_focus import HoleFocus
from .store import JudgingStore
from .types import Judgement

Signature = tuple[tuple[int, int] | None, ...]


@dataclass(frozen=True)
class AgreementRow:
    """One pair of judges as the page shows it."""

    judges: str  # "a / b"
    queries: int  # both judged
    kappa: float | None  # Cohen's kappa on the relevance of the passages both read
    span_overlap: float | None  # character overlap (IoU) of their spans
    summary: str  # the agreement's own sentence


def _signature(*paths: Path) -> Signature:
    found: list[tuple[int, int] | None] = []
    for path in paths:
        try:
            stat = path.stat()
        except FileNotFoundError:
            found.append(None)
        else:
            found.append((stat.st_mtime_ns, stat.st_size))
    return tuple(found)


class AnnotationSource:
    """One workspace's queue, judgements and agreement, for the page's server (thread-safe)."""

    def __init__(self, store: JudgingStore, corpus: Corpus, focus: HoleFocus | None = None) -> None:
        self.store = store
        self.corpus = corpus
        self.focus = focus
        self._lock = threading.Lock()
        self._work: AnnotationWork | None = None
        self._signature: Signature | None = None

    def work(self) -> AnnotationWork:
        with self._lock:
            signature = _signature(self.store.queries_path, self.store.pool_path)
            if self._work is None or (self.focus is None and signature != self._signature):
                self._work = self._build()
                self._signature = signature
            return self._work

    def _build(self) -> AnnotationWork:
        queries = self.store.read_queries()
        if self.focus is not None:
            return build_work(
                queries,
                self.focus.passages,
                self.corpus,
                order=[q.query_id for q in self.focus.queries],
                reasons={q.query_id: q.reason for q in self.focus.queries},
                focus=self.focus.describe(),
            )
        pool = self.store.read_pool()
        order = unread_first(queries, pool, self.judgements(), self.corpus)
        return build_work(queries, pool, self.corpus, order=order)

    def judgements(self) -> list[Judgement]:
        return self.store.read_judgements()

    def save(self, request: Mapping[str, Any], now: datetime | None = None) -> Judgement:
        """The judgement of ``request``, checked (AnnotationError when refused), then appended."""
        at = (now or datetime.now(UTC)).isoformat(timespec="seconds").replace("+00:00", "Z")
        judgement = judgement_from_request(self.work(), request, at)
        self.store.append_judgements([judgement])
        return judgement

    def agreement(self) -> list[AgreementRow]:
        """Agreement between every two judges who judged a query in common (people and LLM judges)."""
        return [
            AgreementRow(
                f"{pair.judge_a} / {pair.judge_b}", pair.n_queries, pair.kappa, pair.span_iou, pair.describe()
            )
            for pair in self._pair_agreements(self.judgements())
        ]

    def _pair_agreements(self, judgements: list[Judgement]) -> list[PairAgreement]:
        """As `rag-eval judgements status` computes it: over the judgements still anchored in the
        documents as they are, each judge's view of a query, on the pooled passages both read."""
        return judgements_agreement(judgements, self.corpus, self.store.read_pool())
