from __future__ import annotations

import pytest

from rag_eval_pipeline.core.chunking import FixedSizeChunker

from .helpers import doc

ALPHABET = "abcdefghijklmnopqrstuvwxyz"


def spans(chunker: FixedSizeChunker, text: str) -> list[tuple[int, int]]:
    return [(c.start, c.end) for c in chunker.chunk_document(doc(text))]


def test_windows_step_by_size_minus_overlap_and_last_ends_at_text_end() -> None:
    assert spans(FixedSizeChunker(10, 3), ALPHABET) == [(0, 10), (7, 17), (14, 24), (21, 26)]


def test_no_window_is_contained_in_the_previous_one() -> None:
    # (14, 17) would lie inside (7, 17): the text ends with the second window.
    assert spans(FixedSizeChunker(10, 3), ALPHABET[:17]) == [(0, 10), (7, 17)]


def test_short_and_empty_texts() -> None:
    assert spans(FixedSizeChunker(10, 3), "abc") == [(0, 3)]
    assert spans(FixedSizeChunker(10, 3), "") == []


@pytest.mark.parametrize(("size", "overlap"), [(0, 0), (5, 5), (5, -1)])
def test_rejects_settings_that_cannot_progress(size: int, overlap: int) -> None:
    with pytest.raises(ValueError):
        FixedSizeChunker(size, overlap)


def test_fingerprint_follows_settings() -> None:
    assert FixedSizeChunker(10, 3).fingerprint == FixedSizeChunker(10, 3).fingerprint
    assert FixedSizeChunker(10, 3).fingerprint != FixedSizeChunker(10, 2).fingerprint
    assert FixedSizeChunker(10, 3).fingerprint.startswith("fixed:")
