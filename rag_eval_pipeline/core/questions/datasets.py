"""Evaluation datasets in the seeds' schema, one JSON object per line:

token-level: ``{"inputs": {"query"}, "outputs": {"relevant_spans": [{"doc_id","start","end","text"}]},
"metadata": {...}}``; chunk-level: ``outputs.relevant_chunk_ids`` instead. Either may also carry
``outputs.reference_answer`` (a short correct answer) and ``outputs.expected_keywords`` (facts a correct
answer must contain), for judging generated answers. Loading validates every example against the corpus
(spans inside their document, text equal to the document's characters), and an invalid example is an
error naming the file, line and field.

Documents change under a dataset. The loader is told which documents ``changed`` since the dataset's
spans were written (core/questions/reanchor.py knows: the document hashes recorded when the dataset last loaded
cleanly). Only a span in such a document may disagree with the corpus (its document gone, its offsets
past the new end, or other text there): it is kept as the dataset states it, for ``reanchor_examples``
to move or declare stale. Everywhere else a disagreement is a mistake in the dataset and raises as
before, and a span is always checked for what no edit of the corpus explains: its JSON types, start <
end, and a text as long as [start:end]. So a typo in the dataset fails loudly; an edited document
re-anchors.

The dataset hash ``sha256`` covers the questions and their retrieval ground truth only, so adding or
editing reference answers keeps retrieval runs comparable; ``answers_sha256`` tracks the answers.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Generic, TypeVar

from ..corpus.corpus import Corpus
from ..errors import DatasetError
from ..redaction import redact_value
from ..store.files import write_atomically
from ..types import (
    CharacterSpan,
    ChunkId,
    DocumentId,
    EvaluationType,
    PositionAwareChunk,
    QuestionId,
    sha256_hex,
)

# The outputs that judge answers, not retrieval: optional, and outside the dataset's ``sha256``.
ANSWER_FIELDS = ("reference_answer", "expected_keywords")


@dataclass(frozen=True)
class TokenLevelExample:
    question_id: QuestionId
    query: str
    relevant_spans: tuple[CharacterSpan, ...]
    metadata: Mapping[str, Any] = field(default_factory=dict, compare=False)
    reference_answer: str | None = field(default=None, kw_only=True)
    expected_keywords: tuple[str, ...] = field(default=(), kw_only=True)

    def __post_init__(self) -> None:
        _check_answer_fields(self.question_id, self.reference_answer, self.expected_keywords)

    def to_json(self) -> dict[str, Any]:
        outputs: dict[str, Any] = {
            "relevant_spans": [
                {"doc_id": s.doc_id, "start": s.start, "end": s.end, "text": s.text}
                for s in self.relevant_spans
            ]
        }
        return {
            "inputs": {"query": self.query},
            "outputs": _with_answer(outputs, self.reference_answer, self.expected_keywords),
            "metadata": {**self.metadata, "question_id": self.question_id},
        }


@dataclass(frozen=True)
class ChunkLevelExample:
    question_id: QuestionId
    query: str
    relevant_chunk_ids: tuple[ChunkId, ...]
    metadata: Mapping[str, Any] = field(default_factory=dict, compare=False)
    reference_answer: str | None = field(default=None, kw_only=True)
    expected_keywords: tuple[str, ...] = field(default=(), kw_only=True)

    def __post_init__(self) -> None:
        _check_answer_fields(self.question_id, self.reference_answer, self.expected_keywords)

    def to_json(self) -> dict[str, Any]:
        return {
            "inputs": {"query": self.query},
            "outputs": _with_answer(
                {"relevant_chunk_ids": list(self.relevant_chunk_ids)},
                self.reference_answer,
                self.expected_keywords,
            ),
            "metadata": {**self.metadata, "question_id": self.question_id},
        }


def _with_answer(
    outputs: dict[str, Any], reference_answer: str | None, expected_keywords: tuple[str, ...]
) -> dict[str, Any]:
    """Answer fields only when set, so a dataset without answers is written exactly as before."""
    if reference_answer is not None:
        outputs["reference_answer"] = reference_answer
    if expected_keywords:
        outputs["expected_keywords"] = list(expected_keywords)
    return outputs


def _check_answer_fields(
    question_id: str, reference_answer: str | None, expected_keywords: tuple[str, ...]
) -> None:
    """Refuse at construction what the reader would refuse, so ``write_jsonl`` never writes an unreadable file."""
    if reference_answer is not None and (
        not isinstance(reference_answer, str) or not reference_answer.strip()
    ):
        raise DatasetError(
            f"question {question_id!r}: reference_answer must be a non-empty string or None, "
            f"got {reference_answer!r}"
        )
    if not isinstance(expected_keywords, tuple) or not all(
        isinstance(k, str) and k.strip() for k in expected_keywords
    ):
        raise DatasetError(
            f"question {question_id!r}: expected_keywords must be a tuple of non-empty strings, "
            f"got {expected_keywords!r}"
        )


def _dataset_hash(examples: Iterable[TokenLevelExample | ChunkLevelExample]) -> str:
    digest = hashlib.sha256()
    for example in examples:
        payload = example.to_json()
        payload["metadata"] = {"question_id": example.question_id}  # metadata does not change the truth
        for key in ANSWER_FIELDS:  # nor do answers: retrieval history stays comparable
            payload["outputs"].pop(key, None)
        digest.update(json.dumps(payload, sort_keys=True, ensure_ascii=False).encode())
    return digest.hexdigest()[:16]


def _answers_hash(examples: Iterable[TokenLevelExample | ChunkLevelExample]) -> str:
    digest = hashlib.sha256()
    for example in examples:
        payload = {
            "question_id": example.question_id,
            "reference_answer": example.reference_answer,
            "expected_keywords": list(example.expected_keywords),
        }
        digest.update(json.dumps(payload, sort_keys=True, ensure_ascii=False).encode())
    return digest.hexdigest()[:16]


ExampleT = TypeVar("ExampleT", TokenLevelExample, ChunkLevelExample)


@dataclass(frozen=True)
class _Dataset(Generic[ExampleT]):
    examples: tuple[ExampleT, ...]
    name: str = field(default="dataset", kw_only=True)

    def __post_init__(self) -> None:
        _check_unique_ids(self.examples, self.name)

    def __iter__(self) -> Iterator[ExampleT]:
        return iter(self.examples)

    def __len__(self) -> int:
        return len(self.examples)

    @property
    def sha256(self) -> str:
        """Hash of the questions and their retrieval ground truth (not the metadata, not the answers)."""
        return _dataset_hash(self.examples)

    @property
    def answers_sha256(self) -> str:
        """Hash of the question ids with their reference answers and expected keywords: changes when an
        answer is added, edited or removed, so answer scores are compared only against the same answers."""
        return _answers_hash(self.examples)


@dataclass(frozen=True)
class TokenLevelDataset(_Dataset[TokenLevelExample]):
    """Ground truth as character spans: independent of any chunker."""

    name: str = field(default="token-level", kw_only=True)
    evaluation_type: ClassVar[EvaluationType] = "token-level"

    def to_chunk_level(
        self, chunks: Sequence[PositionAwareChunk], chunker_fingerprint: str
    ) -> ChunkLevelDataset:
        """The same questions judged by chunk IDs: a chunk is relevant when it overlaps a reference span."""
        from ..spans import ChunkSpanIndex
        from .ground_truth import relevant_chunk_ids

        index = ChunkSpanIndex(chunks)
        examples = tuple(
            ChunkLevelExample(
                e.question_id,
                e.query,
                tuple(relevant_chunk_ids(e.relevant_spans, index)),
                {**e.metadata, "derived_from": "token-level"},
                reference_answer=e.reference_answer,
                expected_keywords=e.expected_keywords,
            )
            for e in self.examples
        )
        return ChunkLevelDataset(examples, chunker_fingerprint, name=f"{self.name}@chunks")


@dataclass(frozen=True)
class ChunkLevelDataset(_Dataset[ChunkLevelExample]):
    """Ground truth as chunk IDs: only meaningful for the chunker that produced those IDs."""

    chunker_fingerprint: str
    name: str = field(default="chunk-level", kw_only=True)
    evaluation_type: ClassVar[EvaluationType] = "chunk-level"


def _check_unique_ids(examples: Sequence[TokenLevelExample | ChunkLevelExample], name: str) -> None:
    seen: set[str] = set()
    for example in examples:
        if example.question_id in seen:
            raise DatasetError(f"dataset {name}: question id {example.question_id!r} occurs twice")
        seen.add(example.question_id)


def default_question_id(query: str) -> QuestionId:
    return QuestionId("q_" + sha256_hex(query)[:12])


def token_level_example(
    obj: dict[str, Any],
    corpus: Corpus,
    where: str,
    seen: dict[str, str],
    place: str,
    *,
    changed: Collection[str] = (),
) -> TokenLevelExample:
    """One example object, every span checked against ``corpus`` (spans in a ``changed`` document only
    for their form: see the module docstring); ``seen`` maps the question ids met so far to their
    ``place`` (a line, a LangSmith example), so a repeated id names both."""
    query, metadata, outputs = _common_fields(obj, where)
    raw_spans = outputs.get("relevant_spans")
    if not isinstance(raw_spans, list) or not raw_spans:
        raise DatasetError(
            f"{where}: field outputs.relevant_spans must be a non-empty list: a question without "
            f"ground truth cannot be scored; add its spans or remove the question"
        )
    spans = tuple(
        _span(raw, corpus, f"{where}: field outputs.relevant_spans[{i}]", changed)
        for i, raw in enumerate(raw_spans)
    )
    reference_answer, expected_keywords = _answer_fields(outputs, where)
    return TokenLevelExample(
        _question_id(metadata, query, where, seen, place),
        query,
        spans,
        metadata,
        reference_answer=reference_answer,
        expected_keywords=expected_keywords,
    )


def chunk_level_example(
    obj: dict[str, Any], where: str, seen: dict[str, str], place: str
) -> ChunkLevelExample:
    query, metadata, outputs = _common_fields(obj, where)
    ids = outputs.get("relevant_chunk_ids")
    if not isinstance(ids, list) or not ids or not all(isinstance(i, str) and i for i in ids):
        raise DatasetError(f"{where}: field outputs.relevant_chunk_ids must be a non-empty list of chunk ids")
    reference_answer, expected_keywords = _answer_fields(outputs, where)
    question_id = _question_id(metadata, query, where, seen, place)
    return ChunkLevelExample(
        question_id,
        query,
        tuple(ChunkId(i) for i in ids),
        metadata,
        reference_answer=reference_answer,
        expected_keywords=expected_keywords,
    )


def read_token_level_jsonl(path: str | Path, corpus: Corpus) -> TokenLevelDataset:
    """Every span must match ``corpus`` exactly (core/questions/reanchor.py loads against a changed corpus)."""
    return TokenLevelDataset(read_token_level_examples(path, corpus), name=Path(path).stem)


def read_token_level_examples(
    path: str | Path, corpus: Corpus, changed: Collection[str] = ()
) -> tuple[TokenLevelExample, ...]:
    """The examples of a file in order; spans in ``changed`` documents are not yet checked against
    the corpus (see the module docstring)."""
    seen: dict[str, str] = {}
    return tuple(
        token_level_example(obj, corpus, f"{path}, line {line_no}", seen, f"line {line_no}", changed=changed)
        for line_no, obj in read_jsonl_objects(path)
    )


def read_chunk_level_jsonl(path: str | Path, chunker_fingerprint: str | None = None) -> ChunkLevelDataset:
    """``chunker_fingerprint`` defaults to the one every example's metadata records."""
    seen: dict[str, str] = {}
    examples = tuple(
        chunk_level_example(obj, f"{path}, line {line_no}", seen, f"line {line_no}")
        for line_no, obj in read_jsonl_objects(path)
    )
    fingerprints = {
        str(e.metadata["chunker_fingerprint"]) for e in examples if "chunker_fingerprint" in e.metadata
    }
    if chunker_fingerprint is None:
        if len(fingerprints) != 1:
            raise DatasetError(
                f"{path}: chunk-level ground truth must record the chunker it was made with "
                f"(metadata.chunker_fingerprint, one value for the whole file); found {sorted(fingerprints)}"
            )
        chunker_fingerprint = fingerprints.pop()
    return ChunkLevelDataset(examples, chunker_fingerprint, name=Path(path).stem)


