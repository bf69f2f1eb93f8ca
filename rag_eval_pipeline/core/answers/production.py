"""Production-style metrics per question: cheap enough for every answer a system gives, no reference
answer needed, and an LLM asked only about the questions the cheap metrics flag.

Adapted from the "Evaluation Framework" seed to what our retrieval records: which retrievers found a
hit (intersection), its cosine and BM25 scores, the candidates before the similarity threshold, and the
chunks the answer cites. Every metric of every row is computed under ``guarded``: an error marks that
metric of that row failed, with its message, and nothing else.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence, Sized
from dataclasses import dataclass
from typing import Generic, TypeVar

import numpy as np

from ..embedding.base import Embedder
from ..errors import ConfigError, InputError
from ..llm.accounting import CostEstimate, check_budget
from ..metrics.names import (
    AGGREGATED_CONFIDENCE,
    CITED_MEAN_RANK,
    CITED_PRECISION_AT_K,
    CONTEXT_PRECISION,
    CONTEXT_RECALL_HEURISTIC,
    CONTEXT_RECALL_LLM,
    CONTEXT_RELEVANCE,
    MULTI_SOURCE_AGREEMENT,
)
from ..progress import Progress, no_progress
from ..settings.configs import Retriever
from ..types import QueryTrace, QuestionId, RetrievedChunk
from .grounding import (
    AgreementPattern,
    AgreementSources,
    SemanticVerdict,
    SourceAgreement,
    Vector,
    agreement_sources,
    cited_hits,
    semantic_validation,
    semantic_verdict,
    source_agreement,
    unanswered_reason,
)
from .recall import (
    DEFAULT_RECALL_THRESHOLD,
    LLMRecallJudge,
    RecallWarning,
    context_recall_heuristic,
    escalation,
    recall_warnings,
)
from .types import Answer, Confidence, MetricOutcome, guarded

T = TypeVar("T")

# The seed's mapping of a self-reported confidence to a number; no confidence given reads as 0.70.
CONFIDENCE_SCORES: dict[Confidence | None, float] = {"HIGH": 0.90, "MEDIUM": 0.75, "LOW": 0.50, None: 0.70}
# Distinct documents that make a result list fully diverse.
DIVERSE_DOCUMENTS = 5
RETRIEVERS: tuple[Retriever, ...] = ("knn", "bm25")


@dataclass(frozen=True)
class ProductionItem:
    """One question as the system saw it: the answer and the retrieval it was built from."""

    question_id: QuestionId
    question: str
    answer: Answer
    hits: tuple[RetrievedChunk, ...]
    trace: QueryTrace


@dataclass(frozen=True)
class ProductionMetrics:
    """The production metrics of one question. ``semantic_validation`` holds the pass rate, and
    ``semantic_verdict`` what it means ("failed" when the metric itself failed)."""

    question_id: QuestionId
    context_relevance: MetricOutcome
    context_precision: MetricOutcome
    cited_precision_at_k: MetricOutcome
    cited_mean_rank: MetricOutcome
    context_recall_heuristic: MetricOutcome
    recall_warnings: tuple[RecallWarning, ...]
    escalated: bool
    escalation_reason: str
    context_recall_llm: MetricOutcome
    aggregated_confidence: MetricOutcome
    semantic_validation: MetricOutcome
    semantic_verdict: SemanticVerdict
    multi_source_agreement: MetricOutcome
    agreement_pattern: AgreementPattern | None
    n_sources: int | None
    unique_values: int | None

    def as_record(self) -> dict[str, object]:
        """A flat row for a table: each metric as ``<name>``, ``<name>_status``, ``<name>_detail``."""
        record: dict[str, object] = {"question_id": self.question_id}
        for name in OUTCOME_FIELDS:
            outcome: MetricOutcome = getattr(self, name)
            record[name] = outcome.value
            record[f"{name}_status"] = outcome.status
            record[f"{name}_detail"] = outcome.detail
        record.update(
            recall_warnings=",".join(self.recall_warnings),
            escalated=self.escalated,
            escalation_reason=self.escalation_reason,
            semantic_verdict=self.semantic_verdict,
            agreement_pattern=self.agreement_pattern,
            n_sources=self.n_sources,
            unique_values=self.unique_values,
        )
        return record


OUTCOME_FIELDS = (
    CONTEXT_RELEVANCE,
    CONTEXT_PRECISION,
    CITED_PRECISION_AT_K,
    CITED_MEAN_RANK,
    CONTEXT_RECALL_HEURISTIC,
    CONTEXT_RECALL_LLM,
    AGGREGATED_CONFIDENCE,
    "semantic_validation",
    MULTI_SOURCE_AGREEMENT,
)


@dataclass(frozen=True)
class ProductionRun:
    """The rows, and what escalating only the flagged questions saved.

    The estimates are ``LLMClient.estimate`` upper bounds (every reply at max_tokens) and count
    requests already in the response cache as free: ``escalated_estimate`` for the questions sent,
    ``all_estimate`` for sending every question. Both are None without a judge; ``savings_usd`` is
    None when either has no price.
    """

    rows: list[ProductionMetrics]
    n_questions: int
    n_escalated: int
    escalated_fraction: float | None  # None for an empty run
    calls_avoided: int
    judge_model: str | None
    escalated_estimate: CostEstimate | None
    all_estimate: CostEstimate | None
    savings_usd: float | None

    def as_metadata(self) -> dict[str, float | int | str | None]:
        return {
            "n_questions": self.n_questions,
            "n_escalated": self.n_escalated,
            "escalated_fraction": self.escalated_fraction,
            "calls_avoided": self.calls_avoided,
            "recall_judge_model": self.judge_model,
            "escalated_cost_estimate_usd": self.escalated_estimate.cost_usd
            if self.escalated_estimate
            else None,
            "all_questions_cost_estimate_usd": self.all_estimate.cost_usd if self.all_estimate else None,
            "savings_usd": self.savings_usd,
        }


def context_relevance(hits: Sequence[RetrievedChunk], retrievers: Sequence[Retriever]) -> MetricOutcome:
    """How relevant the returned chunks look, from the retrieval's own signals.

    Fused profile: 0.4 * intersection + 0.5 * mean score + 0.1 * diversity, where intersection is the
    share of returned chunks found by both BM25 and kNN, diversity = distinct documents / 5 (at most
    1), and a hit's normalised score is its kNN cosine clipped to [0, 1] or, for a hit only BM25
    found, its BM25 score / the highest BM25 score among the question's hits. A single-retriever
    profile has no intersection, so that term is dropped and the other weights renormalised:
    (0.5 * mean score + 0.1 * diversity) / 0.6. No hits scores 0.
    """
    if not hits:
        return MetricOutcome.ok(0.0, "no hits")
    top_bm25 = max((h.bm25_score for h in hits if h.bm25_score is not None), default=0.0)
    scores = []
    for hit in hits:
        if hit.knn_score is not None:
            scores.append(min(1.0, max(0.0, hit.knn_score)))
        elif hit.bm25_score is not None:
            scores.append(hit.bm25_score / top_bm25 if top_bm25 > 0 else 0.0)
        else:
            raise ValueError(f"hit {hit.chunk_id} (rank {hit.rank}) has neither a kNN nor a BM25 score")
    mean_score = sum(scores) / len(scores)
    n_docs = len({h.doc_id for h in hits})
    diversity = min(1.0, n_docs / DIVERSE_DOCUMENTS)
    parts = f"mean score {mean_score:.3f}, diversity {diversity:.2f} ({n_docs} document(s))"
    if len(retrievers) > 1:
        intersection = sum(h.found_by == "both" for h in hits) / len(hits)
        value = 0.4 * intersection + 0.5 * mean_score + 0.1 * diversity
        return MetricOutcome.ok(value, f"intersection {intersection:.2f}, {parts}")
    value = (0.5 * mean_score + 0.1 * diversity) / 0.6
    return MetricOutcome.ok(
        value,
        f"single retriever ({retrievers[0]}): no intersection term, weights 0.5/0.6 and 0.1/0.6; {parts}",
    )


def _cited_ranks(answer: Answer, hits: Sequence[RetrievedChunk]) -> list[int] | MetricOutcome:
    reason = unanswered_reason(answer)
    if reason is not None:
        return MetricOutcome.skipped(reason)
    if not answer.cited_chunk_ids:
        return MetricOutcome.skipped("the answer cites no retrieved chunk")
    return [h.rank for h in cited_hits(answer, hits)]


def context_precision(answer: Answer, hits: Sequence[RetrievedChunk]) -> MetricOutcome:
    """Rank-aware precision of the cited ("contributing") chunks, as RAGAS averages it: the mean over
    the cited ranks r_1 < r_2 < ... of precision@r_i = i / r_i. Cited at 1, 2 gives 1.0; at 4, 5
    gives (1/4 + 2/5) / 2. Skipped when the answer cites nothing, abstained or failed."""
    ranks = _cited_ranks(answer, hits)
    if isinstance(ranks, MetricOutcome):
        return ranks
    value = sum(i / rank for i, rank in enumerate(ranks, 1)) / len(ranks)
    return MetricOutcome.ok(value, f"cited ranks {ranks}")


def cited_precision_at_k(answer: Answer, hits: Sequence[RetrievedChunk], top_k: int) -> MetricOutcome:
    """|cited| / top_k: the share of the result list the answer used."""
    ranks = _cited_ranks(answer, hits)
    if isinstance(ranks, MetricOutcome):
        return ranks
    return MetricOutcome.ok(len(ranks) / top_k, f"{len(ranks)} of top {top_k} cited")


def cited_mean_rank(answer: Answer, hits: Sequence[RetrievedChunk]) -> MetricOutcome:
    """The mean rank of the cited chunks: low when the answer rests on the top of the list."""
    ranks = _cited_ranks(answer, hits)
    if isinstance(ranks, MetricOutcome):
        return ranks
    return MetricOutcome.ok(sum(ranks) / len(ranks), f"cited ranks {ranks}")


def aggregated_confidence(answer: Answer, semantic: MetricOutcome, agreement: MetricOutcome) -> MetricOutcome:
    """The seed's self-reported confidence (HIGH 0.90, MEDIUM 0.75, LOW 0.50, none 0.70), averaged
    with equal weights with the semantic-validation pass rate and the multi-source agreement where
    those were computed (status ok): what the answer claims, checked against what supports it.

    Skipped when the answer abstained or failed: an abstention claims nothing, so there is nothing to
    be confident in, and scoring it low would punish a correct "I don't know".
    """
    reason = unanswered_reason(answer)
    if reason is not None:
        return MetricOutcome.skipped(reason)
    stated = CONFIDENCE_SCORES[answer.confidence]
    parts = [(f"self-reported {answer.confidence or 'none'} {stated:.2f}", stated)]
    if semantic.status == "ok" and semantic.value is not None:
        parts.append((f"semantic pass rate {semantic.value:.2f}", semantic.value))
    if agreement.status == "ok" and agreement.value is not None:
        parts.append((f"source agreement {agreement.value:.2f}", agreement.value))
    value = sum(v for _, v in parts) / len(parts)
    return MetricOutcome.ok(value, f"mean of {', '.join(label for label, _ in parts)}")


@dataclass(frozen=True)
class _Guarded(Generic[T]):
    outcome: MetricOutcome
    result: T | None  # None when the computation failed


def _guarded_result(outcome: Callable[[T], MetricOutcome], compute: Callable[[], T]) -> _Guarded[T]:
    """``guarded`` for a computation whose result carries more than its outcome (``outcome`` says
    what the result means as a metric)."""
    results: list[T] = []

    def run() -> MetricOutcome:
        results.append(compute())
        return outcome(results[-1])

    metric = guarded(run)
    return _Guarded(metric, results[0] if results and metric.status != "failed" else None)


@dataclass(frozen=True)
class _Partial:
    """A row's cheap metrics, before the batched embedding and LLM steps."""

    item: ProductionItem
    relevance: MetricOutcome
    precision: MetricOutcome
    precision_at_k: MetricOutcome
    mean_rank: MetricOutcome
    warnings: tuple[RecallWarning, ...]
    heuristic: MetricOutcome
    escalated: bool
    escalation_reason: str
    semantic: MetricOutcome
    sources: AgreementSources | MetricOutcome


