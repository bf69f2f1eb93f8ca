"""Simulated known-item queries: a free, deterministic question generator for tests and CI.

After Azzopardi, de Rijke & Balog, "Building simulated queries for known-item topics" (SIGIR 2007):
a user who remembers a passage types a few of its words. We pick a passage, draw query terms from it
without replacement with probability proportional to tf·idf (terms that are frequent in the passage
and rare in the collection, the ones that tell it apart), and with a small probability add one noise
term drawn from the collection's term distribution, as a user misremembering would. No LLM, no cost,
and the reference span is the passage's own span, known by construction.

The queries are bags of keywords, not questions: they exercise retrieval, not answer generation, so
the examples carry no reference answer (``reference_answer`` None, no expected keywords).
Every random draw comes from a ``random.Random`` seeded by sha256 of the generator seed and the
passage (or chunk) identity, so a question does not change when others are added, nor between runs,
processes or machines (no ``hash()`` of strings, no set iteration order). The term statistics a query is
drawn with (idf, the noise term's distribution, the difficulty) are its own document's, and each
document's passages are chosen by it alone (passages.py): editing one document changes the questions
about it and leaves every other document's as they were. What still looks across documents is content:
a sentence pasted into two documents is boilerplate in both, and the quality filters (duplicates,
retrievability) compare questions with the whole corpus.
"""

from __future__ import annotations

import random
from bisect import bisect_right
from collections import Counter
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from itertools import accumulate

from ..corpus.corpus import Corpus
from ..questions.datasets import ChunkLevelExample, TokenLevelExample
from ..types import PositionAwareChunk, QuestionId, Rejection, sha256_hex
from .base import GenerationResult, example_metadata
from .passages import (
    BoilerplateDetector,
    Passage,
    chunk_identities,
    document_statistics,
    is_mostly_prose,
    passages_to_ask,
    per_document_sample,
    score_text,
)
from .quotas import QuestionTarget
from .terms import TermStatistics, content_terms

GENERATOR = "known-item-simulation"
TECHNIQUE = "simulated known-item query (Azzopardi et al. 2007)"
# A query term found in at most this many texts of its document (sentences, or chunks) points at the
# source: one, so the label does not depend on other documents (at 2, nearly every query was "easy").
RARE_DF = 1
# Keywords recorded for chunk-level questions: the chunk's heaviest terms.
MIN_KEYWORDS, MAX_KEYWORDS = 3, 5


@dataclass(frozen=True)
class SimulatedQuery:
    terms: tuple[str, ...]  # in query order, noise included
    noise_terms: tuple[str, ...]  # the terms not taken from the passage

    @property
    def text(self) -> str:
        return " ".join(self.terms)


