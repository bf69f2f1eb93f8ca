from __future__ import annotations

import pytest

from rag_eval_pipeline.core.chunking import ChunkerPositionAdapter

from .helpers import doc


def spans(adapter: ChunkerPositionAdapter, text: str) -> list[tuple[int, int]]:
    return [(c.start, c.end) for c in adapter.chunk_document(doc(text))]


def test_repeated_passage_maps_to_its_own_copy() -> None:
    text = "alpha beta. alpha beta. gamma"
    adapter = ChunkerPositionAdapter(lambda t: ["alpha beta.", "alpha beta.", "gamma"], "lib")
    chunks = adapter.chunk_document(doc(text))
    assert [(c.start, c.end) for c in chunks] == [(0, 11), (12, 23), (24, 29)]
    assert chunks[0].chunk_id != chunks[1].chunk_id


def test_overlapping_chunks_are_found() -> None:
    adapter = ChunkerPositionAdapter(lambda t: ["abca", "cabc", "bc"], "overlap")
    assert spans(adapter, "abcabc") == [(0, 4), (2, 6), (4, 6)]


def test_unlocatable_chunks_are_skipped_counted_and_warned() -> None:
    adapter = ChunkerPositionAdapter(lambda t: ["alpha", "ALPHA (rewritten)", "gamma"], "rewriter")
    with pytest.warns(UserWarning, match="rewriter.*chunk #1"):
        assert spans(adapter, "alpha beta gamma") == [(0, 5), (11, 16)]
    assert (adapter.unlocated_count, adapter.last_unlocated_count) == (1, 1)
    with pytest.warns(UserWarning):
        adapter.chunk_document(doc("alpha gamma"))
    assert (adapter.unlocated_count, adapter.last_unlocated_count) == (2, 1)


def test_never_searches_before_the_cursor() -> None:
    # "alpha" occurs only before "beta": a chunker emitting it second is wrong, not reordered.
    adapter = ChunkerPositionAdapter(lambda t: ["beta", "alpha"], "backwards")
    with pytest.warns(UserWarning):
        assert spans(adapter, "alpha beta") == [(6, 10)]
    assert adapter.last_unlocated_count == 1


class SplitText:
    def split_text(self, text: str) -> list[str]:
        return text.split(" ")


class Chunk:
    def __init__(self, text: str) -> None:
        self.text = text


class ChunkObjects:
    def chunk(self, text: str) -> list[Chunk]:
        return [Chunk(part) for part in text.split(" ")]


@pytest.mark.parametrize("chunker", [SplitText(), ChunkObjects()])
def test_accepts_objects_with_split_text_or_chunk(chunker: object) -> None:
    assert spans(ChunkerPositionAdapter(chunker, "obj"), "to be to") == [(0, 2), (3, 5), (6, 8)]


def test_fingerprint_and_bad_chunker() -> None:
    assert ChunkerPositionAdapter(str.split, "whitespace").fingerprint == "adapter:whitespace"
    with pytest.raises(TypeError, match="split_text"):
        ChunkerPositionAdapter(42, "number")