def _check_settings(
    items: Sequence[ProductionItem],
    top_k: int,
    candidate_depth: int,
    retrievers: Sequence[Retriever],
    recall_threshold: float,
) -> None:
    if isinstance(top_k, bool) or not isinstance(top_k, int) or top_k < 1:
        raise ConfigError(f"production metrics: top_k must be an integer >= 1, got {top_k!r}")
    if isinstance(candidate_depth, bool) or not isinstance(candidate_depth, int) or candidate_depth < top_k:
        raise ConfigError(
            f"production metrics: candidate_depth must be an integer >= top_k ({top_k}), got "
            f"{candidate_depth!r}; pass the profile's RetrievalProfile.candidate_depth"
        )
    if not retrievers or len(set(retrievers)) != len(retrievers) or set(retrievers) - set(RETRIEVERS):
        raise ConfigError(
            f"production metrics: retrievers must be one or both of {RETRIEVERS}, got {tuple(retrievers)!r}; "
            f"pass the profile's RetrievalProfile.retrievers"
        )
    if not 0.0 <= recall_threshold <= 1.0:
        raise ConfigError(
            f"production metrics: recall_threshold must lie in [0, 1], got {recall_threshold!r}"
        )
    seen: set[QuestionId] = set()
    for item in items:
        if item.question_id in seen:
            raise InputError(
                f"production metrics: question {item.question_id!r} appears twice; give each question once"
            )
        seen.add(item.question_id)


