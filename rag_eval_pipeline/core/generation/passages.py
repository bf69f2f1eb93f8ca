"""Choosing the passages questions are written about: informative, unique, spread over the corpus.

A passage is a run of whole sentences whose offsets come from the sentence splitter, never from
searching for its text, so a passage inside a repeated paragraph still points at its own copy. Yet
repeated text (a boilerplate note pasted into several pages) makes bad ground truth anyway: a question
about it has several right answers and the reference names one. Such windows are left out, as are
windows that are mostly headings or code, which hold no facts to ask about, and every window that
would hold a line that is not prose to ask about (core/generation/markup.py): an include directive
(``{* ../../docs_src/x.py hl[4] *}``), an admonition marker (``/// warning``, ``!!! note``), an HTML or
comment line, a line that is mostly link targets (``PR [#123](https://...) by [@user](https://...)``),
a list item or table row that is only a link, a table of links, a release-notes list.

Which passages a document gives depends on that document alone (its text, its id and the seed): its
quota comes from its own prose and the number of documents (core/generation/quotas.py), its draws from
a generator seeded by its id and text, its weights from its own term statistics. So editing
one document changes the questions about it and no other's (core/generation/known_item.py builds its
queries the same way).
"""

from __future__ import annotations

import random
import re
from collections import Counter
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Literal, TypeVar

from ..chunking.sentences import sentence_spans
from ..corpus.corpus import Corpus
from ..types import CharacterSpan, Document, PositionAwareChunk, sha256_hex
from .markup import markup_line_starts
from .quotas import QuestionCount, QuestionTarget, document_quotas, question_quotas
from .terms import TermStatistics, content_terms, salient_terms

# A repeated sentence this long (normalised) is boilerplate by itself; shorter repeats ("## Overview",
# "| --- |") only disqualify a window when they make up most of it.
MIN_BOILERPLATE_CHARS = 40
# Salient terms (numbers, identifiers, names) weigh this much more than ordinary words.
SALIENT_BOOST = 1.5
# How many top-weighted terms a passage lists as its salient terms.
MAX_SALIENT_TERMS = 8

_FENCE = re.compile(r"[ \t]{0,3}(```|~~~)")
_HEADING = re.compile(r"[ \t]{0,3}#{1,6}(?:\s|$)")
SentenceKind = Literal["prose", "heading", "code", "blank", "markup"]
T = TypeVar("T")


@dataclass(frozen=True)
class Passage:
    span: CharacterSpan
    score: float  # information per character (see ``score_text``)
    salient_terms: tuple[str, ...]  # the most distinctive terms, highest weight first


def sentence_key(sentence: str) -> str:
    """What makes two sentences "the same" for boilerplate: case and whitespace do not count."""
    return " ".join(sentence.split()).lower()


@dataclass(frozen=True)
class BoilerplateDetector:
    """Sentences that occur at more than one place in a collection, and a test for text made of them."""

    repeated: frozenset[str]

    @classmethod
    def from_units(cls, units: Iterable[tuple[str, int, str]]) -> BoilerplateDetector:
        """``units`` are (doc_id, offset, text); a sentence seen twice at the same place counts once.

        Counting places rather than sightings keeps overlapping chunks from looking like repeats.
        """
        places: dict[str, set[tuple[str, int]]] = {}
        for doc_id, offset, text in units:
            for start, end in sentence_spans(text):
                key = sentence_key(text[start:end])
                if key:
                    places.setdefault(key, set()).add((doc_id, offset + start))
        return cls(frozenset(key for key, where in places.items() if len(where) > 1))

    @classmethod
    def from_corpus(cls, corpus: Corpus) -> BoilerplateDetector:
        return cls.from_units((doc.doc_id, 0, doc.text) for doc in corpus)

    def is_boilerplate(self, text: str) -> bool:
        repeated_chars = total_chars = 0
        for start, end in sentence_spans(text):
            key = sentence_key(text[start:end])
            total_chars += len(key)
            if key in self.repeated:
                if len(key) >= MIN_BOILERPLATE_CHARS:
                    return True
                repeated_chars += len(key)
        return repeated_chars * 2 > total_chars


