"""What a person annotates and what their save becomes: the queue of pooled queries, each query's passages
in their document context, an annotator's progress and where they resume, and a judgement built from
what the page sends, checked against the documents before anything is stored.

No web code here (the page and its server are ``rag_eval_pipeline/annotate/``), so every rule is
tested fast and the server stays a thin shell. Offsets are code points of the documents as loaded
(``CharacterSpan``); the page converts the browser's UTF-16 selection into them, and this module
refuses any span whose text is not ``document.text[start:end]`` in a passage the page showed.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast

from ..corpus.corpus import Corpus
from ..errors import InputError
from ..spans import merge_intervals
from ..types import CharacterSpan, DocumentId
from .judged_at_k import unjudged_passages
from .store import latest_judgements
from .types import VERDICTS, ImportedQuery, Judgement, JudgeName, PooledPassage, QueryId, Verdict

# Text shown on each side of a passage, so the annotator reads it in its place in the document; cut
# back to a word boundary so no word is shown half.
CONTEXT_CHARACTERS = 300
# An annotator's name is stored as the judgement's ``judge``: short, printable, one line.
JUDGE_NAME = re.compile(r"^[^\x00-\x1f\x7f]{1,64}$")
NOTE_CHARACTERS = 2000


class AnnotationError(InputError):
    """A save the server refuses: the message says what is wrong and what to do (shown on the page)."""


@dataclass(frozen=True)
class ShownPassage:
    """A pooled passage as the page shows it: ``text`` is ``document.text[start:end]``, ``before`` and
    ``after`` the context around it (from ``context_start`` to ``context_end`` of a document of
    ``document_characters``)."""

    doc_id: DocumentId
    start: int
    end: int
    text: str
    before: str
    after: str
    context_start: int
    context_end: int
    document_characters: int
    document_sha256: str
    found_by: tuple[str, ...]

    @property
    def span(self) -> CharacterSpan:
        return CharacterSpan(self.doc_id, self.start, self.end, self.text)


@dataclass(frozen=True)
class ExcerptPiece:
    """A stretch of an excerpt: a passage to judge (``passage`` = its index in the task) or context."""

    text: str
    passage: int | None = None


@dataclass(frozen=True)
class Excerpt:
    """A stretch of one document as the page shows it: the passages whose contexts meet are shown in
    one excerpt, so no text is shown twice; ``pieces`` read ``document.text[start:end]`` in order."""

    doc_id: DocumentId
    start: int
    end: int
    document_characters: int
    pieces: tuple[ExcerptPiece, ...]


@dataclass(frozen=True)
class AnnotationTask:
    """One query to judge, with the passages pooled for it in document order and the excerpts that
    show them."""

    query: ImportedQuery
    passages: tuple[ShownPassage, ...]
    excerpts: tuple[Excerpt, ...] = ()
    reason: str = ""  # why the page offers it (`rag-eval annotate --holes`: the setup it fixes)


@dataclass(frozen=True)
class AnnotationWork:
    """Every query that has passages to judge, in the order to judge them (``build_work``);
    ``problems`` says what was left out and why (a passage whose document changed since pooling, a
    pooled query that queries.jsonl does not hold), so nothing is dropped in silence. ``focus``: why
    the page offers only these passages (`rag-eval annotate --holes`), empty for the whole pool."""

    tasks: tuple[AnnotationTask, ...]
    problems: tuple[str, ...] = ()
    focus: str = ""

    def index_of(self, query_id: str) -> int:
        for index, task in enumerate(self.tasks):
            if task.query.query_id == query_id:
                return index
        raise AnnotationError(
            f"query {query_id!r} has no pooled passages to judge (queries.jsonl or pool.jsonl changed "
            "since the page loaded?): reload the page"
        )


@dataclass(frozen=True)
class Progress:
    judge: JudgeName
    judged: int
    total: int

    def describe(self) -> str:
        return f"{self.judged} of {self.total} queries judged by {self.judge}"


def build_work(
    queries: Sequence[ImportedQuery],
    pool: Sequence[PooledPassage],
    corpus: Corpus,
    context: int = CONTEXT_CHARACTERS,
    *,
    order: Sequence[QueryId] = (),
    reasons: Mapping[QueryId, str] | None = None,
    focus: str = "",
) -> AnnotationWork:
    """The queries to annotate: each query of ``queries`` with at least one pooled passage that still
    reads in the corpus, those listed in ``order`` first (in that order), the others after them in the
    order of ``queries``. A passage whose text is no longer at its offsets (the document changed or is
    gone since pooling) is left out and named in ``problems``: pool again to judge it. ``reasons``
    and ``focus`` are what the page says about why it offers a query and the whole queue."""
    by_query: dict[QueryId, list[ShownPassage]] = {}
    problems: list[str] = []
    known = {q.query_id for q in queries}
    stale: dict[QueryId, list[str]] = {}
    for passage in pool:
        if passage.query_id not in known:
            problems.append(
                f"pool.jsonl has a passage of query {passage.query_id}, which queries.jsonl does not hold: "
                "import the queries again and pool them"
            )
            continue
        shown = _show(passage, corpus, context)
        if shown is None:
            stale.setdefault(passage.query_id, []).append(
                f"{passage.span.doc_id}[{passage.span.start}:{passage.span.end}]"
            )
            continue
        by_query.setdefault(passage.query_id, []).append(shown)
    for query_id, ranges in stale.items():
        problems.append(
            f"query {query_id}: {len(ranges)} pooled passage(s) no longer read in the documents "
            f"({', '.join(ranges[:3])}{', ...' if len(ranges) > 3 else ''}): a document changed since "
            "pooling; pool again to judge them"
        )
    first = {q: i for i, q in enumerate(dict.fromkeys(order))}
    ordered = sorted(enumerate(queries), key=lambda item: (first.get(item[1].query_id, len(first)), item[0]))
    tasks = []
    for _, query in ordered:
        if by_query.get(query.query_id):
            passages = tuple(sorted(by_query[query.query_id], key=lambda p: (p.doc_id, p.start, p.end)))
            why = (reasons or {}).get(query.query_id, "")
            tasks.append(AnnotationTask(query, passages, excerpts(passages, corpus), why))
    return AnnotationWork(tuple(tasks), tuple(dict.fromkeys(problems)), focus)


def unread_first(
    queries: Sequence[ImportedQuery],
    pool: Sequence[PooledPassage],
    judgements: Iterable[Judgement],
    corpus: Corpus,
) -> list[QueryId]:
    """The queries with pooled text nobody has read yet, in the order of ``queries``: the page offers
    them before the queries whose passages some judge read (where an annotator adds only a second
    opinion, for agreement). Computed when the queue is built, not on every save, so a query keeps its
    place while the page runs; a restart puts what is still unread first again."""
    unread = {p.query_id for p in unjudged_passages(pool, judgements, corpus)}
    return [q.query_id for q in queries if q.query_id in unread]


def excerpts(passages: Sequence[ShownPassage], corpus: Corpus) -> tuple[Excerpt, ...]:
    """The passages (in document order) in excerpts: a passage whose context meets the previous
    passage's, in the same document, joins its excerpt (unless the two overlap, which a pool merged
    by character range never holds: then each keeps its own excerpt)."""
    groups: list[list[int]] = []
    for index, passage in enumerate(passages):
        previous = passages[groups[-1][-1]] if groups else None
        if (
            previous
            and previous.doc_id == passage.doc_id
            and previous.end <= passage.start
            and passage.context_start <= previous.context_end
        ):
            groups[-1].append(index)
        else:
            groups.append([index])
    found = []
    for group in groups:
        first, last = passages[group[0]], passages[group[-1]]
        text = corpus[first.doc_id].text
        pieces = [ExcerptPiece(first.before)] if first.before else []
        for number, index in enumerate(group):
            passage = passages[index]
            if number:
                gap = text[passages[group[number - 1]].end : passage.start]
                if gap:
                    pieces.append(ExcerptPiece(gap))
            pieces.append(ExcerptPiece(passage.text, index))
        if last.after:
            pieces.append(ExcerptPiece(last.after))
        found.append(Excerpt(first.doc_id, first.context_start, last.context_end, len(text), tuple(pieces)))
    return tuple(found)


def _show(passage: PooledPassage, corpus: Corpus, context: int) -> ShownPassage | None:
    span = passage.span
    if span.doc_id not in corpus:
        return None
    document = corpus[span.doc_id]
    if document.text[span.start : span.end] != span.text:
        return None
    context_start = _word_start(document.text, max(0, span.start - context), span.start)
    context_end = _word_end(document.text, min(len(document.text), span.end + context), span.end)
    return ShownPassage(
        span.doc_id,
        span.start,
        span.end,
        span.text,
        document.text[context_start : span.start],
        document.text[span.end : context_end],
        context_start,
        context_end,
        len(document.text),
        document.sha256,
        passage.found_by,
    )


def _word_start(text: str, cut: int, limit: int) -> int:
    """``cut`` moved forward past a partial word (not beyond ``limit``), unless it is the start."""
    if cut == 0 or text[cut - 1].isspace():
        return cut
    for index in range(cut, limit):
        if text[index].isspace():
            return index + 1
    return cut


def _word_end(text: str, cut: int, limit: int) -> int:
    """``cut`` moved back before a partial word (not before ``limit``), unless it is the end."""
    if cut == len(text) or text[cut].isspace():
        return cut
    for index in range(cut - 1, limit - 1, -1):
        if text[index].isspace():
            return index
    return cut


def human_judgements_by(judgements: Iterable[Judgement], judge: str) -> dict[QueryId, Judgement]:
    """This person's latest judgement of each query."""
    return {j.query_id: j for j in latest_judgements(judgements) if j.kind == "human" and j.judge == judge}


