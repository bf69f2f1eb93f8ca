"""Simulated paraphrased questions: the offline default, whose questions rank setups as natural ones do.

Why known-item queries favour keyword retrieval (known_item.py): each is a bag of the passage's own
rarest terms (drawn by tf·idf), which is exactly what BM25 scores, and a bag of keywords is what a
sentence embedding model reads worst. Natural questions (measured on the 276 questions of Chroma's
chunking benchmark) do the opposite: of their ~8 content words only ~3.6 are in the reference, mostly
its topical (frequent, moderate-idf) words rather than its rarest; ~3 more are other words of the same
document, often of the sentences around the reference, and ~1.5 are not in it at all (paraphrase); the
rarest word of the passage is often what the question asks for, so it is missing; and they are sentences.

So a question here is written from one sentence of a passage, as a writer would write it:
- the sentence's rarest term (the thing asked about, the "answer") is left out;
- each other term is, with probability ``substitution``, replaced by a related term of the same
  document with another stem: one of its nearest neighbours in the embedding model's space (the
  paraphrase a writer makes; another stem, since BM25 stems both sides);
- a few terms of the sentences around it (the topic it sits in, topical ones favoured) and a few
  document terms nearest to the sentence in the embedding space (the topic a writer names) are added;
- the words stay in the sentence's order with its function words, behind "What" ("How many" when the
  answer is a number), so the question reads as a (rough) sentence.
The reference is the passage, as for known-item questions.

No LLM, no download: the embedding model is the pipeline's own (its vectors come from the embedding
cache on a re-run). Deterministic: every draw comes from a generator seeded by sha256 of the seed and
the passage, ties are broken by term. Each document's questions depend on that document alone (its
passages, its term statistics, its own vocabulary), as with the known-item generator.
benchmarks/question_fidelity.py measures how these questions rank setups against natural ones.
"""

from __future__ import annotations

import random
from bisect import bisect_right
from collections import Counter
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from ..chunking.sentences import sentence_spans
from ..corpus.corpus import Corpus
from ..embedding.base import Embedder
from ..questions.datasets import TokenLevelExample
from ..types import CharacterSpan, Document, QuestionId, Rejection, sha256_hex
from .base import GenerationResult, example_metadata
from .passages import Passage, document_statistics, passages_to_ask
from .quotas import QuestionTarget
from .terms import TOKEN_PATTERN, TermStatistics, content_terms, is_content_term, stem

GENERATOR = "paraphrase-simulation"
TECHNIQUE = "a sentence with its answer left out, related document terms substituted and its topic added"
# A focus sentence needs this many distinct content terms: one left out, the rest to ask with.
MIN_SENTENCE_TERMS = 3


@dataclass(frozen=True)
class DocumentVocabulary:
    """A document's topical terms (used in at least ``min_df`` of its sentences) and their vectors."""

    terms: tuple[str, ...]
    vectors: npt.NDArray[np.float32] = field(repr=False)

    def related(
        self, vector: npt.NDArray[np.float32], excluded: Collection[str], stems: Collection[str], n: int
    ) -> list[str]:
        """The ``n`` terms nearest to ``vector``, none in ``excluded`` nor sharing a stem in ``stems``
        (a different word, not a different form of the same one: BM25 stems both sides)."""
        if not self.terms:
            return []
        order = np.argsort(-(self.vectors @ vector), kind="stable")
        found: list[str] = []
        for index in order:
            term = self.terms[int(index)]
            if term in excluded or stem(term) in stems:
                continue
            found.append(term)
            if len(found) == n:
                break
        return found


@dataclass(frozen=True)
class ParaphraseQuestion:
    text: str
    focus: str  # the sentence it was written from
    left_out: tuple[str, ...]  # the answer terms, not in the question
    substituted: tuple[tuple[str, str], ...]  # (sentence term, related document term)
    context: tuple[str, ...]  # terms added: from the sentences around it, then nearest to it


