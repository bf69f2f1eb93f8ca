"""Issue 31: real questions come with the quoted passage that answers them, not with offsets. Each
excerpt is located as the LLM generator locates its quotes; one that occurs nowhere or in several places
is an error listing every such row, its document and where the copies are; nothing is imported."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from rag_eval_pipeline.core.corpus.corpus import Corpus
from rag_eval_pipeline.core.errors import DatasetError
from rag_eval_pipeline.core.generation.excerpts import excerpt_occurrences
from rag_eval_pipeline.core.questions.dataset_import import import_dataset, read_dataset
from rag_eval_pipeline.core.questions.datasets import TokenLevelDataset
from rag_eval_pipeline.core.types import DocumentId

GUIDE = (
    "# Pumps\n\n"
    "The main pump runs at 1,450 rpm and is serviced every 90 days.\n\n"
    'Operators call the bypass the "quiet line" because it\n'
    "carries no **pressure sensor** at all.\n\n"
    "Check the strainer before every start. The strainer clogs in spring.\n\n"
    "A pressure alarm fires at 7.5 bar. Check the strainer before every start.\n"
)
FAQ = (
    "# FAQ\n\n"
    "Who leads the night shift? Zoë Mbeki leads the night shift from 22:00.\n\n"
    "Spare seals are kept in cabinet C-3 next to the workshop door.\n\n"
    "CHECK THE STRAINER BEFORE EVERY START, the poster says.\n"
)


@pytest.fixture
def corpus(tmp_path: Path) -> Corpus:
    folder = tmp_path / "corpus"
    folder.mkdir()
    (folder / "guide.md").write_text(GUIDE, encoding="utf-8")
    (folder / "faq.md").write_text(FAQ, encoding="utf-8")
    return Corpus.from_folder(folder)


def quoted_csv(path: Path, rows: list[dict[str, str]]) -> Path:
    columns = ["question", "excerpt", *sorted({k for row in rows for k in row} - {"question", "excerpt"})]
    with path.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=columns)
        writer.writeheader()
        writer.writerows(rows)
    return path


def only_dataset(path: Path, corpus: Corpus) -> TokenLevelDataset:
    dataset = import_dataset(path, corpus)
    assert isinstance(dataset, TokenLevelDataset)
    return dataset


@pytest.mark.parametrize("doc_id", ["guide.md", ""])
def test_an_excerpt_that_occurs_once_becomes_its_span_with_or_without_its_document(
    tmp_path: Path, corpus: Corpus, doc_id: str
) -> None:
    path = quoted_csv(
        tmp_path / "qs.csv",
        [{"question": "How fast does the main pump run?", "excerpt": "runs at 1,450 rpm", "doc_id": doc_id}],
    )
    (example,) = only_dataset(path, corpus).examples
    start = GUIDE.index("runs at 1,450 rpm")
    assert [(s.doc_id, s.start, s.end, s.text) for s in example.relevant_spans] == [
        ("guide.md", start, start + len("runs at 1,450 rpm"), "runs at 1,450 rpm")
    ]
    assert example.metadata["excerpt_match"] == "exact"


def test_whitespace_quotes_markers_and_case_are_normalised_as_the_locator_does(
    tmp_path: Path, corpus: Corpus
) -> None:
    """The quote re-flows a hard-wrapped line, curls the quotes, drops the ** markers, changes case."""
    quote = "operators call the bypass the “quiet line” because it carries no pressure sensor"
    path = quoted_csv(
        tmp_path / "qs.csv", [{"question": "Why is it called the quiet line?", "excerpt": quote}]
    )
    (example,) = only_dataset(path, corpus).examples
    (span,) = example.relevant_spans
    assert span.text == 'Operators call the bypass the "quiet line" because it\ncarries no **pressure sensor'
    assert GUIDE[span.start : span.end] == span.text  # real document text, original offsets
    assert example.metadata["excerpt_match"] == "normalised"


def test_an_excerpt_cut_with_an_ellipsis_gives_one_span_per_part(tmp_path: Path, corpus: Corpus) -> None:
    path = tmp_path / "qs.jsonl"
    line = {
        "question": "Pump facts?",
        "excerpt": "The main pump runs at 1,450 rpm ... serviced every 90 days",
    }
    path.write_text(json.dumps(line) + "\n", encoding="utf-8")
    (example,) = only_dataset(path, corpus).examples
    assert [s.text for s in example.relevant_spans] == [
        "The main pump runs at 1,450 rpm",
        "serviced every 90 days",
    ]


def test_two_occurrences_are_an_error_listing_the_row_the_document_and_both_places(
    tmp_path: Path, corpus: Corpus
) -> None:
    excerpt = "Check the strainer before every start."
    first = GUIDE.index(excerpt)
    second = GUIDE.index(excerpt, first + 1)
    path = quoted_csv(
        tmp_path / "qs.csv",
        [
            {"question": "How fast?", "excerpt": "runs at 1,450 rpm", "doc_id": "guide.md"},
            {"question": "When is the strainer checked?", "excerpt": excerpt, "doc_id": "guide.md"},
        ],
    )
    with pytest.raises(DatasetError) as raised:
        import_dataset(path, corpus)
    message = str(raised.value)
    assert f"{path}: 1 of 2 excerpts are not found exactly once in the corpus" in message
    assert "nothing was imported" in message
    assert (
        "data row 2 (q_" in message
        and f"occurs 2 times: guide.md [{first}:{first + len(excerpt) - 1}], "
        f"guide.md [{second}:{second + len(excerpt) - 1}]; quote more of the passage"
        in message
    )


def test_without_a_document_copies_in_other_documents_count_even_in_capitals(
    tmp_path: Path, corpus: Corpus
) -> None:
    """The FAQ's poster line differs only in case: a reader could not tell the copies apart."""
    path = quoted_csv(
        tmp_path / "qs.csv",
        [{"question": "What does the poster say?", "excerpt": "check the strainer before every start"}],
    )
    with pytest.raises(
        DatasetError,
        match=r"occurs 3 times: faq\.md \[\d+:\d+\], guide\.md .* or name its document in doc_id",
    ):
        import_dataset(path, corpus)
    # naming the document narrows the search to it: one copy there
    named = quoted_csv(
        tmp_path / "named.csv",
        [
            {
                "question": "What does the poster say?",
                "excerpt": "check the strainer before every start",
                "doc_id": "faq.md",
            }
        ],
    )
    (example,) = only_dataset(named, corpus).examples
    assert [s.text for s in example.relevant_spans] == ["CHECK THE STRAINER BEFORE EVERY START"]


