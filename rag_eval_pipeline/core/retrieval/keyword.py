"""Keyword retrieval: a BM25 index (bm25s) over one chunk set, saved to disk and rebuilt only when the
chunks change.

The index folder holds the bm25s arrays, the chunks themselves (so a hit carries its offsets without a
second lookup) and a manifest with the fingerprint of the chunk set and of the tokenizer settings.
Hits are exact: every chunk is scored, chunks that share no term with the query are not hits, and
ties go in document order, as on the dense side (core/retrieval/hit_order.py).
"""

from __future__ import annotations

import json
import math
import sys
import threading
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Protocol

import numpy as np
import pandas as pd

from ..progress import Progress, no_progress
from ..store.files import replace_folder_atomically
from ..tables import chunks_from_frame, chunks_to_frame
from ..types import PositionAwareChunk, sha256_hex
from ..vector_store.base import ScoredChunk
from .hit_order import SCORE_DECIMALS, best_first

if TYPE_CHECKING:  # bm25s takes a moment to import: only a step that uses it (``_bm25s``)
    import bm25s

# Part of the fingerprint: changing how text is tokenized or scored must rebuild every index.
TOKENIZER = {"lower": True, "stopwords": "en", "stemmer": "snowball-english", "method": "lucene"}
BM25_PARAMS = {"k1": 1.5, "b": 0.75}
_MANIFEST = "manifest.json"
_CHUNKS = "chunks.parquet"
_BM25 = "bm25"

_stemmer_lock = threading.Lock()
_import_lock = threading.Lock()
# What bm25s imports when installed, for backends this module never selects (BM25's defaults: numpy for
# scoring and for the sparse matrix): numba (installed with ranx, a test dependency) and scipy.
_UNUSED_BY_BM25S = ("numba", "scipy", "scipy.sparse")


def _bm25s() -> ModuleType:
    """bm25s, imported without numba and scipy, which it only tries: importing them was 0.5 of its 0.57
    CPU s, in every process that builds, loads or searches a keyword index. Each stays importable by
    the rest of the process (blocked only while bm25s imports, and not at all once imported)."""
    with _import_lock:
        if "bm25s" not in sys.modules:
            blocked = [name for name in _UNUSED_BY_BM25S if name not in sys.modules]
            for name in blocked:  # None: an ImportError, which bm25s catches
                sys.modules[name] = None  # type: ignore[assignment]
            try:
                import bm25s  # noqa: F401
            finally:
                for name in blocked:
                    del sys.modules[name]
        return sys.modules["bm25s"]


def chunk_set_fingerprint(chunks: Sequence[PositionAwareChunk]) -> str:
    """Identifies the chunk set and the index settings: same chunks, same fingerprint."""
    digest = sha256_hex(json.dumps([TOKENIZER, BM25_PARAMS], sort_keys=True))
    for c in chunks:
        digest = sha256_hex(f"{digest}\0{c.chunk_id}\0{c.doc_id}\0{c.start}\0{c.end}")
    return digest[:16]


# Texts whose tokens a process keeps: a question is tokenized by its retrieval and each of the
# diagnostics' runs, in every partition of a keyword profile, a reference passage by every oracle-chunking
# run, a chunk by each partition's BM25 statistics; and bm25s spends more per call (its progress bars,
# made even when not shown) than on tokenizing a question.
TOKENIZED_TEXTS = 50_000
_tokenized: dict[str, tuple[str, ...]] = {}


def _tokenize(texts: Sequence[str]) -> list[list[str]]:
    """Each text's tokens as bm25s makes them (a text's own, whatever else is in the call): the texts not
    tokenized before in one bm25s call, the others from what the process kept."""
    with _stemmer_lock:  # PyStemmer objects are not thread-safe; the kept tokens are shared
        missing = [t for t in dict.fromkeys(texts) if t not in _tokenized]
        fresh: dict[str, tuple[str, ...]] = {}
        if missing:
            import Stemmer

            tokens = _bm25s().tokenize(
                missing,
                lower=True,
                stopwords="en",
                stemmer=Stemmer.Stemmer("english"),
                return_ids=False,
                show_progress=False,
            )
            fresh = dict(zip(missing, (tuple(t) for t in tokens), strict=True))
        found = [list(fresh[t] if t in fresh else _tokenized[t]) for t in texts]
        if len(_tokenized) + len(fresh) > TOKENIZED_TEXTS:
            _tokenized.clear()
        if len(fresh) <= TOKENIZED_TEXTS:
            _tokenized.update(fresh)
        return found


class KeywordSearch(Protocol):
    """What a profile's keyword side needs: ``KeywordIndex``, or a view of one (core/diagnostics)."""

    def search(self, queries: Sequence[str], k: int) -> list[list[ScoredChunk]]: ...


@dataclass(frozen=True)
class _Statistics:
    """What BM25 scores a chunk against: how many chunks hold each term, how many chunks, their mean
    length in tokens."""

    document_frequency: Counter[str]
    n_chunks: int
    mean_length: float


