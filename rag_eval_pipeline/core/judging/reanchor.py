"""Judgements after their documents changed: re-anchored where their text still occurs, stale where an
answering span is lost, never used as if the offsets were still right.

A judgement records the sha256 of every document version it read (``Judgement.documents``). The
offsets of its spans and read ranges are trusted only while the text at them is the text recorded:

- a range whose text is still at its offsets is kept, whatever else changed in the document;
- in a document whose version differs from the recorded one, a range whose text moved is re-anchored
  to the occurrence nearest its old start (core/questions/reanchor.py's ``reanchor_span``, as golden spans are);
- a *read* range whose text no longer occurs (the passage was edited) is dropped: nobody read the new
  text, so it is pooled and offered again;
- an answering *span* whose text no longer occurs, or whose document was removed, makes the judgement
  stale: its answer no longer describes the corpus. A stale judgement is reported with the reason and
  used nowhere (not as read text, not as truth): its passages are offered again;
- a range that disagrees with a document whose version is the one recorded cannot come from an edit
  (the judgements file was changed by hand): the judgement is stale too, with that reason.

Nothing is rewritten: judgements.jsonl is append-only, and re-anchoring is recomputed at each read (a
text search per range that moved; none when the documents did not change).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace

from ..corpus.corpus import Corpus
from ..questions.reanchor import reanchor_span, span_matches
from ..types import CharacterSpan, DocumentId
from .types import Judgement


@dataclass(frozen=True)
class StaleJudgement:
    judgement: Judgement  # as stored, old offsets included
    reason: str

    def describe(self) -> str:
        j = self.judgement
        return f"{j.query_id} by {j.judge} ({j.judged_at}): {self.reason}"


@dataclass(frozen=True)
class AnchoredJudgements:
    """Every judgement exactly once: ``usable`` (in the order given, offsets valid in the corpus as it
    is now, ``documents`` the current versions) or ``stale``."""

    usable: tuple[Judgement, ...]
    stale: tuple[StaleJudgement, ...] = ()
    reanchored: int = 0  # usable judgements with at least one range moved
    dropped_reads: int = 0  # read ranges whose text is gone (offered again)


def anchor_judgements(judgements: Iterable[Judgement], corpus: Corpus) -> AnchoredJudgements:
    usable: list[Judgement] = []
    stale: list[StaleJudgement] = []
    reanchored = dropped = 0
    for judgement in judgements:
        spans: list[CharacterSpan] = []
        reads: list[CharacterSpan] = []
        reasons: list[str] = []
        moved = False
        for span in judgement.spans:
            found, why = _anchor(span, judgement, corpus)
            if found is None:
                reasons.append(f"answer {why}")
            else:
                moved |= found != span
                spans.append(found)
        for span in judgement.read:
            found, why = _anchor(span, judgement, corpus)
            if found is not None:
                moved |= found != span
                reads.append(found)
            elif why.startswith("does not match"):
                reasons.append(f"read range {why}")
            else:
                dropped += 1
        if reasons:
            stale.append(StaleJudgement(judgement, "; ".join(reasons)))
            continue
        documents = {d: corpus[d].sha256 for d in sorted({s.doc_id for s in (*spans, *reads)})}
        usable.append(replace(judgement, spans=tuple(spans), read=tuple(reads), documents=documents))
        reanchored += moved
    return AnchoredJudgements(tuple(usable), tuple(stale), reanchored, dropped)


def _anchor(span: CharacterSpan, judgement: Judgement, corpus: Corpus) -> tuple[CharacterSpan | None, str]:
    """The span where its text is now, or None and why."""
    where = f"{span.doc_id}[{span.start}:{span.end}]"
    if span_matches(span, corpus):
        return span, ""
    if span.doc_id not in corpus:
        return None, f"{where}: document {span.doc_id} was removed"
    recorded = judgement.documents.get(span.doc_id)
    document = corpus[DocumentId(span.doc_id)]
    if recorded == document.sha256:
        return None, (
            f"does not match {where}, although the document is the version judged (was "
            f"judgements.jsonl edited by hand?)"
        )
    moved = reanchor_span(span, document.text)
    if moved is None:
        return None, f"{_preview(span.text)} no longer occurs in {span.doc_id}"
    return moved, ""


def _preview(text: str, width: int = 50) -> str:
    return repr(text if len(text) <= width else text[: width - 3] + "...")