def test_an_excerpt_found_nowhere_is_an_error_saying_why(tmp_path: Path, corpus: Corpus) -> None:
    path = quoted_csv(
        tmp_path / "qs.csv",
        [
            {
                "question": "Where are the seals?",
                "excerpt": "Spare seals are kept in cabinet C-4",
                "doc_id": "faq.md",
            },
            {"question": "Where are the gaskets?", "excerpt": "Gaskets are kept in the store room"},
            {
                "question": "Who leads nights?",
                "excerpt": "Zoë Mbeki leads the night shift",
                "doc_id": "guide.md",
            },
            {"question": "What rpm?", "excerpt": "1,450 rpm"},
        ],
    )
    with pytest.raises(DatasetError) as raised:
        import_dataset(path, corpus)
    message = str(raised.value)
    assert "4 of 4 excerpts are not found exactly once" in message
    assert (
        "data row 1 (" in message
        and "is not in faq.md: even normalised, its longest prefix that occurs is" in message
    )
    assert "then the excerpt reads '4'" in message  # where the quote and the document part ways
    assert "data row 2 (" in message and "is in none of the 2 documents" in message
    assert "data row 3 (" in message and "is not in guide.md" in message and "(it is in faq.md [" in message
    assert "data row 4 (" in message and "too short to name one place: it has 9 characters" in message