def term_weights(text: str, stats: TermStatistics) -> dict[str, float]:
    """tf·idf of each distinct content term, salient ones boosted; keys in order of first appearance."""
    salient = set(salient_terms(text))
    return {
        term: count * stats.idf(term) * (SALIENT_BOOST if term in salient else 1.0)
        for term, count in Counter(content_terms(text)).items()
    }


def score_text(text: str, stats: TermStatistics) -> tuple[float, tuple[str, ...]]:
    """(information per character, top terms).

    The score sums the idf of each distinct content term (salient ones boosted) over the text's
    length, so a dense table of numbers beats a chatty paragraph of the same size; repeats add
    nothing to the score, as a second mention tells a question writer nothing new.
    """
    salient = set(salient_terms(text))
    tf = Counter(content_terms(text))
    if not tf:
        return 0.0, ()
    boost = {term: SALIENT_BOOST if term in salient else 1.0 for term in tf}
    score = sum(stats.idf(term) * boost[term] for term in tf) / len(text)
    weights = {term: count * stats.idf(term) * boost[term] for term, count in tf.items()}
    return score, top_terms(weights, MAX_SALIENT_TERMS)


def top_terms(weights: dict[str, float], k: int) -> tuple[str, ...]:
    """The ``k`` heaviest terms; ties broken alphabetically so the order never depends on dict order."""
    return tuple(term for term, _ in sorted(weights.items(), key=lambda kv: (-kv[1], kv[0]))[:k])


def _sentence_kinds(text: str, spans: Sequence[tuple[int, int]]) -> list[SentenceKind]:
    """Headings, fenced code (fences included), markup lines (markup, navigation, tables of links and
    release-note lists: ``markup_line_starts``), blanks and the rest ("prose": text, lists, tables)."""
    code_ranges = []
    fence_start = None
    pos = 0
    for line in text.splitlines(keepends=True):
        if _FENCE.match(line):
            if fence_start is None:
                fence_start = pos
            else:
                code_ranges.append((fence_start, pos + len(line)))
                fence_start = None
        pos += len(line)
    if fence_start is not None:
        code_ranges.append((fence_start, len(text)))
    markup = markup_line_starts(text)
    kinds: list[SentenceKind] = []
    for start, end in spans:
        sentence = text[start:end]
        line_start = text.rfind("\n", 0, start) + 1
        if not sentence.strip():
            kinds.append("blank")
        elif any(a <= start < b for a, b in code_ranges):
            kinds.append("code")
        elif _HEADING.match(text, line_start):
            kinds.append("heading")
        elif line_start in markup:
            kinds.append("markup")
        else:
            kinds.append("prose")
    return kinds


def classified_sentences(text: str) -> list[tuple[int, int, SentenceKind]]:
    """Every sentence of ``text`` (surrounding whitespace left out) with its kind, as passages are chosen:
    heading, fenced code (fences included), markup line (``is_markup``), blank or prose. What the
    question-set health report (core/question_health/) reads sections and markup in references from."""
    spans = [_strip_span(text, s, e) for s, e in sentence_spans(text)]
    return [(s, e, kind) for (s, e), kind in zip(spans, _sentence_kinds(text, spans), strict=True)]


def is_mostly_prose(text: str) -> bool:
    """True when prose (not headings, fenced code or blank lines) holds half the visible characters."""
    spans = [_strip_span(text, s, e) for s, e in sentence_spans(text)]
    prose_chars = visible_chars = 0
    for (start, end), kind in zip(spans, _sentence_kinds(text, spans), strict=True):
        visible = sum(1 for ch in text[start:end] if not ch.isspace())
        visible_chars += visible
        prose_chars += visible if kind == "prose" else 0
    return visible_chars > 0 and prose_chars * 2 >= visible_chars


def _strip_span(text: str, start: int, end: int) -> tuple[int, int]:
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return start, end


