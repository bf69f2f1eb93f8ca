"""Production metrics per question: the formulas on hand-made hits, and a run where one row's
metric fails without touching anything else."""

from __future__ import annotations

from typing import Any

import pytest

from rag_eval_pipeline.core.answers.methods import ScoringItem, score_answers, similarity_texts
from rag_eval_pipeline.core.answers.production import (
    OUTCOME_FIELDS,
    aggregated_confidence,
    agreement_texts,
    cited_mean_rank,
    cited_precision_at_k,
    context_precision,
    context_relevance,
    production_metrics,
)
from rag_eval_pipeline.core.answers.threshold import fixed_threshold_choice
from rag_eval_pipeline.core.answers.types import MetricOutcome
from rag_eval_pipeline.core.embedding.cache import CachedEmbedder, EmbeddingCache
from rag_eval_pipeline.core.embedding.prefetch import PrefetchEmbedder
from rag_eval_pipeline.core.errors import ConfigError, InputError
from rag_eval_pipeline.core.types import QuestionId
from rag_eval_pipeline_tests.core.answers.production_data import TableEmbedder, answer, hit, item, trace
from rag_eval_pipeline_tests.fakes import CountingEmbedder, HashingEmbedder


def test_context_relevance_of_a_fused_profile():
    hits = [
        hit(1, found_by="both", knn=0.8, bm25=10.0, doc="a"),
        hit(2, found_by="both", knn=0.6, bm25=4.0, doc="b"),
        hit(3, found_by="knn", knn=0.4, doc="a"),
        hit(4, found_by="bm25", knn=None, bm25=5.0, doc="c"),  # 5 / top BM25 score 10 = 0.5
    ]
    # 0.4 * 2/4 + 0.5 * mean(0.8, 0.6, 0.4, 0.5) + 0.1 * 3/5
    assert context_relevance(hits, ("knn", "bm25")) == MetricOutcome.ok(
        0.4 * 0.5 + 0.5 * 0.575 + 0.1 * 0.6,
        "intersection 0.50, mean score 0.575, diversity 0.60 (3 document(s))",
    )


def test_context_relevance_of_single_retriever_profiles_drops_the_intersection():
    dense = [hit(1, knn=0.9), hit(2, knn=-0.2)]  # a negative cosine counts as 0
    outcome = context_relevance(dense, ("knn",))
    assert outcome.value == pytest.approx((0.5 * 0.45 + 0.1 * 0.2) / 0.6)
    assert outcome.detail.startswith(
        "single retriever (knn): no intersection term, weights 0.5/0.6 and 0.1/0.6"
    )
    keyword = [
        hit(1, found_by="bm25", knn=None, bm25=8.0),
        hit(2, found_by="bm25", knn=None, bm25=2.0, doc="e"),
    ]
    assert context_relevance(keyword, ("bm25",)).value == pytest.approx((0.5 * 0.625 + 0.1 * 0.4) / 0.6)
    diverse = [hit(r, knn=1.0, doc=f"doc{r}") for r in range(1, 8)]  # 7 documents: diversity capped at 1
    assert context_relevance(diverse, ("knn",)).value == pytest.approx(1.0)
    assert context_relevance([], ("knn",)) == MetricOutcome.ok(0.0, "no hits")


def test_context_precision_and_cited_ranks():
    hits = [hit(r) for r in range(1, 6)]
    top = answer("x", ["c2", "c1"])
    assert context_precision(top, hits) == MetricOutcome.ok(1.0, "cited ranks [1, 2]")
    assert cited_precision_at_k(top, hits, 5) == MetricOutcome.ok(0.4, "2 of top 5 cited")
    assert cited_mean_rank(top, hits).value == 1.5
    low = answer("x", ["c5", "c4"])
    assert context_precision(low, hits).value == pytest.approx((1 / 4 + 2 / 5) / 2)
    assert cited_mean_rank(low, hits).value == 4.5
    for metric in (context_precision, cited_mean_rank):
        assert metric(answer("x"), hits) == MetricOutcome.skipped("the answer cites no retrieved chunk")
        assert metric(answer("x", ["c1"], abstained=True), hits) == MetricOutcome.skipped(
            "the answer abstained"
        )
    assert cited_precision_at_k(answer("x"), hits, 5).status == "skipped"