@dataclass
class ParaphraseGenerator:
    """Deterministic natural-style questions over passages; the same seed and model, the same set."""

    embedder: Embedder
    seed: int = 13
    min_chars: int = 200
    max_chars: int = 600
    left_out: int = 1  # the sentence's rarest terms, left out (what the question asks for)
    substitution: float = 0.7  # probability that a term is replaced by a related document term
    neighbours: int = 5  # a substitute is drawn from a term's nearest document terms
    context_terms: tuple[int, int] = (4, 8)  # document terms nearest to the sentence, added
    window_terms: tuple[int, int] = (1, 3)  # terms of the sentences around it, added
    window: int = 3  # sentences on each side
    topical_power: float = 0.5  # a window term's weight: sentences using it x (its document df) ** power
    min_df: int = 2  # a document term must occur in this many sentences to be a substitute

    def __post_init__(self) -> None:
        for name in ("context_terms", "window_terms"):
            low, high = getattr(self, name)
            if not 0 <= low <= high:
                raise ValueError(f"{name} must be (low, high) with 0 <= low <= high, got {(low, high)}")
        if not 0.0 <= self.substitution <= 1.0:
            raise ValueError(f"substitution is a probability, got {self.substitution}")

    def generate_token_level(
        self,
        corpus: Corpus,
        n_questions: QuestionTarget,
        documents: Collection[str] | None = None,
        *,
        passages: Sequence[Passage] | None = None,
    ) -> GenerationResult[TokenLevelExample]:
        """One question per selected passage (select_passages, or the ``passages`` of a
        ``plan_passages`` with this generator's seed and sizes, as known-item), its reference the
        passage. With ``documents``, only the questions a full generation asks about those documents."""
        statistics: dict[str, TermStatistics] = {doc.doc_id: document_statistics(doc) for doc in corpus}
        passages = passages_to_ask(
            corpus, n_questions, self.seed, self.min_chars, self.max_chars, statistics, passages, documents
        )
        plans: list[tuple[CharacterSpan, random.Random, str]] = []
        rejections: list[Rejection] = []
        neighbourhoods: list[Counter[str]] = []
        sentences: dict[str, list[tuple[int, int]]] = {}
        for passage in passages:
            span = passage.span
            rng = _rng(self.seed, "paraphrase", span.doc_id, str(span.start), str(span.end))
            sentence = _focus_sentence(corpus[span.doc_id], span, rng)
            if sentence is None:
                rejections.append(_too_few_terms(span))
                continue
            plans.append((span, rng, sentence.text))
            neighbourhoods.append(self._neighbourhood(corpus[span.doc_id], sentence, sentences))
        used_docs = sorted({span.doc_id for span, *_ in plans})
        vocabularies, word_vectors, focus_vectors = self._vectors(
            [corpus[d] for d in used_docs], statistics, [focus for _, _, focus in plans]
        )
        examples: list[TokenLevelExample] = []
        seen: set[str] = set()
        for i, (span, rng, focus) in enumerate(plans):
            question = self.write(
                focus,
                statistics[span.doc_id],
                vocabularies[span.doc_id],
                word_vectors,
                focus_vectors[i],
                neighbourhoods[i],
                rng,
            )
            if question.text in seen:
                rejections.append(
                    Rejection(
                        "duplicate",
                        f"the question {question.text!r} was already written for another passage",
                        (span.doc_id,),
                        question.text,
                        metadata={"generator": GENERATOR},
                    )
                )
                continue
            seen.add(question.text)
            question_id = QuestionId(
                "pq-" + sha256_hex(f"{question.text}\0{span.doc_id}\0{span.start}\0{span.end}")[:12]
            )
            metadata = example_metadata(
                generator=GENERATOR,
                model=self.embedder.model_id,
                prompt_version=None,
                source_doc_ids=[span.doc_id],
                question_type="paraphrase",
                difficulty=None,
                technique=TECHNIQUE,
                focus_sentence=question.focus,
                left_out_terms=list(question.left_out),
                substituted_terms=[list(pair) for pair in question.substituted],
                context_terms=list(question.context),
                seed=self.seed,
            )
            examples.append(TokenLevelExample(question_id, question.text, (span,), metadata))
        return GenerationResult(tuple(examples), tuple(rejections))

    def _vectors(
        self, documents: Sequence[Document], statistics: dict[str, TermStatistics], focuses: Sequence[str]
    ) -> tuple[dict[str, DocumentVocabulary], dict[str, npt.NDArray[np.float32]], npt.NDArray[np.float32]]:
        """Each document's topical terms with their vectors, every word vector by word, and the vectors of
        the focus texts: all of them from one call to the model (each text once)."""
        terms_of: dict[str, tuple[str, ...]] = {
            doc.doc_id: tuple(
                t
                for t in statistics[doc.doc_id].vocabulary()
                if statistics[doc.doc_id].document_frequency[t] >= self.min_df and not t.isdigit()
            )
            for doc in documents
        }
        wanted = {t for terms in terms_of.values() for t in terms}
        wanted.update(t for focus in focuses for t in content_terms(focus))
        words = sorted(wanted)
        texts = list(dict.fromkeys([*words, *focuses]))
        dimension = self.embedder.dimension
        vectors = self.embedder.embed(texts) if texts else np.zeros((0, dimension), np.float32)
        row = {text: i for i, text in enumerate(texts)}
        word_vectors = {w: vectors[row[w]] for w in words}
        vocabularies = {
            doc_id: DocumentVocabulary(
                terms,
                np.asarray([word_vectors[t] for t in terms], dtype=np.float32).reshape(len(terms), dimension),
            )
            for doc_id, terms in terms_of.items()
        }
        focus_vectors = np.asarray([vectors[row[f]] for f in focuses], dtype=np.float32).reshape(
            len(focuses), dimension
        )
        return vocabularies, word_vectors, focus_vectors

    def _neighbourhood(
        self,
        document: Document,
        focus: CharacterSpan,
        cache: dict[str, list[tuple[int, int]]],
    ) -> Counter[str]:
        """The content terms of the ``window`` sentences on each side of the focus sentence (its own
        excluded), counted by sentence: the topic around what the question asks about."""
        spans = cache.setdefault(document.doc_id, sentence_spans(document.text))
        starts = [a for a, _ in spans]
        first = bisect_right(starts, focus.start) - 1
        last = bisect_right(starts, focus.end - 1) - 1
        found: Counter[str] = Counter()
        for index in range(max(first - self.window, 0), min(last + self.window + 1, len(spans))):
            if not first <= index <= last:
                a, b = spans[index]
                found.update(dict.fromkeys(content_terms(document.text[a:b]), 1))
        return found

    def write(
        self,
        focus: str,
        stats: TermStatistics,
        vocabulary: DocumentVocabulary,
        word_vectors: dict[str, npt.NDArray[np.float32]],
        focus_vector: npt.NDArray[np.float32],
        neighbourhood: Counter[str],
        rng: random.Random,
    ) -> ParaphraseQuestion:
        """The question written from ``focus`` (see the module)."""
        tokens = [(m.group(), m.group().lower()) for m in TOKEN_PATTERN.finditer(focus)]
        terms = list(dict.fromkeys(t for _, t in tokens if is_content_term(t)))
        df = stats.document_frequency
        # the rarest terms are what the sentence says that no other does: the answer, left out
        left_out = sorted(terms, key=lambda t: (df.get(t, 0), t))[: self.left_out]
        kept = [t for t in terms if t not in left_out]
        stems = {stem(t) for t in terms}
        substituted: dict[str, str] = {}
        for term in sorted(kept):
            if rng.random() >= self.substitution or term not in word_vectors:
                continue
            taken = set(terms) | set(substituted.values())
            options = vocabulary.related(word_vectors[term], taken, stems, self.neighbours)
            if options:
                substituted[term] = rng.choice(options)
        words = []
        for surface, term in tokens:
            if term in kept:
                words.append(substituted.get(term, surface))
            elif not is_content_term(term) and term not in left_out:
                words.append(surface)
        while words and not is_content_term(words[0].lower()):
            words.pop(0)
        while words and not is_content_term(words[-1].lower()):
            words.pop()
        around = [t for t in neighbourhood if t not in terms and stem(t) not in stems]
        weights = [neighbourhood[t] * max(df.get(t, 1), 1) ** self.topical_power for t in around]
        nearby: list[str] = []
        for _ in range(min(rng.randint(*self.window_terms), len(around))):
            index = rng.choices(range(len(around)), weights=weights)[0]
            nearby.append(around.pop(index))
            weights.pop(index)
        wanted = rng.randint(*self.context_terms)
        context: list[str] = list(nearby)
        if wanted:
            taken = set(terms) | set(substituted.values()) | set(nearby)
            options = vocabulary.related(focus_vector, taken, stems, 2 * self.neighbours)
            rng.shuffle(options)
            context += options[:wanted]
        opening = "How many" if any(t.isdigit() for t in left_out) else "What"
        text = " ".join([opening, *words])
        if context:
            text += " about " + " ".join(context)
        return ParaphraseQuestion(
            text + "?",
            focus,
            tuple(left_out),
            tuple((t, substituted[t]) for t in sorted(substituted)),
            tuple(context),
        )


