"""Question tables: reference answers and expected keywords survive the frame and Parquet; so do retrieved
chunks with their retriever ranks and scores, None where a retriever did not find the chunk."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from rag_eval_pipeline.core.questions.datasets import (
    ChunkLevelDataset,
    ChunkLevelExample,
    TokenLevelDataset,
    TokenLevelExample,
)
from rag_eval_pipeline.core.tables import (
    chunk_questions_from_frame,
    chunk_questions_to_frame,
    generated_token_level_to_frame,
    questions_from_frame,
    questions_to_frame,
    retrieved_from_frame,
    retrieved_to_frame,
)
from rag_eval_pipeline.core.types import (
    CharacterSpan,
    ChunkId,
    DocumentId,
    QueryTrace,
    QuestionId,
    Rejection,
    RetrievedChunk,
)

DOC = "The pump runs at 1,450 rpm. The alarm fires at 7.5 bar."


def token_dataset() -> TokenLevelDataset:
    def span(start: int, end: int) -> tuple[CharacterSpan, ...]:
        return (CharacterSpan(DocumentId("a.md"), start, end, DOC[start:end]),)

    return TokenLevelDataset(
        (
            TokenLevelExample(
                QuestionId("q1"),
                "How fast?",
                span(0, 26),
                {"source": "test"},
                reference_answer="It runs at 1,450 rpm.",
                expected_keywords=("1,450", "rpm"),
            ),
            TokenLevelExample(QuestionId("q2"), "When does the alarm fire?", span(28, 55)),
            TokenLevelExample(
                QuestionId("q3"), "What fires?", span(28, 55), reference_answer="The alarm, at 7.5 bar."
            ),
        ),
        name="golden",
    )


def through_parquet(frame: pd.DataFrame, tmp_path: Path) -> pd.DataFrame:
    path = tmp_path / "frame.parquet"
    frame.to_parquet(path)
    return pd.read_parquet(path)


def test_question_frames_carry_answers_and_keywords(tmp_path: Path) -> None:
    dataset = token_dataset()
    frame = questions_to_frame(dataset)
    assert frame["reference_answer"].tolist() == ["It runs at 1,450 rpm.", None, "The alarm, at 7.5 bar."]
    assert frame["expected_keywords"].tolist() == [["1,450", "rpm"], [], []]
    assert set(frame["answers_sha256"]) == {dataset.answers_sha256}
    assert questions_from_frame(frame).examples == dataset.examples
    back = questions_from_frame(through_parquet(frame, tmp_path))
    assert back.examples == dataset.examples  # example equality covers the answer fields
    assert [(e.reference_answer, e.expected_keywords) for e in back] == [
        (e.reference_answer, e.expected_keywords) for e in dataset
    ]
    assert back.answers_sha256 == dataset.answers_sha256 and back.sha256 == dataset.sha256


def test_a_frame_without_any_answer_survives_parquet(tmp_path: Path) -> None:
    plain = TokenLevelDataset(
        tuple(
            TokenLevelExample(e.question_id, e.query, e.relevant_spans, e.metadata) for e in token_dataset()
        ),
        name="golden",
    )
    back = questions_from_frame(through_parquet(questions_to_frame(plain), tmp_path))
    assert all(e.reference_answer is None and e.expected_keywords == () for e in back)
    assert back.examples == plain.examples


def test_a_frame_written_before_the_answer_columns_still_reads() -> None:
    frame = questions_to_frame(token_dataset()).drop(columns=["reference_answer", "expected_keywords"])
    back = questions_from_frame(frame)
    assert [e.question_id for e in back] == ["q1", "q2", "q3"]
    assert all(e.reference_answer is None and e.expected_keywords == () for e in back)


def test_rejected_rows_have_no_answer_and_are_skipped_on_read(tmp_path: Path) -> None:
    dataset = token_dataset()
    rejection = Rejection(
        "duplicate", "repeats q1", ("a.md",), "How fast is it?", metadata={"question_id": "x"}
    )
    frame = generated_token_level_to_frame(dataset, [rejection])
    rejected = frame[frame["status"] == "rejected"]
    assert rejected["reference_answer"].tolist() == [None]
    assert rejected["expected_keywords"].tolist() == [[]]
    assert set(frame["answers_sha256"]) == {dataset.answers_sha256}
    assert questions_from_frame(through_parquet(frame, tmp_path)).examples == dataset.examples


def test_chunk_question_frames_carry_answers_and_keywords(tmp_path: Path) -> None:
    dataset = ChunkLevelDataset(
        (
            ChunkLevelExample(
                QuestionId("c1"),
                "How fast?",
                (ChunkId("k1"), ChunkId("k2")),
                {"density": "DENSE"},
                reference_answer="At 1,450 rpm.",
                expected_keywords=("1,450 rpm",),
            ),
            ChunkLevelExample(QuestionId("c2"), "When?", (ChunkId("k3"),)),
        ),
        "fixed:test",
        name="chunk-questions",
    )
    rejection = Rejection("sparse_chunk", "classified SPARSE", ("a.md",), source_chunk_ids=("k9",))
    frame = chunk_questions_to_frame(dataset, [rejection])
    assert frame["reference_answer"].tolist() == ["At 1,450 rpm.", None, None]
    assert frame["expected_keywords"].tolist() == [["1,450 rpm"], [], []]
    assert set(frame["answers_sha256"]) == {dataset.answers_sha256}
    back = chunk_questions_from_frame(through_parquet(frame, tmp_path))
    assert back.examples == dataset.examples
    assert back.answers_sha256 == dataset.answers_sha256
    older = frame.drop(columns=["reference_answer", "expected_keywords"])
    assert all(e.reference_answer is None for e in chunk_questions_from_frame(older))


def test_retrieved_chunks_survive_the_frame_and_parquet_in_rank_order(tmp_path: Path):
    q1, q2 = QuestionId("q1"), QuestionId("q2")

    def hit(q: QuestionId, rank: int, **found: Any) -> RetrievedChunk:
        return RetrievedChunk(
            q, rank, ChunkId(f"c{rank}"), DocumentId("a.md"), rank, rank + 5, 0.5 / rank, DOC[:5], **found
        )

    results = {
        q2: [hit(q2, 1, found_by="bm25", bm25_rank=1, bm25_score=3.5)],
        q1: [
            hit(
                q1,
                1,
                found_by="both",
                knn_rank=2,
                knn_score=0.8,
                bm25_rank=1,
                bm25_score=2.0,
                fused_score=0.03,
            ),
            hit(q1, 2, knn_rank=1, knn_score=0.9, rerank_score=-1.25),
        ],
    }
    traces = {q: QueryTrace(q, "pump speed", knn_candidates=10, bm25_candidates=10) for q in (q1, q2)}
    frame = retrieved_to_frame(results, traces)
    path = tmp_path / "retrieval_results.parquet"
    frame.iloc[::-1].to_parquet(path)  # stored in any order: read back by question, then rank

    read = retrieved_from_frame(pd.read_parquet(path))
    assert read == {q1: results[q1], q2: results[q2]} and list(read) == [q1, q2]
    assert read[q2][0].knn_rank is None and read[q2][0].knn_score is None
    untraced = retrieved_from_frame(retrieved_to_frame(results).drop(columns=["found_by"]))
    assert {h.found_by for hits in untraced.values() for h in hits} == {"knn"}  # a table from before it