def _document_windows(document: Document, min_chars: int, max_chars: int) -> list[tuple[int, int]]:
    """For each sentence that can open a window, the shortest window of at least ``min_chars``.

    A heading may only open a window (one that ran into the next heading would mix two sections), the
    last sentence is prose, prose holds at least half of the window's visible characters, and no
    markup line is inside: a question's reference is text a reader reads.
    """
    text = document.text
    spans = [_strip_span(text, s, e) for s, e in sentence_spans(text)]
    kinds = _sentence_kinds(text, spans)
    windows = []
    for i, (first_start, _) in enumerate(spans):
        if kinds[i] not in ("prose", "heading"):
            continue
        prose_chars = visible_chars = 0
        for j in range(i, len(spans)):
            if (j > i and kinds[j] == "heading") or kinds[j] == "markup":
                break
            start, end = spans[j]
            visible = sum(1 for ch in text[start:end] if not ch.isspace())
            visible_chars += visible
            prose_chars += visible if kinds[j] == "prose" else 0
            if end - first_start > max_chars:
                break
            if end - first_start >= min_chars and kinds[j] == "prose":
                if prose_chars * 2 >= visible_chars:
                    windows.append((first_start, end))
                break
    return windows


def document_statistics(document: Document) -> TermStatistics:
    """Term statistics over the sentences of one document: the idf a passage of it is weighed with,
    the same whatever the other documents say (see the module)."""
    text = document.text
    return TermStatistics.from_texts(text[s:e] for s, e in sentence_spans(text))


def candidate_passages(
    corpus: Corpus,
    min_chars: int = 200,
    max_chars: int = 600,
    statistics: Mapping[str, TermStatistics] | None = None,
) -> list[Passage]:
    """Every admissible window with a positive score, sorted by (doc_id, start, end); each scored with
    its document's statistics (``statistics`` by doc id, else ``document_statistics``)."""
    boilerplate = BoilerplateDetector.from_corpus(corpus)
    passages = []
    for document in sorted(corpus, key=lambda d: d.doc_id):
        stats = statistics[document.doc_id] if statistics is not None else document_statistics(document)
        for start, end in _document_windows(document, min_chars, max_chars):
            window = document.text[start:end]
            if boilerplate.is_boilerplate(window):
                continue
            score, terms = score_text(window, stats)
            if score > 0:
                passages.append(Passage(CharacterSpan(document.doc_id, start, end, window), score, terms))
    return passages


def prose_characters(corpus: Corpus, candidates: Iterable[Passage]) -> dict[str, int]:
    """Per document (every one of ``corpus``), the characters its candidate passages cover: the
    informative prose a question can be about (0: none; markup, code, headings, link lists, release
    notes and boilerplate never count)."""
    covered: dict[str, list[tuple[int, int]]] = {doc.doc_id: [] for doc in corpus}
    for passage in candidates:
        covered[passage.span.doc_id].append((passage.span.start, passage.span.end))
    prose = {}
    for doc_id, windows in covered.items():
        total, reach = 0, 0
        for start, end in sorted(windows):
            total += max(0, end - max(start, reach))
            reach = max(reach, end)
        prose[doc_id] = total
    return prose


@dataclass(frozen=True)
class PassagePlan:
    """The passages a generation asks about, and how many it asked for of each document and why."""

    count: QuestionCount  # ``planned``: the number of passages
    passages: tuple[Passage, ...]


def plan_passages(
    corpus: Corpus,
    target: QuestionTarget,
    seed: int,
    min_chars: int = 200,
    max_chars: int = 600,
    *,
    statistics: Mapping[str, TermStatistics] | None = None,
) -> PassagePlan:
    """The quotas of ``target`` (a number, or ``CountRule``: core/generation/quotas.py) over the
    documents' informative prose, and the non-overlapping passages drawn for them, with weight = score,
    per document: each document's draws depend on it alone (``per_document_sample``). A smaller number
    gives a prefix of a larger one."""
    candidates = candidate_passages(corpus, min_chars, max_chars, statistics)
    count = question_quotas(prose_characters(corpus, candidates), target, seed)
    passages = per_document_sample(
        candidates,
        count.total,
        {doc.doc_id: doc.sha256 for doc in corpus},
        seed,
        group=lambda p: p.span.doc_id,
        weight=lambda p: p.score,
        conflicts=lambda a, b: a.span.overlaps(b.span),
        quotas=count.quotas,
    )
    return PassagePlan(replace(count, planned=len(passages)), tuple(passages))


