"""import_dataset: one entry point for JSONL and the two CSV layouts, with errors that name file, row, column."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from rag_eval_pipeline.core.chunking import FixedSizeChunker, chunk_corpus
from rag_eval_pipeline.core.corpus.corpus import Corpus
from rag_eval_pipeline.core.errors import DatasetError
from rag_eval_pipeline.core.questions.dataset_import import (
    import_dataset,
    read_span_csv,
    read_token_level_csv,
)
from rag_eval_pipeline.core.questions.datasets import (
    ChunkLevelDataset,
    TokenLevelDataset,
    read_token_level_jsonl,
    write_jsonl,
)

CHROMA = Path(__file__).resolve().parents[4] / "shared" / "benchmarks" / "chroma_general"
DOC = "The pump runs at 1,450 rpm. The alarm fires at 7.5 bar. Zoë checks it."


@pytest.fixture
def corpus(tmp_path: Path) -> Corpus:
    folder = tmp_path / "corpus"
    folder.mkdir()
    (folder / "notes.md").write_text(DOC, encoding="utf-8")
    return Corpus.from_folder(folder)


def write_csv(path: Path, header: list[str], rows: list[list[object]], bom: bool = False) -> Path:
    with path.open("w", encoding="utf-8-sig" if bom else "utf-8", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(header)
        writer.writerows(rows)
    return path


def refs(*spans: tuple[int, int]) -> str:
    return json.dumps([{"content": DOC[s:e], "start_index": s, "end_index": e} for s, e in spans])


def test_the_public_benchmark_csv_imports_with_every_reference_checked() -> None:
    corpus = Corpus.from_folder(CHROMA / "corpora")
    dataset = import_dataset(CHROMA / "questions.csv", corpus)
    assert isinstance(dataset, TokenLevelDataset)
    assert len(dataset) == 276
    assert sum(len(e.relevant_spans) for e in dataset) == 452
    assert [e.question_id for e in dataset][:2] == ["q-001", "q-002"]
    with (CHROMA / "questions.csv").open(encoding="utf-8", newline="") as handle:
        first = next(csv.DictReader(handle))
    example = dataset.examples[0]
    assert example.query == first["question"]
    assert example.metadata == {"corpus_id": first["corpus_id"]}
    for span, ref in zip(example.relevant_spans, json.loads(first["references"]), strict=True):
        assert (span.doc_id, span.start, span.end) == (
            first["corpus_id"] + ".md",
            ref["start_index"],
            ref["end_index"],
        )
        assert corpus[span.doc_id].text[span.start : span.end] == ref["content"] == span.text


def test_benchmark_csv_options_and_bom(tmp_path: Path, corpus: Corpus) -> None:
    path = write_csv(
        tmp_path / "qs.csv",
        ["question", "references", "corpus_id", "question_id"],
        [["How fast?", refs((0, 26)), "notes", ""], ["Alarm?", refs((28, 55), (56, 70)), "notes", "alarm"]],
        bom=True,  # a spreadsheet export: the BOM must not hide the "question" column
    )
    dataset = read_token_level_csv(path, corpus, id_prefix="bench-", name="bench")
    assert dataset.name == "bench"
    assert [e.question_id for e in dataset] == ["bench-001", "alarm"]
    assert [s.text for s in dataset.examples[1].relevant_spans] == [
        "The alarm fires at 7.5 bar.",
        "Zoë checks it.",
    ]


def test_span_csv_groups_rows_by_question_and_text_is_optional(tmp_path: Path, corpus: Corpus) -> None:
    path = write_csv(
        tmp_path / "spans.csv",
        ["question", "doc_id", "start", "end", "text"],
        [
            ["How fast?", "notes.md", 0, 26, DOC[0:26]],
            ["Who and when?", "notes.md", 56, 70, ""],  # empty text: the offsets alone define the span
            ["How fast?", "notes.md", 28, 55, DOC[28:55]],
        ],
    )
    dataset = import_dataset(path, corpus, trust_offsets=True)
    assert isinstance(dataset, TokenLevelDataset)
    assert [e.query for e in dataset] == ["How fast?", "Who and when?"]
    assert [(s.start, s.end) for s in dataset.examples[0].relevant_spans] == [(0, 26), (28, 55)]
    assert dataset.examples[1].relevant_spans[0].text == "Zoë checks it."
    # question ids are stable content hashes when the file has none, as for JSONL
    trusted = read_span_csv(path, corpus, trust_offsets=True)
    assert trusted.examples[0].question_id == dataset.examples[0].question_id


def test_jsonl_of_either_level_is_detected_and_round_trips(tmp_path: Path, corpus: Corpus) -> None:
    path = write_csv(
        tmp_path / "spans.csv", ["question", "doc_id", "start", "end"], [["How fast?", "notes.md", 0, 26]]
    )
    token = import_dataset(path, corpus, trust_offsets=True)
    assert isinstance(token, TokenLevelDataset)
    write_jsonl(token, tmp_path / "token.jsonl")
    assert import_dataset(tmp_path / "token.jsonl", corpus).examples == token.examples

    chunker = FixedSizeChunker(20, 0)
    chunk = token.to_chunk_level(chunk_corpus(chunker, corpus), chunker.fingerprint)
    write_jsonl(chunk, tmp_path / "chunk.jsonl")
    loaded = import_dataset(tmp_path / "chunk.jsonl", None)  # chunk ids need no corpus
    assert isinstance(loaded, ChunkLevelDataset)
    assert loaded.examples == chunk.examples
    assert loaded.chunker_fingerprint == chunker.fingerprint
    assert read_token_level_jsonl(tmp_path / "token.jsonl", corpus).sha256 == token.sha256


@pytest.mark.parametrize(
    ("name", "header", "rows", "message"),
    [
        (
            "refs.csv",
            ["question", "references", "corpus_id"],
            [
                ["How fast?", refs((0, 26)), "notes"],
                ["Alarm?", refs((28, 55)).replace("alarm", "alert"), "notes"],
            ],
            r"refs.csv, data row 2 \(q-002\), reference 0: notes.md\[28:55\] is 'The alarm fires at 7.5 bar.' "
            r"but the CSV says 'The alert fires",
        ),
        (
            "refs.csv",
            ["question", "references", "corpus_id"],
            [["How fast?", "[{oops", "notes"]],
            r"data row 1 \(q-001\): column references is not valid JSON",
        ),
        (
            "refs.csv",
            ["question", "references", "corpus_id"],
            [["How fast?", "[]", "notes"]],
            r"data row 1 \(q-001\): column references must be a non-empty JSON list",
        ),
        (
            "refs.csv",
            ["question", "references", "corpus_id"],
            [["How fast?", refs((0, 26)), "manual"]],
            r"data row 1 \(q-001\): column corpus_id 'manual' has no file manual.md",
        ),
        (
            "spans.csv",
            ["question", "doc_id", "start", "end"],
            [["How fast?", "notes.md", "zero", 26]],
            r"spans.csv, data row 1: column start must be an integer offset, got 'zero'",
        ),
        (
            "spans.csv",
            ["question", "doc_id", "start", "end", "text"],
            [["How fast?", "notes.md", 0, 26, "ok"], ["Q2", "notes.md", 1, 5, "The "]],
            r"spans.csv, data row 1: notes.md\[0:26\] is 'The pump runs at 1,450 rpm' but column text says 'ok'",
        ),
        (
            "spans.csv",
            ["question", "doc_id", "start", "end"],
            [["How fast?", "other.md", 0, 5]],
            r"data row 1: column doc_id 'other.md' is not a document of the corpus",
        ),
        (
            "spans.csv",
            ["question", "doc_id", "start", "end"],
            [["How fast?", "notes.md", 60, 900]],
            r"data row 1: \[60:900\] is empty or outside notes.md",
        ),
        (
            "spans.csv",
            ["question", "doc_id", "start", "end", "question_id"],
            [["How fast?", "notes.md", 0, 5, "q1"], ["Why?", "notes.md", 0, 5, "q1"]],
            r"data row 2: question_id 'q1' already names another question",
        ),
        (
            "other.csv",
            ["question", "answer"],
            [["How fast?", "1450"]],
            r"other.csv: unknown CSV columns \['answer', 'question'\]",
        ),
        ("empty.csv", ["question", "doc_id", "start", "end"], [], r"empty.csv holds no questions"),
    ],
)
def test_csv_errors_name_file_row_and_column(
    tmp_path: Path, corpus: Corpus, name: str, header: list[str], rows: list[list[object]], message: str
) -> None:
    with pytest.raises(DatasetError, match=message):  # offsets without text trusted: the other checks
        import_dataset(write_csv(tmp_path / name, header, rows), corpus, trust_offsets=True)


def test_file_level_errors(tmp_path: Path, corpus: Corpus) -> None:
    with pytest.raises(DatasetError, match=r"missing.csv does not exist"):
        import_dataset(tmp_path / "missing.csv", corpus)
    (tmp_path / "data.xlsx").write_bytes(b"PK")
    with pytest.raises(DatasetError, match=r"unsupported file type '.xlsx'; import .jsonl .* or .csv"):
        import_dataset(tmp_path / "data.xlsx", corpus)
    (tmp_path / "latin1.csv").write_bytes(
        "question,doc_id,start,end\nZo\xeb,notes.md,0,5\n".encode("latin-1")
    )
    with pytest.raises(DatasetError, match=r"latin1.csv is not UTF-8 text"):
        import_dataset(tmp_path / "latin1.csv", corpus)
    (tmp_path / "odd.jsonl").write_text(
        '\n{"inputs": {"query": "q"}, "outputs": {"answer": "x"}}\n', encoding="utf-8"
    )
    with pytest.raises(
        DatasetError, match=r"odd.jsonl, line 2: field outputs must hold relevant_spans .*found \['answer'\]"
    ):
        import_dataset(tmp_path / "odd.jsonl", corpus)
    (tmp_path / "bad.jsonl").write_text("{not json\n", encoding="utf-8")
    with pytest.raises(DatasetError, match=r"bad.jsonl, line 1: not valid JSON"):
        import_dataset(tmp_path / "bad.jsonl", corpus)
    path = write_csv(
        tmp_path / "spans.csv", ["question", "doc_id", "start", "end"], [["How fast?", "notes.md", 0, 26]]
    )
    with pytest.raises(
        DatasetError, match=r"spans.csv holds token-level ground truth .*: it needs the corpus"
    ):
        import_dataset(path, None)
