"""One tie rule after every engine (issue 30): copies of a repeated paragraph score the same, and which
copy ranks first decides position-exact recall. Whatever engine searched (qdrant-edge, qdrant-client's
local mode, exact numpy), and at every stage (dense, keyword, fusion, reranker), ties go in document
order: doc id, then start offset."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from rag_eval_pipeline.core.chunking import ChunkSet, RecursiveCharacterChunker, cut_corpus
from rag_eval_pipeline.core.corpus.corpus import Corpus
from rag_eval_pipeline.core.retrieval.base import Query
from rag_eval_pipeline.core.retrieval.indexes import build_indexes
from rag_eval_pipeline.core.retrieval.profile_retriever import retrieve
from rag_eval_pipeline.core.retrieval.rerank import CrossEncoderReranker
from rag_eval_pipeline.core.settings.configs import RetrievalProfile
from rag_eval_pipeline.core.types import Document, DocumentId, PositionAwareChunk, ProfileName, QuestionId
from rag_eval_pipeline.core.vector_store.base import VectorStore
from rag_eval_pipeline.core.vector_store.edge import EdgeVectorStore
from rag_eval_pipeline.core.vector_store.points import search_with_whole_ties
from rag_eval_pipeline.core.vector_store.qdrant import QdrantVectorStore
from rag_eval_pipeline_tests.cross_encoder import build_minilm_cross_encoder
from rag_eval_pipeline_tests.fakes import HashingEmbedder

REPEATED = "Every relief valve is tested in March by two technicians of the night shift."
FILLER = [
    "The main pump runs at 1,450 rpm and is serviced every 90 days.",
    "A pressure alarm fires when the outlet pressure exceeds 7.5 bar.",
    "Zoe leads the night shift, which starts at 22:00 in the control room.",
    "Cooling water flows through the heat exchanger before it reaches the pumps.",
]
# Four copies in each of three documents: twelve tied chunks, more than k + the engines' first margin,
# so which copies make the top 5 is decided by the tie rule alone.
DOC_IDS = ("c.md", "a.md", "b.md")  # not in the corpus's order on purpose
TOP_K = 5


def corpus() -> Corpus:
    documents = []
    for doc_id in DOC_IDS:
        paragraphs = [p for filler in FILLER for p in (filler, REPEATED)]
        documents.append(Document(DocumentId(doc_id), "\n\n".join(paragraphs) + "\n"))
    return Corpus(tuple(documents))


def chunk_set() -> ChunkSet:
    return cut_corpus(RecursiveCharacterChunker(100, 0), corpus(), "paragraphs")


def copies_in_document_order(chunks: tuple[PositionAwareChunk, ...]) -> list[str]:
    copies = [c for c in chunks if c.text.strip() == REPEATED]
    return [c.chunk_id for c in sorted(copies, key=lambda c: (c.doc_id, c.start))]


@pytest.fixture(scope="module")
def cross_encoder_path(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("HF_HUB_OFFLINE", "1")
        yield build_minilm_cross_encoder(tmp_path_factory.mktemp("rerank") / "minilm-ce")


def test_the_repeated_paragraph_is_twelve_chunks_whose_ids_are_not_in_document_order() -> None:
    """The other tests would pass by accident if chunk ids happened to sort in document order."""
    chunks = chunk_set().chunks
    copies = copies_in_document_order(chunks)
    assert len(copies) == 12
    assert sorted(copies)[:TOP_K] != copies[:TOP_K]  # by chunk id, other copies would win


def numpy_exact_top(chunks: tuple[PositionAwareChunk, ...], query: str, k: int) -> list[str]:
    """Exact cosine top k with numpy, ties in document order (stable sort over chunks sorted so)."""
    embedder = HashingEmbedder()
    ordered = sorted(chunks, key=lambda c: (c.doc_id, c.start))
    matrix = embedder.embed([c.text for c in ordered])
    scores = np.round(matrix @ embedder.embed([query])[0], 6)
    return [ordered[i].chunk_id for i in np.argsort(-scores, kind="stable")[:k]]


def stores(tmp_path: Path) -> dict[str, VectorStore]:
    return {
        "edge": EdgeVectorStore(tmp_path / "edge"),
        "qdrant-local": QdrantVectorStore(path=tmp_path / "local"),
    }


PROFILES = [
    RetrievalProfile(ProfileName("dense-top5"), top_k=TOP_K),
    RetrievalProfile(ProfileName("keyword-top5"), top_k=TOP_K, vector_weight=0, keyword_weight=1),
    RetrievalProfile(ProfileName("hybrid-top5"), top_k=TOP_K, vector_weight=0.6, keyword_weight=0.4),
]


@pytest.mark.parametrize("engine", ["edge", "qdrant-local"])
def test_every_engine_and_stage_returns_the_first_copies_in_document_order(
    tmp_path: Path, engine: str
) -> None:
    cut = chunk_set()
    expected = copies_in_document_order(cut.chunks)[:TOP_K]
    assert numpy_exact_top(cut.chunks, REPEATED, TOP_K) == expected
    indexes = build_indexes(cut, HashingEmbedder(), stores(tmp_path)[engine])
    assert indexes.dense is not None
    (dense,) = indexes.dense.store.search(indexes.collection, indexes.dense.embedder.embed([REPEATED]), TOP_K)
    assert [h.chunk_id for h in dense] == expected
    queries = [Query(QuestionId("q"), REPEATED)]
    for profile in PROFILES:
        run = retrieve(profile, indexes, queries)
        assert [h.chunk_id for h in run.hits[QuestionId("q")]] == expected, profile.name


@pytest.mark.slow
def test_the_reranker_orders_identical_passages_in_document_order(
    tmp_path: Path, cross_encoder_path: Path
) -> None:
    cut = chunk_set()
    indexes = build_indexes(cut, HashingEmbedder(), EdgeVectorStore(tmp_path / "edge"))
    profile = RetrievalProfile(
        ProfileName("reranked"), top_k=TOP_K, reranker=str(cross_encoder_path), rerank_depth=12
    )
    reranker = CrossEncoderReranker(cross_encoder_path)
    # The candidates the reranker sees are the twelve copies: it gives them one score, to 6 decimals.
    scores = reranker.score(REPEATED, [REPEATED] * 12)
    assert len({round(s, 6) for s in scores}) == 1
    run = retrieve(profile, indexes, [Query(QuestionId("q"), REPEATED)], reranker=reranker)
    assert [h.chunk_id for h in run.hits[QuestionId("q")]] == copies_in_document_order(cut.chunks)[:TOP_K]


def test_a_tie_deeper_than_the_first_request_is_fetched_whole() -> None:
    """An engine returns 30 tied points in its own order (here: last in the document first), ``limit``
    at a time: the store asks again, deeper, until the tie ends, then keeps the earliest copies."""
    engine_order = [
        SimpleNamespace(
            score=0.5, payload={"chunk_id": f"c{i:02d}", "doc_id": "d.md", "start": i, "end": i + 1}
        )
        for i in reversed(range(30))
    ]
    limits: list[int] = []

    def search_at(rows: Sequence[int], limit: int) -> list[Sequence[Any]]:
        limits.append(limit)
        return [engine_order[:limit] for _ in rows]

    (hits,) = search_with_whole_ties(search_at, 1, TOP_K)
    assert [h.start for h in hits] == [0, 1, 2, 3, 4]
    assert limits == [TOP_K + 5, 2 * (TOP_K + 5), 4 * (TOP_K + 5)]  # 10 and 20 came back full and tied
