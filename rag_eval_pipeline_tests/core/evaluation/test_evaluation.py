"""The notebook API end to end: real chunkers, real Qdrant local mode, real or hashing embedder."""

from pathlib import Path

import pytest

from rag_eval_pipeline.core.chunking import (
    ChunkSet,
    FixedSizeChunker,
    RecursiveCharacterChunker,
    build_chunker,
    chunk_corpus,
    cut_corpus,
)
from rag_eval_pipeline.core.corpus.corpus import Corpus
from rag_eval_pipeline.core.embedding.cache import CachedEmbedder, EmbeddingCache
from rag_eval_pipeline.core.embedding.local import local_embedder
from rag_eval_pipeline.core.errors import ConfigError
from rag_eval_pipeline.core.evaluation.evaluation import (
    ChunkLevelEvaluation,
    TokenLevelEvaluation,
    chunk_level_result,
    token_level_result,
)
from rag_eval_pipeline.core.metrics.aggregate import summarize_by_group, summarize_table
from rag_eval_pipeline.core.metrics.names import (
    CHUNK_METRICS,
    CONTEXT_COST_METRICS,
    QUERY_COUNT,
    SPAN_METRICS,
    TOKEN_LEVEL_METRICS,
)
from rag_eval_pipeline.core.metrics.reference_copies import ReferenceDuplication
from rag_eval_pipeline.core.questions.datasets import TokenLevelExample, read_token_level_jsonl
from rag_eval_pipeline.core.retrieval.base import Query
from rag_eval_pipeline.core.retrieval.indexes import build_indexes, open_indexes
from rag_eval_pipeline.core.retrieval.profile_retriever import retrieve
from rag_eval_pipeline.core.settings.configs import ChunkConfig, RetrievalProfile
from rag_eval_pipeline.core.tables import (
    chunks_from_frame,
    chunks_to_frame,
    corpus_from_frame,
    corpus_to_frame,
    questions_from_frame,
    questions_to_frame,
    retrieved_from_frame,
    retrieved_to_frame,
)
from rag_eval_pipeline.core.types import (
    CharacterSpan,
    ChunkId,
    Document,
    DocumentId,
    PositionAwareChunk,
    QuestionId,
    RetrievedChunk,
)
from rag_eval_pipeline.core.vector_store.qdrant import QdrantVectorStore
from rag_eval_pipeline_tests.fakes import HashingEmbedder


def load(project: Path):
    corpus = Corpus.from_folder(project / "data" / "corpus")
    return corpus, read_token_level_jsonl(project / "data" / "datasets" / "golden_token_level.jsonl", corpus)


@pytest.mark.slow
def test_token_level_evaluation_with_real_minilm(tiny_project: Path, tmp_path: Path):
    corpus, dataset = load(tiny_project)
    embedder = CachedEmbedder(local_embedder(), EmbeddingCache(tmp_path / "cache.sqlite"))
    evaluation = TokenLevelEvaluation(corpus=corpus, dataset=dataset)
    result = evaluation.run(
        chunker=RecursiveCharacterChunker(120, 20),
        embedder=embedder,
        vector_store=QdrantVectorStore(path=tmp_path / "q"),
        k=3,
    )
    assert result.evaluation_type == "token-level" and result.experiment_url is None
    assert set(result.metrics) == set(TOKEN_LEVEL_METRICS)
    assert result.metrics["span_recall"].n == len(dataset)
    assert result.metrics["span_recall"].mean > 0.6  # MiniLM finds these easy answers
    by_id = {r.question_id: r for r in result.raw_results}
    assert by_id["tiny-1"].retrieved[0].doc_id == "alpha/pumps.md"
    assert by_id["tiny-4"].group == "alpha+beta"
    assert set(result.by_group) == {"alpha", "beta", "alpha+beta"}
    for row in result.metric_rows():
        assert all(0.0 <= row[m] <= 1.0 for m in TOKEN_LEVEL_METRICS if m not in CONTEXT_COST_METRICS)
        assert row["context_tokens"] > 0  # a count of tokens: every question retrieved 3 chunks


def test_same_inputs_give_the_same_numbers(tiny_project: Path, tmp_path: Path):
    corpus, dataset = load(tiny_project)
    runs = [
        TokenLevelEvaluation(corpus, dataset).run(
            FixedSizeChunker(60, 0), HashingEmbedder(), QdrantVectorStore(path=tmp_path / f"q{i}"), k=2
        )
        for i in range(2)
    ]
    assert runs[0].metrics == runs[1].metrics
    assert runs[0].metric_rows() == runs[1].metric_rows()


