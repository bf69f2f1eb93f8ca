"""The runs a pool is made of: each setup's evaluated top_k exactly as `retrieve` returns it, continued
to the pool depth; the two window runs; a config limited to some documents retrieves only from them; a
profile whose reranker is missing is skipped and said."""

from __future__ import annotations

from pathlib import Path

from rag_eval_pipeline.core.chunking import build_chunker, cut_corpus
from rag_eval_pipeline.core.judging.runs import BM25_RUN, DENSE_RUN, retrieval_runs
from rag_eval_pipeline.core.judging.types import ImportedQuery, query_id_for
from rag_eval_pipeline.core.retrieval.base import Query
from rag_eval_pipeline.core.retrieval.indexes import build_indexes
from rag_eval_pipeline.core.retrieval.profile_retriever import retrieve
from rag_eval_pipeline.core.settings.configs import ChunkConfig, PipelineConfigs, RetrievalProfile
from rag_eval_pipeline.core.types import ChunkConfigName, ProfileName, QuestionId
from rag_eval_pipeline.core.vector_store.edge import EdgeVectorStore
from rag_eval_pipeline_tests.conftest import tiny_corpus
from rag_eval_pipeline_tests.fakes import HashingEmbedder

QUERY = "When does the pressure alarm fire?"
FIXED = ChunkConfig(ChunkConfigName("fixed-40-0"), chunker="fixed", chunk_size=40)
ALPHA = ChunkConfig(
    ChunkConfigName("alpha-only"), chunker="fixed", chunk_size=40, documents=("alpha/pumps.md",)
)
HYBRID = RetrievalProfile(ProfileName("hybrid2"), top_k=2, keyword_weight=1.0)
RERANKED = RetrievalProfile(ProfileName("reranked"), top_k=2, reranker="models/cross-encoder")


def test_each_setup_keeps_its_evaluated_top_k_and_continues_to_the_depth(tmp_path: Path) -> None:
    corpus = tiny_corpus()
    embedder = HashingEmbedder()
    store = EdgeVectorStore(tmp_path / "qdrant")
    try:
        found = retrieval_runs(
            [ImportedQuery(query_id_for(QUERY), QUERY)],
            corpus,  # type: ignore[arg-type]
            PipelineConfigs((FIXED, ALPHA), (HYBRID, RERANKED)),
            embedder,
            store,
            depth=5,
        )
        chunk_set = cut_corpus(build_chunker(FIXED), corpus, FIXED.name)  # type: ignore[arg-type]
        evaluated = retrieve(
            HYBRID, build_indexes(chunk_set, embedder, store), [Query(QuestionId(query_id_for(QUERY)), QUERY)]
        )
    finally:
        store.close()
    assert [r.name for r in found.runs] == [
        "fixed-40-0 x hybrid2",
        "alpha-only x hybrid2",
        BM25_RUN,
        DENSE_RUN,
    ]
    assert found.evaluated_k == {"fixed-40-0 x hybrid2": 2, "alpha-only x hybrid2": 2}
    assert found.skipped == ("reranked: reranks with models/cross-encoder, which is not available here",)
    hits = list(found.runs[0].hits[query_id_for(QUERY)])
    (top,) = evaluated.hits.values()
    assert [(h.doc_id, h.start, h.end) for h in hits[:2]] == [(h.doc_id, h.start, h.end) for h in top]
    assert [h.rank for h in hits] == [1, 2, 3, 4, 5]
    assert len({(h.doc_id, h.start) for h in hits}) == 5
    # the config limited to one document retrieves nothing else
    assert {h.doc_id for h in found.runs[1].hits[query_id_for(QUERY)]} == {"alpha/pumps.md"}
    # the window runs: every tiny document is one window of at most 500 characters; BM25 finds only the
    # ones sharing a word with the query, the dense run ranks them all
    bm25, dense = (list(run.hits[query_id_for(QUERY)]) for run in found.runs[2:])
    assert [(h.doc_id, h.start) for h in bm25] == [("alpha/pumps.md", 0)]
    assert sorted((h.doc_id, h.start, h.end) for h in dense) == sorted(
        (d.doc_id, 0, len(d.text))
        for d in corpus  # type: ignore[attr-defined]
    )
