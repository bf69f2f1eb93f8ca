"""What a setup costs beside its quality, so the leaderboard can show both and draw their Pareto front.

Measured per question (columns of the retrieval_metrics table, beside the metrics; ``question_costs``):
- ``context_tokens``: the cl100k tokens of the k retrieved chunks, what the generator reads (a metric
  column: core/metrics/context_budget.py).
- ``latency_ms``: the question's search latency (``QueryTrace.search_ms``): its dense and keyword search,
  fusion and reranking, each run for it alone. Not the query's embedding or rewrite (cached on a re-run,
  so the same setup would be fast one night and slow the next). Unknown (NaN) for a question whose
  retrieval returned nothing: retrieval_results has no row to carry it.
- ``query_tokens``: the cl100k tokens of the question.
- ``rewrite_prompt_tokens``, ``rewrite_completion_tokens``: what its query rewrite cost (0 when the
  profile does not rewrite; a reply from the response cache keeps what it cost when it was made).

Measured per setup (the same on every row of its tables; ``index_columns``):
- ``index_bytes``: what the profile's indexes hold: the dense side's float32 vectors (chunks x dimension x
  4 bytes, without an engine's graph or payload) plus the keyword side's BM25 folder on disk.
- ``index_tokens``: the cl100k tokens of the chunk set, what embedding it once costs through an API
  (0 without a dense side). Overlapping chunks pay for their shared text again.

The leaderboard's cost columns of a setup (``setup_costs``), in US dollars at the price table's list prices
(core/llm/accounting.py, overridden by data/generation.yaml's ``llm.prices``):
- ``latency_p50_ms``, ``latency_p95_ms``: percentiles of ``latency_ms`` over the questions (linear
  interpolation between the closest ranks, numpy's default).
- ``usd_per_1k_questions``: 1,000 x the mean over the questions of
  (context_tokens + query_tokens) x the generator's input price + ``answer_tokens`` x its output price
  + query_tokens x the embedder's price (dense side only) + the rewrite's tokens x the rewriter's prices.
  The generator is ``generator_model`` of the leaderboard settings: the model that would answer from
  this context, which the evaluation itself need not call. Its system prompt is not counted.
- ``index_usd``: index_tokens x the embedder's price: embedding the chunk set once.
A local model (``local:...``, a sentence-transformers model) costs $0: it runs on your machine. A model
the price table does not know makes the dollar figures unknown (NaN), and ``cost_basis`` says which.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from ..chunking.tokenization import cl100k_tokenizer
from ..llm.accounting import Price, PriceTable
from ..metrics.names import CONTEXT_TOKENS
from ..types import QuestionId

# per question
LATENCY_MS = "latency_ms"
QUERY_TOKENS = "query_tokens"
REWRITE_PROMPT_TOKENS = "rewrite_prompt_tokens"
REWRITE_COMPLETION_TOKENS = "rewrite_completion_tokens"
QUESTION_COST_COLUMNS = (LATENCY_MS, QUERY_TOKENS, REWRITE_PROMPT_TOKENS, REWRITE_COMPLETION_TOKENS)
# per setup, on every row
INDEX_BYTES = "index_bytes"
INDEX_TOKENS = "index_tokens"
INDEX_COLUMNS = (INDEX_BYTES, INDEX_TOKENS)
# the leaderboard's
CONTEXT_TOKENS_MEAN = f"{CONTEXT_TOKENS}_mean"
LATENCY_P50 = "latency_p50_ms"
LATENCY_P95 = "latency_p95_ms"
USD_PER_1K = "usd_per_1k_questions"
INDEX_USD = "index_usd"
COST_BASIS = "cost_basis"
SETUP_COST_COLUMNS = (LATENCY_P50, LATENCY_P95, INDEX_BYTES, USD_PER_1K, INDEX_USD)
# What a setup can be compared on at equal quality, lower is cheaper: the Pareto front's cost axes
# (core/leaderboard/pareto.py) under their short names, and the board column holding each.
COST_AXES: Mapping[str, str] = {
    CONTEXT_TOKENS: CONTEXT_TOKENS_MEAN,
    LATENCY_P50: LATENCY_P50,
    LATENCY_P95: LATENCY_P95,
    USD_PER_1K: USD_PER_1K,
    INDEX_BYTES: INDEX_BYTES,
}
FREE = Price(0.0, 0.0)


@dataclass(frozen=True)
class CostAssumptions:
    """What turns a setup's tokens into dollars: the generator that would read the context, the length of
    its answers, and the prices."""

    generator_model: str = "gpt-4o-mini"
    answer_tokens: int = 200
    prices: PriceTable = field(default_factory=PriceTable)

    def generator_price(self) -> Price | None:
        return self.prices.price(self.generator_model)

    def model_price(self, model_id: str) -> Price | None:
        """The price of an embedder or LLM by its id (``openai:gpt-4o-mini``, ``openai:text-embedding-3-
        small@256``): nothing for a local model (``local:...``, or an id without a backend such as
        ``sentence-transformers/all-MiniLM-L6-v2``); None for a model the price table does not know."""
        backend, colon, name = model_id.partition(":")
        if not colon or backend == "local":
            return FREE
        return self.prices.price(name.split("@", 1)[0])

    def basis(self) -> str:
        """The assumptions in words, for the board's ``cost_basis``."""
        price = self.generator_price()
        prices = (
            f"${price.input_per_million:g}/${price.output_per_million:g} per million input/output tokens"
            if price is not None
            else "no price known: add it under llm.prices in data/generation.yaml"
        )
        return f"generator {self.generator_model} ({prices}), {self.answer_tokens}-token answers"


