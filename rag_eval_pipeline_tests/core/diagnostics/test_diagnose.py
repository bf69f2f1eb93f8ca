"""The diagnostics on real components (MiniLM through the embedding cache, Qdrant's embedded engine,
bm25s) over the tiny corpus cut in 60-character chunks: losses constructed so the stage is known, each
premise checked on the stage lists before the attribution is."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from rag_eval_pipeline.core.chunking import FixedSizeChunker, cut_corpus
from rag_eval_pipeline.core.chunking.base import ChunkSet
from rag_eval_pipeline.core.corpus.corpus import Corpus
from rag_eval_pipeline.core.diagnostics import diagnose as diagnose_module
from rag_eval_pipeline.core.diagnostics import oracles
from rag_eval_pipeline.core.diagnostics.attribution import AnswerOutcome
from rag_eval_pipeline.core.diagnostics.diagnose import Diagnosis, diagnose
from rag_eval_pipeline.core.diagnostics.oracles import ORACLE_K_DEPTH, oracle_k, ranking_at
from rag_eval_pipeline.core.diagnostics.replay import ReplayMismatch, replay
from rag_eval_pipeline.core.diagnostics.searched_once import RememberedSearches, forget_searches
from rag_eval_pipeline.core.diagnostics.store_view import StoreView
from rag_eval_pipeline.core.diagnostics.table import diagnosis_to_frame, partition_summary
from rag_eval_pipeline.core.embedding.cache import CachedEmbedder, EmbeddingCache
from rag_eval_pipeline.core.evaluation.evaluation import token_level_result
from rag_eval_pipeline.core.questions.datasets import TokenLevelExample
from rag_eval_pipeline.core.retrieval.base import Query
from rag_eval_pipeline.core.retrieval.indexes import ChunkIndexes, build_indexes
from rag_eval_pipeline.core.retrieval.profile_retriever import retrieve
from rag_eval_pipeline.core.settings.configs import RetrievalProfile
from rag_eval_pipeline.core.spans import intersection_length, merge_intervals
from rag_eval_pipeline.core.types import CharacterSpan, ChunkId, DocumentId, QuestionId
from rag_eval_pipeline.core.vector_store import edge
from rag_eval_pipeline.core.vector_store.base import ScoredChunk
from rag_eval_pipeline.core.vector_store.edge import EdgeVectorStore
from rag_eval_pipeline_tests.conftest import TINY_DOCS, TINY_QUESTIONS, tiny_corpus

CORPUS: Corpus = tiny_corpus()  # type: ignore[assignment]


def example(qid: str, query: str, *excerpts: tuple[str, str]) -> TokenLevelExample:
    spans = []
    for doc, text in excerpts:
        start = TINY_DOCS[doc].index(text)
        spans.append(CharacterSpan(DocumentId(doc), start, start + len(text), text))
    return TokenLevelExample(QuestionId(qid), query, tuple(spans))


TINY = [example(qid, q, *excerpts) for qid, q, excerpts in TINY_QUESTIONS]
LEAD = example("lead", "Who is the maintenance lead?", ("beta/staff.md", "Maintenance lead: Amélie Durand"))
NIGHT = example("night", "night shift 06:00", ("beta/staff.md", "Zoë Mbeki leads the night shift"))
DURAND = example("durand", "Amélie Durand", ("beta/staff.md", "Maintenance lead: Amélie Durand"))
ALARM = example("alarm", "outlet pressure bar alarm", *TINY_QUESTIONS[1][2])


@pytest.fixture(scope="module")
def setup(
    minilm: Any, tmp_path_factory: pytest.TempPathFactory
) -> tuple[ChunkSet, ChunkIndexes, CachedEmbedder]:
    folder = tmp_path_factory.mktemp("diagnose")
    embedder = CachedEmbedder(minilm, EmbeddingCache(folder / "cache.sqlite"))  # type: ignore[arg-type]
    cut = cut_corpus(FixedSizeChunker(60, 0), CORPUS, "fixed-60-0")
    return cut, build_indexes(cut, embedder, EdgeVectorStore(folder / "qdrant"), collection="tiny"), embedder


def run(
    setup: Any, profile: RetrievalProfile, examples: Sequence[TokenLevelExample], **kwargs: Any
) -> Diagnosis:
    cut, indexes, _ = setup
    recorded = retrieve(profile, indexes, [Query(e.question_id, e.query) for e in examples]).hits
    return diagnose(examples, cut.chunks, CORPUS, profile, indexes, recorded=recorded, **kwargs)


def chunk_at(setup: Any, doc: str, offset: int) -> ChunkId:
    return next(c.chunk_id for c in setup[0].chunks if c.doc_id == doc and c.start <= offset < c.end)


def lost(d: Diagnosis) -> dict[str, int]:
    (q,) = d.questions
    return {s: n for s, n in q.attribution.lost.items() if n}


def trace(d: Diagnosis, chunk_id: ChunkId) -> Any:
    (q,) = d.questions
    return {t.chunk_id: t for t in q.attribution.chunks}[chunk_id]


def test_a_chunk_the_dense_side_misses_bm25_finds_and_a_dense_heavy_fusion_drops(setup: Any):
    right = chunk_at(setup, "beta/staff.md", 128)
    dense = run(setup, RetrievalProfile("dense", top_k=1), [LEAD])
    assert trace(dense, right).dense_rank is None  # premise: the dense top 1 is another chunk
    assert lost(dense) == {"dense_candidates": 31}
    keyword = run(setup, RetrievalProfile("kw", top_k=1, vector_weight=0, keyword_weight=1), [LEAD])
    assert keyword.questions[0].attribution.missed_chars == 0
    hybrid = RetrievalProfile("hybrid", top_k=1, vector_weight=1.0, keyword_weight=0.01)
    fused = run(setup, hybrid, [LEAD])
    t = trace(fused, right)
    assert (t.keyword_rank, t.dense_rank, t.fused_rank) == (1, 2, 2)  # premise
    assert lost(fused) == {"fusion": 31} and t.lost_at == "fusion"


def test_a_fused_result_below_k_in_every_list_is_cut_at_k(setup: Any):
    hybrid = RetrievalProfile("hybrid", top_k=1, vector_weight=0.6, keyword_weight=0.4)
    d = run(setup, hybrid, [NIGHT])
    t = trace(d, chunk_at(setup, "beta/staff.md", 9))
    assert (t.dense_rank, t.keyword_rank, t.fused_rank) == (2, 2, 2)  # premise
    assert lost(d) == {"top_k": 31}
    (q,) = d.questions
    assert (q.oracles.k, q.oracles.k_recall) == (2, 1.0)  # one more chunk would have found it


def test_a_threshold_that_removes_the_right_chunk(setup: Any):
    d = run(setup, RetrievalProfile("strict", top_k=1, similarity_threshold=0.9), [DURAND])
    t = trace(d, chunk_at(setup, "beta/staff.md", 128))
    assert t.dense_rank == 1 and t.below_threshold and t.dense_score < 0.9  # premise
    (q,) = d.questions
    assert lost(d) == {"dense_candidates": 31} and q.attribution.threshold_chars == 31


def test_a_reference_split_by_a_chunk_boundary(setup: Any):
    d = run(setup, RetrievalProfile("dense", top_k=1), [ALARM])
    (q,) = d.questions
    # premise: 84-120 in one chunk, 120-164 in the next; the dense top 1 is the larger part
    assert [h.start for h in q.attribution.chunks if h.final_rank] == [120]
    assert q.attribution.retrieved_chars == 44 and lost(d) == {"chunking": 36}
    assert q.oracles.ranking_recall == pytest.approx(44 / 80)
    # the reference cut as one chunk: the profile finds it whole
    assert q.oracles.reference_chunks_recall == 1.0 == q.oracles.chunking_recall


PROFILES = [
    RetrievalProfile("dense", top_k=2),
    RetrievalProfile("threshold", top_k=2, similarity_threshold=0.4),
    RetrievalProfile("keyword", top_k=1, vector_weight=0, keyword_weight=1),
    RetrievalProfile("hybrid", top_k=2, vector_weight=0.6, keyword_weight=0.4),
]


@pytest.mark.parametrize("profile", PROFILES, ids=lambda p: p.name)
def test_every_question_adds_up_and_no_oracle_is_below_the_recall(setup: Any, profile: RetrievalProfile):
    cut, indexes, _ = setup
    examples = [*TINY, LEAD, NIGHT, DURAND, ALARM]
    recorded = retrieve(profile, indexes, [Query(e.question_id, e.query) for e in examples]).hits
    d = diagnose(examples, cut.chunks, CORPUS, profile, indexes, recorded=recorded)
    metrics = token_level_result(examples, recorded, cut.chunks, profile.top_k, CORPUS, ["span_recall"])
    recall = {r.question_id: r.metrics["span_recall"] for r in metrics.raw_results}
    for q in d.questions:
        a, o = q.attribution, q.oracles
        assert sum(a.lost.values()) + a.retrieved_chars == a.reference_chars
        assert q.span_recall == pytest.approx(recall[q.example.question_id])  # the evaluation's own number
        for bound in (o.ranking_recall, o.candidates_recall, o.chunking_recall, o.k_recall):
            assert bound >= q.span_recall - 1e-12
        assert o.ranking_recall >= o.candidates_recall - 1e-12
        assert o.k is None or o.k >= 1
    frame = diagnosis_to_frame(d, profile.top_k)
    shares = frame[
        [
            c
            for c in frame.columns
            if c.endswith("_share") and not c.startswith(("answer", "not_cited", "dense_threshold"))
        ]
    ]
    assert shares.astype("float64").sum(axis=1).tolist() == pytest.approx([1.0] * len(frame))
    summary = partition_summary(frame)
    assert summary["retrieved_share"] == pytest.approx(metrics.metrics["span_recall"].mean)


def test_oracle_chunking_embeds_each_reference_text_once(setup: Any):
    _, _, embedder = setup
    texts = {s.text for e in TINY for s in e.relevant_spans}
    fresh = [replace(e, question_id=QuestionId(f"{e.question_id}-x"), query=e.query + " ?") for e in TINY]
    before = embedder.cache.count(embedder.model_id)
    first = run(setup, RetrievalProfile("dense", top_k=2), fresh)
    assert first.reference_texts == len(texts) == 5
    assert first.reference_embedding.texts_embedded + first.reference_embedding.cache_hits == 5
    again = run(setup, RetrievalProfile("hybrid", top_k=2, vector_weight=0.6, keyword_weight=0.4), fresh)
    assert again.reference_embedding.texts_embedded == 0 and again.reference_embedding.cache_hits == 5
    # a keyword-only profile embeds nothing at all
    keyword = run(setup, RetrievalProfile("kw", top_k=1, vector_weight=0, keyword_weight=1), fresh)
    assert keyword.reference_embedding.texts_embedded == keyword.reference_embedding.cache_hits == 0
    assert embedder.cache.count(embedder.model_id) - before <= 5 + len(fresh)  # the questions, the texts


def test_oracle_chunking_asks_the_cache_for_every_question_at_once(
    setup: Any, monkeypatch: pytest.MonkeyPatch
):
    """The oracle-chunking runs (one a question) read the questions' vectors from the embedding cache in
    one call, where each run asked for its own; the diagnosis is the same."""
    _, _, embedder = setup
    profile = RetrievalProfile("hybrid", top_k=2, vector_weight=0.6, keyword_weight=0.4)
    examples = [*TINY, LEAD, NIGHT, DURAND]
    before = run(setup, profile, examples)
    asked: list[int] = []
    get_many = embedder.cache.get_many

    def counting(model_id: str, digests: Sequence[str]) -> Any:
        asked.append(len(digests))
        return get_many(model_id, digests)

    monkeypatch.setattr(embedder.cache, "get_many", counting)
    diagnosis = run(setup, profile, examples)
    # the recorded retrieval, the two replays, the reference texts, the oracle chunking: one call each
    # (the oracle chunking made one a question: 8 here)
    assert len(asked) == 5 and asked.count(len(examples)) == 4
    assert diagnosis.questions == before.questions


def test_the_three_replays_open_the_collection_once(setup: Any, monkeypatch: pytest.MonkeyPatch):
    """The replay, the oracle k's deeper one and oracle chunking's search one collection, which
    qdrant-edge reads whole on each opening: diagnose holds it open across all three. Another profile
    over the collection (a partition of the same chunk config) is served the searches kept for the
    process and never opens it."""
    cut, indexes, _ = setup
    profile = RetrievalProfile("dense", top_k=2)
    recorded = retrieve(profile, indexes, [Query(e.question_id, e.query) for e in TINY]).hits
    forget_searches()
    opened: list[Path] = []
    load = edge._load
    monkeypatch.setattr(edge, "_load", lambda folder: opened.append(folder) or load(folder))
    diagnosis = diagnose(TINY, cut.chunks, CORPUS, profile, indexes, recorded=recorded)
    assert len(opened) == 1
    deeper = RetrievalProfile("dense-top3", top_k=3)
    recorded_deeper = retrieve(deeper, indexes, [Query(e.question_id, e.query) for e in TINY]).hits
    opened.clear()
    served = diagnose(TINY, cut.chunks, CORPUS, deeper, indexes, recorded=recorded_deeper)
    assert opened == []
    forget_searches()
    again = run(setup, profile, TINY)  # the same questions, oracles and losses as before
    assert (diagnosis.questions, diagnosis.reference_texts) == (again.questions, again.reference_texts)
    assert served.questions == run(setup, deeper, TINY).questions


def test_searches_are_kept_per_collection_at_its_fingerprint(fine: ChunkIndexes) -> None:
    assert fine.dense is not None
    vectors = fine.dense.embedder.embed([e.query for e in TINY])
    forget_searches()
    first = RememberedSearches(fine.dense.store)
    direct = first.search("fine", vectors, 10)
    second = RememberedSearches(fine.dense.store)  # another partition's diagnosis, same process
    assert second.search("fine", vectors, 4) == [hits[:4] for hits in direct]
    assert (second.searched, second.served) == (0, len(TINY))

    class Rebuilt(StoreView):  # the collection completed again from other chunks
        def fingerprint(self, name: str) -> str | None:
            return "another-chunk-set"

    rebuilt = RememberedSearches(Rebuilt(fine.dense.store))
    rebuilt.search("fine", vectors, 4)
    assert rebuilt.searched == len(TINY)

    class Unfinished(StoreView):  # being written: no fingerprint, nothing kept beyond the view
        def fingerprint(self, name: str) -> str | None:
            return None

    for _ in range(2):
        unfinished = RememberedSearches(Unfinished(fine.dense.store))
        unfinished.search("fine", vectors, 4)
        assert unfinished.searched == len(TINY)
    forget_searches()
    assert RememberedSearches(fine.dense.store).search("fine", vectors, 10) == direct


def test_a_replay_that_differs_from_the_recorded_result_is_refused(setup: Any):
    cut, indexes, _ = setup
    profile = RetrievalProfile("dense", top_k=2)
    recorded = retrieve(profile, indexes, [Query(e.question_id, e.query) for e in TINY]).hits
    tampered = {**recorded, TINY[0].question_id: list(reversed(recorded[TINY[0].question_id]))}
    with pytest.raises(ReplayMismatch, match="tiny-1: retrieval_results holds"):
        diagnose(TINY, cut.chunks, CORPUS, profile, indexes, recorded=tampered)


def test_answers_split_the_retrieved_text(setup: Any):
    profile = RetrievalProfile("dense", top_k=2)
    d = run(
        setup, profile, TINY, answers={TINY[0].question_id: AnswerOutcome(frozenset(), None, "no verdict")}
    )
    by_id = {q.example.question_id: q.attribution for q in d.questions}
    first = by_id[TINY[0].question_id]
    assert first.answered is not None and first.answered["not_cited"] == first.retrieved_chars
    # a question the answers do not hold: nothing cited, no verdict
    other = by_id[TINY[1].question_id]
    assert other.answer is not None and other.answer.judged_by == "no answer"


def test_the_diagnosis_is_deterministic(setup: Any):
    profile = RetrievalProfile("hybrid", top_k=2, vector_weight=0.6, keyword_weight=0.4)
    first = diagnosis_to_frame(run(setup, profile, TINY), 2)
    assert first.equals(diagnosis_to_frame(run(setup, profile, TINY), 2))


def test_the_table_keeps_every_stage_and_the_oracles(tmp_path: Path, setup: Any):
    frame = diagnosis_to_frame(run(setup, RetrievalProfile("dense", top_k=2), TINY), 2)
    frame.to_parquet(tmp_path / "d.parquet")  # Parquet keeps the nullable integers and the JSON columns
    import pandas as pd

    back = pd.read_parquet(tmp_path / "d.parquet")
    assert back["oracle_k"].dtype == "Int64" and back["not_cited_chars"].isna().all()
    assert set(back["lost_at"]) <= {"none", "chunking", "dense_candidates"}


@pytest.fixture(scope="module")
def fine(setup: Any, tmp_path_factory: pytest.TempPathFactory) -> ChunkIndexes:
    _, _, embedder = setup
    cut = cut_corpus(FixedSizeChunker(12, 0), CORPUS, "fixed-12-0")
    assert len(cut.chunks) > 40
    return build_indexes(cut, embedder, EdgeVectorStore(tmp_path_factory.mktemp("fine")), collection="fine")


@pytest.mark.parametrize(
    "profile",
    [
        RetrievalProfile("hybrid", top_k=5, vector_weight=0.6, keyword_weight=0.4),
        RetrievalProfile(
            "hybrid-threshold", top_k=5, vector_weight=0.3, keyword_weight=0.7, similarity_threshold=0.2
        ),
        RetrievalProfile("dense", top_k=5),
        RetrievalProfile("keyword", top_k=5, vector_weight=0, keyword_weight=1),
    ],
    ids=lambda p: p.name,
)
def test_the_oracle_k_reads_what_the_profile_returns_at_each_k(fine: ChunkIndexes, profile: RetrievalProfile):
    """ranking_at(k) from one deep replay is what the profile with top_k = k returns, for every k:
    the fused order changes as each retriever is searched deeper (candidate_depth grows with k; the
    corpus cut in 12 characters has more chunks than the lists hold)."""
    indexes = fine
    deeper = replace(profile, top_k=ORACLE_K_DEPTH, rerank_depth=ORACLE_K_DEPTH)
    queries = [Query(e.question_id, e.query) for e in [*TINY, LEAD, NIGHT]]
    deep = replay(deeper, indexes, queries)
    # what diagnose replays: the same lists without the top 50 it would not read
    candidates = replay(deeper, indexes, queries, candidates_only=True)
    assert candidates == {q: replace(lists, final=()) for q, lists in deep.items()}
    assert all(len(lists.final) == min(ORACLE_K_DEPTH, len(lists.fused)) > 0 for lists in deep.values())
    for k in (1, 2, 3, 5, 8, 11, 14, 20, 27, 35):
        at_k = retrieve(replace(profile, top_k=k, rerank_depth=max(20, k)), indexes, queries).hits
        for query in queries:
            got = [h.chunk_id for h in ranking_at(profile, deep[query.question_id], k)]
            assert got == [h.chunk_id for h in at_k[query.question_id]], (k, query.question_id)
    # and the oracle k is the smallest of those k reaching the most reference text
    for e in [*TINY, LEAD, NIGHT]:
        gt = merge_intervals(e.relevant_spans)
        k, held = oracle_k(gt, profile, deep[e.question_id])
        returned = {
            j: intersection_length(merge_intervals(ranking_at(profile, deep[e.question_id], j)), gt)
            for j in range(1, ORACLE_K_DEPTH + 1)
        }
        assert held == max(returned.values())
        assert k == (min(j for j, n in returned.items() if n == held) if held else None)


def test_a_chunk_holds_reference_text_only_when_they_share_a_character() -> None:
    """The oracle k merges only the chunks holding reference text (``oracles._holds``): touching the
    reference's ends, being empty or in another document is not holding it."""
    d = DocumentId("d")
    reference = merge_intervals([CharacterSpan(d, 10, 20, "x" * 10), CharacterSpan(d, 30, 35, "y" * 5)])
    cases = {(0, 10): False, (0, 11): True, (20, 30): False, (19, 31): True, (15, 15): False}
    cases |= {(35, 40): False, (34, 40): True, (12, 14): True, (0, 50): True}
    for (start, end), holds in cases.items():
        chunk = ScoredChunk(ChunkId("c"), d, start, end, 0.0, "")
        assert oracles._holds(reference, chunk) is holds, (start, end)
        assert (oracles._held(reference, [chunk]) > 0) is holds, (start, end)
    assert not oracles._holds(reference, ScoredChunk(ChunkId("c"), DocumentId("e"), 10, 20, 0.0, ""))


