"""Ranking the leaderboard: by the objective (with its fallback for older metrics and its constraint),
only comparable rows together (the reference rule: other questions, mode or question sample are listed
apart; another answer threshold is marked), removed configs listed but not ranked."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pandas as pd

from rag_eval_pipeline.core.leaderboard.ranking import ConfiguredNames, rank_board, reference_value
from rag_eval_pipeline.core.leaderboard.view import board_facts, first_ranked, footnotes, rank_label, row_note
from rag_eval_pipeline.core.settings.monitoring_settings import LeaderboardSettings
from rag_eval_pipeline.core.store.table_upgrades import upgrade_leaderboard

NOW = datetime(2026, 5, 1, 12, 0, tzinfo=UTC)
CONFIGURED = ConfiguredNames(frozenset({"fixed", "recursive"}), frozenset({"top2", "top4"}))
SPAN_IOU = LeaderboardSettings(rank_by="span_iou", context_budget_tokens=None)


def row(
    chunk_config: str,
    profile: str,
    iou: float,
    dataset: str = "d1",
    n: int = 85,
    threshold: float | None = 0.7,
    how: str = "fitted",
    hours_ago: int = 1,
    mode: str = "full",
    question_set: str = "s1",
) -> dict[str, object]:
    return {
        "chunk_config": chunk_config,
        "profile": profile,
        "span_iou_mean": iou,
        "span_recall_mean": 0.5,
        "dataset_sha256": dataset,
        "n_questions": n,
        "evaluation_mode": mode,
        "question_set": question_set,
        "answer_threshold": float("nan") if threshold is None else threshold,
        "answer_threshold_how": how,
        "metrics_created_at": NOW - timedelta(hours=hours_ago),
    }


def pairs(board: pd.DataFrame) -> list[tuple[str, str, str]]:
    return [(r["chunk_config"], r["profile"], rank_label(r)) for _, r in board.iterrows()]


def by_iou(rows: list[dict[str, object]], configured: ConfiguredNames | None = CONFIGURED) -> pd.DataFrame:
    return rank_board(pd.DataFrame(rows), configured, SPAN_IOU)


def test_removed_rows_follow_the_ranked_ones_without_a_rank() -> None:
    board = by_iou(
        [
            row("gone", "top2", 0.9),
            row("fixed", "top2", 0.3),
            row("fixed", "old", 0.5),
            row("recursive", "top4", 0.4),
        ]
    )
    assert pairs(board) == [
        ("recursive", "top4", "1"),
        ("fixed", "top2", "2"),
        ("gone", "top2", "-"),  # the best span IoU, but no longer a choice
        ("fixed", "old", "-"),
    ]
    assert board["rank"].dtype == "Int64" and board["rank"].isna().sum() == 2
    assert [row_note(r) for _, r in board.iterrows()] == ["", "", "chunk config removed", "profile removed"]
    assert first_ranked(board)["chunk_config"] == "recursive"  # type: ignore[index]
    assert any(line.startswith("rank -: removed") for line in footnotes(board))


def test_unreadable_config_files_rank_every_row_and_say_so() -> None:
    board = by_iou([row("gone", "top2", 0.9), row("fixed", "top2", 0.3)], None)
    assert pairs(board) == [("gone", "top2", "1"), ("fixed", "top2", "2")]
    assert board["removed"].isna().all()
    assert footnotes(board) == ["the config files could not be read: no row is marked removed"]


def test_rows_on_other_questions_are_listed_apart_unranked_with_a_marker_and_a_note() -> None:
    board = by_iou(
        [
            row("fixed", "top2", 0.5, dataset="d2", n=76, hours_ago=0),  # the best, but on other questions
            row("fixed", "top4", 0.4),
            row("recursive", "top2", 0.3),
        ]
    )
    assert pairs(board) == [("fixed", "top4", "1"), ("recursive", "top2", "2"), ("fixed", "top2", "*")]
    assert list(board["other_dataset"]) == [False, False, True]
    assert row_note(board.iloc[2]) == "other questions: 76 vs 85"
    assert first_ranked(board)["profile"] == "top4"  # type: ignore[index]
    (legend,) = footnotes(board)
    assert legend.startswith("rank *: not ranked, not comparable with the ranked rows")
    assert "reference: 85 questions, dataset d1" in legend


def test_a_quick_run_or_another_question_sample_is_not_ranked_with_full_runs() -> None:
    board = by_iou(
        [
            row("fixed", "top2", 0.9, mode="quick", n=20, question_set="sample"),
            row("fixed", "top4", 0.4),
            row("recursive", "top2", 0.3),
            row("recursive", "top4", 0.8, question_set="s0"),  # same dataset and mode, other questions
        ]
    )
    assert pairs(board) == [
        ("fixed", "top4", "1"),
        ("recursive", "top2", "2"),
        ("fixed", "top2", "*"),
        ("recursive", "top4", "*"),
    ]
    assert [row_note(r) for _, r in board.iterrows()][2:] == [
        "quick run on 20 questions vs full runs",
        "other question sample: set s0 vs s1",
    ]
    assert list(board["other_mode"]) == [False, False, True, False]
    assert list(board["other_question_set"]) == [False, False, False, True]
    assert "full runs" in footnotes(board)[0]
    # all quick, on the same seeded sample: ranked together
    quick = by_iou([row("fixed", "top2", 0.9, mode="quick"), row("fixed", "top4", 0.4, mode="quick")])
    assert pairs(quick) == [("fixed", "top2", "1"), ("fixed", "top4", "2")]


def test_the_threshold_reference_is_the_majority_and_a_tie_goes_to_the_newest() -> None:
    majority = by_iou(
        [
            row("fixed", "top2", 0.5, threshold=0.75, how="fixed"),
            row("fixed", "top4", 0.4),
            row("recursive", "top2", 0.3),
            row("recursive", "top4", 0.2, threshold=None),  # no answer metrics: not compared
        ]
    )
    assert list(majority["other_threshold"]) == [True, False, False, False]
    assert row_note(majority.iloc[0]) == "threshold 0.75 (fixed) vs 0.70 (fitted)"
    # its retrieval rank is fair: it stays ranked, marked for its answer columns
    assert rank_label(majority.iloc[0]) == "1*"
    assert footnotes(majority)[0].startswith("rank N*: not comparable with the other rows: its answers")

    tie = by_iou(
        [
            row("fixed", "top2", 0.5, threshold=0.75, hours_ago=5),
            row("fixed", "top4", 0.4, threshold=0.70, hours_ago=1),
        ]
    )
    assert list(tie["other_threshold"]) == [True, False]
    assert row_note(tie.iloc[0]) == "threshold 0.75 vs 0.70"


def test_removed_rows_do_not_count_for_the_reference_but_are_compared_with_it() -> None:
    board = by_iou(
        [
            row("gone", "top2", 0.9, dataset="d0", hours_ago=9),
            row("gone", "top4", 0.8, dataset="d0", hours_ago=9),
            row("fixed", "top2", 0.5),
        ]
    )
    assert list(board["other_dataset"]) == [False, True, True]
    assert row_note(board.iloc[1]) == "chunk config removed; other questions: dataset d0 vs d1"


def test_reference_value_ties_go_to_the_most_recent_row() -> None:
    when = pd.Series([NOW, NOW - timedelta(days=1), NOW + timedelta(days=1), NOW])
    assert reference_value(pd.Series(["a", "a", "b", "b"]), when) == "b"
    assert reference_value(pd.Series(["a", "a", "b", None]), when) == "a"
    assert reference_value(pd.Series([None, None, None, None], dtype="string"), when) is None


def test_boards_written_before_the_marks_render_as_before() -> None:
    # stored boards of older shapes, read as the warehouse reads them (core/store/table_upgrades.py)
    old = upgrade_leaderboard(pd.DataFrame([{"rank": 1, "chunk_config": "fixed", "profile": "top2"}]))
    assert rank_label(old.iloc[0]) == "1" and row_note(old.iloc[0]) == "" and footnotes(old) == []
    # before the objective: rows on other questions kept their rank, marked; an unranked row was removed
    before = upgrade_leaderboard(
        pd.DataFrame(
            [
                {
                    "rank": 1,
                    "chunk_config": "fixed",
                    "profile": "top2",
                    "other_dataset": True,
                    "removed": False,
                },
                {
                    "rank": None,
                    "chunk_config": "gone",
                    "profile": "top2",
                    "other_dataset": False,
                    "removed": True,
                },
            ]
        ).assign(dataset_sha256=["d2", "d1"], n_questions=85, evaluation_mode="full")
    )
    assert [rank_label(r) for _, r in before.iterrows()] == ["1*", "-"]
    assert "evaluated on other questions" in footnotes(before)[0]


# -- the objective ---------------------------------------------------------------------------------------


def scored(
    chunk_config: str, profile: str, recall: float | None, tokens: float | None = 500.0
) -> dict[str, object]:
    """A row with span_recall at the 1,000-token budget (None: metrics written before it existed) and its
    context size (None: not measured)."""
    return row(chunk_config, profile, 0.1) | {
        "span_recall_1000t_mean": float("nan") if recall is None else recall,
        "context_tokens_mean": float("nan") if tokens is None else tokens,
    }


def test_the_default_objective_ranks_by_recall_at_a_1000_token_budget_ties_to_the_smaller_context() -> None:
    board = rank_board(
        pd.DataFrame(
            [
                scored("fixed", "top2", 0.6, tokens=900),
                scored("fixed", "top4", 0.8, tokens=1800),
                scored("recursive", "top2", 0.6, tokens=700),  # tied with fixed x top2, cheaper
            ]
        ),
        CONFIGURED,
    )
    assert pairs(board) == [("fixed", "top4", "1"), ("recursive", "top2", "2"), ("fixed", "top2", "3")]
    assert set(board["ranked_by"]) == {"span_recall_1000t"} and set(board["ranked_by_note"]) == {""}
    facts = board_facts(board)
    assert (facts["ranked_by"], facts["best"], facts["best_score"]) == (
        "span_recall_1000t",
        "fixed x top4",
        0.8,
    )


def test_without_the_budget_metric_anywhere_the_board_falls_back_to_the_metric_over_k_and_says_so() -> None:
    board = rank_board(
        pd.DataFrame([scored("fixed", "top2", None), scored("fixed", "top4", None)]).assign(
            span_recall_mean=[0.4, 0.7]
        ),
        CONFIGURED,
    )
    assert pairs(board) == [("fixed", "top4", "1"), ("fixed", "top2", "2")]
    assert set(board["ranked_by"]) == {"span_recall"}
    (note,) = set(board["ranked_by_note"])
    assert note.startswith("ranked by span_recall over each setup's k chunks, not by span_recall_1000t")
    assert "re-evaluate" in note


def test_a_row_without_the_objective_while_others_have_it_is_not_comparable() -> None:
    board = rank_board(
        pd.DataFrame([scored("fixed", "top2", None), scored("fixed", "top4", 0.5)]), CONFIGURED
    )
    assert pairs(board) == [("fixed", "top4", "1"), ("fixed", "top2", "*")]
    assert row_note(board.iloc[1]) == (
        "no span_recall_1000t (metrics written before it existed): re-evaluate to rank it"
    )
    assert "without span_recall_1000t" in footnotes(board)[0]


def test_max_context_tokens_excludes_the_larger_contexts_and_unmeasured_ones() -> None:
    objective = LeaderboardSettings(max_context_tokens=1000)
    board = rank_board(
        pd.DataFrame(
            [
                scored("fixed", "top2", 0.6, tokens=900),
                scored("fixed", "top4", 0.9, tokens=1800),  # the best, but too much context
                scored("recursive", "top2", 0.7, tokens=None),
            ]
        ),
        CONFIGURED,
        objective,
    )
    assert pairs(board) == [("fixed", "top2", "1"), ("fixed", "top4", "x"), ("recursive", "top2", "x")]
    assert row_note(board.iloc[1]) == "context 1,800 tokens > max_context_tokens 1,000"
    assert row_note(board.iloc[2]).startswith("context_tokens not measured")
    assert set(board["rank_constraint"]) == {"max_context_tokens 1,000"}
    assert footnotes(board)[0].startswith("rank x: not ranked, outside the objective's constraint")
    assert board_facts(board)["excluded"] == "fixed x top4, recursive x top2"

    # no row measured its context (older metrics): the constraint cannot apply, and the board says so
    unmeasured = rank_board(
        pd.DataFrame([scored("fixed", "top2", 0.6, tokens=None), scored("fixed", "top4", 0.9, tokens=None)]),
        CONFIGURED,
        objective,
    )
    assert pairs(unmeasured) == [("fixed", "top4", "1"), ("fixed", "top2", "2")]
    assert set(unmeasured["rank_constraint"]) == {
        "max_context_tokens 1,000 not applied: no row measured context_tokens (metrics written before it "
        "existed); re-evaluate to apply it"
    }


def test_max_p95_latency_excludes_slow_setups_beside_the_context_limit() -> None:
    def timed(chunk_config: str, profile: str, recall: float, tokens: float, p95: float | None) -> dict:
        return scored(chunk_config, profile, recall, tokens) | {
            "latency_p95_ms": float("nan") if p95 is None else p95
        }

    rows = [
        timed("fixed", "top2", 0.6, 900, 4.0),
        timed("fixed", "top4", 0.9, 900, 1250.0),  # the best, but a reranker takes 1.25 s at p95
        timed("recursive", "top2", 0.7, 1800, 3.0),  # fast, but too much context
        timed("recursive", "top4", 0.8, 600, None),  # latency not measured
    ]
    objective = LeaderboardSettings(max_context_tokens=1000, max_p95_latency_ms=50)
    board = rank_board(pd.DataFrame(rows), CONFIGURED, objective)
    assert pairs(board)[0] == ("fixed", "top2", "1")
    notes = {(r["chunk_config"], r["profile"]): row_note(r) for _, r in board.iterrows()}
    assert notes[("fixed", "top4")] == "p95 search latency 1,250 ms > max_p95_latency_ms 50"
    assert notes[("recursive", "top2")] == "context 1,800 tokens > max_context_tokens 1,000"
    assert (
        notes[("recursive", "top4")] == "latency_p95_ms not measured (written before it existed): re-evaluate"
    )
    assert set(board["rank_constraint"]) == {"max_context_tokens 1,000; max_p95_latency_ms 50"}

    # only the latency limit: the large context is ranked again
    latency_only = rank_board(pd.DataFrame(rows[:3]), CONFIGURED, LeaderboardSettings(max_p95_latency_ms=50))
    assert pairs(latency_only) == [("recursive", "top2", "1"), ("fixed", "top2", "2"), ("fixed", "top4", "x")]


def test_the_ranked_rows_get_tiers_from_their_per_question_values() -> None:
    questions = [f"q{i}" for i in range(40)]

    def table(values: list[float]) -> pd.DataFrame:
        return pd.DataFrame({"question_id": questions, "span_recall_1000t": values})

    rows = [scored("fixed", "top2", 0.9), scored("fixed", "top4", 0.875), scored("recursive", "top2", 0.1)]
    board = rank_board(
        pd.DataFrame(rows),
        CONFIGURED,
        questions={
            ("fixed", "top2"): table([1.0] * 36 + [0.0] * 4),
            ("fixed", "top4"): table([1.0] * 35 + [0.0] * 5),  # one question less: tied
            ("recursive", "top2"): table([0.0] * 36 + [1.0] * 4),  # clearly worse
            ("gone", "top2"): table([1.0] * 40),  # no row: ignored
        },
    )
    assert list(board["tier"]) == [1, 1, 2]
    assert pd.isna(board["tier_p_value"].iloc[0]) and board["tier_p_value"].iloc[1] > 0.05
    assert set(board["tier_test"]) == {"paired sign-flip permutation test, two-sided"}
    assert board_facts(board)["tier_1"] == "fixed x top2, fixed x top4"
    # without per-question values: no tiers, and nothing else changes
    untiered = rank_board(pd.DataFrame(rows), CONFIGURED)
    assert untiered["tier"].isna().all() and list(untiered["rank"]) == [1, 2, 3]


def test_a_chunk_set_over_some_documents_is_not_ranked_with_whole_corpus_setups() -> None:
    """A config applied to two documents is evaluated on the questions about them: a high score there
    says nothing about the whole corpus, so it is listed apart, saying which documents it covers."""
    scoped = {
        **row("recursive", "top2", 0.95, n=12, question_set="s2"),
        "document_scope": "2 documents ab12cd34",
    }
    board = by_iou([scoped, row("fixed", "top2", 0.4), row("fixed", "top4", 0.3)])
    assert pairs(board) == [("fixed", "top2", "1"), ("fixed", "top4", "2"), ("recursive", "top2", "*")]
    assert list(board["other_documents"]) == [False, False, True]
    # one reason, the first that applies: not also "other question sample"
    assert list(board["other_question_set"]) == [False, False, False]
    assert row_note(board.iloc[2]) == "other documents: chunk set of 2 documents ab12cd34 vs the whole corpus"
    (legend,) = footnotes(board)
    assert "a chunk set over other documents" in legend

    # boards of metrics written before scopes existed: every row covers the whole corpus
    old = by_iou([row("fixed", "top2", 0.4), row("fixed", "top4", 0.3)])
    assert list(old["document_scope"]) == ["", ""] and not old["other_documents"].any()