def _focus_sentence(document: Document, passage: CharacterSpan, rng: random.Random) -> CharacterSpan | None:
    """A sentence of the passage (whitespace trimmed) with at least ``MIN_SENTENCE_TERMS`` distinct
    content terms, drawn with weight = that number; None when the passage has none."""
    candidates: list[tuple[CharacterSpan, int]] = []
    for a, b in sentence_spans(document.text, passage.start, passage.end):
        while a < b and document.text[a].isspace():
            a += 1
        while b > a and document.text[b - 1].isspace():
            b -= 1
        n_terms = len(set(content_terms(document.text[a:b])))
        if n_terms >= MIN_SENTENCE_TERMS:
            candidates.append((CharacterSpan(document.doc_id, a, b, document.text[a:b]), n_terms))
    if not candidates:
        return None
    return rng.choices([c for c, _ in candidates], weights=[n for _, n in candidates])[0]


def _rng(seed: int, *parts: str) -> random.Random:
    """A generator seeded by sha256, not ``hash()``, so it is the same in every process."""
    return random.Random(int(sha256_hex("\0".join([str(seed), *parts]))[:16], 16))


def _too_few_terms(span: CharacterSpan) -> Rejection:
    return Rejection(
        "too_few_terms",
        f"no sentence of the passage holds {MIN_SENTENCE_TERMS} distinct content terms to write a question from",
        (span.doc_id,),
        None,
        metadata={"generator": GENERATOR},
    )
