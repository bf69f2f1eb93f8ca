"""The paraphrase generator (the offline default): deterministic, its questions leave out the passage's
rarest term, and on the demo corpus they do not favour keyword retrieval the way known-item queries do."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from rag_eval_pipeline.core.chunking import RecursiveCharacterChunker, chunk_corpus
from rag_eval_pipeline.core.corpus import Corpus
from rag_eval_pipeline.core.datasets import TokenLevelExample
from rag_eval_pipeline.core.embedding.base import Embedder
from rag_eval_pipeline.core.generation.base import METADATA_KEYS
from rag_eval_pipeline.core.generation.known_item import KnownItemGenerator
from rag_eval_pipeline.core.generation.paraphrase import GENERATOR, ParaphraseGenerator
from rag_eval_pipeline.core.generation.passages import document_statistics
from rag_eval_pipeline.core.generation.terms import content_terms, stem
from rag_eval_pipeline.core.retrieval.keyword import KeywordIndex
from rag_eval_pipeline.core.types import Document, DocumentId, PositionAwareChunk
from rag_eval_pipeline_tests.fakes import HashingEmbedder

CORPUS_DIR = Path(__file__).resolve().parents[3] / "data" / "corpus"


@pytest.fixture(scope="module")
def corpus() -> Corpus:
    return Corpus.from_folder(CORPUS_DIR)


def as_json(examples: tuple[TokenLevelExample, ...]) -> list[dict[str, Any]]:
    return [e.to_json() for e in examples]


def test_the_same_seed_and_model_give_the_same_questions(corpus: Corpus) -> None:
    first = ParaphraseGenerator(HashingEmbedder(), seed=5).generate_token_level(corpus, 20)
    again = ParaphraseGenerator(HashingEmbedder(), seed=5).generate_token_level(corpus, 20)
    other = ParaphraseGenerator(HashingEmbedder(), seed=6).generate_token_level(corpus, 20)
    assert len(first.examples) >= 15
    assert as_json(first.examples) == as_json(again.examples)
    assert [e.query for e in first.examples] != [e.query for e in other.examples]


def test_each_question_is_labelled_and_leaves_out_the_rarest_term_of_its_sentence(corpus: Corpus) -> None:
    result = ParaphraseGenerator(HashingEmbedder()).generate_token_level(corpus, 20)
    statistics = {d.doc_id: document_statistics(d) for d in corpus}
    for example in result.examples:
        metadata = example.metadata
        assert set(METADATA_KEYS) <= set(metadata)
        assert metadata["generator"] == GENERATOR and metadata["question_type"] == "paraphrase"
        (span,) = example.relevant_spans  # the reference is the passage, the question from one of its sentences
        doc_id = span.doc_id
        assert metadata["focus_sentence"] in span.text
        focus_terms = set(content_terms(metadata["focus_sentence"]))
        df = statistics[doc_id].document_frequency
        rarest = min(focus_terms, key=lambda t: (df.get(t, 0), t))
        assert metadata["left_out_terms"] == [rarest]
        question_terms = set(content_terms(example.query))
        assert rarest not in question_terms, example.query
        for original, substitute in metadata["substituted_terms"]:
            assert original not in question_terms and substitute in question_terms
            assert stem(substitute) not in {stem(t) for t in focus_terms}  # another word, not another form
            assert substitute in content_terms(corpus[doc_id].text)  # a term of the same document
        assert example.query.startswith(("What ", "How many ")) and example.query.endswith("?")


def test_a_document_s_questions_do_not_depend_on_the_others(corpus: Corpus) -> None:
    """As known-item's: passages, term statistics and substitutes come from the question's own document."""
    doc_ids = [d.doc_id for d in corpus]
    edited = Corpus(
        tuple(
            d
            if d.doc_id != doc_ids[-1]
            else Document(DocumentId(d.doc_id), d.text + "\n\nA new closing line.", d.group)
            for d in corpus
        ),
        root=corpus.root,
    )
    before = ParaphraseGenerator(HashingEmbedder()).generate_token_level(corpus, 20).examples
    after = ParaphraseGenerator(HashingEmbedder()).generate_token_level(edited, 20).examples
    untouched = [d for d in doc_ids[:-1]]
    assert as_json(tuple(e for e in before if e.relevant_spans[0].doc_id in untouched)) == as_json(
        tuple(e for e in after if e.relevant_spans[0].doc_id in untouched)
    )


def top1_shares(
    examples: tuple[TokenLevelExample, ...], chunks: list[PositionAwareChunk], embedder: Embedder
) -> tuple[float, float]:
    """The share of questions whose first BM25 hit, and whose first dense hit, overlaps the reference."""
    queries = [e.query for e in examples]
    by_id = {c.chunk_id: c for c in chunks}
    keyword = KeywordIndex.build(chunks).search(queries, 1)
    dense = np.argmax(embedder.embed(queries) @ embedder.embed([c.text for c in chunks]).T, axis=1)

    def found(chunk: PositionAwareChunk, example: TokenLevelExample) -> bool:
        return any(chunk.span.overlaps(s) for s in example.relevant_spans)

    bm25 = np.mean(
        [bool(hits) and found(by_id[hits[0].chunk_id], e) for hits, e in zip(keyword, examples, strict=True)]
    )
    knn = np.mean([found(chunks[int(j)], e) for j, e in zip(dense, examples, strict=True)])
    return float(bm25), float(knn)


@pytest.mark.slow
def test_known_item_queries_favour_bm25_and_paraphrase_questions_do_not(
    corpus: Corpus, minilm: Embedder
) -> None:
    """Measured on the demo corpus with the real model: known-item queries (the passage's rarest terms)
    put their source first for BM25 far more often than for dense retrieval (1.00 vs 0.50 when written);
    the paraphrase generator's questions do not (0.75 vs 0.65), and none holds its passage's answer term."""
    chunks = chunk_corpus(RecursiveCharacterChunker(400, 50), corpus)
    known_item = KnownItemGenerator().generate_token_level(corpus, 40).examples
    paraphrase = ParaphraseGenerator(minilm).generate_token_level(corpus, 40).examples
    assert len(known_item) >= 30 and len(paraphrase) >= 30
    ki_bm25, ki_dense = top1_shares(known_item, chunks, minilm)
    pq_bm25, pq_dense = top1_shares(paraphrase, chunks, minilm)
    assert ki_bm25 - ki_dense >= 0.3, (ki_bm25, ki_dense)
    assert abs(pq_bm25 - pq_dense) <= 0.2, (pq_bm25, pq_dense)
    assert pq_bm25 <= ki_bm25 - 0.15