def test_rows_of_one_question_join_and_jsonl_carries_answer_and_several_excerpts(
    tmp_path: Path, corpus: Corpus
) -> None:
    rows = quoted_csv(
        tmp_path / "qs.csv",
        [
            {"question": "Pump and alarm?", "excerpt": "serviced every 90 days", "question_id": "p1"},
            {
                "question": "Pump and alarm?",
                "excerpt": "A pressure alarm fires at 7.5 bar",
                "question_id": "p1",
                "reference_answer": "Every 90 days; at 7.5 bar.",
            },
        ],
    )
    (example,) = only_dataset(rows, corpus).examples
    assert example.question_id == "p1" and example.reference_answer == "Every 90 days; at 7.5 bar."
    assert [s.text for s in example.relevant_spans] == [
        "serviced every 90 days",
        "A pressure alarm fires at 7.5 bar",
    ]
    lines = tmp_path / "qs.jsonl"
    lines.write_text(
        json.dumps(
            {
                "question": "Pump and alarm?",
                "excerpt": ["serviced every 90 days", "A pressure alarm fires at 7.5 bar"],
                "doc_id": "guide.md",
                "question_id": "p1",
                "reference_answer": "Every 90 days; at 7.5 bar.",
            }
        )
        + "\n",
        encoding="utf-8",
    )
    assert only_dataset(lines, corpus).examples == (example,)
    lines.write_text(json.dumps({"question": "Q?", "excerpts": ["x"]}) + "\n", encoding="utf-8")
    with pytest.raises(
        DatasetError, match=r"qs.jsonl, line 1: unknown field\(s\) excerpts; a quoted question has doc_id"
    ):
        import_dataset(lines, corpus)


def test_a_named_document_that_is_absent_is_dropped_with_only_present(tmp_path: Path, corpus: Corpus) -> None:
    path = quoted_csv(
        tmp_path / "qs.csv",
        [
            {"question": "How fast?", "excerpt": "runs at 1,450 rpm", "doc_id": "guide.md"},
            {"question": "Elsewhere?", "excerpt": "a passage of another corpus", "doc_id": "other.md"},
        ],
    )
    with pytest.raises(
        DatasetError, match=r"1 of 2 questions name documents that are not in the corpus.*other.md"
    ):
        import_dataset(path, corpus)
    imported = read_dataset(path, corpus, only_present=True)
    assert [e.query for e in imported.dataset] == ["How fast?"]
    assert imported.absent_documents() == [(DocumentId("other.md"), 1)]


def test_occurrences_overlap_and_a_later_part_must_follow_the_first() -> None:
    text = "abc abc abc abc abc. Then the end of the story. abc abc abc abc abc."
    starts = [s[0].start for s in excerpt_occurrences(DocumentId("d"), text, "abc abc abc abc")]
    assert starts == [0, 4, 48, 52]  # overlapping copies count
    placed = excerpt_occurrences(DocumentId("d"), text, "abc abc abc abc ... the end of the story")
    assert [[(s.start, s.end) for s in spans] for spans in placed] == [
        [(0, 15), (26, 46)],
        [(4, 19), (26, 46)],
    ]


def test_offsets_without_text_are_refused_unless_trusted(tmp_path: Path, corpus: Corpus) -> None:
    path = tmp_path / "spans.csv"
    start = GUIDE.index("The main pump")
    path.write_text(
        "question,doc_id,start,end,text\n"
        f"How fast?,guide.md,{start},{start + 31},The main pump runs at 1,450 rpm\n"
        f"Who?,faq.md,3,10,\n"
        f"Where?,faq.md,12,40,\n",
        encoding="utf-8",
    )
    path.write_text(
        path.read_text(encoding="utf-8").replace(
            "The main pump runs at 1,450 rpm", '"The main pump runs at 1,450 rpm"'
        ),
        encoding="utf-8",
    )
    with pytest.raises(
        DatasetError, match=r"spans.csv: data rows 2, 3 give start and end but no text, .* --trust-offsets"
    ):
        import_dataset(path, corpus)
    trusted = read_dataset(path, corpus, trust_offsets=True)
    assert trusted.trusted_spans == 2 and len(trusted.dataset) == 3
