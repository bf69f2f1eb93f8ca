"""Token-level ground truth after its documents changed: re-anchored where the excerpt still occurs,
stale where it does not.

A span is (doc_id, start, end, text); after an edit ``document[start:end]`` may no longer be ``text``.
The excerpt is the truth, the offsets only where it was: a span whose text still occurs in its document
moves to the occurrence nearest its old start (an insertion before it shifts it a little; a repeated
passage is not mapped to its first copy). A question with a span whose excerpt is gone, or whose
document was removed, is stale: its ground truth no longer describes the corpus, so it is reported
with the reason and not scored (scoring the remaining spans would judge retrieval against half a truth).

When a mismatch means the document changed, and not that the dataset is wrong, is decided by an anchor
ledger: {doc_id: sha256} of the document versions the dataset's spans were last found valid against
(``read_reanchored_jsonl`` returns the updated ledger; the caller keeps it between loads). Only spans in
documents whose hash differs from the ledger's, or which were removed, are re-anchored or stale; every
other mismatch raises as ``read_token_level_jsonl`` always did. Without a ledger (the first load) the
dataset must match the corpus exactly.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Literal

from ..corpus.corpus import Corpus
from ..errors import DatasetError
from ..store.files import write_text_atomically
from ..types import CharacterSpan, DocumentId, QuestionId
from .datasets import TokenLevelDataset, TokenLevelExample, read_token_level_examples

GroundTruthStatus = Literal["valid", "reanchored", "stale"]


@dataclass(frozen=True)
class StaleQuestion:
    example: TokenLevelExample  # as the dataset states it, old offsets included
    reason: str


@dataclass(frozen=True)
class ReanchorResult:
    """Every question exactly once: ``usable`` (valid and re-anchored, in input order) or ``stale``."""

    usable: tuple[TokenLevelExample, ...]
    reanchored: frozenset[QuestionId]
    stale: tuple[StaleQuestion, ...]

    @property
    def n_valid(self) -> int:
        return len(self.usable) - len(self.reanchored)

    @property
    def n_reanchored(self) -> int:
        return len(self.reanchored)

    @property
    def n_stale(self) -> int:
        return len(self.stale)

    def status(self, question_id: str) -> GroundTruthStatus:
        if question_id in self.reanchored:
            return "reanchored"
        if any(s.example.question_id == question_id for s in self.stale):
            return "stale"
        return "valid"


def span_matches(span: CharacterSpan, corpus: Corpus) -> bool:
    """Whether the span's text is what its document holds at its offsets."""
    return span.doc_id in corpus and corpus[span.doc_id].text[span.start : span.end] == span.text


def reanchor_span(span: CharacterSpan, text: str) -> CharacterSpan | None:
    """The span moved to the occurrence of its excerpt in ``text`` nearest its old start (the earlier
    one on a tie); None when the excerpt no longer occurs. Overlapping occurrences count."""
    best: int | None = None
    found = text.find(span.text)
    while found >= 0:
        if best is None or abs(found - span.start) < abs(best - span.start):
            best = found
        if found > span.start:  # later occurrences are only farther away
            break
        found = text.find(span.text, found + 1)
    if best is None:
        return None
    return CharacterSpan(span.doc_id, best, best + len(span.text), span.text)


def reanchor_examples(examples: Sequence[TokenLevelExample], corpus: Corpus) -> ReanchorResult:
    """Questions whose spans all match stay as they are; the others are re-anchored span by span, or
    stale with one reason per lost span."""
    usable: list[TokenLevelExample] = []
    reanchored: set[QuestionId] = set()
    stale: list[StaleQuestion] = []
    for example in examples:
        if all(span_matches(s, corpus) for s in example.relevant_spans):
            usable.append(example)
            continue
        spans: list[CharacterSpan] = []
        reasons: list[str] = []
        for span in example.relevant_spans:
            if span_matches(span, corpus):
                spans.append(span)
            elif span.doc_id not in corpus:
                reasons.append(f"document {span.doc_id} was removed")
            else:
                moved = reanchor_span(span, corpus[span.doc_id].text)
                if moved is None:
                    reasons.append(f"excerpt {_preview(span.text)} no longer occurs in {span.doc_id}")
                else:
                    spans.append(moved)
        if reasons:
            stale.append(StaleQuestion(example, "; ".join(reasons)))
        else:
            usable.append(replace(example, relevant_spans=tuple(spans)))
            reanchored.add(example.question_id)
    return ReanchorResult(tuple(usable), frozenset(reanchored), tuple(stale))


def _preview(text: str, width: int = 60) -> str:
    return repr(text if len(text) <= width else text[: width - 3] + "...")


@dataclass(frozen=True)
class ReanchoredDataset:
    """A dataset file loaded against the corpus as it is now."""

    name: str
    result: ReanchorResult
    # The ledger to keep for the next load: per document of the dataset, the version its spans match
    # as written (the current one when they all do, else the one they were written against).
    anchors: Mapping[DocumentId, str]

    @property
    def dataset(self) -> TokenLevelDataset:
        """The questions to evaluate: valid and re-anchored ones."""
        return TokenLevelDataset(self.result.usable, name=self.name)


def read_reanchored_jsonl(
    path: str | Path, corpus: Corpus, anchors: Mapping[DocumentId, str]
) -> ReanchoredDataset:
    """A token-level JSONL file; spans in documents changed since ``anchors`` are re-anchored or stale,
    any other disagreement with the corpus raises (see the module docstring)."""
    changed = {d for d, sha in anchors.items() if d not in corpus or corpus[d].sha256 != sha}
    examples = read_token_level_examples(path, corpus, changed)
    result = reanchor_examples(examples, corpus)
    as_written: dict[DocumentId, bool] = {}
    for example in examples:
        for span in example.relevant_spans:
            as_written[span.doc_id] = as_written.get(span.doc_id, True) and span_matches(span, corpus)
    ledger = {
        doc_id: corpus[doc_id].sha256 if matches else anchors[doc_id]
        for doc_id, matches in sorted(as_written.items())
    }
    return ReanchoredDataset(Path(path).stem, result, ledger)


def read_anchors(path: str | Path) -> dict[DocumentId, str]:
    """The ledger at ``path``; none yet is an empty ledger (the dataset must then match exactly)."""
    file = Path(path)
    if not file.exists():
        return {}
    try:
        obj: Any = json.loads(file.read_text(encoding="utf-8"))
        documents = obj["documents"]
        if not isinstance(documents, dict) or not all(isinstance(v, str) for v in documents.values()):
            raise ValueError("documents must map document ids to sha256 strings")
    except (ValueError, KeyError, TypeError) as exc:
        raise DatasetError(
            f"{file} is not an anchor ledger ({exc}): delete it; the next load then needs the dataset "
            f"to match the corpus exactly and writes it again"
        ) from None
    return {DocumentId(str(k)): v for k, v in documents.items()}


def write_anchors(path: str | Path, anchors: Mapping[DocumentId, str]) -> None:
    """Written to a temporary name and renamed, so a killed run leaves the previous ledger."""
    payload = {"documents": dict(sorted(anchors.items()))}
    write_text_atomically(Path(path), json.dumps(payload, indent=1, ensure_ascii=False) + "\n")