def test_aggregated_confidence():
    skipped = MetricOutcome.skipped("n/a")
    assert aggregated_confidence(answer(confidence="HIGH"), skipped, skipped) == MetricOutcome.ok(
        0.9, "mean of self-reported HIGH 0.90"
    )
    assert aggregated_confidence(answer(confidence="LOW"), skipped, MetricOutcome.failed("x")).value == 0.5
    assert aggregated_confidence(answer(), skipped, skipped).value == 0.7  # no confidence given
    both = aggregated_confidence(answer(confidence="MEDIUM"), MetricOutcome.ok(0.5), MetricOutcome.ok(1.0))
    assert both.value == pytest.approx((0.75 + 0.5 + 1.0) / 3)
    assert both.detail == "mean of self-reported MEDIUM 0.75, semantic pass rate 0.50, source agreement 1.00"
    assert aggregated_confidence(answer(abstained=True, confidence="HIGH"), skipped, skipped) == (
        MetricOutcome.skipped("the answer abstained")
    )


PUMP = "The main pump runs at 1,450 rpm. It is serviced every 90 days."
PUMP_TOO = "Pump speed: the main pump runs at 1,450 rpm."


def run_items(items: list[Any], embedder: Any = None, **kwargs: Any) -> Any:
    settings: dict[str, Any] = {"top_k": 3, "candidate_depth": 20, "retrievers": ("knn", "bm25")} | kwargs
    return production_metrics(items, embedder or TableEmbedder(), **settings)


def test_a_full_row():
    question = "How fast does the main pump run?"
    hits = [
        hit(1, PUMP, found_by="both", knn=0.7, bm25=6.0, doc="pumps"),
        hit(2, PUMP_TOO, found_by="knn", knn=0.5, doc="specs"),
        hit(3, "Valves are tested in March.", found_by="bm25", knn=None, bm25=3.0, doc="valves"),
    ]
    the_answer = answer("The main pump runs at 1,450 rpm [c1][c2].", ["c1", "c2"], confidence="HIGH")
    # The two cited sentences point the same way: one group of two.
    embedder = TableEmbedder(
        {question: [1, 0, 0], PUMP.split(". ")[0] + ".": [1, 0.1, 0], PUMP_TOO: [1, 0.2, 0]}
    )
    run = run_items([item(question, the_answer, hits, trace(knn=20, bm25=20))], embedder)
    (row,) = run.rows
    assert row.context_relevance.value == pytest.approx(0.4 / 3 + 0.5 * (0.7 + 0.5 + 0.5) / 3 + 0.1 * 3 / 5)
    assert row.context_precision.value == 1.0 and row.cited_precision_at_k.value == pytest.approx(2 / 3)
    assert row.cited_mean_rank.value == 1.5
    assert row.recall_warnings == ()  # rank 3 (the cut-off) is not cited
    assert row.context_recall_heuristic.value == 0.75  # "fast" is nowhere
    assert not row.escalated and row.escalation_reason == "heuristic 0.75 >= 0.7, no warning"
    assert row.context_recall_llm == MetricOutcome.skipped("heuristic 0.75 >= 0.7, no warning")
    assert (row.semantic_validation.value, row.semantic_verdict) == (1.0, "pass")
    assert (row.multi_source_agreement.value, row.agreement_pattern) == (1.0, "unanimous")
    assert (row.n_sources, row.unique_values) == (2, 1)
    assert row.aggregated_confidence.value == pytest.approx((0.9 + 1.0 + 1.0) / 3)
    record = row.as_record()
    assert record["question_id"] == "q1" and record["recall_warnings"] == ""
    assert record["context_recall_llm"] is None and record["context_recall_llm_status"] == "skipped"
    assert record["multi_source_agreement"] == 1.0 and record["agreement_pattern"] == "unanimous"
    assert set(record) >= {f"{name}_detail" for name in OUTCOME_FIELDS}


