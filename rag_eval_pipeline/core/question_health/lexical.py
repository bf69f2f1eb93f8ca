"""How much of a question is copied from its reference, and which questions keyword search alone
answers: the bias that makes known-item questions favour BM25 (GUIDE section 7).

Terms are the question generators' content terms (core/generation/terms.py: lowercased words and
identifiers without stopwords), so "copied" means what a generator copies.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ..corpus.corpus import Corpus
from ..generation.quality import probe_windows
from ..generation.terms import content_terms
from ..questions.datasets import TokenLevelExample
from ..retrieval.keyword import KeywordIndex
from ..types import PositionAwareChunk, QuestionId


def reference_text(example: TokenLevelExample) -> str:
    """The text of all of a question's reference spans, one after the other."""
    return "\n".join(span.text for span in example.relevant_spans)


def term_overlap(query: str, reference: str) -> float | None:
    """The share of the query's distinct content terms that occur in ``reference`` (1.0: every term
    is copied from it); None for a query without content terms."""
    terms = set(content_terms(query))
    if not terms:
        return None
    return len(terms & set(content_terms(reference))) / len(terms)


def lexical_overlap(examples: Sequence[TokenLevelExample]) -> dict[QuestionId, float | None]:
    """``term_overlap`` of each question with its reference."""
    return {e.question_id: term_overlap(e.query, reference_text(e)) for e in examples}


def bm25_ranks_reference_first(
    examples: Sequence[TokenLevelExample],
    corpus: Corpus,
    windows: Sequence[PositionAwareChunk] | None = None,
) -> dict[QuestionId, bool]:
    """Whether BM25 (the keyword retriever of the profiles) ranks first a passage that overlaps the
    question's reference, over the corpus cut into the retrievability probe's windows
    (``probe_windows``: the same passages whatever chunk configs are evaluated). ``windows`` replaces
    them (tests)."""
    windows = probe_windows(corpus) if windows is None else windows
    if not examples:
        return {}
    index = KeywordIndex.build(windows)
    first = index.search([e.query for e in examples], 1) if windows else [[] for _ in examples]
    return {
        e.question_id: bool(
            hits
            and any(
                span.doc_id == hits[0].doc_id and max(span.start, hits[0].start) < min(span.end, hits[0].end)
                for span in e.relevant_spans
            )
        )
        for e, hits in zip(examples, first, strict=True)
    }


def keyword_trivial(
    overlap: Mapping[QuestionId, float | None], bm25_first: Mapping[QuestionId, bool]
) -> frozenset[QuestionId]:
    """Questions whose every content term is in the reference AND whose reference BM25 ranks first: a
    keyword search answers them by construction, whatever the setup's dense side does."""
    return frozenset(q for q, share in overlap.items() if share == 1.0 and bm25_first.get(q, False))