def own_judgements(judgements: Iterable[Judgement], judge: str) -> dict[QueryId, list[Judgement]]:
    """Every judgement this person made, per query, in the order made."""
    found: dict[QueryId, list[Judgement]] = {}
    for judgement in judgements:
        if judgement.kind == "human" and judgement.judge == judge:
            found.setdefault(judgement.query_id, []).append(judgement)
    return found


def unread_passages(task: AnnotationTask, own: Sequence[Judgement]) -> tuple[int, ...]:
    """The passages of ``task`` (indexes) that this person's judgements of the query (``own``) never
    read in the passage's present document version: all of them when they never judged it; after a
    new chunk config or run added passages to the pool, only those (the earlier judgement still stands
    on the text it read). Text read in another version of its document counts as not read."""
    versions = {p.doc_id: p.document_sha256 for p in task.passages}
    read = [
        span
        for judgement in own
        for span in (*judgement.read, *judgement.spans)
        if span.doc_id in versions and judgement.documents.get(span.doc_id) == versions[span.doc_id]
    ]
    covered = merge_intervals(read)
    return tuple(
        index
        for index, passage in enumerate(task.passages)
        if not any(
            start <= passage.start and passage.end <= end for start, end in covered.get(passage.doc_id, [])
        )
    )


def progress(work: AnnotationWork, judgements: Iterable[Judgement], judge: JudgeName) -> Progress:
    """Queries judged: those whose every passage this person has read (and judged)."""
    own = own_judgements(judgements, judge)
    judged = sum(1 for task in work.tasks if not unread_passages(task, own.get(task.query.query_id, [])))
    return Progress(judge, judged, len(work.tasks))


