"""Step 1 of an evaluation: a corpus cut into a named chunk set."""

from rag_eval_pipeline.core.chunking import (
    FixedSizeChunker,
    RecursiveCharacterChunker,
    chunk_corpus,
    cut_corpus,
)
from rag_eval_pipeline.core.types import sha256_hex
from rag_eval_pipeline_tests.conftest import tiny_corpus


def test_a_chunk_set_holds_every_chunk_of_the_corpus_in_order_under_its_config_name():
    corpus = tiny_corpus()
    chunker = RecursiveCharacterChunker(120, 20)
    cut = cut_corpus(chunker, corpus, "recursive-120-20")  # type: ignore[arg-type]
    assert cut.name == "recursive-120-20"
    assert cut.chunks == tuple(chunk_corpus(chunker, corpus))  # type: ignore[arg-type]
    assert {c.doc_id for c in cut.chunks} == {d.doc_id for d in corpus}  # type: ignore[attr-defined]


def test_a_bare_chunker_names_its_set_by_its_fingerprint():
    corpus = tiny_corpus()
    one, same, other = (
        cut_corpus(chunker, corpus)  # type: ignore[arg-type]
        for chunker in (FixedSizeChunker(60, 0), FixedSizeChunker(60, 0), FixedSizeChunker(60, 10))
    )
    assert one.name == same.name == "chunker-" + sha256_hex(FixedSizeChunker(60, 0).fingerprint)[:10]
    assert other.name != one.name