@dataclass(frozen=True)
class KnownItemGenerator:
    """Zero-cost questions whose ground truth is exact by construction; the same seed, the same set."""

    seed: int = 13
    min_terms: int = 3
    max_terms: int = 6
    noise: float = 0.1  # probability that a query carries one term from outside its passage
    min_chars: int = 200
    max_chars: int = 600

    def __post_init__(self) -> None:
        if not 1 <= self.min_terms <= self.max_terms:
            raise ValueError(f"need 1 <= min_terms <= max_terms, got {self.min_terms} and {self.max_terms}")
        if not 0.0 <= self.noise <= 1.0:
            raise ValueError(f"noise is a probability, got {self.noise}")

    def generate_token_level(
        self,
        corpus: Corpus,
        n_questions: QuestionTarget,
        documents: Collection[str] | None = None,
        *,
        passages: Sequence[Passage] | None = None,
    ) -> GenerationResult[TokenLevelExample]:
        """One query per selected passage (``n_questions``: a number, or ``CountRule``; or the
        ``passages`` of a ``plan_passages`` made with this generator's seed and sizes); its reference span
        is the passage. With ``documents``, only the passages of those documents among the ones selected
        over the whole corpus: the questions a full generation would ask about them, and no other."""
        statistics: dict[str, TermStatistics] = {doc.doc_id: document_statistics(doc) for doc in corpus}
        noise_models: dict[str, CollectionModel] = {}
        passages = passages_to_ask(
            corpus, n_questions, self.seed, self.min_chars, self.max_chars, statistics, passages, documents
        )
        examples: list[TokenLevelExample] = []
        rejections: list[Rejection] = []
        seen_queries: set[str] = set()
        for passage in passages:
            span = passage.span
            stats = statistics[span.doc_id]
            noise_model = noise_models.setdefault(span.doc_id, CollectionModel(stats))
            rng = _rng(self.seed, "passage", span.doc_id, str(span.start), str(span.end))
            query = self.simulate_query(span.text, stats, rng, noise_model)
            if len(query.terms) - len(query.noise_terms) < self.min_terms:
                rejections.append(self._too_few_terms(query, (span.doc_id,)))
                continue
            if query.text in seen_queries:
                rejections.append(_duplicate(query, (span.doc_id,)))
                continue
            seen_queries.add(query.text)
            question_id = QuestionId(
                "ki-" + sha256_hex(f"{query.text}\0{span.doc_id}\0{span.start}\0{span.end}")[:12]
            )
            metadata = example_metadata(
                generator=GENERATOR,
                model=None,
                prompt_version=None,
                source_doc_ids=[span.doc_id],
                question_type="known-item",
                difficulty=_difficulty(query, stats),
                technique=TECHNIQUE,
                query_terms=list(query.terms),
                noise_terms=list(query.noise_terms),
                passage_score=round(passage.score, 6),
                seed=self.seed,
            )
            examples.append(TokenLevelExample(question_id, query.text, (span,), metadata))
        return GenerationResult(tuple(examples), tuple(rejections))

    def generate_chunk_level(
        self, chunks: Sequence[PositionAwareChunk], n_questions: int
    ) -> GenerationResult[ChunkLevelExample]:
        """One query per selected chunk; the chunk is its only relevant chunk.

        Chunks that are boilerplate, mostly headings or code, or have too few distinct content terms
        to draw a query and keywords from are never selected; the rest are drawn like passages.
        """
        ordered = sorted(chunks, key=lambda c: (c.doc_id, c.start, c.end, c.chunk_id))
        by_doc: dict[str, list[PositionAwareChunk]] = {}
        for chunk in ordered:
            by_doc.setdefault(chunk.doc_id, []).append(chunk)
        # each document's chunks are its collection, as its sentences are for passages
        statistics = {doc: TermStatistics.from_texts(c.text for c in cs) for doc, cs in by_doc.items()}
        identities = chunk_identities(ordered)
        noise_models = {doc: CollectionModel(stats) for doc, stats in statistics.items()}
        boilerplate = BoilerplateDetector.from_units((c.doc_id, c.start, c.text) for c in ordered)
        needed_terms = max(self.min_terms, MIN_KEYWORDS)
        scored: list[tuple[PositionAwareChunk, float, tuple[str, ...]]] = []
        for chunk in ordered:
            if len(set(content_terms(chunk.text))) < needed_terms:
                continue
            if boilerplate.is_boilerplate(chunk.text) or not is_mostly_prose(chunk.text):
                continue
            score, top = score_text(chunk.text, statistics[chunk.doc_id])
            if score > 0:
                scored.append((chunk, score, top))
        picked = per_document_sample(
            scored,
            n_questions,
            identities,
            self.seed,
            group=lambda item: item[0].doc_id,
            weight=lambda item: item[1],
            conflicts=lambda a, b: a[0].span.overlaps(b[0].span),
        )
        examples: list[ChunkLevelExample] = []
        rejections: list[Rejection] = []
        seen_queries: set[str] = set()
        for chunk, _score, top in picked:
            stats = statistics[chunk.doc_id]
            rng = _rng(self.seed, "chunk", chunk.chunk_id)
            query = self.simulate_query(chunk.text, stats, rng, noise_models[chunk.doc_id])
            if len(query.terms) - len(query.noise_terms) < self.min_terms:
                rejections.append(self._too_few_terms(query, (chunk.doc_id,), (chunk.chunk_id,)))
                continue
            if query.text in seen_queries:
                rejections.append(_duplicate(query, (chunk.doc_id,), (chunk.chunk_id,)))
                continue
            seen_queries.add(query.text)
            question_id = QuestionId("ki-" + sha256_hex(f"{query.text}\0{chunk.chunk_id}")[:12])
            metadata = example_metadata(
                generator=GENERATOR,
                model=None,
                prompt_version=None,
                source_doc_ids=[chunk.doc_id],
                question_type="FACTUAL",
                difficulty=_difficulty(query, stats),
                technique=TECHNIQUE,
                keywords=list(top[:MAX_KEYWORDS]),
                source_chunk_ids=[chunk.chunk_id],
                query_terms=list(query.terms),
                noise_terms=list(query.noise_terms),
                seed=self.seed,
            )
            examples.append(ChunkLevelExample(question_id, query.text, (chunk.chunk_id,), metadata))
        return GenerationResult(tuple(examples), tuple(rejections))

    def simulate_query(
        self,
        text: str,
        stats: TermStatistics,
        rng: random.Random,
        noise_model: CollectionModel | None = None,
    ) -> SimulatedQuery:
        """Draw ``min_terms``-``max_terms`` distinct terms of ``text`` with probability proportional to
        tf·idf, then with probability ``noise`` one term of the collection that is not in ``text``."""
        tf = Counter(content_terms(text))
        # Counter keeps first-appearance order, so the draw does not depend on hashing.
        candidates = list(tf)
        weights = [count * stats.idf(term) for term, count in tf.items()]
        wanted = min(rng.randint(self.min_terms, self.max_terms), len(candidates))
        terms: list[str] = []
        for _ in range(wanted):
            index = rng.choices(range(len(candidates)), weights=weights)[0]
            terms.append(candidates.pop(index))
            weights.pop(index)
        noise_terms: tuple[str, ...] = ()
        if rng.random() < self.noise:
            noise = (noise_model or CollectionModel(stats)).draw(rng, exclude=tf)
            if noise is not None:
                terms.insert(rng.randrange(len(terms) + 1), noise)
                noise_terms = (noise,)
        return SimulatedQuery(tuple(terms), noise_terms)

    def _too_few_terms(
        self, query: SimulatedQuery, doc_ids: tuple[str, ...], chunk_ids: tuple[str, ...] = ()
    ) -> Rejection:
        return Rejection(
            "too_few_terms",
            f"the source holds only {len(query.terms) - len(query.noise_terms)} distinct content terms; "
            f"a known-item query needs {self.min_terms} to single it out",
            doc_ids,
            query.text or None,
            chunk_ids,
            {"generator": GENERATOR},
        )