def production_metrics(
    items: Sequence[ProductionItem],
    embedder: Embedder,
    *,
    top_k: int,
    candidate_depth: int,
    retrievers: Sequence[Retriever],
    recall_threshold: float = DEFAULT_RECALL_THRESHOLD,
    recall_judge: LLMRecallJudge | None = None,
    budget_usd: float | None = None,
    progress: Progress = no_progress,
) -> ProductionRun:
    """The production metrics of every item, in input order.

    Cheap metrics first; then the LLM recall judge for the escalated questions only, all in one
    ``client.map`` batch, after the budget check (``BudgetExceeded`` before any call, and before the
    embedding work); the agreement sentences of all rows are embedded in one ``embedder.embed`` call.
    """
    _check_settings(items, top_k, candidate_depth, retrievers, recall_threshold)
    stage = "production metrics"
    progress(stage, 0, len(items))
    partials = []
    for done, item in enumerate(items, 1):
        partials.append(_cheap_metrics(item, top_k, candidate_depth, retrievers, recall_threshold))
        progress(stage, done, len(items))

    escalated = [p for p in partials if p.escalated]
    escalated_estimate = all_estimate = None
    if recall_judge is not None:
        client = recall_judge.client
        escalated_estimate = client.estimate(
            [recall_judge.request(p.item.question, p.item.hits) for p in escalated]
        )
        check_budget(escalated_estimate, budget_usd)
        all_estimate = client.estimate([recall_judge.request(p.item.question, p.item.hits) for p in partials])

    agreements = _agreements(partials, embedder, progress)

    judged: dict[QuestionId, MetricOutcome] = {}
    if recall_judge is not None:
        judge = recall_judge
        outcomes = judge.client.map(
            lambda p: guarded(lambda: judge.judge(p.item.question, p.item.hits)),
            escalated,
            progress,
            "context recall (llm)",
        )
        judged = {p.item.question_id: o for p, o in zip(escalated, outcomes, strict=True)}

    rows = []
    for partial, (agreement, found) in zip(partials, agreements, strict=True):
        if not partial.escalated:
            recall_llm = MetricOutcome.skipped(partial.escalation_reason)
        elif recall_judge is None:
            recall_llm = MetricOutcome.skipped("escalation needed; no LLM configured")
        else:
            recall_llm = judged[partial.item.question_id]
        rows.append(_row(partial, agreement, found, recall_llm))
    return ProductionRun(
        rows=rows,
        n_questions=len(rows),
        n_escalated=len(escalated),
        escalated_fraction=len(escalated) / len(rows) if rows else None,
        calls_avoided=len(rows) - len(escalated),
        judge_model=recall_judge.model_id if recall_judge is not None else None,
        escalated_estimate=escalated_estimate,
        all_estimate=all_estimate,
        savings_usd=_savings(escalated_estimate, all_estimate),
    )