def test_metric_selection_and_bad_k(tiny_project: Path, tmp_path: Path):
    corpus, dataset = load(tiny_project)
    evaluation = TokenLevelEvaluation(corpus, dataset)
    store = QdrantVectorStore(path=tmp_path / "q")
    result = evaluation.run(
        FixedSizeChunker(60, 0), HashingEmbedder(), store, k=2, metrics=["span_iou", "mrr"]
    )
    assert list(result.metrics) == ["span_iou", "mrr"]
    with pytest.raises(ConfigError, match="k must be >= 1"):
        evaluation.run(FixedSizeChunker(60, 0), HashingEmbedder(), store, k=0)
    with pytest.raises(ConfigError, match="unknown metric"):
        evaluation.run(FixedSizeChunker(60, 0), HashingEmbedder(), store, metrics=["accuracy"])


def test_chunk_level_evaluation_runs_with_its_chunker_and_refuses_another(tiny_project: Path, tmp_path: Path):
    corpus, dataset = load(tiny_project)
    chunker = FixedSizeChunker(60, 0)
    chunk_level = dataset.to_chunk_level(chunk_corpus(chunker, corpus), chunker.fingerprint)
    evaluation = ChunkLevelEvaluation(corpus=corpus, dataset=chunk_level)
    store = QdrantVectorStore(path=tmp_path / "q")
    result = evaluation.run(chunker=chunker, embedder=HashingEmbedder(), vector_store=store, k=2)
    assert result.evaluation_type == "chunk-level"
    assert set(result.metrics) == set(CHUNK_METRICS)
    # chunk-level scores of the same retrieval equal the token-level run's derived chunk metrics
    token = TokenLevelEvaluation(corpus, dataset).run(chunker, HashingEmbedder(), store, k=2)
    for name in CHUNK_METRICS:
        assert result.metrics[name].mean == pytest.approx(token.metrics[name].mean)
    with pytest.raises(ConfigError, match="was made with chunker"):
        evaluation.run(chunker=FixedSizeChunker(61, 0), embedder=HashingEmbedder(), vector_store=store)


def test_a_profile_runs_hybrid_and_keyword_retrieval_from_the_notebook_api(
    tiny_project: Path, tmp_path: Path
):
    corpus, dataset = load(tiny_project)
    evaluation = TokenLevelEvaluation(corpus, dataset)

    def run(profile: RetrievalProfile, folder: str):
        store = QdrantVectorStore(path=tmp_path / folder)
        return evaluation.run(FixedSizeChunker(60, 0), HashingEmbedder(), store, profile=profile)

    keyword = run(RetrievalProfile("kw", 2, vector_weight=0, keyword_weight=1), "kw")  # type: ignore[arg-type]
    hybrid = run(RetrievalProfile("hy", 2, vector_weight=0.5, keyword_weight=0.5), "hy")  # type: ignore[arg-type]
    assert not (tmp_path / "kw").exists()  # keyword-only never touches the vector store
    hits = [h for r in hybrid.raw_results for h in r.retrieved]
    assert {h.found_by for h in hits} <= {"knn", "bm25", "both"} and all(h.fused_score for h in hits)
    assert all(h.found_by == "bm25" for r in keyword.raw_results for h in r.retrieved)
    # BM25 finds the pump question's chunk by its words, which the hashing embedder cannot
    first = next(r for r in keyword.raw_results if r.question_id == "tiny-1")
    assert first.metrics["span_recall"] > 0
    with pytest.raises(ConfigError, match="k=3 contradicts top_k=2"):
        evaluation.run(
            FixedSizeChunker(60, 0),
            HashingEmbedder(),
            QdrantVectorStore(path=tmp_path / "x"),
            k=3,
            profile=RetrievalProfile("kw", 2),
        )  # type: ignore[arg-type]