def first_unjudged(work: AnnotationWork, judgements: Iterable[Judgement], judge: JudgeName) -> int | None:
    """Where this annotator resumes: the first query with a passage they have not read (None: none)."""
    own = own_judgements(judgements, judge)
    for index, task in enumerate(work.tasks):
        if unread_passages(task, own.get(task.query.query_id, [])):
            return index
    return None


def check_judge_name(name: object) -> JudgeName:
    if not isinstance(name, str) or not JUDGE_NAME.match(name.strip()):
        raise AnnotationError(
            "type your name in the name field first (1 to 64 characters, one line): it is stored with "
            "every judgement you save"
        )
    return JudgeName(name.strip())


def judgement_from_request(work: AnnotationWork, request: Mapping[str, Any], judged_at: str) -> Judgement:
    """The judgement a page asks to save, checked against what was shown and the documents.

    ``request`` holds ``annotator``, ``query_id``, ``verdict``, ``spans`` ([{doc_id, start, end,
    text}]), ``shown`` ([{doc_id, start, end, document_sha256}]: the passages the page displayed) and an
    optional ``note``. Refused (AnnotationError) unless the page showed exactly the passages the pool
    holds now, in the document versions it holds now, and every span lies in one of them with its text
    at its offsets. Overlapping or touching spans are joined. ``read`` is the passages shown;
    ``documents`` their documents' sha256."""
    judge = check_judge_name(request.get("annotator"))
    task = work.tasks[work.index_of(str(request.get("query_id", "")))]
    verdict = request.get("verdict")
    if verdict not in VERDICTS:
        raise AnnotationError(f"verdict {verdict!r} is not one of {', '.join(VERDICTS)}")
    _check_shown(task, request.get("shown"))
    spans = _spans(task, request.get("spans"))
    if verdict == "answers" and not spans:
        raise AnnotationError(
            "select the text that answers the query and add it (key a), or mark a verdict (1, 2 or 3)"
        )
    if verdict != "answers" and spans:
        raise AnnotationError(
            f"'{verdict}' has no spans: remove the selected spans, or save without a verdict to store them"
        )
    note = request.get("note") or ""
    if not isinstance(note, str) or len(note) > NOTE_CHARACTERS:
        raise AnnotationError(f"the note must be text of at most {NOTE_CHARACTERS} characters")
    read = tuple(p.span for p in task.passages)
    documents = {p.doc_id: p.document_sha256 for p in task.passages}
    return Judgement(
        task.query.query_id,
        judge,
        "human",
        cast(Verdict, verdict),
        spans,
        read,
        judged_at,
        documents,
        None,
        note.strip(),
    )