@dataclass(frozen=True)
class KeywordIndex:
    chunks: tuple[PositionAwareChunk, ...]
    fingerprint: str
    _bm25: bm25s.BM25

    @classmethod
    def build(cls, chunks: Sequence[PositionAwareChunk], progress: Progress = no_progress) -> KeywordIndex:
        bm25s = _bm25s()
        stage = "keyword index (bm25)"
        progress(stage, 0, len(chunks))
        retriever = bm25s.BM25(method=TOKENIZER["method"], **BM25_PARAMS)
        if chunks:
            retriever.index(_tokenize([c.text for c in chunks]), show_progress=False)
        progress(stage, len(chunks), len(chunks))
        return cls(tuple(chunks), chunk_set_fingerprint(chunks), retriever)

    @classmethod
    def load_or_build(
        cls, folder: str | Path, chunks: Sequence[PositionAwareChunk], progress: Progress = no_progress
    ) -> tuple[KeywordIndex, bool]:
        """The saved index when it was built from exactly these chunks, else a new one saved there.
        The flag says whether it was (re)built."""
        folder = Path(folder)
        expected = chunk_set_fingerprint(chunks)
        if _saved_fingerprint(folder) == expected:
            return cls.load(folder), False
        index = cls.build(chunks, progress)
        index.save(folder)
        return index, True

    @classmethod
    def load(cls, folder: str | Path) -> KeywordIndex:
        bm25s = _bm25s()
        folder = Path(folder)
        fingerprint = _saved_fingerprint(folder)
        if fingerprint is None:
            raise LookupError(f"no keyword index in {folder}: build it first (materialize chunk_index)")
        chunks = tuple(chunks_from_frame(pd.read_parquet(folder / _CHUNKS)))
        retriever = bm25s.BM25.load(str(folder / _BM25)) if chunks else bm25s.BM25()
        return cls(chunks, fingerprint, retriever)

    def save(self, folder: str | Path) -> None:
        """Write to a fresh folder and swap it in, so a killed run never leaves a half index (a failed
        write raises ``StorageError`` and leaves the old index)."""
        replace_folder_atomically(Path(folder), self._write)

    def _write(self, staging: Path) -> None:
        if self.chunks:
            self._bm25.save(str(staging / _BM25), show_progress=False)
        chunks_to_frame(self.chunks).to_parquet(staging / _CHUNKS, index=False)
        manifest = {"fingerprint": self.fingerprint, "n_chunks": len(self.chunks), **TOKENIZER, **BM25_PARAMS}
        (staging / _MANIFEST).write_text(json.dumps(manifest, sort_keys=True), encoding="utf-8")

    def search(self, queries: Sequence[str], k: int) -> list[list[ScoredChunk]]:
        """Top ``k`` chunks by BM25 score per query, best first; only chunks sharing a term score."""
        if k <= 0:
            raise ValueError(f"k must be >= 1, got {k}")
        results: list[list[ScoredChunk]] = []
        for tokens in _tokenize(queries):
            if not self.chunks or not tokens:
                results.append([])
                continue
            scores = np.asarray(self._bm25.get_scores(tokens), dtype=np.float64)
            results.append(self._top_k(scores, k))
        return results

    def score_texts(self, query: str, texts: Sequence[str]) -> list[float]:
        """The BM25 score each text would get as one more chunk of this index, under the index's own
        statistics (which one added chunk is taken not to change), as the index scores its chunks
        (bm25s, Lucene's variant): with N chunks, df(t) of them holding term t, mean length L tokens,

            score(text) = sum over the query's tokens t (a repeated token counts again) of
                          idf(t) * tf / (tf + k1 * (1 - b + b * |text| / L)),
            idf(t) = ln(1 + (N - df(t) + 0.5) / (df(t) + 0.5)),

        tf the count of t in the text, |text| its token count; a term no chunk holds scores 0 (bm25s
        drops it from the query). The statistics cost one tokenization of the chunks, once per index."""
        stats = self._statistics
        query_tokens = [t for t in _tokenize([query])[0] if stats.document_frequency[t] > 0]
        k1, b = BM25_PARAMS["k1"], BM25_PARAMS["b"]
        scores = []
        for tokens in _tokenize(texts) if texts else []:
            counts = Counter(tokens)
            norm = k1 * (1 - b + b * len(tokens) / stats.mean_length) if stats.mean_length else k1
            score = 0.0
            for term in query_tokens:
                tf = counts[term]
                if tf:
                    df = stats.document_frequency[term]
                    idf = math.log(1 + (stats.n_chunks - df + 0.5) / (df + 0.5))
                    score += idf * tf / (tf + norm)
            scores.append(score)
        return scores

    @cached_property
    def _statistics(self) -> _Statistics:
        tokenized = _tokenize([c.text for c in self.chunks]) if self.chunks else []
        frequency: Counter[str] = Counter()
        for tokens in tokenized:
            frequency.update(set(tokens))
        lengths = [len(tokens) for tokens in tokenized]
        return _Statistics(frequency, len(lengths), sum(lengths) / len(lengths) if lengths else 0.0)

    def _top_k(self, scores: np.ndarray, k: int) -> list[ScoredChunk]:
        rounded = np.round(scores, SCORE_DECIMALS)
        positive = np.flatnonzero(rounded > 0)
        if len(positive) > k:
            # Everything tied with the k-th best score stays in, so document order decides among them.
            kth = np.partition(rounded[positive], len(positive) - k)[len(positive) - k]
            positive = positive[rounded[positive] >= kth]
        order = best_first(positive.tolist(), lambda i: float(scores[i]), lambda i: self.chunks[i])
        return [
            ScoredChunk(
                self.chunks[i].chunk_id,
                self.chunks[i].doc_id,
                self.chunks[i].start,
                self.chunks[i].end,
                float(scores[i]),
                self.chunks[i].text,
            )
            for i in order[:k]
        ]


def _saved_fingerprint(folder: Path) -> str | None:
    try:
        return str(json.loads((folder / _MANIFEST).read_text(encoding="utf-8"))["fingerprint"])
    except (OSError, ValueError, KeyError):
        return None
