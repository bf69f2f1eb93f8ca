"""Span metrics at a fixed context budget, so chunkers and k are compared at equal cost to the generator.

Top-5 of 200-character chunks and top-5 of 800-character chunks hand the generator 1,000 and 4,000
characters: their plain span metrics compare different costs. Here the ranked chunks are cut to the
same number of cl100k_base tokens first (the tokenizer the published chunking studies count with), and
``context_tokens`` says what the whole top-k costs.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Protocol

from ..chunking.tokenization import TextTokenizer, cl100k_tokenizer
from ..spans import ChunkLike, SpanLike
from ..types import CharacterSpan, ChunkId
from .names import (
    BUDGET_METRICS,
    CONTEXT_BUDGETS,
    CONTEXT_TOKENS,
    SPAN_IOU,
    SPAN_PRECISION,
    SPAN_RECALL,
    budget_metric_name,
)
from .span_metrics import span_metrics

__all__ = [
    "BUDGET_METRICS",
    "CONTEXT_BUDGETS",
    "CONTEXT_TOKENS",
    "BudgetedSpanMetrics",
    "ChunkTokenStarts",
    "ContextBudgetMetrics",
    "TextChunk",
    "budget_metric_name",
    "budgeted_spans",
    "context_budget_metrics",
]

# The budgets, the metric names and ``context_tokens`` are names.py's (the one owner of metric names),
# re-exported here beside the metrics they name.


class TextChunk(ChunkLike, Protocol):
    """A located chunk with its text (``RetrievedChunk``, ``PositionAwareChunk``, test doubles):
    ``text == document[start:end]``."""

    @property
    def text(self) -> str: ...


class ChunkTokenStarts:
    """Where each token of a chunk's text starts, tokenized once per chunk id.

    A top-k list repeats chunks across questions, and every budget reads the same tokens: build one per
    chunk set (``token_level_result`` builds one per call) so each distinct chunk is tokenized once.
    Each chunk is tokenized on its own, as the generator receives it; a chunk id names one text, as in
    one chunk set. With the default tokenizer (cl100k_base) a text's starts are also kept for the
    process (``_cl100k_starts``): every profile of a chunk config retrieves the same chunks, and each
    evaluation partition built its own.
    """

    def __init__(self, tokenizer: TextTokenizer | None = None) -> None:
        self._tokenizer = tokenizer
        self._starts: dict[ChunkId, Sequence[int]] = {}

    def of(self, chunk: TextChunk) -> Sequence[int]:
        """The character offset (in the chunk's text) where each of its tokens starts."""
        starts = self._starts.get(chunk.chunk_id)
        if starts is None:
            if len(chunk.text) != chunk.end - chunk.start:
                raise ValueError(
                    f"chunk {chunk.chunk_id!r} spans {chunk.doc_id}[{chunk.start}:{chunk.end}] but holds "
                    f"{len(chunk.text)} characters of text: a budget cut inside it would land elsewhere"
                )
            starts = self._starts[chunk.chunk_id] = (
                _cl100k_starts(chunk.text)
                if self._tokenizer is None
                else self._tokenizer.token_starts(chunk.text)
            )
        return starts

    def count(self, chunk: TextChunk) -> int:
        return len(self.of(chunk))


@lru_cache(maxsize=20_000)
def _cl100k_starts(text: str) -> tuple[int, ...]:
    """A text's cl100k_base token starts, for the process (the tokenizer is loaded at first use)."""
    return tuple(cl100k_tokenizer().token_starts(text))


def budgeted_spans(
    retrieved: Sequence[TextChunk], budget: int, tokens: ChunkTokenStarts
) -> list[CharacterSpan]:
    """The spans of the retrieved chunks that fit in ``budget`` tokens, in rank order.

    Whole chunks are taken while their tokens fit in what is left of the budget; the first chunk that
    does not fit is cut after the last whole token that fits, at the next token's start offset (so a
    character split into several byte tokens is kept only when all of them fit); later chunks are
    dropped. The cut is an offset into the chunk, never found by text search. Overlapping chunks pay
    for their shared tokens each time, as the generator receives them twice.
    """
    if budget < 0:
        raise ValueError(f"a context budget counts tokens and cannot be negative, got {budget}")
    left = budget
    spans = []
    for chunk in retrieved:
        starts = tokens.of(chunk)
        if len(starts) <= left:
            spans.append(CharacterSpan(chunk.doc_id, chunk.start, chunk.end, chunk.text))
            left -= len(starts)
            continue
        cut = starts[left]  # the end of token left - 1; starts[0] == 0 when nothing fits
        if cut > 0:
            spans.append(CharacterSpan(chunk.doc_id, chunk.start, chunk.start + cut, chunk.text[:cut]))
        break
    return spans


@dataclass(frozen=True)
class BudgetedSpanMetrics:
    """``span_metrics`` of the retrieved text that fits in ``budget`` tokens."""

    budget: int
    span_recall: float
    span_precision: float
    span_iou: float


@dataclass(frozen=True)
class ContextBudgetMetrics:
    context_tokens: int
    budgets: tuple[BudgetedSpanMetrics, ...]

    def columns(self) -> dict[str, float]:
        """``span_recall_<B>t``, ``span_precision_<B>t``, ``span_iou_<B>t`` per budget, and
        ``context_tokens``."""
        columns: dict[str, float] = {}
        for b in self.budgets:
            columns[budget_metric_name(SPAN_RECALL, b.budget)] = b.span_recall
            columns[budget_metric_name(SPAN_PRECISION, b.budget)] = b.span_precision
            columns[budget_metric_name(SPAN_IOU, b.budget)] = b.span_iou
        columns[CONTEXT_TOKENS] = float(self.context_tokens)
        return columns


def context_budget_metrics(
    ground_truth: Iterable[SpanLike],
    retrieved: Sequence[TextChunk],
    tokens: ChunkTokenStarts,
    budgets: Sequence[int] = CONTEXT_BUDGETS,
) -> ContextBudgetMetrics:
    """Span recall, precision and IoU of the retrieved text that fits a context budget.

    For a budget B in cl100k_base tokens: take the retrieved chunks in rank order, each chunk's text
    tokenized on its own; take whole chunks while their tokens fit in what is left of B; cut the first
    chunk that does not fit after the last whole token that fits (at the next token's start offset
    inside the chunk, so no character is split); drop the chunks after it. The budgeted spans are scored
    with ``span_metrics`` (merged per document):

        span_recall_<B>t = I_B / |G|
        span_precision_<B>t = I_B / |R_B|
        span_iou_<B>t = I_B / (|R_B| + |G| - I_B)

    R_B = the budgeted spans merged, I_B = characters in both R_B and G. Overlapping chunks pay for
    their shared tokens again (the generator receives them twice). A budget at least the size of the
    whole retrieval gives the plain span metrics; a larger budget never lowers recall.

    Args:
        ground_truth: the question's reference spans (at least one character).
        retrieved: the retrieved chunks in rank order, with their texts.
        tokens: the token starts of the chunk set, shared by every question of a run.
        budgets: the budgets B, in tokens (``CONTEXT_BUDGETS`` unless a caller studies others).

    Returns:
        The three metrics per budget, 0 for an empty retrieval, and ``context_tokens``: the tokens of
        all the retrieved chunks. Raises ``ValueError`` when the ground truth covers no character.
    """
    spans = list(ground_truth)
    scored = []
    for budget in budgets:
        m = span_metrics(spans, budgeted_spans(retrieved, budget, tokens))
        scored.append(BudgetedSpanMetrics(budget, m.span_recall, m.span_precision, m.span_iou))
    return ContextBudgetMetrics(sum(tokens.count(c) for c in retrieved), tuple(scored))
