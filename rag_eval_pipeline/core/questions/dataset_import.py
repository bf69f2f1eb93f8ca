"""Importing ground truth from the file formats people already have, into the project's datasets.

- JSONL in the seeds' schema (see ``datasets``): token-level when ``outputs`` has ``relevant_spans``,
  chunk-level when it has ``relevant_chunk_ids``.
- CSV of the public chunking benchmark (Chroma's ``questions.csv``): ``question,references,corpus_id``,
  ``references`` a JSON list of ``{content, start_index, end_index}``, the document ``corpus_id + ".md"``.
- CSV of spans, one row per span: ``question,doc_id,start,end`` with optional ``text`` and
  ``question_id``; rows of the same question become one example with several spans.
- Quoted answers, without offsets (core/questions/excerpt_import.py): a CSV ``question,excerpt`` with optional
  ``doc_id``, ``question_id`` and ``reference_answer`` (one row per excerpt), or a JSONL file of
  ``{"question": ..., "excerpt": "..." or [...], "doc_id": ...}``; each excerpt is located in its
  document (or the corpus) and must occur there exactly once.

Every span is checked against the corpus (``text[start:end]`` must equal the stated text), and an error
names the file, the data row (1 = first row after the header) and the column. A span CSV row with
offsets and no text has nothing to be checked against: it is refused unless ``trust_offsets`` says to
take such offsets as they are (``--trust-offsets``).

A question that names a document the corpus does not have (a benchmark over several corpora, imported
into a project that holds some of them) is an error listing every such document, unless the import keeps
only the questions whose documents are present (``only_present``): then the dropped ones are returned
with the dataset, so the caller can say what was left out. Kept questions keep their ids (a benchmark
row's id is its row number in the file).
"""

from __future__ import annotations

import csv
import json
from collections import Counter
from collections.abc import Collection, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..corpus.corpus import Corpus
from ..errors import DatasetError
from ..types import CharacterSpan, DocumentId, QuestionId
from .datasets import (
    ChunkLevelDataset,
    TokenLevelDataset,
    TokenLevelExample,
    default_question_id,
    read_chunk_level_jsonl,
    read_jsonl_objects,
    token_level_example,
)
from .excerpt_import import QUOTED_COLUMNS, QuotedExcerpt, place_quoted, quoted_csv_rows, quoted_jsonl_rows

JSONL_SUFFIXES = (".jsonl", ".ndjson")
CSV_SUFFIXES = (".csv",)
BENCHMARK_COLUMNS = frozenset({"question", "references", "corpus_id"})
SPAN_COLUMNS = frozenset({"question", "doc_id", "start", "end"})
# Absent documents (and, in the error, questions) named one by one before the rest are counted.
MAX_LISTED = 10


@dataclass(frozen=True)
class AbsentQuestion:
    """A question of the file that names documents the corpus does not have."""

    rows: tuple[int, ...]  # its data rows (CSV) or lines (JSONL)
    where: str  # the first row and column that name an absent document
    documents: tuple[DocumentId, ...]


@dataclass(frozen=True)
class ImportedDataset:
    dataset: TokenLevelDataset | ChunkLevelDataset
    # with ``only_present``: the questions left out because they name documents the corpus lacks
    dropped: tuple[AbsentQuestion, ...] = ()
    # with ``trust_offsets``: the spans taken from offsets alone, checked against no text
    trusted_spans: int = 0

    def absent_documents(self) -> list[tuple[DocumentId, int]]:
        """Each absent document with the number of dropped questions that name it, most first."""
        return absent_documents(self.dropped)


def import_dataset(
    path: str | Path, corpus: Corpus | None, *, only_present: bool = False, trust_offsets: bool = False
) -> TokenLevelDataset | ChunkLevelDataset:
    """The dataset in ``path`` (see ``read_dataset``)."""
    return read_dataset(path, corpus, only_present=only_present, trust_offsets=trust_offsets).dataset