def _savings(escalated: CostEstimate | None, every: CostEstimate | None) -> float | None:
    if escalated is None or every is None or escalated.cost_usd is None or every.cost_usd is None:
        return None
    return every.cost_usd - escalated.cost_usd


def _row(
    partial: _Partial, agreement: MetricOutcome, found: SourceAgreement | None, recall_llm: MetricOutcome
) -> ProductionMetrics:
    answer = partial.item.answer
    return ProductionMetrics(
        question_id=partial.item.question_id,
        context_relevance=partial.relevance,
        context_precision=partial.precision,
        cited_precision_at_k=partial.precision_at_k,
        cited_mean_rank=partial.mean_rank,
        context_recall_heuristic=partial.heuristic,
        recall_warnings=partial.warnings,
        escalated=partial.escalated,
        escalation_reason=partial.escalation_reason,
        context_recall_llm=recall_llm,
        aggregated_confidence=guarded(lambda: aggregated_confidence(answer, partial.semantic, agreement)),
        semantic_validation=partial.semantic,
        semantic_verdict=semantic_verdict(partial.semantic),
        multi_source_agreement=agreement,
        agreement_pattern=found.pattern if found else None,
        n_sources=found.n_sources if found else None,
        unique_values=found.unique_values if found else None,
    )


def _counted(found: Sized) -> MetricOutcome:
    return MetricOutcome.ok(len(found))