def question_costs(questions: Mapping[QuestionId, str], retrieval_results: pd.DataFrame) -> pd.DataFrame:
    """``QUESTION_COST_COLUMNS`` per question (indexed by question id): the latency and rewrite tokens
    its retrieval recorded (NaN latency, 0 tokens for a question without a row, or a table written before
    they were recorded), and its cl100k tokens."""
    ids = list(questions)
    frame = pd.DataFrame(index=pd.Index(ids, name="question_id", dtype="object"))
    frame[QUERY_TOKENS] = cl100k_tokenizer().count_tokens([questions[q] for q in ids]) if ids else []
    traced = retrieval_results.drop_duplicates("question_id").set_index("question_id")
    found = traced.reindex(ids)
    frame[LATENCY_MS] = numbers(found, "search_ms")
    for column in (REWRITE_PROMPT_TOKENS, REWRITE_COMPLETION_TOKENS):
        values = found[column] if column in found.columns else pd.Series(0, index=found.index)
        frame[column] = pd.to_numeric(values, errors="coerce").fillna(0).astype("int64")
    return frame[list(QUESTION_COST_COLUMNS)]


def index_columns(
    retrievers: Sequence[str], *, n_vectors: int, dimension: int, keyword_bytes: int, chunk_tokens: int
) -> dict[str, int]:
    """``index_bytes`` and ``index_tokens`` of a profile searching ``retrievers`` over a chunk set whose
    collection holds ``n_vectors`` of ``dimension``, whose BM25 folder holds ``keyword_bytes`` and whose
    texts count ``chunk_tokens`` (what chunk_index records)."""
    dense, keyword = "knn" in retrievers, "bm25" in retrievers
    return {
        INDEX_BYTES: (n_vectors * dimension * 4 if dense else 0) + (keyword_bytes if keyword else 0),
        INDEX_TOKENS: chunk_tokens if dense else 0,
    }


def folder_bytes(folder: str | Path) -> int:
    """The bytes of the files under a folder (0 when it does not exist)."""
    root = Path(folder)
    return sum(p.stat().st_size for p in root.rglob("*") if p.is_file()) if root.is_dir() else 0


def setup_costs(frame: pd.DataFrame, assumptions: CostAssumptions) -> dict[str, float]:
    """The ``SETUP_COST_COLUMNS`` of one setup from its per-question table (retrieval_metrics): NaN where
    a table written before the cost columns lacks what a figure needs, or a model has no price."""
    first = frame.iloc[0] if len(frame) else pd.Series(dtype="object")
    costs = {
        **latency_percentiles(frame),
        INDEX_BYTES: value(first, INDEX_BYTES),
        USD_PER_1K: float("nan"),
        INDEX_USD: float("nan"),
    }
    embedder = assumptions.model_price(str(first.get("embedder_model_id", "")))
    dense = "knn" in str(first.get("retrievers", "knn")).split("+")
    embedding = embedder if dense else FREE  # a keyword-only profile embeds nothing
    if embedding is not None and not pd.isna(value(first, INDEX_TOKENS)):
        costs[INDEX_USD] = value(first, INDEX_TOKENS) * embedding.input_per_million / 1e6
    generator = assumptions.generator_price()
    rewriter = str(first.get("rewriter", "") or "")
    rewrite = assumptions.model_price(rewriter) if rewriter else FREE
    needed = (CONTEXT_TOKENS, QUERY_TOKENS)
    if generator is None or embedding is None or rewrite is None or not has_columns(frame, needed):
        return costs
    context, query = numbers(frame, CONTEXT_TOKENS), numbers(frame, QUERY_TOKENS)
    per_question = (
        (context + query) * generator.input_per_million
        + assumptions.answer_tokens * generator.output_per_million
    ) / 1e6 + (
        query * embedding.input_per_million
        + numbers(frame, REWRITE_PROMPT_TOKENS).fillna(0) * rewrite.input_per_million
        + numbers(frame, REWRITE_COMPLETION_TOKENS).fillna(0) * rewrite.output_per_million
    ) / 1e6
    costs[USD_PER_1K] = float(per_question.mean()) * 1000 if len(per_question.dropna()) else float("nan")
    return costs


def latency_percentiles(frame: pd.DataFrame) -> dict[str, float]:
    """``latency_p50_ms`` and ``latency_p95_ms`` over the questions with a latency (NaN without any)."""
    latency = numbers(frame, LATENCY_MS).dropna()
    if latency.empty:
        return {LATENCY_P50: float("nan"), LATENCY_P95: float("nan")}
    return {LATENCY_P50: float(np.percentile(latency, 50)), LATENCY_P95: float(np.percentile(latency, 95))}


def has_columns(frame: pd.DataFrame, columns: Sequence[str]) -> bool:
    return all(c in frame.columns and frame[c].notna().any() for c in columns)


def numbers(frame: pd.DataFrame, column: str) -> pd.Series:
    """The column as floats (NaN where absent)."""
    if column not in frame.columns:
        return pd.Series(float("nan"), index=frame.index, dtype="float64")
    return pd.to_numeric(frame[column], errors="coerce").astype("float64")


def value(row: pd.Series, column: str) -> float:
    found = row.get(column)
    return float("nan") if found is None or pd.isna(found) else float(found)
