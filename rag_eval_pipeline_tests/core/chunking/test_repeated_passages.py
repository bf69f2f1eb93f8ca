"""A passage repeated in one document must map each chunk to its own copy with its own id.

The bug this guards against: locating chunk text with ``str.find`` maps every copy to the first one.
"""

from __future__ import annotations

import pytest

from rag_eval_pipeline.core.chunking import (
    Chunker,
    ChunkerPositionAdapter,
    FixedSizeChunker,
    RecursiveCharacterChunker,
    SemanticChunker,
)

from .helpers import HashedBagOfWords, assert_tiles, doc

PASSAGE = "The same sentence. "
TEXT = PASSAGE * 4


@pytest.mark.parametrize(
    "chunker",
    [
        FixedSizeChunker(len(PASSAGE)),
        RecursiveCharacterChunker(len(PASSAGE)),
        SemanticChunker(HashedBagOfWords(), len(PASSAGE), 50.0),
        ChunkerPositionAdapter(lambda text: [PASSAGE] * 4, "split-on-passage"),
    ],
    ids=lambda c: c.fingerprint.split(":")[0],
)
def test_each_copy_gets_its_own_offsets_and_id(chunker: Chunker) -> None:
    document = doc(TEXT)
    chunks = chunker.chunk_document(document)
    assert_tiles(document, chunks)
    assert [c.text for c in chunks] == [PASSAGE] * 4
    assert [c.start for c in chunks] == [0, 19, 38, 57]
    assert len({c.chunk_id for c in chunks}) == 4
