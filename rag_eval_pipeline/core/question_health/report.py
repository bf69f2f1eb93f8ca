"""The question-set health report: every measure of this package on one question set, the warnings
where the set is weak (each saying what to do), and the two tables it is kept as: one row per run (the
``question_set_health`` asset: the measures, the warnings and the largest gaps) and one row per
question (``question_set_health_questions`` in the history: which questions are duplicates, trivial,
markup or cannot separate setups)."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd

from ..corpus.corpus import Corpus
from ..questions.datasets import TokenLevelExample
from ..text_table import markdown_table
from ..types import PositionAwareChunk, QuestionId
from .coverage import Coverage, CoverageCount, Gap, coverage
from .duplicates import NearDuplicates, near_duplicates
from .lexical import bm25_ranks_reference_first, keyword_trivial, lexical_overlap
from .references import MARKUP_KINDS, MARKUP_NAMES, MarkupKind, reference_chars, reference_markup
from .separation import SAME, Separation, SetupScores, effective_sample_size, separation

# The per-question table written to the history beside the asset's rows.
QUESTIONS_TABLE = "question_set_health_questions"
# How many of the largest gaps and closest pairs the asset's row keeps (the per-question table has all).
LISTED = 10


@dataclass(frozen=True)
class HealthLimits:
    """Where a measure makes the set weak enough to warn."""

    duplicate_share: float = 0.05  # this share of the questions, or more, has a near-duplicate
    keyword_trivial_share: float = 0.25  # this share, or more, is keyword-trivial
    document_coverage: float = 0.8  # fewer documents than this share have a question
    section_coverage: float = 0.5  # fewer sections than this share have a question
    short_reference_chars: int = 20  # a reference shorter than this is a few words...
    short_reference_share: float = 0.25  # ... and this share or more of them are
    code_reference_share: float = 0.25  # this share or more of the references hold fenced code
    no_setup_share: float = 0.1  # this share or more of the compared questions no setup answers
    same_score_share: float = 0.5  # this share or more score the same on every setup
    # fewer independent questions that separate setups than this (on a real documentation set, 30
    # questions gave 95 % intervals of about +-0.15: GUIDE section 7)
    effective_sample_size: int = 30
    named: int = 3  # gaps and pairs named in a warning


@dataclass(frozen=True)
class Distribution:
    """Mean and quartiles (numpy's linear interpolation) of a measure over the questions that have it."""

    n: int
    mean: float | None
    minimum: float | None
    q1: float | None
    median: float | None
    q3: float | None
    maximum: float | None

    @classmethod
    def of(cls, values: Iterable[float | None]) -> Distribution:
        present = np.array([v for v in values if v is not None], dtype=np.float64)
        if not len(present):
            return cls(0, None, None, None, None, None, None)
        low, q1, median, q3, high = (float(v) for v in np.percentile(present, [0, 25, 50, 75, 100]))
        return cls(len(present), float(present.mean()), low, q1, median, q3, high)

    def columns(self, prefix: str) -> dict[str, float | None]:
        return {f"{prefix}_{k}": v for k, v in asdict(self).items() if k != "n"}


@dataclass(frozen=True)
class HealthWarning:
    measure: str  # the measure it is about, as ``measure_rows`` names it
    text: str


@dataclass(frozen=True)
class QuestionSetHealth:
    question_ids: tuple[QuestionId, ...]
    queries: Mapping[QuestionId, str]
    duplicates: NearDuplicates
    overlap: Mapping[QuestionId, float | None]  # share of the question's content terms in its reference
    bm25_first: Mapping[QuestionId, bool]
    keyword_trivial: frozenset[QuestionId]
    coverage: Coverage
    reference_chars: Mapping[QuestionId, int]
    markup: Mapping[QuestionId, tuple[MarkupKind, ...]]
    separation: Separation
    left_out: Mapping[str, str]  # setups not compared, each with why
    effective_sample_size: int

    @property
    def n_questions(self) -> int:
        return len(self.question_ids)

    def with_markup(self, *kinds: MarkupKind) -> list[QuestionId]:
        return [q for q in self.question_ids if set(self.markup[q]) & set(kinds)]

    def markup_counts(self) -> dict[MarkupKind, int]:
        """How many references hold each kind of markup."""
        return {kind: len(self.with_markup(kind)) for kind in MARKUP_KINDS}


def assess(
    examples: Sequence[TokenLevelExample],
    corpus: Corpus,
    vectors: npt.NDArray[np.floating],
    duplicate_threshold: float,
    scores: SetupScores,
    windows: Sequence[PositionAwareChunk] | None = None,
) -> QuestionSetHealth:
    """Every measure on ``examples``: ``vectors`` are their embeddings (a row each, in order),
    ``scores`` every comparable setup's per-question objective (``setup_scores``); ``windows`` replace
    the passages BM25 searches (``bm25_ranks_reference_first``)."""
    ids = tuple(e.question_id for e in examples)
    duplicates = near_duplicates(ids, vectors, duplicate_threshold)
    overlap = lexical_overlap(examples)
    bm25_first = bm25_ranks_reference_first(examples, corpus, windows)
    separated = separation(scores, ids)
    return QuestionSetHealth(
        ids,
        {e.question_id: e.query for e in examples},
        duplicates,
        overlap,
        bm25_first,
        keyword_trivial(overlap, bm25_first),
        coverage(corpus, examples),
        {e.question_id: reference_chars(e) for e in examples},
        reference_markup(examples, corpus),
        separated,
        dict(scores.left_out),
        effective_sample_size(ids, duplicates, separated),
    )


def percent(part: int, whole: int) -> str:
    """``41 %``; ``<1 %`` for a share that rounds to 0 but is not."""
    if not whole:
        return "n/a"
    share = 100 * part / whole
    return "<1 %" if 0 < share < 0.5 else f"{share:.0f} %"


def _named(gaps: Sequence[Gap], most: int) -> str:
    shown = ", ".join(f"{g.name} ({g.chars:,} characters)" for g in gaps[:most])
    return shown + (f" and {len(gaps) - most} more" if len(gaps) > most else "")


def _more_questions(generated: bool) -> str:
    """How to get more questions: the generator's count, or the golden set's owners."""
    if generated:
        return "raise token_level.n_questions in data/generation.yaml"
    return (
        "add questions to the golden set (or evaluate_on: both in data/generation.yaml, with synthetic ones)"
    )


def _coverage_warning(
    kind: str, count: CoverageCount, limit: float, limits: HealthLimits, generated: bool
) -> str:
    share = count.share
    if share is None or count.n < 2 or share >= limit:
        return ""
    missing = count.n - count.covered
    return (
        f"{missing} of {count.n} {kind} ({percent(missing, count.n)}) have no question, the largest: "
        f"{_named(count.gaps, limits.named)}: the board says nothing about them; "
        f"{_more_questions(generated)}, or add questions about them"
    )


def health_warnings(
    health: QuestionSetHealth, limits: HealthLimits | None = None, *, generated: bool = True
) -> list[HealthWarning]:
    """Where the set is weak, each with what to do, in the order of the measures. ``generated``: some
    questions were generated (the advice names the generator's settings; else the golden set's)."""
    limits = limits or HealthLimits()
    n = health.n_questions
    found: list[HealthWarning] = []

    def warn(measure: str, text: str) -> None:
        if text:
            found.append(HealthWarning(measure, text))

    duplicates = health.duplicates
    in_pairs = len(duplicates.questions_in_pairs)
    if n and duplicates.pairs and in_pairs / n >= limits.duplicate_share:
        closest = "; ".join(
            f"{p.first} and {p.second} ({p.cosine:.3f})" for p in duplicates.pairs[: limits.named]
        )
        warn(
            "near_duplicates",
            f"{len(duplicates.pairs)} pair(s) of near-duplicate questions (embedding cosine >= "
            f"{duplicates.threshold:g}; {in_pairs} questions, {percent(in_pairs, n)}), closest: {closest}: "
            f"each group counts as one question's evidence; drop all but one of each (the generators do at "
            f"token_level.dedup_threshold in data/generation.yaml)",
        )
    trivial = len(health.keyword_trivial)
    if n and trivial / n >= limits.keyword_trivial_share:
        warn(
            "keyword_trivial",
            f"{percent(trivial, n)} of questions ({trivial} of {n}) are keyword-trivial (every content term "
            f"is in the reference and BM25 ranks the reference first): they favour keyword retrieval; "
            + (
                "set token_level.generator: llm or excerpt-first in data/generation.yaml"
                if generated
                else "rephrase them as your users ask"
            )
            + ", or import real questions (rag-eval dataset import FILE)",
        )
    warn(
        "document_coverage",
        _coverage_warning(
            "documents", health.coverage.documents, limits.document_coverage, limits, generated
        ),
    )
    warn(
        "section_coverage",
        _coverage_warning("sections", health.coverage.sections, limits.section_coverage, limits, generated),
    )
    short = [q for q in health.question_ids if health.reference_chars[q] < limits.short_reference_chars]
    if n and len(short) / n >= limits.short_reference_share:
        warn(
            "reference_chars",
            f"{percent(len(short), n)} of the references ({len(short)} of {n}) are shorter than "
            f"{limits.short_reference_chars} characters: any chunk holding those few words scores full "
            f"recall, so chunkers cannot be told apart on them; quote the whole sentence that answers",
        )
    counts = health.markup_counts()
    markup = health.with_markup(*(k for k in MARKUP_KINDS if k != "code"))
    if markup or (n and counts["code"] / n >= limits.code_reference_share):
        kinds = ", ".join(f"{MARKUP_NAMES[k]} {c}" for k, c in counts.items() if c)
        warn(
            "markup",
            f"{len(health.with_markup(*MARKUP_KINDS))} question(s) have references holding markup ({kinds}), "
            f"e.g. {', '.join((markup or health.with_markup('code'))[: limits.named])}: text a reader never "
            f"sees is no ground truth an answer can quote; drop or fix those questions (the offline "
            f"generators leave markup out)",
        )
    found += _separation_warnings(health, limits, generated)
    return found


def _separation_warnings(
    health: QuestionSetHealth, limits: HealthLimits, generated: bool
) -> list[HealthWarning]:
    separated = health.separation
    found: list[HealthWarning] = []
    compared = len(separated.compared)
    setups = len(separated.setups)
    if separated.measured and compared:
        none = len(separated.no_setup)
        if none / compared >= limits.no_setup_share:
            found.append(
                HealthWarning(
                    "no_setup",
                    f"{none} of {compared} questions ({percent(none, compared)}) are answered by no setup "
                    f"({separated.metric} 0 on all {setups} setups), e.g. {', '.join(separated.no_setup[: limits.named])}: "
                    f"check their references (markup, a stale excerpt, a passage no chunk config keeps) "
                    f"or drop them",
                )
            )
        same = len(separated.same_score)
        if same / compared >= limits.same_score_share:
            found.append(
                HealthWarning(
                    "same_score",
                    f"{same} of {compared} questions ({percent(same, compared)}) score the same on all "
                    f"{setups} setups ({len(separated.every_setup)} answered fully by every setup, {none} by "
                    f"none): they cannot separate setups; ask about harder passages (several sentences, two "
                    f"documents) or more of the corpus",
                )
            )
    n_eff = health.effective_sample_size
    if n_eff < limits.effective_sample_size:
        found.append(
            HealthWarning(
                "effective_sample_size", f"{effective_size_sentence(health)}: {_too_few(limits, generated)}"
            )
        )
    return found


def _too_few(limits: HealthLimits, generated: bool) -> str:
    return (
        f"with fewer than {limits.effective_sample_size} the 95 % intervals are wide (about +-0.15 with 30 "
        f"questions on a real documentation set) and the tiers tie setups that differ; "
        f"{_more_questions(generated)}"
    )


def effective_size_basis(health: QuestionSetHealth) -> str:
    """What the effective sample size discounts (see core/question_health/separation.py)."""
    separated = health.separation
    if not separated.measured:
        return "near-duplicates counted once; which questions separate setups needs two setups evaluated"
    basis = (
        f"near-duplicates counted once, the {len(separated.same_score)} that score the same on every setup "
        "left out"
    )
    if len(separated.compared) < health.n_questions:
        basis += f"; of the {len(separated.compared)} questions every setup was evaluated on"
    return basis


def effective_size_sentence(health: QuestionSetHealth) -> str:
    """``effective sample size 18 of 30 questions (...)``: the figure and what it discounts."""
    return (
        f"effective sample size {health.effective_sample_size} of {health.n_questions} questions "
        f"({effective_size_basis(health)})"
    )


# The asset's row: the columns holding lists, as JSON text.
WARNINGS_JSON = "warnings_json"
DUPLICATE_PAIRS_JSON = "duplicate_pairs_json"
DOCUMENT_GAPS_JSON = "document_gaps_json"
SECTION_GAPS_JSON = "section_gaps_json"
LEFT_OUT_JSON = "setups_left_out_json"


def summary_row(health: QuestionSetHealth, warnings: Sequence[HealthWarning]) -> dict[str, Any]:
    """The asset's row: every measure as a number (shares in [0, 1]; None where it does not apply), and
    the warnings, the closest pairs and the largest gaps as JSON lists."""
    n = health.n_questions
    docs, sections = health.coverage.documents, health.coverage.sections
    separated = health.separation
    compared = len(separated.compared)
    overlap = Distribution.of(health.overlap.values())
    lengths = Distribution.of(float(v) for v in health.reference_chars.values())
    counts = health.markup_counts()
    return {
        "n_questions": n,
        # near-duplicates
        "duplicate_threshold": health.duplicates.threshold,
        "n_duplicate_pairs": len(health.duplicates.pairs),
        "n_questions_in_duplicate_pairs": len(health.duplicates.questions_in_pairs),
        # keyword-trivial, lexical overlap
        "n_keyword_trivial": len(health.keyword_trivial),
        "keyword_trivial_share": len(health.keyword_trivial) / n if n else None,
        "n_all_terms_in_reference": sum(1 for v in health.overlap.values() if v == 1.0),
        "n_bm25_first": sum(1 for v in health.bm25_first.values() if v),
        **overlap.columns("term_overlap"),
        # coverage
        "n_documents": docs.n,
        "n_documents_covered": docs.covered,
        "document_coverage": docs.share,
        "n_documents_without_prose": health.coverage.n_documents_without_prose,
        "n_sections": sections.n,
        "n_sections_covered": sections.covered,
        "section_coverage": sections.share,
        # references
        **lengths.columns("reference_chars"),
        "n_references_with_markup": len(health.with_markup(*MARKUP_KINDS)),
        **{f"markup_{kind}": count for kind, count in counts.items()},
        # separation, effective sample size
        "separation_metric": separated.metric,
        "n_setups": len(separated.setups),
        "n_questions_compared": compared,
        "n_no_setup": len(separated.no_setup) if separated.measured else None,
        "n_every_setup": len(separated.every_setup) if separated.measured else None,
        "n_same_score": len(separated.same_score) if separated.measured else None,
        "effective_sample_size": health.effective_sample_size,
        "effective_sample_size_basis": effective_size_basis(health),
        "n_warnings": len(warnings),
        WARNINGS_JSON: json.dumps([asdict(w) for w in warnings], ensure_ascii=False),
        DUPLICATE_PAIRS_JSON: json.dumps(
            [
                {
                    **asdict(p),
                    "first_query": health.queries[p.first],
                    "second_query": health.queries[p.second],
                }
                for p in health.duplicates.pairs[:LISTED]
            ],
            ensure_ascii=False,
        ),
        DOCUMENT_GAPS_JSON: json.dumps([asdict(g) for g in docs.gaps[:LISTED]], ensure_ascii=False),
        SECTION_GAPS_JSON: json.dumps([asdict(g) for g in sections.gaps[:LISTED]], ensure_ascii=False),
        LEFT_OUT_JSON: json.dumps(dict(sorted(health.left_out.items())), ensure_ascii=False),
    }


def question_frame(health: QuestionSetHealth, examples: Sequence[TokenLevelExample]) -> pd.DataFrame:
    """One row per question: what each measure says of it (``separates`` is NA where it is unknown:
    fewer than two setups, or a question not every setup was evaluated on)."""
    group = health.duplicates.group_of()
    in_pairs = health.duplicates.questions_in_pairs
    separated = health.separation
    rows = []
    for example in examples:
        q = example.question_id
        nearest, cosine = health.duplicates.nearest[q]
        low, high = separated.ranges.get(q, (None, None))
        rows.append(
            {
                "question_id": q,
                "query": example.query,
                "doc_ids": ",".join(sorted({s.doc_id for s in example.relevant_spans})),
                "reference_chars": health.reference_chars[q],
                "term_overlap": health.overlap[q],
                "bm25_first": health.bm25_first[q],
                "keyword_trivial": q in health.keyword_trivial,
                "nearest_question_id": nearest,
                "nearest_cosine": cosine,
                "has_near_duplicate": q in in_pairs,
                "duplicate_group": group[q],
                "markup": ",".join(health.markup[q]),
                "objective_min": low,
                "objective_max": high,
                "separates": (
                    high - low > SAME if separated.measured and low is not None and high is not None else None
                ),
            }
        )
    frame = pd.DataFrame(rows)
    if len(frame):
        frame["term_overlap"] = frame["term_overlap"].astype("float64")
        frame["nearest_cosine"] = frame["nearest_cosine"].astype("float64")
        frame["objective_min"] = frame["objective_min"].astype("float64")
        frame["objective_max"] = frame["objective_max"].astype("float64")
        frame["separates"] = frame["separates"].astype("boolean")
    return frame


def _number(value: Any, digits: int = 3) -> str:
    if value is None or (isinstance(value, float) and np.isnan(value)):
        return "n/a"
    if isinstance(value, float) and not value.is_integer():
        return f"{value:.{digits}f}"
    return f"{int(value):,}"


def _count(row: Mapping[str, Any], part: str, whole: str) -> str:
    if row.get(part) is None or (isinstance(row.get(part), float) and np.isnan(row[part])):
        return "n/a"
    return f"{_number(row[part])} of {_number(row[whole])} ({percent(int(row[part]), int(row[whole]))})"


def measure_rows(row: Mapping[str, Any]) -> list[tuple[str, str, str]]:
    """(measure, what it is, its value) for each measure of an asset's row, in the warnings' measure
    names: the HTML report's table and the asset's markdown show these."""
    q = ("q1", "median", "q3")
    overlap = ", ".join(_number(row.get(f"term_overlap_{k}")) for k in q)
    lengths = ", ".join(_number(row.get(f"reference_chars_{k}"), 0) for k in q)
    metric = str(row.get("separation_metric") or "the objective")
    markup = ", ".join(
        f"{MARKUP_NAMES[k]} {int(row[f'markup_{k}'])}" for k in MARKUP_KINDS if row.get(f"markup_{k}")
    )
    found = [
        ("n_questions", "questions", _number(row.get("n_questions"))),
        (
            "near_duplicates",
            f"questions with a near-duplicate (embedding cosine >= {_number(row.get('duplicate_threshold'), 2)})",
            f"{_count(row, 'n_questions_in_duplicate_pairs', 'n_questions')} in "
            f"{_number(row.get('n_duplicate_pairs'))} pair(s)",
        ),
        (
            "keyword_trivial",
            "keyword-trivial: every content term in the reference, BM25 ranks the reference first",
            _count(row, "n_keyword_trivial", "n_questions"),
        ),
        (
            "term_overlap",
            "lexical overlap: share of the question's content terms in its reference (mean; quartiles)",
            f"{_number(row.get('term_overlap_mean'))}; {overlap}",
        ),
        ("document_coverage", "documents with a question", _count(row, "n_documents_covered", "n_documents")),
        (
            "section_coverage",
            "sections (under Markdown headings) with a question",
            _count(row, "n_sections_covered", "n_sections"),
        ),
        (
            "reference_chars",
            "reference length in characters (mean; quartiles; min-max)",
            f"{_number(row.get('reference_chars_mean'), 0)}; {lengths}; "
            f"{_number(row.get('reference_chars_minimum'))}-{_number(row.get('reference_chars_maximum'))}",
        ),
        (
            "markup",
            "references holding markup",
            _count(row, "n_references_with_markup", "n_questions") + (f": {markup}" if markup else ""),
        ),
    ]
    if (row.get("n_setups") or 0) >= 2:
        setups = int(row["n_setups"])
        found += [
            (
                "no_setup",
                f"answered by no setup ({metric} 0 on all {setups})",
                _count(row, "n_no_setup", "n_questions_compared"),
            ),
            (
                "every_setup",
                f"answered fully by every setup ({metric} 1)",
                _count(row, "n_every_setup", "n_questions_compared"),
            ),
            (
                "same_score",
                f"same {metric} on all {setups} setups: cannot separate them",
                _count(row, "n_same_score", "n_questions_compared"),
            ),
        ]
    found.append(
        (
            "effective_sample_size",
            f"effective sample size ({row.get('effective_sample_size_basis') or 'see docs/question-health.md'})",
            _number(row.get("effective_sample_size")),
        )
    )
    return found


def measures_markdown(row: Mapping[str, Any]) -> str:
    """``measure_rows`` as a markdown table."""
    return markdown_table(("measure", "value"), [(what, value) for _, what, value in measure_rows(row)])


def warnings_of(row: Mapping[str, Any]) -> list[HealthWarning]:
    """The warnings an asset's row holds."""
    return [HealthWarning(**w) for w in json.loads(str(row.get(WARNINGS_JSON) or "[]"))]


def listed(row: Mapping[str, Any], column: str) -> list[dict[str, Any]]:
    """A JSON list column of an asset's row (``DUPLICATE_PAIRS_JSON``, ``*_GAPS_JSON``)."""
    value = row.get(column)
    return list(json.loads(value)) if isinstance(value, str) and value else []


def left_out_of(row: Mapping[str, Any]) -> dict[str, str]:
    """The setups an asset's row did not compare, each with why."""
    value = row.get(LEFT_OUT_JSON)
    return dict(json.loads(value)) if isinstance(value, str) and value else {}
