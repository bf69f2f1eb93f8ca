"""Issue 31: enough questions, spread over the corpus. On a 155-file documentation set 40 questions were
asked for (a fixed default) and 125 documents got none. The default now follows the corpus: every
document with informative prose gets its share, a long document gets more by the square root of its
prose and never crowds out the rest, markup, tables of links and release-note lists are not asked about,
and editing one document still leaves every other document's questions as they were."""

from __future__ import annotations

import math

import pytest

from rag_eval_pipeline.core.corpus.corpus import Corpus
from rag_eval_pipeline.core.generation.known_item import KnownItemGenerator
from rag_eval_pipeline.core.generation.markup import markup_line_starts
from rag_eval_pipeline.core.generation.passages import candidate_passages, plan_passages
from rag_eval_pipeline.core.generation.question_count import default_question_count
from rag_eval_pipeline.core.generation.quotas import CountRule
from rag_eval_pipeline.core.generation.settings import TokenLevelSettings
from rag_eval_pipeline.core.types import Document

from .docs_site import changelog, link_table, made_up_prose

AUTO = TokenLevelSettings()  # n_questions: auto, the default


def corpus_of(texts: dict[str, str]) -> Corpus:
    return Corpus(tuple(Document(doc_id, text) for doc_id, text in texts.items()), root="(test)")


def page(seed: int, chars: int) -> str:
    return f"# Page {seed}\n\n{made_up_prose(seed, chars)}\n"


def test_the_default_is_auto_and_a_number_is_still_honoured() -> None:
    assert AUTO.n_questions == "auto" and AUTO.question_target() == CountRule(100, 500, 10_000)
    corpus = corpus_of({f"d{i}.md": page(i, 3000) for i in range(20)})
    fixed = default_question_count(corpus, TokenLevelSettings(n_questions=40))
    assert fixed.total == 40 and set(fixed.quotas.values()) == {2}
    assert fixed.describe().startswith("40 questions (n_questions: 40): ")


@pytest.mark.parametrize(
    ("sizes", "expected_total", "expected_each"),
    [
        # few long documents: the floor (min_questions 100) shared among them
        ([30_000] * 3, 102, {34}),
        # many short documents: each its floor share, ceil(100 / 40)
        ([2_500] * 40, 120, {3}),
        # more documents than max_questions: one question each for 500 of them
        ([400] * 520, 500, {0, 1}),
    ],
)
def test_the_default_count_follows_the_size_and_the_documents_of_the_corpus(
    sizes: list[int], expected_total: int, expected_each: set[int]
) -> None:
    corpus = corpus_of({f"d{i:03d}.md": page(i, size) for i, size in enumerate(sizes)})
    count = default_question_count(corpus, AUTO)
    assert count.total == expected_total
    assert set(count.quotas.values()) == expected_each
    assert count.documents_with_prose == len(sizes)
    assert count.total <= AUTO.max_questions


def test_every_document_with_prose_is_asked_and_a_long_one_does_not_crowd_out_the_rest() -> None:
    """A 250k-character manual among 40 pages of 4k: 60 % of the prose, 6 of 126 questions."""
    texts = {f"pages/p{i:02d}.md": page(i, 4_000) for i in range(40)}
    texts["manual.md"] = page(999, 250_000)
    texts["release-notes.md"] = "# Release notes\n\n" + changelog(30)
    texts["navigation.md"] = "# Everything\n\n" + link_table(40)
    corpus = corpus_of(texts)
    plan = plan_passages(corpus, AUTO.question_target(), AUTO.seed)
    count = plan.count
    prose = count.prose_chars
    assert prose["release-notes.md"] == 0 and prose["navigation.md"] == 0
    assert count.quotas["release-notes.md"] == 0 and count.quotas["navigation.md"] == 0
    assert prose["manual.md"] > 0.6 * sum(prose.values())
    # the manual's share grows with the square root of its prose (and stays under max_questions / D)
    assert count.quotas["manual.md"] == math.ceil(math.sqrt(prose["manual.md"] / 10_000)) == 6
    assert count.quotas["manual.md"] < 0.05 * count.total
    drawn = {p.span.doc_id for p in plan.passages}
    assert drawn == {d for d in texts if d.startswith("pages/")} | {"manual.md"}  # every page asked
    assert min(count.quotas[d] for d in drawn) >= 1
    described = count.describe()
    assert (
        described.startswith(f"{count.total} questions (n_questions: auto, between 100 and 500): ")
        and "in 43 documents, 41 with prose, 3 to 6 a document by the square root of its prose" in described
    )
    assert count.as_metadata()["questions_asked"] == count.total


