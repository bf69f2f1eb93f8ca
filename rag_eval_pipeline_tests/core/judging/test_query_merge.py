"""Merging queries: duplicates and near-duplicates add their counts, the most asked text leads, stored
ids stay, and a file imported again replaces its earlier contribution instead of adding to it."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from rag_eval_pipeline.core.judging.query_merge import (
    QUERY_IMPORTS_FILE,
    STORED_BEFORE,
    SourceQuery,
    contributions_of,
    fold,
    import_contribution,
    merge_queries,
    near_duplicates,
    read_contributions,
)
from rag_eval_pipeline.core.judging.store import JudgingStore
from rag_eval_pipeline.core.judging.types import ImportedQuery, query_id_for


def source(file: str, *items: tuple[str, int]) -> list[SourceQuery]:
    return contributions_of(
        file, [(text, count, str(line), ()) for line, (text, count) in enumerate(items, 1)]
    )


def test_fold_drops_case_punctuation_and_apostrophes() -> None:
    assert fold("What's the SLA?!  (v2)") == ("whats", "the", "sla", "v2")
    assert fold("Ｆｕｌｌ-width") == ("full", "width")  # NFKC


@pytest.mark.parametrize(
    ("a", "b", "near"),
    [
        ("How do I reset my password?", "how do i reset my password", True),  # punctuation, case
        ("How do I reset my password?", "How do I reset my password please", True),  # 6/7 >= 0.8
        ("How do I delete my account", "How do I reset my account", False),  # 5/7 < 0.8
        ("reset password", "password reset", True),  # word order is not compared
        # a differing number or negation never merges, however much else is shared
        (
            "how do I install the client on python 3.11 under windows",
            "how do I install the client on python 3.12 under windows",
            False,
        ),
        (
            "can I restore a backup with the encryption key of the old cluster",
            "can I restore a backup without the encryption key of the old cluster",
            False,
        ),
        ("how do I reset my password", "how do I reset my pasword", False),  # misspellings are not merged
        ("???", "!!!", False),  # no words: only exact duplicates merge
    ],
)
def test_the_near_duplicate_rule(a: str, b: str, near: bool) -> None:
    assert near_duplicates(a, b) is near
    assert near_duplicates(b, a) is near


def test_duplicates_and_near_duplicates_add_their_counts_and_keep_the_other_texts() -> None:
    merged = merge_queries(
        source(
            "a.csv",
            ("how do i reset my password", 2),
            ("How do I reset my password?", 5),
            ("How do I  reset my password?", 1),  # a duplicate: whitespace folded
            ("How do I reset my password please", 1),
            ("How do I delete my account", 3),
        )
    )
    assert [(q.text, q.count) for q in merged] == [
        ("How do I reset my password?", 9),
        ("How do I delete my account", 3),
    ]
    top = merged[0]
    assert top.query_id == query_id_for("How do I reset my password?")
    # the other texts, most asked first, ties by text
    assert top.variants == (
        "how do i reset my password",
        "How do I  reset my password?",
        "How do I reset my password please",
    )
    assert set(top.sources) == {"a.csv:1", "a.csv:2", "a.csv:3", "a.csv:4"}


def test_clusters_do_not_chain_through_a_text_like_both_ends() -> None:
    # b is near a and near c, but c is not near a: c starts its own query
    a = "how do i rotate the api key for staging"
    b = "how do i rotate the api key for staging today"
    c = "how do i rotate the api key for staging today please quickly"
    assert near_duplicates(a, b) and near_duplicates(b, c) and not near_duplicates(a, c)
    merged = merge_queries(source("f", (a, 5), (b, 2), (c, 1)))
    assert [(q.text, q.count) for q in merged] == [(a, 7), (c, 1)]


def test_a_stored_query_keeps_its_text_and_id_while_it_is_still_imported() -> None:
    stored = [ImportedQuery(query_id_for("reset password"), "reset password", 3)]
    merged = merge_queries(source("f", ("reset password", 3), ("Reset password?", 10)), stored)
    assert [(q.text, q.count, q.variants) for q in merged] == [("reset password", 13, ("Reset password?",))]
    # not imported any more: the most asked text leads
    merged = merge_queries(source("f", ("Reset password?", 10), ("reset password!", 1)), stored)
    assert merged[0].text == "Reset password?"


def test_reimporting_a_file_replaces_its_contribution_and_other_files_add_up(tmp_path: Path) -> None:
    store = JudgingStore(tmp_path / "judging")
    first = source("logs/nov.csv", ("reset password", 3), ("delete account", 1))
    result = import_contribution(store, "logs/nov.csv", first)
    assert result.replaced == 0 and [(q.text, q.count) for q in store.read_queries()] == [
        ("reset password", 3),
        ("delete account", 1),
    ]
    again = import_contribution(store, "logs/nov.csv", first)
    assert again.replaced == 2
    assert [(q.text, q.count) for q in store.read_queries()] == [("reset password", 3), ("delete account", 1)]
    import_contribution(store, "logs/dec.csv", source("logs/dec.csv", ("Reset password?", 4)))
    assert [(q.text, q.count) for q in store.read_queries()] == [("reset password", 7), ("delete account", 1)]
    # an updated export of nov replaces nov's counts, dec's stay
    import_contribution(store, "logs/nov.csv", source("logs/nov.csv", ("reset password", 1)))
    assert [(q.text, q.count) for q in store.read_queries()] == [("reset password", 5)]
    assert {c.source for c in read_contributions(store.folder)} == {"logs/nov.csv", "logs/dec.csv"}


def test_queries_stored_without_contributions_are_kept_as_one_source(tmp_path: Path) -> None:
    store = JudgingStore(tmp_path)
    store.write_queries([ImportedQuery(query_id_for("old query"), "old query", 4, ("Old query?",))])
    import_contribution(store, "new.csv", source("new.csv", ("old query", 1)))
    [query] = store.read_queries()
    assert (query.text, query.count, query.variants) == ("old query", 5, ("Old query?",))
    assert any(c.source == STORED_BEFORE for c in read_contributions(tmp_path))


def test_a_damaged_contributions_line_names_the_file_and_line(tmp_path: Path) -> None:
    (tmp_path / QUERY_IMPORTS_FILE).write_text('{"source": "a", "text": "t", "count": 1}\n{"text": 2}\n')
    with pytest.raises(ValueError, match=rf"{QUERY_IMPORTS_FILE}:2: .*fix or delete the line"):
        read_contributions(tmp_path)


def test_the_fast_merge_finds_what_comparing_every_pair_finds() -> None:
    """The prefix filter is only a shortcut: the clusters equal a greedy pass comparing every leader."""
    rng = random.Random(7)
    words = [
        "how",
        "do",
        "i",
        "reset",
        "my",
        "password",
        "account",
        "delete",
        "the",
        "api",
        "key",
        "not",
        "v2",
    ]
    texts = {" ".join(rng.choices(words, k=rng.randint(1, 8))) for _ in range(400)}
    items = [(text, rng.randint(1, 5)) for text in sorted(texts)]
    merged = merge_queries(source("f", *items))
    leaders: list[tuple[str, int]] = []  # the brute force: every earlier leader compared
    for text, count in sorted(items, key=lambda item: (-item[1], query_id_for(item[0]))):
        home = next((i for i, (leader, _) in enumerate(leaders) if near_duplicates(text, leader)), None)
        if home is None:
            leaders.append((text, count))
        else:
            leaders[home] = (leaders[home][0], leaders[home][1] + count)
    assert sorted((q.text, q.count) for q in merged) == sorted(leaders)
    assert sum(q.count for q in merged) == sum(count for _, count in items)
