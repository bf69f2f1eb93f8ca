"""What a setup costs: per question from its retrieval, per setup in dollars at stated prices."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from rag_eval_pipeline.core.chunking.tokenization import cl100k_tokenizer
from rag_eval_pipeline.core.evaluation.costs import (
    FREE,
    INDEX_BYTES,
    INDEX_TOKENS,
    INDEX_USD,
    LATENCY_P50,
    LATENCY_P95,
    USD_PER_1K,
    CostAssumptions,
    folder_bytes,
    index_columns,
    question_costs,
    setup_costs,
)
from rag_eval_pipeline.core.leaderboard.labels import cost_text
from rag_eval_pipeline.core.llm.accounting import Price, PriceTable
from rag_eval_pipeline.core.types import QuestionId

PRICES = PriceTable({"gen": Price(1.0, 4.0), "emb": Price(0.5, 0.0), "rw": Price(2.0, 8.0)})
ASSUMED = CostAssumptions("gen", 100, PRICES)


def q(name: str) -> QuestionId:
    return QuestionId(name)


def test_question_costs_come_from_the_retrieval_rows_and_the_question_text() -> None:
    questions = {q("a"): "How fast does the main pump turn?", q("b"): "Who leads nights?", q("c"): "x"}
    results = pd.DataFrame(
        {
            "question_id": ["a", "a", "b"],  # c found nothing: no row
            "rank": [1, 2, 1],
            "search_ms": [2.5, 2.5, 7.0],
            "rewrite_prompt_tokens": [30, 30, 25],
            "rewrite_completion_tokens": [6, 6, 4],
        }
    )
    costs = question_costs(questions, results)
    assert list(costs.index) == ["a", "b", "c"]
    assert costs["latency_ms"].tolist()[:2] == [2.5, 7.0] and math.isnan(costs.loc["c", "latency_ms"])
    assert costs["query_tokens"].tolist() == cl100k_tokenizer().count_tokens(list(questions.values()))
    assert costs["rewrite_prompt_tokens"].tolist() == [30, 25, 0]
    assert costs["rewrite_completion_tokens"].tolist() == [6, 4, 0]
    # a table stored before latencies and rewrite tokens were recorded: unknown latency, no tokens
    old = question_costs(questions, results[["question_id", "rank"]])
    assert old["latency_ms"].isna().all() and (old["rewrite_prompt_tokens"] == 0).all()


def per_question(**columns: object) -> pd.DataFrame:
    base: dict[str, object] = {
        "question_id": ["a", "b", "c", "d"],
        "context_tokens": [400.0, 600.0, 500.0, 500.0],
        "query_tokens": [10, 20, 10, 20],
        "latency_ms": [1.0, 2.0, 3.0, 10.0],
        "rewrite_prompt_tokens": [0, 0, 0, 0],
        "rewrite_completion_tokens": [0, 0, 0, 0],
        "index_bytes": 2_000_000.0,
        "index_tokens": 1_000_000.0,
        "embedder_model_id": "openai:emb@256",
        "retrievers": "knn+bm25",
        "rewriter": "",
    }
    return pd.DataFrame(base | columns)


def test_setup_costs_are_the_formulas_of_the_docstring() -> None:
    costs = setup_costs(per_question(), ASSUMED)
    latency = [1.0, 2.0, 3.0, 10.0]
    assert costs[LATENCY_P50] == np.percentile(latency, 50) == 2.5
    assert costs[LATENCY_P95] == pytest.approx(np.percentile(latency, 95))  # 8.95: linear interpolation
    assert costs[INDEX_BYTES] == 2_000_000.0
    assert costs[INDEX_USD] == pytest.approx(1_000_000 * 0.5 / 1e6)  # embedding the chunk set once: $0.50
    # per question: (context + query) x $1/M in + 100 answer tokens x $4/M out + query x $0.5/M embedding
    expected = np.mean(
        [
            (c + t) * 1.0 / 1e6 + 100 * 4.0 / 1e6 + t * 0.5 / 1e6
            for c, t in ((400, 10), (600, 20), (500, 10), (500, 20))
        ]
    )
    assert costs[USD_PER_1K] == pytest.approx(1000 * expected)


def test_rewriting_costs_its_tokens_and_keyword_only_profiles_embed_nothing() -> None:
    base = setup_costs(per_question(), ASSUMED)[USD_PER_1K]
    rewritten = setup_costs(
        per_question(rewriter="openai:rw", rewrite_prompt_tokens=[40] * 4, rewrite_completion_tokens=[8] * 4),
        ASSUMED,
    )
    assert rewritten[USD_PER_1K] - base == pytest.approx(1000 * (40 * 2.0 + 8 * 8.0) / 1e6)
    keyword = setup_costs(per_question(retrievers="bm25"), ASSUMED)
    assert keyword[INDEX_USD] == 0.0
    assert base - keyword[USD_PER_1K] == pytest.approx(1000 * np.mean([10, 20, 10, 20]) * 0.5 / 1e6)


def test_local_models_cost_nothing_and_unknown_ones_make_dollars_unknown() -> None:
    local = setup_costs(per_question(embedder_model_id="sentence-transformers/all-MiniLM-L6-v2"), ASSUMED)
    assert local[INDEX_USD] == 0.0 and not math.isnan(local[USD_PER_1K])
    assert ASSUMED.model_price("local:smollm2-135m-instruct") == FREE
    assert ASSUMED.model_price("openai:emb@1024") == Price(0.5, 0.0)
    unknown_embedder = setup_costs(per_question(embedder_model_id="openai:mystery"), ASSUMED)
    assert math.isnan(unknown_embedder[INDEX_USD]) and math.isnan(unknown_embedder[USD_PER_1K])
    unknown_generator = setup_costs(per_question(), CostAssumptions("gpt-9", 100, PRICES))
    assert math.isnan(unknown_generator[USD_PER_1K]) and unknown_generator[INDEX_USD] == 0.5
    assert "no price known" in CostAssumptions("gpt-9", 100, PRICES).basis()
    assert CostAssumptions().basis() == (
        "generator gpt-4o-mini ($0.15/$0.6 per million input/output tokens), 200-token answers"
    )


def test_tables_written_before_the_cost_columns_give_unknown_costs() -> None:
    old = pd.DataFrame({"question_id": ["a"], "context_tokens": [300.0], "embedder_model_id": ["x"]})
    costs = setup_costs(old, ASSUMED)
    assert all(math.isnan(costs[c]) for c in (LATENCY_P50, LATENCY_P95, INDEX_BYTES, USD_PER_1K))


def test_index_columns_count_the_sides_the_profile_searches(tmp_path) -> None:
    (tmp_path / "bm25").mkdir()
    (tmp_path / "bm25/a.npy").write_bytes(b"x" * 1000)
    (tmp_path / "bm25/sub").mkdir()
    (tmp_path / "bm25/sub/b.json").write_bytes(b"y" * 24)
    keyword = folder_bytes(tmp_path / "bm25")
    assert keyword == 1024 and folder_bytes(tmp_path / "absent") == 0
    sizes = {"n_vectors": 100, "dimension": 384, "keyword_bytes": keyword, "chunk_tokens": 5000}
    assert index_columns(("knn",), **sizes) == {INDEX_BYTES: 100 * 384 * 4, INDEX_TOKENS: 5000}
    assert index_columns(("bm25",), **sizes) == {INDEX_BYTES: 1024, INDEX_TOKENS: 0}
    assert index_columns(("knn", "bm25"), **sizes) == {INDEX_BYTES: 153_600 + 1024, INDEX_TOKENS: 5000}


def test_costs_read_as_text() -> None:
    assert cost_text("latency_p95_ms", 4.25) == "4.2 ms" and cost_text("latency_p95_ms", 1250.4) == "1,250 ms"
    assert cost_text("usd_per_1k_questions", 0.14234) == "$0.142" and cost_text("index_usd", 0.0) == "$0"
    assert cost_text("index_bytes", 1_234_567) == "1.23 MB" and cost_text("index_bytes", 512) == "512 B"
    assert cost_text("context_tokens_mean", 923.4) == "923" and cost_text("latency_p50_ms", None) == "n/a"