def test_passages_never_come_from_link_tables_link_lists_or_release_notes() -> None:
    text = (
        "# Guide\n\n"
        + made_up_prose(1, 700)
        + "\n\n"
        + link_table(6)
        + "\n\n- [Installing the server on every platform](install.md)\n"
        "- [Tutorial - User Guide: first steps with the framework](tutorial/first-steps.md)\n\n"
        + made_up_prose(2, 700)
        + "\n\n## Changes\n\n"
        "* Fix crash when the configuration file is empty (#123).\n"
        "* Fixed the retry loop that never stopped after a timeout.\n"
        "* ✨ Added a flag that prints the resolved settings before starting.\n\n"
        + made_up_prose(3, 700)
        + "\n"
    )
    corpus = corpus_of({"guide.md": text})
    candidates = candidate_passages(corpus, min_chars=150, max_chars=900)
    assert candidates
    for passage in candidates:
        assert "](" not in passage.span.text and "| ---" not in passage.span.text
        assert "Fix" not in passage.span.text and "Added" not in passage.span.text


@pytest.mark.parametrize(
    ("block", "markup"),
    [
        (link_table(3), [True] * 5),  # a table of links, header and delimiter included
        (
            "| option | default |\n| --- | --- |\n| port | 8000 |\n| docs | [the guide](g.md) |",
            [False] * 3 + [True],
        ),
        ("- [Install](install.md)\n- [Deploy on Linux and macOS](deploy.md)", [True, True]),
        ("- [Deploy](deploy.md): how to run the service behind a proxy with workers", [False]),
        ("See [the settings guide](settings.md).", [True]),
        ("* Fix crash on empty files (#123).\n* Add a timeout. PR #124 by @someone.", [True, True]),
        ("- Fixed the retry loop.\n- Removed Python 3.7 support.\n- Changed the default port.", [True] * 3),
        (
            "## [2.0.0] - 2024-05-01\n### Added\n- New visual identity.\n- A page of tips.",
            [False, False, True, True],
        ),
        ("## 0.110.0\n\n* Allow a prefix on routers.\n  It takes tags too.", [False, True, True]),
        # prose lists stay prose: steps, a list that opens with "Fixed" once, requirements with versions
        ("- Add the import.\n- Create the app.\n- Run the server.", [False] * 3),
        (
            "- Fixed costs are paid monthly.\n- Variable costs follow usage.\n- Overheads are shared.",
            [False] * 3,
        ),
        ("- Python 3.11.4 or later\n- PostgreSQL 16.2.0 with the vector extension", [False] * 2),
        ("## History\n\n- The project started in 2019 as a fork.", [False, False]),
    ],
)
def test_which_lines_are_markup_navigation_or_release_notes(block: str, markup: list[bool]) -> None:
    starts = markup_line_starts(block)
    lines, pos = [], 0
    for line in block.split("\n"):
        lines.append((pos, line))
        pos += len(line) + 1
    shown = [pos in starts for pos, line in lines if line.strip()]
    assert shown == markup, [line for _, line in lines]


def questions_by_document(corpus: Corpus) -> dict[str, list[tuple[str, str]]]:
    result = KnownItemGenerator(seed=13).generate_token_level(corpus, AUTO.question_target())
    grouped: dict[str, list[tuple[str, str]]] = {}
    for e in result.examples:
        grouped.setdefault(e.relevant_spans[0].doc_id, []).append((e.question_id, e.query))
    return grouped


@pytest.mark.parametrize("edit", ["grows twentyfold", "becomes release notes"])
def test_with_the_default_count_editing_one_document_leaves_the_others_questions(edit: str) -> None:
    texts = {f"docs/p{i:02d}.md": page(i, 1_000 + 40 * i) for i in range(50)}
    before = questions_by_document(corpus_of(texts))
    target = "docs/p05.md"
    texts[target] = page(5, 50_000) if edit == "grows twentyfold" else "# Release notes\n\n" + changelog(10)
    after_corpus = corpus_of(texts)
    after = questions_by_document(after_corpus)
    others = set(before) - {target}
    assert len(others) == 49 and {d: before[d] for d in others} == {d: after[d] for d in others}
    # the edit reached its own document's questions, and its quota (2 before: ceil(100 / 50))
    assert before.get(target) != after.get(target)
    assert default_question_count(after_corpus, AUTO).quotas[target] == (
        3 if edit == "grows twentyfold" else 0
    )