def write_jsonl(dataset: TokenLevelDataset | ChunkLevelDataset, path: str | Path) -> None:
    """Write to a temporary name and rename, so a killed run never leaves half a dataset (a failed
    write raises ``StorageError`` and leaves the old file)."""

    def write(tmp: Path) -> None:
        with tmp.open("w", encoding="utf-8", newline="\n") as out:
            for example in dataset.examples:
                obj = example.to_json()
                if isinstance(dataset, ChunkLevelDataset):
                    obj["metadata"]["chunker_fingerprint"] = dataset.chunker_fingerprint
                out.write(json.dumps(redact_value(obj), ensure_ascii=False) + "\n")  # no secret in a dataset

    write_atomically(Path(path), write)


def read_jsonl_objects(path: str | Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, object) for every non-blank line; errors name the file and line."""
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        raise DatasetError(f"dataset file {path} does not exist") from None
    except UnicodeDecodeError:
        raise DatasetError(f"dataset file {path} is not UTF-8 text") from None
    count = 0
    for line_no, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            raise DatasetError(
                f"{path}, line {line_no}: not valid JSON ({exc.msg} at column {exc.colno})"
            ) from None
        if not isinstance(obj, dict):
            raise DatasetError(f"{path}, line {line_no}: expected a JSON object with inputs/outputs/metadata")
        count += 1
        yield line_no, obj
    if count == 0:
        raise DatasetError(f"dataset file {path} holds no examples")


def _common_fields(obj: dict[str, Any], where: str) -> tuple[str, dict[str, Any], dict[str, Any]]:
    inputs = obj.get("inputs")
    if (
        not isinstance(inputs, dict)
        or not isinstance(inputs.get("query"), str)
        or not inputs["query"].strip()
    ):
        raise DatasetError(f"{where}: field inputs.query must be a non-empty string")
    outputs = obj.get("outputs")
    if not isinstance(outputs, dict):
        raise DatasetError(f"{where}: field outputs must be an object")
    metadata = obj.get("metadata", {})
    if not isinstance(metadata, dict):
        raise DatasetError(f"{where}: field metadata must be an object")
    return inputs["query"], metadata, outputs


def _answer_fields(outputs: dict[str, Any], where: str) -> tuple[str | None, tuple[str, ...]]:
    """The optional answer outputs; JSON ``null`` counts as absent (what table exports write for none)."""
    answer = outputs.get("reference_answer")
    if answer is not None and (not isinstance(answer, str) or not answer.strip()):
        raise DatasetError(
            f"{where}: field outputs.reference_answer must be a non-empty string, got {_kind(answer)}; "
            f"write the answer or leave the field out"
        )
    keywords = outputs.get("expected_keywords")
    if keywords is None:
        return answer, ()
    if not isinstance(keywords, list) or not keywords:
        raise DatasetError(
            f"{where}: field outputs.expected_keywords must be a non-empty list of strings, got "
            f"{_kind(keywords)}; list the facts a correct answer must contain or leave the field out"
        )
    for i, keyword in enumerate(keywords):
        if not isinstance(keyword, str) or not keyword.strip():
            raise DatasetError(
                f"{where}: field outputs.expected_keywords[{i}] must be a non-empty string, got {_kind(keyword)}"
            )
    return answer, tuple(keywords)


def _question_id(
    metadata: dict[str, Any], query: str, where: str, seen: dict[str, str], place: str
) -> QuestionId:
    question_id = QuestionId(str(metadata.get("question_id") or default_question_id(query)))
    if question_id in seen:
        raise DatasetError(
            f"{where}: field metadata.question_id {question_id!r} already used on {seen[question_id]}"
        )
    seen[question_id] = place
    return question_id


def _span(raw: Any, corpus: Corpus, where: str, changed: Collection[str] = ()) -> CharacterSpan:
    if not isinstance(raw, dict):
        raise DatasetError(f"{where} must be an object with doc_id, start, end, text")
    for key, kind in (("doc_id", str), ("start", int), ("end", int), ("text", str)):
        value = raw.get(key)
        if not isinstance(value, kind) or isinstance(value, bool):
            raise DatasetError(f"{where}.{key} must be a {kind.__name__}, got {value!r}")
    doc_id, start, end, text = raw["doc_id"], raw["start"], raw["end"], raw["text"]
    if doc_id in changed:
        # the document changed since the span was written: check only what no edit explains
        if not 0 <= start < end or len(text) != end - start:
            raise DatasetError(
                f"{where}: span [{start}:{end}] is empty or negative, or its text has {len(text)} "
                f"characters for {end - start} offsets; fix start/end or the text"
            )
        return CharacterSpan(DocumentId(doc_id), start, end, text)
    if doc_id not in corpus:
        raise DatasetError(f"{where}.doc_id {doc_id!r} is not a document of the corpus at {corpus.root}")
    document = corpus[doc_id]
    if not 0 <= start < end <= len(document.text):
        raise DatasetError(
            f"{where}: span [{start}:{end}] lies outside {doc_id} ({len(document.text)} characters) or is "
            f"empty; fix start/end"
        )
    actual = document.text[start:end]
    if actual != text:
        hint = ""
        found = document.text.find(text)
        if found >= 0:
            hint = f" (the text occurs at [{found}:{found + len(text)}]; did the document change?)"
        raise DatasetError(
            f"{where}.text does not match {doc_id}[{start}:{end}]: expected {_preview(actual)}, the dataset "
            f"says {_preview(text)}{hint}"
        )
    return CharacterSpan(DocumentId(doc_id), start, end, text)


def _preview(text: str, width: int = 60) -> str:
    return repr(text if len(text) <= width else text[: width - 3] + "...")


def _kind(value: Any) -> str:
    """A wrong value named briefly: a blank string, an empty list, or the JSON type it has."""
    if isinstance(value, str):
        return "a blank string" if not value.strip() else _preview(value)
    if isinstance(value, list):
        return "an empty list" if not value else f"a list of {len(value)}"
    return {dict: "an object", bool: "a boolean", int: "a number", float: "a number"}.get(
        type(value), type(value).__name__
    )