def select_passages(
    corpus: Corpus,
    n: QuestionTarget,
    seed: int,
    min_chars: int = 200,
    max_chars: int = 600,
    *,
    statistics: Mapping[str, TermStatistics] | None = None,
) -> list[Passage]:
    """The passages of ``plan_passages``."""
    return list(plan_passages(corpus, n, seed, min_chars, max_chars, statistics=statistics).passages)


def passages_to_ask(
    corpus: Corpus,
    n: QuestionTarget,
    seed: int,
    min_chars: int,
    max_chars: int,
    statistics: Mapping[str, TermStatistics],
    planned: Sequence[Passage] | None,
    documents: Collection[str] | None,
) -> list[Passage]:
    """The passages a passage-based generator asks about: ``planned`` (a ``plan_passages`` made with its
    seed and sizes) or its own selection over the whole corpus, then, with ``documents``, only theirs: the
    questions a full generation would ask about them, and no other."""
    passages = (
        planned
        if planned is not None
        else select_passages(corpus, n, seed, min_chars, max_chars, statistics=statistics)
    )
    return [p for p in passages if documents is None or p.span.doc_id in documents]


def chunk_identities(chunks: Iterable[PositionAwareChunk]) -> dict[str, str]:
    """Per document, a hash of its chunks (offsets and texts): what seeds its draws when chunks, not
    passages, are sampled, so they change only when that document's chunks do."""
    parts: dict[str, list[str]] = {}
    for c in sorted(chunks, key=lambda c: (c.doc_id, c.start, c.end, c.chunk_id)):
        parts.setdefault(c.doc_id, []).append(f"{c.start}\0{c.end}\0{sha256_hex(c.text)}")
    return {doc: sha256_hex("\n".join(found)) for doc, found in parts.items()}


def per_document_sample(
    items: Sequence[T],
    n: int,
    identities: Mapping[str, str],
    seed: int,
    *,
    group: Callable[[T], str],
    weight: Callable[[T], float],
    conflicts: Callable[[T, T], bool],
    quotas: Mapping[str, int] | None = None,
) -> list[T]:
    """At most ``n`` items: each document (``group``) draws its quota (``quotas``, else
    ``document_quotas`` of ``n`` over the documents of ``identities``: doc id -> a hash of its content)
    from its own items, one weighted draw at a time, dropping whatever conflicts with a pick, with a
    generator seeded by the seed, its id and its content hash. Listed round-robin: every document's
    first pick, in the quotas' order, then every second pick, and so on. Deterministic for items in a
    deterministic order within each document.
    """
    if quotas is None:
        quotas = document_quotas(list(identities), n, seed)
    pools: dict[str, list[T]] = {}
    for item in items:
        pools.setdefault(group(item), []).append(item)
    picks: dict[str, list[T]] = {}
    for doc_id, quota in quotas.items():
        pool = pools.get(doc_id, [])
        rng = random.Random(int(sha256_hex(f"{seed}\0{doc_id}\0{identities[doc_id]}")[:16], 16))
        chosen: list[T] = []
        while len(chosen) < quota and pool:
            weights = [max(weight(item), 0.0) for item in pool]
            pick = rng.choices(pool, weights=weights)[0] if sum(weights) > 0 else rng.choice(pool)
            chosen.append(pick)
            pool = [item for item in pool if item is not pick and not conflicts(item, pick)]
        picks[doc_id] = chosen
    order = list(quotas)  # the quotas' order: by hash of seed and id
    rounds = max((len(p) for p in picks.values()), default=0)
    return [picks[d][r] for r in range(rounds) for d in order if r < len(picks[d])]