def test_the_score_step_keeps_question_order_and_scores_a_question_without_hits_zero(tiny_project: Path):
    corpus, dataset = load(tiny_project)
    chunks = chunk_corpus(FixedSizeChunker(60, 0), corpus)
    span = dataset.examples[0].relevant_spans[0]
    hit = next(c for c in chunks if c.doc_id == span.doc_id and c.start < span.end and span.start < c.end)
    qid = dataset.examples[0].question_id
    hits = {qid: [RetrievedChunk(qid, 1, hit.chunk_id, hit.doc_id, hit.start, hit.end, 1.0, hit.text)]}
    result = token_level_result(dataset.examples, hits, chunks, 2, corpus)
    assert [r.question_id for r in result.raw_results] == [e.question_id for e in dataset]
    first, *rest = result.raw_results
    assert first.retrieved == tuple(hits[first.question_id]) and first.metrics["span_recall"] > 0
    for r in rest:  # nothing retrieved: every retrieval metric is 0, the chunk set's best precision is not
        assert r.retrieved == () and all(r.metrics[m] == 0.0 for m in SPAN_METRICS + CHUNK_METRICS)
        assert r.metrics["precision_omega"] > 0
    rows = [{"group": r.group, **r.metrics} for r in result.raw_results]
    assert result.metrics == summarize_table(rows, TOKEN_LEVEL_METRICS)
    assert result.by_group == summarize_by_group(rows, "group", TOKEN_LEVEL_METRICS)
    assert list(token_level_result(dataset.examples, hits, chunks, 2, corpus, ["mrr"]).metrics) == ["mrr"]
    with pytest.raises(ConfigError, match="unknown metric"):
        token_level_result(dataset.examples, hits, chunks, 2, corpus, ["accuracy"])
    chunk_level = dataset.to_chunk_level(chunks, "fixed")
    by_chunk = chunk_level_result(chunk_level.examples, hits, 2)
    assert by_chunk.evaluation_type == "chunk-level" and list(by_chunk.metrics) == list(CHUNK_METRICS)
    assert [r.metrics for r in by_chunk.raw_results] == [
        {m: r.metrics[m] for m in CHUNK_METRICS} for r in result.raw_results
    ]


def test_run_equals_the_steps_taken_one_by_one_through_stored_tables(tiny_project: Path, tmp_path: Path):
    """What the assets do: each step in its own process, its output stored as a table and read back,
    the indexes opened again rather than rebuilt. The notebook's result must be the same, row by row."""
    corpus, dataset = load(tiny_project)
    config = ChunkConfig("fixed-60-0", "fixed", 60)  # type: ignore[arg-type]
    profile = RetrievalProfile("hybrid", 3, vector_weight=0.6, keyword_weight=0.4)  # type: ignore[arg-type]
    embedder = CachedEmbedder(HashingEmbedder(), EmbeddingCache(tmp_path / "cache.sqlite"))
    notebook = TokenLevelEvaluation(corpus, dataset).run(
        build_chunker(config), embedder, QdrantVectorStore(path=tmp_path / "notebook"), profile=profile
    )

    documents = corpus_from_frame(corpus_to_frame(corpus))
    chunks_table = chunks_to_frame(cut_corpus(build_chunker(config), documents, config.name).chunks)
    chunk_set = ChunkSet(config.name, tuple(chunks_from_frame(chunks_table)))
    keyword_folder = tmp_path / "bm25" / config.name
    store = QdrantVectorStore(path=tmp_path / "pipeline")
    built = build_indexes(chunk_set, embedder, store, keyword_folder=keyword_folder)
    opened = open_indexes(
        chunk_set,
        CachedEmbedder(HashingEmbedder(), EmbeddingCache(tmp_path / "cache.sqlite")),
        QdrantVectorStore(path=tmp_path / "pipeline"),
        collection=built.collection,
        keyword_folder=keyword_folder,
        retrievers=profile.retrievers,
    )
    questions = questions_from_frame(questions_to_frame(dataset))
    run = retrieve(profile, opened, [Query(e.question_id, e.query) for e in questions])
    retrieved = retrieved_from_frame(retrieved_to_frame(run.hits, run.traces))
    pipeline = token_level_result(
        questions.examples, retrieved, chunks_from_frame(chunks_table), profile.top_k, documents
    )

    assert any(h.found_by == "both" for r in notebook.raw_results for h in r.retrieved)  # both sides ran
    for ours, theirs in zip(pipeline.raw_results, notebook.raw_results, strict=True):
        assert ours.question_id == theirs.question_id and ours.group == theirs.group
        assert ours.retrieved == theirs.retrieved  # chunk ids, ranks, every score, who found them
        assert ours.metrics == theirs.metrics
    assert pipeline.metrics == notebook.metrics and pipeline.by_group == notebook.by_group