def read_dataset(
    path: str | Path, corpus: Corpus | None, *, only_present: bool = False, trust_offsets: bool = False
) -> ImportedDataset:
    """The dataset in ``path``, its format chosen by extension and then by JSON keys or CSV columns.

    ``corpus`` validates token-level spans; chunk-level ground truth does not need it (``None`` is fine).
    A token-level question naming a document the corpus lacks is an error listing them all, or, with
    ``only_present``, left out and returned in ``dropped``. Offsets without text are refused unless
    ``trust_offsets``.
    """
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix in JSONL_SUFFIXES:
        kind = _jsonl_kind(path)
        if kind == "chunk-level":
            return ImportedDataset(read_chunk_level_jsonl(path))
        corpus = _require(corpus, path)
        if kind == "quoted":
            excerpts = list(quoted_jsonl_rows(read_jsonl_objects(path), str(path)))
            return _quoted(path, corpus, excerpts, only_present)
        dropped = _present_only(path, corpus, *_absent_in_jsonl(path, corpus), only_present)
        return ImportedDataset(_read_token_level_lines(path, corpus, _rows(dropped)), dropped)
    if suffix in CSV_SUFFIXES:
        columns = _csv_columns(path)
        if columns >= BENCHMARK_COLUMNS:
            corpus = _require(corpus, path)
            dropped = _present_only(path, corpus, *_absent_in_benchmark_csv(path, corpus), only_present)
            return ImportedDataset(read_token_level_csv(path, corpus, skip_rows=_rows(dropped)), dropped)
        if columns >= SPAN_COLUMNS:
            corpus = _require(corpus, path)
            dropped = _present_only(path, corpus, *_absent_in_span_csv(path, corpus), only_present)
            dataset = read_span_csv(path, corpus, skip_rows=_rows(dropped), trust_offsets=trust_offsets)
            return ImportedDataset(dataset, dropped, len(_offsets_without_text(path, _rows(dropped))))
        if columns >= QUOTED_COLUMNS:
            corpus = _require(corpus, path)
            excerpts = list(quoted_csv_rows(_csv_rows(path, QUOTED_COLUMNS), str(path)))
            return _quoted(path, corpus, excerpts, only_present)
        raise DatasetError(
            f"{path}: unknown CSV columns {sorted(columns)}; expected "
            f"{','.join(sorted(BENCHMARK_COLUMNS))} (references as a JSON list), "
            f"question,doc_id,start,end[,text][,question_id] (one row per span) or "
            f"question,excerpt[,doc_id][,question_id][,reference_answer] (the quoted answer, located)"
        )
    raise DatasetError(
        f"{path}: unsupported file type {suffix or '(no extension)'!r}; import .jsonl (one JSON example a "
        f"line) or .csv"
    )


def read_token_level_csv(
    path: str | Path,
    corpus: Corpus,
    *,
    id_prefix: str = "q-",
    name: str | None = None,
    skip_rows: Collection[int] = (),
) -> TokenLevelDataset:
    """The benchmark CSV (``question,references,corpus_id``); row n becomes question ``{id_prefix}{n:03d}``.

    A ``question_id`` column, when present and filled, names the question instead. ``skip_rows``: data
    rows left out (their questions name documents the corpus lacks).
    """
    path = Path(path)
    examples: list[TokenLevelExample] = []
    for row_no, row in _csv_rows(path, BENCHMARK_COLUMNS):
        if row_no in skip_rows:
            continue
        question_id = QuestionId(_cell(row, "question_id") or f"{id_prefix}{row_no:03d}")
        where = f"{path}, data row {row_no} ({question_id})"
        corpus_id = _cell(row, "corpus_id")
        doc_id = benchmark_document(corpus_id)
        if doc_id not in corpus:
            raise DatasetError(
                f"{where}: column corpus_id {corpus_id!r} has no file {doc_id} in the corpus at {corpus.root}"
            )
        question = row["question"] or ""
        if not question.strip():
            raise DatasetError(f"{where}: column question is empty")
        text = corpus[doc_id].text
        spans = tuple(
            _reference_span(ref, i, text, doc_id, where)
            for i, ref in enumerate(_references(row["references"] or "", where))
        )
        examples.append(TokenLevelExample(question_id, question, spans, {"corpus_id": corpus_id}))
    return TokenLevelDataset(tuple(examples), name=name or path.stem)


def read_span_csv(
    path: str | Path,
    corpus: Corpus,
    *,
    name: str | None = None,
    skip_rows: Collection[int] = (),
    trust_offsets: bool = False,
) -> TokenLevelDataset:
    """One row per span (``question,doc_id,start,end[,text][,question_id]``), grouped into questions.

    Rows belong to the same question when they share ``question_id`` (or, without that column, the same
    question text); questions keep the order of their first row. ``text`` must equal the document's
    characters, which catches offsets computed on a differently decoded file; rows without it are refused
    (naming them) unless ``trust_offsets``. ``skip_rows``: data rows left out (every row of a question
    that names a document the corpus lacks).
    """
    path = Path(path)
    untrusted = _offsets_without_text(path, skip_rows)
    if untrusted and not trust_offsets:
        _refuse_untrusted_offsets(path, untrusted)
    queries: dict[QuestionId, str] = {}
    spans: dict[QuestionId, list[CharacterSpan]] = {}
    for row_no, row in _csv_rows(path, SPAN_COLUMNS):
        if row_no in skip_rows:
            continue
        where = f"{path}, data row {row_no}"
        question = row["question"] or ""
        if not question.strip():
            raise DatasetError(f"{where}: column question is empty")
        question_id = QuestionId(_cell(row, "question_id") or default_question_id(question))
        if queries.setdefault(question_id, question) != question:
            raise DatasetError(
                f"{where}: question_id {question_id!r} already names another question "
                f"({queries[question_id]!r}); give each question its own id"
            )
        spans.setdefault(question_id, []).append(_row_span(row, corpus, where))
    examples = tuple(TokenLevelExample(qid, queries[qid], tuple(spans[qid]), {}) for qid in queries)
    return TokenLevelDataset(examples, name=name or path.stem)