def test_a_metric_that_raises_fails_only_that_metric_of_that_row():
    good = item(
        "How fast does the main pump run?",
        answer("It runs at 1,450 rpm [c1].", ["c1"], qid="good"),
        [hit(1, PUMP)],
    )
    unscored = item(
        "How fast does the main pump run?",
        answer("It runs at 1,450 rpm [c1].", ["c1"], qid="unscored"),
        [hit(1, PUMP), hit(2, PUMP_TOO, knn=None)],  # neither a kNN nor a BM25 score
    )
    stray = item(
        "How fast does the main pump run?",
        answer("It runs at 1,450 rpm [c1][c7].", ["c1", "c7"], confidence="MEDIUM", qid="stray"),
        [hit(1, PUMP), hit(2, PUMP_TOO)],  # c7 is not among the hits
    )
    run = run_items([good, unscored, stray], top_k=2, retrievers=("knn",))
    failed_good, failed_unscored, failed_stray = (
        {n for n in OUTCOME_FIELDS if getattr(r, n).status == "failed"} for r in run.rows
    )
    assert failed_good == set()
    assert failed_unscored == {"context_relevance"}
    assert (
        run.rows[1].context_relevance.detail
        == "ValueError: hit c2 (rank 2) has neither a kNN nor a BM25 score"
    )
    assert run.rows[1].context_precision.value == 1.0  # the rest of the row is computed
    assert failed_stray == {
        "context_precision",
        "cited_precision_at_k",
        "cited_mean_rank",
        "semantic_validation",
        "multi_source_agreement",
    }
    assert (
        "cited chunk(s) ['c7'] are not among its 2 retrieved chunks" in run.rows[2].context_precision.detail
    )
    assert run.rows[2].semantic_verdict == "failed"
    assert run.rows[2].aggregated_confidence.value == 0.75  # self-reported only
    assert run.rows[2].context_recall_heuristic.status == "ok"


class BrokenEmbedder(TableEmbedder):
    def embed(self, texts: Any) -> Any:
        raise RuntimeError("embedding service down")


class ShortEmbedder(TableEmbedder):
    def embed(self, texts: Any) -> Any:
        return super().embed(texts)[:-1]


@pytest.mark.parametrize(
    ("embedder", "error"),
    [
        (BrokenEmbedder(), "RuntimeError: embedding service down"),
        (ShortEmbedder(), "ValueError: the embedder returned 3 vectors for 4 texts"),
    ],
)
def test_a_failed_embedding_call_fails_only_the_agreement_of_the_rows_that_needed_it(embedder, error):
    two_sources = item(
        "How fast?", answer("1,450 rpm [c1][c2].", ["c1", "c2"], qid="two"), [hit(1, PUMP), hit(2, PUMP_TOO)]
    )
    one_source = item("How fast?", answer("1,450 rpm [c1].", ["c1"], qid="one"), [hit(1, PUMP)])
    progress: list[tuple[str, int, int]] = []
    run = run_items(
        [two_sources, one_source],
        embedder,
        retrievers=("knn",),
        progress=lambda *a: progress.append(a),
    )
    two, one = run.rows
    assert two.multi_source_agreement == MetricOutcome.failed(
        f"embedding the source sentences failed: {error}"
    )
    assert (two.agreement_pattern, two.n_sources) == (None, None)
    assert one.multi_source_agreement == MetricOutcome.skipped("fewer than two cited sources")
    assert two.semantic_verdict == "pass" and two.context_precision.status == "ok"
    assert ("production metrics", 2, 2) in progress
    assert ("source agreement (embeddings)", 4, 4) in progress  # the question and three sentences