@pytest.mark.parametrize(
    "profile",
    [
        RetrievalProfile("dense", top_k=5),
        RetrievalProfile("threshold", top_k=3, similarity_threshold=0.2),
        RetrievalProfile("hybrid", top_k=5, vector_weight=0.6, keyword_weight=0.4),
    ],
    ids=lambda p: p.name,
)
def test_the_three_replays_search_each_query_once_and_diagnose_as_with_every_search_made(
    setup: Any, fine: ChunkIndexes, profile: RetrievalProfile, monkeypatch: pytest.MonkeyPatch
):
    """The oracle k's deep replay searches each query; the replay at the profile's depth and the
    oracle-chunking runs are served its first hits (searched_once.py), and the diagnosis is the one
    every search made against the collection gives."""
    cut = cut_corpus(FixedSizeChunker(12, 0), CORPUS, "fixed-12-0")
    examples = [*TINY, LEAD, NIGHT, DURAND]
    recorded = retrieve(profile, fine, [Query(e.question_id, e.query) for e in examples]).hits
    depths: list[int] = []
    search = EdgeVectorStore.search

    def counted(store: EdgeVectorStore, name: str, queries: Any, k: int) -> Any:
        depths.extend([k] * len(queries))
        return search(store, name, queries, k)

    monkeypatch.setattr(EdgeVectorStore, "search", counted)
    forget_searches()  # none kept from the tests before
    served = diagnose(examples, cut.chunks, CORPUS, profile, fine, recorded=recorded)
    deep = replace(profile, top_k=ORACLE_K_DEPTH, rerank_depth=ORACLE_K_DEPTH).candidate_depth
    assert depths == [deep] * len(examples)  # one search a query, the deepest
    depths.clear()
    monkeypatch.setattr(diagnose_module, "searched_once", lambda indexes: indexes)
    searched = diagnose(examples, cut.chunks, CORPUS, profile, fine, recorded=recorded)
    assert len(depths) > 2 * len(examples) and min(depths) < deep
    assert served.questions == searched.questions


def test_a_remembered_search_serves_a_shallower_one_and_sends_a_deeper_one_on(fine: ChunkIndexes):
    assert fine.dense is not None
    forget_searches()  # none kept from the tests before
    store = RememberedSearches(fine.dense.store)
    vectors = fine.dense.embedder.embed([e.query for e in TINY])
    direct = {k: fine.dense.store.search("fine", vectors, k) for k in (3, 10, 30)}
    assert store.search("fine", vectors, 10) == direct[10]
    assert store.search("fine", vectors[:2], 3) == [hits[:3] for hits in direct[10][:2]] == direct[3][:2]
    assert (store.searched, store.served) == (len(TINY), 2)
    assert store.search("fine", vectors[1:], 30) == direct[30][1:]  # deeper: searched again, and kept
    assert store.search("fine", vectors[1:2], 10) == direct[10][1:2]
    assert (store.searched, store.served) == (2 * len(TINY) - 1, 3)
    with pytest.raises(TypeError, match="read-only"):
        store.replace_collection("fine", [], vectors[:0], "fixed-12-0")
