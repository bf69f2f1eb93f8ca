"""No chunker emits a chunk of whitespace only (issue 30): such a chunk says nothing, yet it was embedded,
indexed, retrieved and lowered precision omega. Offsets of the other chunks stay exact."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import rag_eval_pipeline.core.chunking.settings as chunker_settings
from rag_eval_pipeline.core.chunking import (
    Chunker,
    FixedSizeChunker,
    RecursiveCharacterChunker,
    SemanticChunker,
    TokenChunker,
    build_chunker,
    chunk_corpus,
)
from rag_eval_pipeline.core.chunking.tokenization import cl100k_tokenizer
from rag_eval_pipeline.core.corpus.corpus import Corpus
from rag_eval_pipeline.core.settings.configs import load_chunk_configs

from .helpers import HashedBagOfWords, assert_tiles, doc
from .strategies import size_and_overlap

PROJECT = Path(__file__).resolve().parents[3]
PUBLISHED_SEPARATORS = ("\n\n", "\n", ".", "?", "!", " ", "")

# Text with runs of blank lines and indentation between words and long lines: where a recursive split
# leaves a blank piece between two pieces too long to merge with it, and where windows fall on blanks.
_blank_heavy = st.lists(
    st.sampled_from(
        ["word", "Sentence one.", " ", "  ", "\t", "\n", "\n\n", "\n\n\n", " \n \n", "\r\n", "x" * 30]
    ),
    max_size=40,
).map("".join)

CHUNKERS: dict[str, Callable[[int, int], Chunker]] = {
    "fixed": FixedSizeChunker,
    "recursive": RecursiveCharacterChunker,
    "recursive-published": lambda size, overlap: RecursiveCharacterChunker(
        size, overlap, PUBLISHED_SEPARATORS
    ),
    "recursive-cl100k": lambda size, overlap: RecursiveCharacterChunker(
        size, overlap, PUBLISHED_SEPARATORS, tokenizer=cl100k_tokenizer()
    ),
    "token-cl100k": lambda size, overlap: TokenChunker(size, overlap, cl100k_tokenizer()),
    "semantic": lambda size, _overlap: SemanticChunker(HashedBagOfWords(), size, 50.0),
}


@pytest.mark.parametrize("kind", list(CHUNKERS))
@settings(max_examples=150, deadline=None)
@given(text=_blank_heavy, sizes=size_and_overlap(max_size=30))
def test_no_chunker_emits_a_whitespace_only_chunk(kind: str, text: str, sizes: tuple[int, int]) -> None:
    document = doc(text)
    chunks = CHUNKERS[kind](*sizes).chunk_document(document)
    assert [c.text for c in chunks if c.text.isspace()] == []
    assert all(text[c.start : c.end] == c.text for c in chunks)
    assert_tiles(document, chunks)  # and every other character is still in a chunk


def test_the_blank_line_between_two_long_paragraphs_is_no_chunk() -> None:
    text = "a" * 12 + "\n\n\n\n" + "b" * 12
    chunks = RecursiveCharacterChunker(10, 0, ("\n\n", "")).chunk_document(doc(text))
    assert [c.text for c in chunks] == ["a" * 10, "aa\n\n", "b" * 10, "bb"]
    assert all(text[c.start : c.end] == c.text for c in chunks)


@pytest.mark.parametrize("name", ["recursive-400-50", "recursive-800-100", "fixed-200-0", "token-cl100k-200"])
def test_the_demo_corpus_has_no_whitespace_only_chunk(name: str) -> None:
    """recursive-400-50 cut 2 of its 153 chunks as '\\n' before."""
    (config,) = [c for c in load_chunk_configs(PROJECT / "data/chunk_configs.yaml") if c.name == name]
    chunks = chunk_corpus(build_chunker(config), Corpus.from_folder(PROJECT / "data/corpus"))
    assert chunks
    assert [(c.doc_id, c.start, c.text) for c in chunks if not c.text.strip()] == []


def test_a_change_of_the_cut_rules_changes_every_fingerprint(monkeypatch: pytest.MonkeyPatch) -> None:
    """Chunks stored by an older cut are reused only under the same fingerprint (chunking/reuse.py): a
    workspace cut before whitespace chunks were dropped must be cut again, not keep them."""
    before = {kind: make(20, 0).fingerprint for kind, make in CHUNKERS.items()}
    monkeypatch.setattr(chunker_settings, "CUT_RULES_VERSION", chunker_settings.CUT_RULES_VERSION + 1)
    after = {kind: make(20, 0).fingerprint for kind, make in CHUNKERS.items()}
    assert all(before[kind] != after[kind] for kind in CHUNKERS)