def _sources_outcome(sources: AgreementSources | MetricOutcome) -> MetricOutcome:
    return sources if isinstance(sources, MetricOutcome) else MetricOutcome.ok(len(sources.chunk_ids))


def _cheap_metrics(
    item: ProductionItem,
    top_k: int,
    candidate_depth: int,
    retrievers: Sequence[Retriever],
    recall_threshold: float,
) -> _Partial:
    answer, hits = item.answer, item.hits
    warned = _guarded_result(
        _counted,
        lambda: recall_warnings(answer, hits, item.trace, top_k=top_k, candidate_depth=candidate_depth),
    )
    warnings = warned.result or ()
    if warned.result is None:
        heuristic = MetricOutcome.failed(f"recall warnings: {warned.outcome.detail}")
    else:
        heuristic = guarded(lambda: context_recall_heuristic(item.question, answer, hits, warnings))
    decision = escalation(heuristic, warnings, recall_threshold)
    sources: AgreementSources | MetricOutcome
    prepared = _guarded_result(_sources_outcome, lambda: agreement_sources(item.question, answer, hits))
    sources = prepared.result if isinstance(prepared.result, AgreementSources) else prepared.outcome
    return _Partial(
        item=item,
        relevance=guarded(lambda: context_relevance(hits, retrievers)),
        precision=guarded(lambda: context_precision(answer, hits)),
        precision_at_k=guarded(lambda: cited_precision_at_k(answer, hits, top_k)),
        mean_rank=guarded(lambda: cited_mean_rank(answer, hits)),
        warnings=warnings,
        heuristic=heuristic,
        escalated=decision.escalate,
        escalation_reason=decision.reason,
        semantic=guarded(lambda: semantic_validation(answer, hits)),
        sources=sources,
    )


def agreement_texts(items: Sequence[ProductionItem]) -> list[str]:
    """Every text ``production_metrics`` embeds for these items (the question and the cited chunks'
    candidate sentences of each row with two or more cited sources), each once: what a step that also
    embeds elsewhere announces to a ``PrefetchEmbedder``. A row whose sources fail is left out: it
    embeds nothing."""
    texts: dict[str, None] = {}
    for item in items:
        try:
            sources = agreement_sources(item.question, item.answer, item.hits)
        except Exception:  # the metric records it as failed; nothing of that row is embedded
            continue
        if isinstance(sources, AgreementSources):
            texts.update(dict.fromkeys(sources.texts()))
    return list(texts)


def _agreements(
    partials: Sequence[_Partial], embedder: Embedder, progress: Progress
) -> list[tuple[MetricOutcome, SourceAgreement | None]]:
    """Each row's agreement outcome and its ``SourceAgreement`` (None unless ok). The sentences of all
    rows go to the embedder in one call, each distinct text once; if that call fails, every row that
    needed it records the failure."""
    texts: dict[str, None] = {}
    for partial in partials:
        if isinstance(partial.sources, AgreementSources):
            texts.update(dict.fromkeys(partial.sources.texts()))
    ordered = list(texts)
    stage = "source agreement (embeddings)"
    progress(stage, 0, len(ordered))
    embedded = _guarded_result(_counted, lambda: _embed(embedder, ordered))
    vectors = embedded.result
    progress(stage, len(ordered), len(ordered))
    results: list[tuple[MetricOutcome, SourceAgreement | None]] = []
    for partial in partials:
        sources = partial.sources
        if not isinstance(sources, AgreementSources):
            results.append((sources, None))
        elif vectors is None:
            failure = MetricOutcome.failed(
                f"embedding the source sentences failed: {embedded.outcome.detail}"
            )
            results.append((failure, None))
        else:
            results.append(_agreement(sources, vectors))
    return results


def _agreement(
    sources: AgreementSources, vectors: dict[str, Vector]
) -> tuple[MetricOutcome, SourceAgreement | None]:
    found = _guarded_result(SourceAgreement.outcome, lambda: source_agreement(sources, vectors))
    return found.outcome, found.result


def _embed(embedder: Embedder, texts: list[str]) -> dict[str, Vector]:
    if not texts:
        return {}
    matrix = embedder.embed(texts)
    if len(matrix) != len(texts):
        raise ValueError(f"the embedder returned {len(matrix)} vectors for {len(texts)} texts")
    return {text: np.asarray(row, dtype=np.float32) for text, row in zip(texts, matrix, strict=True)}
