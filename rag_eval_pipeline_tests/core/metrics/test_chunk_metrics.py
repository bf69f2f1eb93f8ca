"""Chunk-level metrics: hand-computed examples and a cross-check against ranx on random runs."""

from __future__ import annotations

import math
import random
from collections import defaultdict

import numba
import pytest

from rag_eval_pipeline.core.metrics import ChunkMetrics, chunk_metrics
from rag_eval_pipeline.core.types import ChunkId


def ids(*names: str) -> list[ChunkId]:
    return [ChunkId(n) for n in names]


def test_hand_example() -> None:
    m = chunk_metrics(ids("a", "b", "c", "d"), ids("b", "d", "e"), k=3)
    assert m.recall == pytest.approx(2 / 3)
    assert m.precision == pytest.approx(2 / 4)
    assert m.f1 == pytest.approx(4 / 7)
    assert m.recall_at_k == pytest.approx(1 / 3)
    assert m.hit_at_k == 1.0
    assert m.mrr == pytest.approx(1 / 2)
    # DCG@3: b at rank 2; ideal: three relevant at ranks 1..3.
    assert m.ndcg_at_k == pytest.approx((1 / math.log2(3)) / (1 + 1 / math.log2(3) + 1 / 2))
    # AP: precision 1/2 at rank 2 and 2/4 at rank 4, over 3 relevant.
    assert m.average_precision == pytest.approx((1 / 2 + 2 / 4) / 3)


def test_ideal_dcg_is_capped_by_k() -> None:
    m = chunk_metrics(ids("a", "x"), ids("a", "b", "c", "d"), k=2)
    assert m.ndcg_at_k == pytest.approx(1 / (1 + 1 / math.log2(3)))
    assert chunk_metrics(ids("a", "b"), ids("a", "b", "c"), k=2).ndcg_at_k == pytest.approx(1.0)


def test_no_relevant_retrieved_and_empty_retrieval_score_zero() -> None:
    zero = ChunkMetrics(0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
    assert chunk_metrics(ids("x", "y"), ids("a"), k=5) == zero
    assert chunk_metrics([], ids("a"), k=5) == zero


def test_duplicates_count_once_at_their_first_occurrence() -> None:
    m = chunk_metrics(ids("b", "b", "a", "b"), ids("b"), k=1)
    assert (m.recall, m.precision, m.mrr, m.average_precision) == (1.0, 1 / 2, 1.0, 1.0)
    # A repeat takes no slot: the deduplicated ranking is [x, a], so a is inside the top 2.
    m = chunk_metrics(ids("x", "x", "a"), ids("a"), k=2)
    assert (m.hit_at_k, m.recall_at_k, m.mrr) == (1.0, 1.0, 1 / 2)


def test_invalid_input() -> None:
    with pytest.raises(ValueError, match="k must be a positive"):
        chunk_metrics(ids("a"), ids("a"), k=0)
    with pytest.raises(ValueError, match="relevant chunk id"):
        chunk_metrics(ids("a"), [], k=3)


RANX_PAIRS = {
    "recall": "recall",
    "precision": "precision",
    "f1": "f1",
    "recall_at_k": "recall@{k}",
    "hit_at_k": "hit_rate@{k}",
    "mrr": "mrr",
    "ndcg_at_k": "ndcg@{k}",
    "average_precision": "map",
}


def test_matches_ranx_on_random_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    # ranx's metrics as the plain Python they are written in: numba would compile each first (about 80
    # CPU s on a machine without numba's cache, e.g. CI) to compare 600 small runs. ranx is imported
    # here, so its functions are decorated while numba is off; nothing else of the process uses numba.
    monkeypatch.setattr(numba.config, "DISABLE_JIT", True)
    from ranx import Qrels, Run, evaluate

    rng = random.Random(1234)
    pool = [f"d{i}" for i in range(30)]
    by_k: dict[int, list[tuple[str, list[str], list[str]]]] = defaultdict(list)
    for n in range(600):
        relevant = rng.sample(pool, rng.randint(1, 8))
        ranking = rng.sample(pool, rng.randint(1, 15))
        k = rng.choice([1, 3, 5, 10])
        by_k[k].append((f"q{n}", relevant, ranking))

    checked = 0
    for k, queries in sorted(by_k.items()):
        qrels = Qrels({q: {d: 1 for d in relevant} for q, relevant, _ in queries})
        # ranx ranks by score: strictly decreasing scores keep our order.
        run = Run(
            {q: {d: float(len(ranking) - i) for i, d in enumerate(ranking)} for q, _, ranking in queries}
        )
        metrics = [template.format(k=k) for template in RANX_PAIRS.values()]
        evaluate(qrels, run, metrics, return_mean=False, save_results_in_run=True)
        for q, relevant, ranking in queries:
            # Feed ours a ranking with repeats; ranx cannot represent them, ours must ignore them.
            noisy = ranking + ranking[: rng.randint(0, 3)]
            ours = chunk_metrics(ids(*noisy), ids(*relevant), k)
            for field, template in RANX_PAIRS.items():
                expected = run.scores[template.format(k=k)][q]
                assert getattr(ours, field) == pytest.approx(expected, abs=1e-9), (q, field, k)
                checked += 1
    assert checked == 600 * len(RANX_PAIRS)