def _check_shown(task: AnnotationTask, shown: object) -> None:
    expected = sorted((p.doc_id, p.start, p.end, p.document_sha256) for p in task.passages)
    try:
        got = sorted(
            (str(s["doc_id"]), int(s["start"]), int(s["end"]), str(s["document_sha256"]))
            for s in cast(list[dict[str, Any]], shown)
        )
    except (TypeError, KeyError, ValueError) as exc:
        raise AnnotationError(
            "the request does not list the passages shown ([{doc_id, start, end, document_sha256}]): "
            "reload the page"
        ) from exc
    if got != expected:
        raise AnnotationError(
            f"the passages of query {task.query.query_id} changed since the page showed them (the pool or a "
            "document was updated): reload the page and judge them again"
        )


def _spans(task: AnnotationTask, raw: object) -> tuple[CharacterSpan, ...]:
    if raw is None:
        raw = []
    if not isinstance(raw, list):
        raise AnnotationError("spans must be a list of {doc_id, start, end, text}")
    checked: list[tuple[ShownPassage, CharacterSpan]] = []
    for number, item in enumerate(raw, start=1):
        try:
            doc_id, start, end, text = str(item["doc_id"]), item["start"], item["end"], item["text"]
        except (TypeError, KeyError) as exc:
            raise AnnotationError(f"span {number} needs doc_id, start, end and text") from exc
        if not (isinstance(start, int) and isinstance(end, int) and isinstance(text, str)) or start >= end:
            raise AnnotationError(
                f"span {number} of {doc_id}: start and end must be whole numbers, start < end"
            )
        passage = next(
            (p for p in task.passages if p.doc_id == doc_id and p.start <= start and end <= p.end), None
        )
        if passage is None:
            raise AnnotationError(
                f"span {number} ({doc_id}[{start}:{end}]) is not inside a passage shown for this query: "
                "select text in the highlighted passages only"
            )
        actual = passage.text[start - passage.start : end - passage.start]
        if actual != text:
            raise AnnotationError(
                f"span {number} ({doc_id}[{start}:{end}]) reads {text!r} but the document has {actual!r} "
                "there: reload the page and select it again"
            )
        checked.append((passage, CharacterSpan(DocumentId(doc_id), start, end, text)))
    joined: list[CharacterSpan] = []
    for passage in task.passages:  # joined within a passage: spans of two passages never join
        spans = [span for shown_in, span in checked if shown_in == passage]
        for start, end in merge_intervals(spans).get(passage.doc_id, []):
            text = passage.text[start - passage.start : end - passage.start]
            joined.append(CharacterSpan(passage.doc_id, start, end, text))
    return tuple(joined)