def test_failed_answers_keep_their_rows():
    failed = item("How fast does the main pump run?", answer("", failed=True), [hit(1, PUMP)])
    (row,) = run_items([failed], retrievers=("knn",)).rows
    reason = "no answer: answer generation failed (model unreachable)"
    for name in (
        "context_precision",
        "semantic_validation",
        "multi_source_agreement",
        "aggregated_confidence",
    ):
        assert getattr(row, name) == MetricOutcome.skipped(reason)
    assert row.context_relevance.status == "ok" and row.context_recall_heuristic.value == 0.75


def test_an_empty_run():
    run = run_items([])
    assert (run.rows, run.n_questions, run.n_escalated, run.escalated_fraction) == ([], 0, 0, None)


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"top_k": 0}, "top_k must be an integer >= 1"),
        ({"candidate_depth": 2}, r"candidate_depth must be an integer >= top_k \(3\)"),
        ({"retrievers": ()}, "retrievers must be one or both of"),
        ({"retrievers": ("knn", "splade")}, "retrievers must be one or both of"),
        ({"recall_threshold": 1.5}, r"recall_threshold must lie in \[0, 1\]"),
    ],
)
def test_bad_settings_are_refused(settings, message):
    with pytest.raises(ConfigError, match=message):
        run_items([], **settings)


def test_a_question_given_twice_is_refused():
    twice = item("How fast?", answer(qid="dup"), [hit(1, PUMP)])
    with pytest.raises(InputError, match="question 'dup' appears twice"):
        run_items([twice, twice])


def answer_metrics_of_a_partition(answers: dict[str, str], embedder: Any) -> tuple[list[Any], list[Any]]:
    """What the answer_metrics asset computes for one partition: correctness and production metrics,
    through one ``PrefetchEmbedder`` announced with both families' texts."""
    questions = {"q1": "How fast does the main pump run?", "q2": "How often is the pump serviced?"}
    references = {"q1": "The main pump runs at 1,450 rpm.", "q2": "Every 90 days."}
    hits = {q: [hit(1, PUMP, qid=q), hit(2, PUMP_TOO, qid=q, doc="specs")] for q in questions}
    answered = {q: answer(text, ["c1", "c2"], confidence="HIGH", qid=q) for q, text in answers.items()}
    scoring = [
        ScoringItem(QuestionId(q), questions[q], answered[q], references[q], ("rpm",)) for q in questions
    ]
    grounding = [item(questions[q], answered[q], hits[q], trace(q, knn=20)) for q in questions]
    step = PrefetchEmbedder(embedder, [*similarity_texts(scoring), *agreement_texts(grounding)])
    scores = score_answers(scoring, step, threshold=fixed_threshold_choice(0.75, "no labels"))
    return scores, list(run_items(grounding, step).rows)


def test_answer_metrics_embed_in_one_model_call_each_distinct_text_once_across_partitions(tmp_path):
    model = CountingEmbedder(HashingEmbedder())
    first = {"q1": "It runs at 1,450 rpm [c1][c2].", "q2": "Every 90 days [c1][c2]."}
    scores, rows = answer_metrics_of_a_partition(
        first, CachedEmbedder(model, EmbeddingCache(tmp_path / "e.sqlite"))
    )
    (call,) = model.calls  # similarity and source agreement together
    assert len(call) == len(set(call))
    # the same results as each metric family embedding on its own, straight from the model
    alone = CountingEmbedder(HashingEmbedder())
    assert answer_metrics_of_a_partition(first, alone) == (scores, rows)
    assert sorted(t for c in alone.calls for t in c) == sorted(call)
    assert rows[0].multi_source_agreement.status == "ok" and scores[0].semantic_similarity.status == "ok"

    # another partition (another process, the same cache): only its one new answer reaches the model
    second = {"q1": "The pump turns at 1,450 rpm [c1][c2].", "q2": first["q2"]}
    answer_metrics_of_a_partition(second, CachedEmbedder(model, EmbeddingCache(tmp_path / "e.sqlite")))
    assert model.calls[1:] == [[second["q1"]]]
    # a re-run of either embeds nothing
    answer_metrics_of_a_partition(first, CachedEmbedder(model, EmbeddingCache(tmp_path / "e.sqlite")))
    assert len(model.calls) == 2