def _quoted(path: Path, corpus: Corpus, excerpts: list[QuotedExcerpt], only_present: bool) -> ImportedDataset:
    """Quoted questions (core/questions/excerpt_import.py), those naming absent documents handled as for spans."""
    rows: dict[QuestionId, list[QuotedExcerpt]] = {}
    for quoted in excerpts:
        rows.setdefault(quoted.question_id, []).append(quoted)
    absent = []
    for named in rows.values():
        missing = [q for q in named if q.doc_id is not None and q.doc_id not in corpus]
        if missing:
            where = f"{missing[0].where}: column doc_id {missing[0].doc_id!r} is not a document of the corpus"
            documents = tuple(dict.fromkeys(DocumentId(str(q.doc_id)) for q in missing))
            absent.append(AbsentQuestion(tuple(dict.fromkeys(q.row for q in named)), where, documents))
    dropped = _present_only(path, corpus, absent, len(rows), only_present)
    skip = _rows(dropped)
    kept = [q for q in excerpts if q.row not in skip]
    return ImportedDataset(place_quoted(kept, corpus, str(path), path.stem), dropped)


def _offsets_without_text(path: Path, skip_rows: Collection[int]) -> list[int]:
    """The span CSV rows that give offsets and no text to check them against."""
    return [
        row_no
        for row_no, row in _csv_rows(path, SPAN_COLUMNS)
        if row_no not in skip_rows and not (row.get("text") or "")
    ]


def _refuse_untrusted_offsets(path: Path, rows: list[int]) -> None:
    listed = ", ".join(map(str, rows[:MAX_LISTED]))
    listed += f" and {len(rows) - MAX_LISTED} more" if len(rows) > MAX_LISTED else ""
    hint = (
        " (the file has an excerpt column: name it text to check the offsets against it)"
        if "excerpt" in _csv_columns(path)
        else ""
    )
    raise DatasetError(
        f"{path}: data row{'s' * (len(rows) > 1)} {listed} give{'s' * (len(rows) == 1)} start and end but no "
        f"text, so nothing checks that the offsets point at the passage meant (offsets counted in another "
        f"version or encoding of a document point elsewhere without an error){hint}. Add a text column "
        f"holding each span's passage (checked against the document), or give the quoted passage in an "
        f"excerpt column without start and end (located in the document), or pass --trust-offsets to take "
        f"the offsets as they are"
    )


def benchmark_document(corpus_id: str) -> DocumentId:
    """The document a benchmark row's ``corpus_id`` names: the file ``<corpus_id>.md`` of the corpus."""
    return DocumentId(corpus_id + ".md")


def absent_documents(questions: Collection[AbsentQuestion]) -> list[tuple[DocumentId, int]]:
    """Each document the questions name that the corpus lacks, with how many of them name it, most first
    (then by name)."""
    counts = Counter(doc for q in questions for doc in q.documents)
    return sorted(counts.items(), key=lambda item: (-item[1], item[0]))


def _present_only(
    path: Path, corpus: Corpus, absent: list[AbsentQuestion], total: int, only_present: bool
) -> tuple[AbsentQuestion, ...]:
    """The questions to leave out; without ``only_present`` any absent document is an error."""
    if not absent:
        return ()
    documents = absent_documents(absent)
    listed = ", ".join(f"{doc} ({n} question{'s' if n > 1 else ''})" for doc, n in documents[:MAX_LISTED])
    more = f" and {len(documents) - MAX_LISTED} more" if len(documents) > MAX_LISTED else ""
    summary = (
        f"{path}: {len(absent)} of {total} questions name documents that are not in the corpus at "
        f"{corpus.root}: {listed}{more}"
    )
    if not only_present:
        raise DatasetError(
            f"{summary}; first: {absent[0].where}. Add those documents to the corpus, or pass "
            "--only-present to import only the questions whose documents are present"
        )
    if len(absent) == total:
        raise DatasetError(
            f"{summary}: no question is left to import; is this the corpus they were written for?"
        )
    return tuple(absent)


