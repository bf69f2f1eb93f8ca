"""The paraphrase generator (the offline default): deterministic, its questions leave out the passage's
rarest term, and on the demo corpus they do not favour keyword retrieval the way known-item queries do."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from rag_eval_pipeline.core.chunking import RecursiveCharacterChunker, chunk_corpus
from rag_eval_pipeline.core.corpus.corpus import Corpus
from rag_eval_pipeline.core.embedding.base import Embedder
from rag_eval_pipeline.core.generation.base import METADATA_KEYS
from rag_eval_pipeline.core.generation.known_item import KnownItemGenerator
from rag_eval_pipeline.core.generation.paraphrase import GENERATOR, ParaphraseGenerator
from rag_eval_pipeline.core.generation.passages import document_statistics
from rag_eval_pipeline.core.generation.terms import content_terms, stem
from rag_eval_pipeline.core.questions.datasets import TokenLevelExample
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
        (span,) = (
            example.relevant_spans
        )  # the reference is the passage, the question from one of its sentences
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


def keyword_profile(
    examples: tuple[TokenLevelExample, ...], chunks: list[PositionAwareChunk]
) -> tuple[float, float]:
    """(lexical overlap, BM25 rank-1 share): the mean share of a question's content terms found in its
    reference, and the share of questions whose first BM25 hit overlaps the reference."""
    overlap = np.mean(
        [
            len(set(content_terms(e.query)) & set(content_terms(e.relevant_spans[0].text)))
            / max(len(set(content_terms(e.query))), 1)
            for e in examples
        ]
    )
    by_id = {c.chunk_id: c for c in chunks}
    hits = KeywordIndex.build(chunks).search([e.query for e in examples], 1)
    first = np.mean(
        [
            bool(found) and any(by_id[found[0].chunk_id].span.overlaps(s) for s in e.relevant_spans)
            for found, e in zip(hits, examples, strict=True)
        ]
    )
    return float(overlap), float(first)


@pytest.mark.slow
def test_known_item_queries_are_keyword_biased_and_paraphrase_questions_are_not(
    corpus: Corpus, minilm: Embedder
) -> None:
    """On the demo corpus with the real model, as written: known-item queries are all passage terms
    (overlap 0.99) and BM25 ranks their source first every time (1.00); so does a question that copies
    its sentence (the paraphrase generator with nothing left out, substituted or added: 1.00, 1.00);
    the paraphrase questions share 0.30 of their terms with the reference (natural questions of
    chroma_general: ~0.44) and BM25 ranks their source first for 0.65 of them."""
    chunks = chunk_corpus(RecursiveCharacterChunker(400, 50), corpus)
    known_item = KnownItemGenerator().generate_token_level(corpus, 40).examples
    paraphrase = ParaphraseGenerator(minilm).generate_token_level(corpus, 40).examples
    copied = (
        ParaphraseGenerator(minilm, left_out=0, substitution=0.0, context_terms=(0, 0), window_terms=(0, 0))
        .generate_token_level(corpus, 40)
        .examples
    )
    assert min(len(known_item), len(paraphrase), len(copied)) >= 30
    for biased in (known_item, copied):
        overlap, first = keyword_profile(biased, chunks)
        assert overlap >= 0.9 and first >= 0.9, (overlap, first)
    overlap, first = keyword_profile(paraphrase, chunks)
    assert overlap <= 0.6 and first <= 0.8, (overlap, first)
