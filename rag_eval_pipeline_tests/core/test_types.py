import pytest

from rag_eval_pipeline.core.types import CharacterSpan, DocumentId, PositionAwareChunk, assign_chunk_ids


def test_chunk_ids_are_unique_for_repeated_text_and_stable():
    ids = assign_chunk_ids("pa_chunk_", DocumentId("a.md"), ["same", "other", "same", "same"])
    assert len(set(ids)) == 4
    assert all(i.startswith("pa_chunk_") and len(i) == len("pa_chunk_") + 12 for i in ids)
    assert ids == assign_chunk_ids("pa_chunk_", DocumentId("a.md"), ["same", "other", "same", "same"])


def test_chunk_ids_differ_between_documents_and_prefixes():
    a = assign_chunk_ids("pa_chunk_", DocumentId("a.md"), ["text"])[0]
    b = assign_chunk_ids("pa_chunk_", DocumentId("b.md"), ["text"])[0]
    plain = assign_chunk_ids("chunk_", DocumentId("a.md"), ["text"])[0]
    assert a != b
    assert plain.startswith("chunk_") and plain[len("chunk_") :] == a[len("pa_chunk_") :]


def test_span_validates_its_text_length():
    with pytest.raises(ValueError, match="characters of text"):
        CharacterSpan(DocumentId("d"), 0, 5, "abc")
    with pytest.raises(ValueError, match="start <= end"):
        CharacterSpan(DocumentId("d"), 5, 2, "")


def test_touching_spans_do_not_overlap_and_empty_spans_never_do():
    left = CharacterSpan(DocumentId("d"), 0, 5, "abcde")
    right = CharacterSpan(DocumentId("d"), 5, 7, "fg")
    inside = CharacterSpan(DocumentId("d"), 2, 4, "cd")
    empty = CharacterSpan(DocumentId("d"), 2, 2, "")
    assert not left.overlaps(right)
    assert left.overlaps(inside) and inside.overlaps(left)
    assert not left.overlaps(empty)
    assert not left.overlaps(CharacterSpan(DocumentId("other"), 0, 5, "abcde"))


def test_position_aware_chunk_checks_offsets():
    with pytest.raises(ValueError):
        PositionAwareChunk("pa_chunk_x", DocumentId("d"), 0, 3, "ab")  # type: ignore[arg-type]