def _rows(questions: Collection[AbsentQuestion]) -> frozenset[int]:
    return frozenset(row for q in questions for row in q.rows)


def _absent_in_benchmark_csv(path: Path, corpus: Corpus) -> tuple[list[AbsentQuestion], int]:
    """The rows whose ``corpus_id`` names no document of the corpus, and how many rows there are."""
    absent, total = [], 0
    for row_no, row in _csv_rows(path, BENCHMARK_COLUMNS):
        total += 1
        corpus_id = _cell(row, "corpus_id")
        doc_id = benchmark_document(corpus_id)
        if doc_id not in corpus:
            question_id = _cell(row, "question_id") or f"q-{row_no:03d}"
            where = f"data row {row_no} ({question_id}): column corpus_id {corpus_id!r} has no file {doc_id}"
            absent.append(AbsentQuestion((row_no,), where, (doc_id,)))
    return absent, total


def _absent_in_span_csv(path: Path, corpus: Corpus) -> tuple[list[AbsentQuestion], int]:
    """The questions (all their rows) with a row whose ``doc_id`` is no document of the corpus, and how
    many questions there are. Rows are grouped as ``read_span_csv`` groups them."""
    rows: dict[str, list[int]] = {}
    missing: dict[str, list[tuple[int, DocumentId]]] = {}
    for row_no, row in _csv_rows(path, SPAN_COLUMNS):
        question = row["question"] or ""
        key = _cell(row, "question_id") or (default_question_id(question) if question.strip() else "")
        rows.setdefault(key, []).append(row_no)
        doc_id = DocumentId(_cell(row, "doc_id"))
        if doc_id not in corpus:
            missing.setdefault(key, []).append((row_no, doc_id))
    absent = [
        AbsentQuestion(
            tuple(rows[key]),
            f"data row {named[0][0]}: column doc_id {named[0][1]!r} is not a document of the corpus",
            tuple(dict.fromkeys(doc for _, doc in named)),
        )
        for key, named in missing.items()
    ]
    return absent, len(rows)


def _absent_in_jsonl(path: Path, corpus: Corpus) -> tuple[list[AbsentQuestion], int]:
    """The examples with a span whose ``doc_id`` is no document of the corpus, and how many examples
    there are. A malformed span is left for the reader to report."""
    absent, total = [], 0
    for line_no, obj in read_jsonl_objects(path):
        total += 1
        outputs = obj.get("outputs")
        spans = outputs.get("relevant_spans") if isinstance(outputs, dict) else None
        named = [
            DocumentId(span["doc_id"])
            for span in (spans if isinstance(spans, list) else ())
            if isinstance(span, dict) and isinstance(span.get("doc_id"), str)
        ]
        documents = tuple(dict.fromkeys(doc for doc in named if doc not in corpus))
        if documents:
            where = f"line {line_no}: field outputs.relevant_spans names {documents[0]!r}, not a document"
            absent.append(AbsentQuestion((line_no,), where, documents))
    return absent, total


def _read_token_level_lines(path: Path, corpus: Corpus, skip_lines: Collection[int]) -> TokenLevelDataset:
    """A token-level JSONL file without ``skip_lines``; every other span checked against ``corpus``."""
    seen: dict[str, str] = {}
    examples = tuple(
        token_level_example(obj, corpus, f"{path}, line {line_no}", seen, f"line {line_no}")
        for line_no, obj in read_jsonl_objects(path)
        if line_no not in skip_lines
    )
    return TokenLevelDataset(examples, name=path.stem)


def _require(corpus: Corpus | None, path: Path) -> Corpus:
    if corpus is None:
        raise DatasetError(f"{path} holds token-level ground truth (character spans): it needs the corpus")
    return corpus


def _jsonl_kind(path: Path) -> str:
    """Token- or chunk-level, from the ``outputs`` keys of the first example."""
    line_no, obj = next(read_jsonl_objects(path))
    outputs = obj.get("outputs")
    keys = set(outputs) if isinstance(outputs, dict) else set()
    if "relevant_spans" in keys:
        return "token-level"
    if "relevant_chunk_ids" in keys:
        return "chunk-level"
    if "outputs" not in obj and "question" in obj:
        return "quoted"
    raise DatasetError(
        f"{path}, line {line_no}: field outputs must hold relevant_spans (token-level) or relevant_chunk_ids "
        f'(chunk-level), or the line must be a quoted question {{"question": ..., "excerpt": ...}}; '
        f"found {sorted(keys) or 'no outputs object'}"
    )