class CollectionModel:
    """p(t) = collection frequency / total: the noise a user's memory mixes into a known-item query."""

    def __init__(self, stats: TermStatistics) -> None:
        self._terms = stats.vocabulary()
        self._cumulative = list(accumulate(stats.collection_frequency[t] for t in self._terms))

    def draw(self, rng: random.Random, exclude: Counter[str], attempts: int = 20) -> str | None:
        """A term outside ``exclude`` (None if ``attempts`` draws all land inside it)."""
        if not self._cumulative:
            return None
        total = self._cumulative[-1]
        for _ in range(attempts):
            term = self._terms[bisect_right(self._cumulative, rng.random() * total)]
            if term not in exclude:
                return term
        return None


def _rng(seed: int, *parts: str) -> random.Random:
    """A generator seeded by sha256, not ``hash()``, so it is the same in every process."""
    return random.Random(int(sha256_hex("\0".join([str(seed), *parts]))[:16], 16))


def _difficulty(query: SimulatedQuery, stats: TermStatistics) -> str:
    """easy: two or more rare terms point at the source; medium: one; hard: none, only common words."""
    passage_terms = [t for t in query.terms if t not in query.noise_terms]
    rare = sum(1 for t in passage_terms if stats.document_frequency.get(t, 0) <= RARE_DF)
    return "easy" if rare >= 2 else "medium" if rare == 1 else "hard"


def _duplicate(query: SimulatedQuery, doc_ids: tuple[str, ...], chunk_ids: tuple[str, ...] = ()) -> Rejection:
    return Rejection(
        "duplicate",
        f"the query {query.text!r} was already drawn for another source",
        doc_ids,
        query.text,
        chunk_ids,
        {"generator": GENERATOR},
    )