def test_the_score_step_credits_a_retrieved_copy_and_counts_duplicated_references() -> None:
    boiler = "Always isolate the pump before service."
    corpus = Corpus(
        (
            Document(DocumentId("a.md"), f"Intro. {boiler} More text here."),
            Document(DocumentId("b.md"), f"FAQ: {boiler} {boiler}"),  # two copies elsewhere
            Document(DocumentId("c.md"), "Unique words only in this file."),
        )
    )
    start = 7
    duplicated = CharacterSpan(DocumentId("a.md"), start, start + len(boiler), boiler)
    unique = CharacterSpan(DocumentId("c.md"), 0, 12, "Unique words")
    examples = [
        TokenLevelExample(QuestionId("q1"), "how to service the pump?", (duplicated,)),
        TokenLevelExample(QuestionId("q2"), "what is unique?", (unique,)),
    ]
    chunks = chunk_corpus(FixedSizeChunker(20, 0), corpus)
    copy = PositionAwareChunk(ChunkId("copy"), DocumentId("b.md"), 5, 5 + len(boiler), boiler)
    hits = {
        QuestionId("q1"): [
            RetrievedChunk(QuestionId("q1"), 1, copy.chunk_id, copy.doc_id, 5, copy.end, 1.0, boiler)
        ]
    }
    result = token_level_result(examples, hits, [*chunks, copy], 1, corpus)
    first, second = result.raw_results
    assert first.metrics["span_recall"] == 0.0 and first.metrics["span_recall_copies"] == 1.0
    assert first.metrics["span_precision_copies"] == 1.0 and first.metrics["span_iou_copies"] == 1.0
    assert first.duplication == ReferenceDuplication(1, 1, 2)
    assert second.duplication == ReferenceDuplication(0, 0, 0)
    assert result.duplication == ReferenceDuplication(1, 1, 2)
    rows = result.metric_rows()
    assert [(r["duplicated_references"], r["extra_reference_copies"]) for r in rows] == [(1, 2), (0, 0)]
    # counts are columns, not metrics: never summarized
    assert "duplicated_references" not in result.metrics and "span_iou_copies" in result.metrics


def test_heavy_traffic_questions_weigh_their_count_beside_the_plain_mean() -> None:
    text = "Pumps run at 1,450 rpm. Valves are tested in March. Night shift starts at 22:00."
    corpus = Corpus((Document(DocumentId("a.md"), text),))

    def span_of(words: str) -> CharacterSpan:
        start = text.index(words)
        return CharacterSpan(DocumentId("a.md"), start, start + len(words), words)

    pumps, valves = span_of("Pumps run at 1,450 rpm."), span_of("Valves are tested in March.")
    chunk = PositionAwareChunk(ChunkId("c-pumps"), DocumentId("a.md"), pumps.start, pumps.end, pumps.text)
    # asked 8 times and found; asked twice and missed
    examples = [
        TokenLevelExample(QuestionId("q-pumps"), "pump speed?", (pumps,), {"count": 8}),
        TokenLevelExample(QuestionId("q-valves"), "valve tests?", (valves,), {"count": 2}),
    ]
    hit = RetrievedChunk(
        QuestionId("q-pumps"), 1, chunk.chunk_id, chunk.doc_id, chunk.start, chunk.end, 1.0, chunk.text
    )
    miss = RetrievedChunk(
        QuestionId("q-valves"), 1, chunk.chunk_id, chunk.doc_id, chunk.start, chunk.end, 1.0, chunk.text
    )
    hits = {QuestionId("q-pumps"): [hit], QuestionId("q-valves"): [miss]}
    result = token_level_result(examples, hits, [chunk], 1, corpus)
    # span recall 1 and 0: plain mean 0.5; by hand (8 * 1 + 2 * 0) / 10 = 0.8, 0.3 above it
    assert result.metrics["span_recall"].mean == pytest.approx(0.5)
    assert result.weighted_means["span_recall"] == pytest.approx(0.8)
    assert result.weighted_means["span_recall_1000t"] - result.metrics[
        "span_recall_1000t"
    ].mean == pytest.approx(0.3)
    assert set(result.weighted_means) == set(result.metrics)
    assert [r[QUERY_COUNT] for r in result.metric_rows()] == [8, 2]
    # every count 1: nothing new, no column
    plain = token_level_result(
        [TokenLevelExample(e.question_id, e.query, e.relevant_spans) for e in examples],
        hits,
        [chunk],
        1,
        corpus,
    )
    assert plain.weighted_means == {} and not plain.weighted
    assert all(QUERY_COUNT not in row for row in plain.metric_rows())