@contextmanager
def _open_csv(path: Path) -> Iterator[csv.DictReader[str]]:
    # utf-8-sig: spreadsheet exports often start with a BOM, which would otherwise glue onto "question"
    try:
        with path.open(encoding="utf-8-sig", newline="") as handle:
            yield csv.DictReader(handle)
    except FileNotFoundError:
        raise DatasetError(f"dataset file {path} does not exist") from None
    except UnicodeDecodeError:
        raise DatasetError(f"dataset file {path} is not UTF-8 text; save it as UTF-8") from None


def _csv_columns(path: Path) -> set[str]:
    with _open_csv(path) as reader:
        return {name.strip() for name in reader.fieldnames or ()}


def _csv_rows(path: Path, required: frozenset[str]) -> Iterator[tuple[int, dict[str, str | None]]]:
    count = 0
    with _open_csv(path) as reader:
        missing = required - {name.strip() for name in reader.fieldnames or ()}
        if missing:
            raise DatasetError(f"{path}: missing column(s) {', '.join(sorted(missing))}")
        try:
            for row_no, raw in enumerate(reader, start=1):
                count += 1
                yield row_no, {(k or "").strip(): v for k, v in raw.items()}
        except csv.Error as exc:
            raise DatasetError(f"{path}, line {reader.line_num}: malformed CSV ({exc})") from None
    if count == 0:
        raise DatasetError(f"dataset file {path} holds no questions")


def _cell(row: dict[str, str | None], column: str) -> str:
    return (row.get(column) or "").strip()


def _references(raw: str, where: str) -> list[Any]:
    try:
        refs = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise DatasetError(f"{where}: column references is not valid JSON ({exc.msg})") from None
    if not isinstance(refs, list) or not refs:
        raise DatasetError(
            f"{where}: column references must be a non-empty JSON list: a question without ground truth "
            f"cannot be scored"
        )
    return refs


def _reference_span(ref: Any, index: int, text: str, doc_id: DocumentId, where: str) -> CharacterSpan:
    where = f"{where}, reference {index}"
    if not isinstance(ref, dict):
        raise DatasetError(f"{where}: expected an object with content, start_index, end_index")
    content, start, end = ref.get("content"), ref.get("start_index"), ref.get("end_index")
    if (
        not isinstance(content, str)
        or not isinstance(start, int)
        or not isinstance(end, int)
        or isinstance(start, bool)
        or isinstance(end, bool)
    ):
        raise DatasetError(f"{where}: content must be a string, start_index and end_index integers")
    return _checked_span(doc_id, start, end, content, text, where, "the CSV says")


def _row_span(row: dict[str, str | None], corpus: Corpus, where: str) -> CharacterSpan:
    doc_id = DocumentId(_cell(row, "doc_id"))
    if doc_id not in corpus:
        raise DatasetError(
            f"{where}: column doc_id {doc_id!r} is not a document of the corpus at {corpus.root}"
        )
    offsets = []
    for column in ("start", "end"):
        value = _cell(row, column)
        try:
            offsets.append(int(value))
        except ValueError:
            raise DatasetError(f"{where}: column {column} must be an integer offset, got {value!r}") from None
    text = corpus[doc_id].text
    start, end = offsets
    stated = row.get("text")
    if stated is None or stated == "":  # no text column, or left empty: trusted (read_span_csv)
        if not 0 <= start < end <= len(text):
            raise DatasetError(
                f"{where}: [{start}:{end}] is empty or outside {doc_id} ({len(text)} characters); fix start/end"
            )
        return CharacterSpan(doc_id, start, end, text[start:end])
    return _checked_span(doc_id, start, end, stated, text, where, "column text says")


def _checked_span(
    doc_id: DocumentId, start: int, end: int, stated: str, text: str, where: str, source: str
) -> CharacterSpan:
    if not 0 <= start < end <= len(text):
        raise DatasetError(f"{where}: [{start}:{end}] is empty or outside {doc_id} ({len(text)} characters)")
    actual = text[start:end]
    if actual != stated:
        found = text.find(stated)
        hint = f" (the text occurs at [{found}:{found + len(stated)}])" if found >= 0 else ""
        raise DatasetError(
            f"{where}: {doc_id}[{start}:{end}] is {_preview(actual)} but {source} {_preview(stated)}{hint}; "
            f"the corpus and the dataset do not belong together"
        )
    return CharacterSpan(doc_id, start, end, stated)


def _preview(text: str, width: int = 60) -> str:
    return repr(text if len(text) <= width else text[: width - 3] + "...")
