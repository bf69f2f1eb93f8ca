"""An LLM judge for the pooled passages: graded relevance 0-3 as UMBRELA grades it, and the words that
answer the query quoted and placed in the document as character spans.

UMBRELA (Upadhyay et al. 2024, the open reproduction of Bing's relevance assessor) grades a (query,
passage) pair on four levels; its prompt is paraphrased in ``SYSTEM_PROMPT``. Beyond a grade, a span
judgement needs *where* the answer is, so the model also quotes it verbatim; the quote is located in the
passage with the excerpt locator (core/generation/excerpts.py), so a span is always real document text.

What each passage ends as (``JudgeStatus``), and where it is kept:

- ``located``: grade >= RELEVANT_GRADE and the quote found in the passage: a ``Judgement`` with verdict
  ``answers`` and the quote's spans;
- ``not-relevant``: grade 0 or 1: a ``Judgement`` with verdict ``not-answerable`` and no span. The LLM
  judge reads one passage at a time, so its verdict is about that passage (``read``): "the text I read
  does not answer the query", never a claim about the rest of the documents;
- ``not-located``: grade >= 2, but the quote is not in the passage even after a repair prompt saying
  why: no judgement (a judgement's ``read`` without a span would say "not relevant", the opposite of the
  grade), but a line in ``judge_errors.jsonl`` with the grade, the quote and the reason;
- ``llm-failed`` (the call failed after the client's retries with backoff) and ``invalid-reply`` (no
  usable JSON after the repair prompts): a line in ``judge_errors.jsonl`` with the reason;
- ``document-changed``: the passage's document is gone or changed since it was pooled: not sent; a line
  in ``judge_errors.jsonl`` (pool again).

``judge_errors.jsonl`` holds, per judge, the passages still without a judgement and why; a re-run sends
exactly the passages this judge has not judged (errors included: their replies come from the response
cache, so a re-run costs nothing for what was already answered) and rewrites its lines.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal, cast, get_args

from ..corpus.corpus import Corpus
from ..errors import DatasetError
from ..generation.excerpts import excerpt_occurrences, explain_miss, locate_excerpt
from ..llm.accounting import CostEstimate, UsageSnapshot, check_budget
from ..llm.base import ChatMessage, CompletionParams
from ..llm.client import LLMClient
from ..llm.json_reply import InvalidReply, parse_json_object
from ..progress import Progress, no_progress
from ..store.files import locked, write_text_atomically
from ..types import CharacterSpan
from .store import JudgingStore, json_lines, read_json_lines
from .types import GRADES, RELEVANT_GRADE, Grade, ImportedQuery, Judgement, JudgeName, PooledPassage, QueryId

LLM_JUDGE_PROMPT_VERSION = "umbrela-excerpt-v1"
JUDGE_ERRORS_FILE = "judge_errors.jsonl"
# Judgements are appended after every batch: a run stopped half-way keeps what it judged.
BATCH_SIZE = 32
MAX_QUOTE_CHARS = 1000  # a quote longer than this is the passage copied, not an answer picked out

JudgeStatus = Literal[
    "located", "not-relevant", "not-located", "llm-failed", "invalid-reply", "document-changed"
]
JUDGE_STATUSES: tuple[JudgeStatus, ...] = get_args(JudgeStatus)
ERROR_STATUSES: tuple[JudgeStatus, ...] = ("not-located", "llm-failed", "invalid-reply", "document-changed")

SYSTEM_PROMPT = """\
You judge how relevant a passage is to a search query, as a search engine's relevance assessor does.

Grade on this scale (an integer):
0 = the passage has nothing to do with the query.
1 = the passage is related to the query's topic but does not answer it.
2 = the passage holds some answer to the query, but it is partial, unclear, or buried among other \
information.
3 = the passage is dedicated to the query and contains the exact answer.

Consider what the person searching most likely wants, how well the passage meets that intent, and \
how trustworthy the passage is. Then decide on one grade.

For grade 2 or 3, also copy the shortest part of the passage that answers the query, word for word \
(at least a full clause; same words, same order, nothing added or reworded). For grade 0 or 1 leave \
the excerpt empty.

Reply with only a JSON object: {"grade": <0, 1, 2 or 3>, "excerpt": "<the copied words, or empty>"}"""

SCHEMA_HINT = (
    '{"grade": 0 | 1 | 2 | 3, "excerpt": "<words copied from the passage for grade 2 or 3, else empty>"}'
)


@dataclass(frozen=True)
class GradedReply:
    """A reply that passed validation: the grade and the quote (empty below RELEVANT_GRADE)."""

    grade: Grade
    excerpt: str


@dataclass(frozen=True)
class PassageToJudge:
    passage: PooledPassage
    query: str


@dataclass(frozen=True)
class PassageOutcome:
    """What became of one passage: a judgement (``located``, ``not-relevant``) or an error line."""

    passage: PooledPassage
    judge: JudgeName
    status: JudgeStatus
    judgement: Judgement | None = None
    grade: Grade | None = None
    excerpt: str = ""
    reason: str = ""
    attempts: int = 0

    @property
    def is_error(self) -> bool:
        return self.status in ERROR_STATUSES


def judge_name_for(model_id: str) -> JudgeName:
    """``llm:`` and the model's id (``llm:openai:gpt-4o-mini``; another server's host is in the id):
    a different model, or the same name on another server, is another judge."""
    return JudgeName(f"llm:{model_id}")


def validate_reply(obj: Mapping[str, Any]) -> GradedReply:
    """The reply as a ``GradedReply``; ``InvalidReply`` says what is wrong (the repair prompt quotes it)."""
    if "grade" not in obj:
        raise InvalidReply('"grade" is missing')
    raw = obj["grade"]
    if isinstance(raw, str) and raw.strip().isdigit():  # "3": what some models send in JSON mode
        raw = int(raw.strip())
    if isinstance(raw, bool) or not isinstance(raw, int | float) or raw != int(raw) or int(raw) not in GRADES:
        raise InvalidReply(f'"grade" must be one of 0, 1, 2, 3, got {raw!r}')
    grade = cast(Grade, int(raw))
    excerpt = obj.get("excerpt", "")
    if excerpt is None:
        excerpt = ""
    if not isinstance(excerpt, str):
        raise InvalidReply(f'"excerpt" must be a string, got {excerpt!r}')
    excerpt = excerpt.strip()
    if grade >= RELEVANT_GRADE and not excerpt:
        raise InvalidReply(
            f'grade {grade} needs the "excerpt" that answers the query, copied from the passage'
        )
    if len(excerpt) > MAX_QUOTE_CHARS:
        raise InvalidReply(
            f'"excerpt" has {len(excerpt)} characters: copy only the part that answers the query '
            f"(at most {MAX_QUOTE_CHARS})"
        )
    return GradedReply(grade, excerpt)


def locate_in_passage(passage: PooledPassage, excerpt: str) -> tuple[CharacterSpan, ...] | str:
    """The spans of ``excerpt`` in the passage, in document offsets, or why it is not there.

    Matched as the excerpt locator matches (exact, then case, quotes, whitespace and markdown markers
    folded; "..." splits it into parts found in order). The locator wants 12 characters to place a
    quote in a whole document; within one passage a shorter quote is kept when it occurs exactly once."""
    doc_id, offset, text = passage.span.doc_id, passage.span.start, passage.span.text
    match = locate_excerpt(doc_id, text, excerpt)
    if match is not None:
        spans = match.spans
    else:
        places = excerpt_occurrences(doc_id, text, excerpt, min_chars=1)
        if len(places) > 1:
            return f"the excerpt occurs {len(places)} times in the passage: it does not say which"
        if not places:
            return "not in the passage: " + explain_miss(text, excerpt, min_chars=1)
        spans = places[0]
    return tuple(CharacterSpan(doc_id, s.start + offset, s.end + offset, s.text) for s in spans)


def judge_messages(query: str, passage: PooledPassage) -> list[ChatMessage]:
    user = f"Query: {query}\n\nPassage:\n{passage.span.text}\n\nReply with only the JSON object."
    return [ChatMessage("system", SYSTEM_PROMPT), ChatMessage("user", user)]


def passage_key(passage: PooledPassage) -> tuple[str, str, int, int, str]:
    """A pooled passage's identity: its query, its range and the document version it was cut from."""
    span = passage.span
    return (passage.query_id, span.doc_id, span.start, span.end, passage.document_sha256)


def judged_keys(judgements: Iterable[Judgement], judge: JudgeName) -> set[tuple[str, str, int, int, str]]:
    """The (query, range, document version) this judge has judged: every range a judgement of it read."""
    return {
        (j.query_id, r.doc_id, r.start, r.end, j.documents.get(r.doc_id, ""))
        for j in judgements
        if j.judge == judge
        for r in j.read
    }


def pending_passages(
    pool: Sequence[PooledPassage], judgements: Iterable[Judgement], judge: JudgeName
) -> list[PooledPassage]:
    """The pool's passages ``judge`` has not judged yet, in pool order."""
    done = judged_keys(judgements, judge)
    return [p for p in pool if passage_key(p) not in done]


class LLMPassageJudge:
    """Grades pooled passages through the shared client (cached, rate-limited, retried, accounted).

    Temperature 0 and a fixed seed are part of the judge's definition: the same pool graded twice gives
    the same grades (and the second time, every reply comes from the response cache)."""

    def __init__(
        self,
        client: LLMClient,
        *,
        repair_attempts: int = 1,
        max_tokens: int = 512,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        self.client = client
        self.repair_attempts = repair_attempts
        self.params = CompletionParams(temperature=0.0, max_tokens=max_tokens, json_mode=True)
        self._clock = clock

    @property
    def name(self) -> JudgeName:
        return judge_name_for(self.client.model_id)

    def estimate(self, items: Sequence[PassageToJudge]) -> CostEstimate:
        """What the first request of every item would cost at most, not counting cached ones."""
        return self.client.estimate([(judge_messages(i.query, i.passage), self.params) for i in items])

    def judge(self, item: PassageToJudge) -> PassageOutcome:
        passage = item.passage

        def parse(raw: str) -> tuple[GradedReply, tuple[CharacterSpan, ...]]:
            reply = validate_reply(parse_json_object(raw))
            if reply.grade < RELEVANT_GRADE:
                return reply, ()
            located = locate_in_passage(passage, reply.excerpt)
            if isinstance(located, str):
                raise InvalidReply(f"the excerpt must be copied word for word from the passage; {located}")
            return reply, located

        outcome = self.client.complete_parsed(
            judge_messages(item.query, passage), self.params, parse, SCHEMA_HINT, self.repair_attempts
        )
        if outcome.value is not None:
            reply, spans = outcome.value
            return PassageOutcome(
                passage,
                self.name,
                "located" if spans else "not-relevant",
                self._judgement(passage, reply, spans),
                reply.grade,
                reply.excerpt,
                attempts=outcome.attempts,
            )
        if outcome.failure == "invalid_reply" and outcome.raw is not None:
            graded = _graded(outcome.raw)
            if graded is not None and graded.grade >= RELEVANT_GRADE:
                # a grade worth keeping, a quote not in the passage: kept with the reason, not dropped
                reason = locate_in_passage(passage, graded.excerpt)
                return PassageOutcome(
                    passage,
                    self.name,
                    "not-located",
                    grade=graded.grade,
                    excerpt=graded.excerpt,
                    reason=reason if isinstance(reason, str) else (outcome.error or ""),
                    attempts=outcome.attempts,
                )
        status: JudgeStatus = "llm-failed" if outcome.failure == "llm_failed" else "invalid-reply"
        return PassageOutcome(
            passage, self.name, status, reason=outcome.error or "no reply", attempts=outcome.attempts
        )

    def _judgement(
        self, passage: PooledPassage, reply: GradedReply, spans: tuple[CharacterSpan, ...]
    ) -> Judgement:
        return Judgement(
            passage.query_id,
            self.name,
            "llm",
            "answers" if spans else "not-answerable",
            spans,
            (passage.span,),
            self._clock().isoformat(),
            {passage.span.doc_id: passage.document_sha256},
            reply.grade,
            reply.excerpt,
        )


def _graded(raw: str) -> GradedReply | None:
    try:
        return validate_reply(parse_json_object(raw))
    except (ValueError, KeyError, TypeError):
        return None


def document_problem(passage: PooledPassage, corpus: Corpus) -> str | None:
    """Why the passage can no longer be judged as pooled (its document gone or edited), or None."""
    doc_id = passage.span.doc_id
    if doc_id not in corpus:
        return f"document {doc_id} is no longer in the corpus: pool the queries again"
    document = corpus[doc_id]
    if document.sha256 != passage.document_sha256:
        return f"document {doc_id} changed since the pool was made: pool the queries again"
    span = passage.span
    if document.text[span.start : span.end] != span.text:  # a pool file edited by hand
        return f"the pooled text is not {doc_id}[{span.start}:{span.end}]: pool the queries again"
    return None


@dataclass(frozen=True)
class JudgingRun:
    """What one ``judge_pool`` did: an outcome per passage sent (or found stale), in pool order."""

    judge: JudgeName
    outcomes: tuple[PassageOutcome, ...]
    already_judged: int  # passages of the pool this judge had judged before
    left: int  # passages not judged yet and not sent this time (``limit``)
    usage: UsageSnapshot
    estimate: CostEstimate

    def count(self, status: JudgeStatus) -> int:
        return sum(1 for o in self.outcomes if o.status == status)

    @property
    def errors(self) -> int:
        return sum(1 for o in self.outcomes if o.is_error)

    def grades(self) -> dict[int, int]:
        """How many passages got each grade (errors with a grade, ``not-located``, included)."""
        found = Counter(o.grade for o in self.outcomes if o.grade is not None)
        return {g: found.get(g, 0) for g in GRADES}


def judge_pool(
    store: JudgingStore,
    corpus: Corpus,
    judge: LLMPassageJudge,
    *,
    limit: int | None = None,
    budget_usd: float | None = None,
    progress: Progress = no_progress,
    batch_size: int = BATCH_SIZE,
) -> JudgingRun:
    """Grade the pool's passages ``judge`` has not judged yet (at most ``limit``), in pool order.

    The cost estimate is checked against ``budget_usd`` before any request (``BudgetExceeded``: nothing
    sent). Judgements are appended after each batch; the error lines are rewritten with them."""
    if limit is not None and limit < 0:
        raise ValueError(f"limit must be >= 0, got {limit}")
    queries: dict[QueryId, ImportedQuery] = {q.query_id: q for q in store.read_queries()}
    pool = store.read_pool()
    missing = sorted({p.query_id for p in pool} - set(queries))
    if missing:
        raise DatasetError(
            f"{store.pool_path}: passages of queries not in {store.queries_path} ({', '.join(missing[:5])}"
            f"{', ...' if len(missing) > 5 else ''}): import the queries and pool them again"
        )
    pending = pending_passages(pool, store.read_judgements(), judge.name)
    chosen = pending if limit is None else pending[:limit]
    stale: dict[tuple[str, str, int, int, str], PassageOutcome] = {}
    to_send = []
    for passage in chosen:
        problem = document_problem(passage, corpus)
        if problem is not None:
            stale[passage_key(passage)] = PassageOutcome(
                passage, judge.name, "document-changed", reason=problem
            )
        else:
            to_send.append(PassageToJudge(passage, queries[passage.query_id].text))
    estimate = judge.estimate(to_send)
    check_budget(estimate, budget_usd)
    errors = JudgeErrors(store.folder)
    errors.keep_only(judge.name, {passage_key(p) for p in pool})  # passages pooled no more: no error
    sent: dict[tuple[str, str, int, int, str], PassageOutcome] = {}
    total, done, lock = len(to_send), 0, threading.Lock()
    stage = f"judging passages ({judge.name})"
    progress(stage, 0, total)

    def run(item: PassageToJudge) -> PassageOutcome:
        nonlocal done
        outcome = judge.judge(item)
        with lock:
            done += 1
            progress(stage, done, total)
        return outcome

    for begin in range(0, max(total, 1), batch_size):
        batch = judge.client.map(run, to_send[begin : begin + batch_size])
        judged = [o.judgement for o in batch if o.judgement is not None]
        if judged:
            store.append_judgements(judged)
        sent.update((passage_key(o.passage), o) for o in batch)
        # the first batch also records the stale passages; every batch replaces what it attempted
        attempted = [o.passage for o in batch] + ([s.passage for s in stale.values()] if begin == 0 else [])
        new_errors = [o for o in batch if o.is_error] + (list(stale.values()) if begin == 0 else [])
        errors.replace(judge.name, attempted, new_errors)
    outcomes = tuple({**stale, **sent}[passage_key(p)] for p in chosen)
    return JudgingRun(
        judge.name,
        outcomes,
        already_judged=len(pool) - len(pending),
        left=len(pending) - len(chosen),
        usage=judge.client.usage_snapshot(),
        estimate=estimate,
    )


@dataclass(frozen=True)
class JudgeErrors:
    """``judge_errors.jsonl`` in the judging folder: per judge, the passages still without a judgement
    and why (status, grade, quote, reason), one JSON object a line. Rewritten whole under its lock."""

    folder: Path

    @property
    def path(self) -> Path:
        return self.folder / JUDGE_ERRORS_FILE

    def read(self) -> list[dict[str, Any]]:
        return read_json_lines(
            self.path, dict, "rag-eval judgements llm, again for a passage still in error: delete it"
        )

    def keep_only(self, judge: JudgeName, pooled: set[tuple[str, str, int, int, str]]) -> None:
        """This judge's lines of passages no longer in the pool dropped (the queries were pooled again)."""
        if not self.path.exists():
            return
        with locked(self.path):
            lines = self.read()
            kept = [line for line in lines if line.get("judge") != judge or _line_key(line) in pooled]
            if len(kept) != len(lines):
                self._write(kept)

    def _write(self, lines: Sequence[Mapping[str, Any]]) -> None:
        write_text_atomically(self.path, json_lines(lines))

    def replace(
        self, judge: JudgeName, attempted: Sequence[PooledPassage], errors: Sequence[PassageOutcome]
    ) -> None:
        """This judge's lines for the ``attempted`` passages replaced by ``errors``; other lines kept."""
        if not attempted and not errors:
            return
        gone = {passage_key(p) for p in attempted}
        with locked(self.path):
            kept = [
                line for line in self.read() if not (line.get("judge") == judge and _line_key(line) in gone)
            ]
            self._write(kept + [error_line(e) for e in errors])


def error_line(outcome: PassageOutcome) -> dict[str, Any]:
    span = outcome.passage.span
    return {
        "judge": outcome.judge,
        "query_id": outcome.passage.query_id,
        "doc_id": span.doc_id,
        "start": span.start,
        "end": span.end,
        "document_sha256": outcome.passage.document_sha256,
        "status": outcome.status,
        "grade": outcome.grade,
        "excerpt": outcome.excerpt,
        "reason": outcome.reason,
        "attempts": outcome.attempts,
        "prompt_version": LLM_JUDGE_PROMPT_VERSION,
    }


def _line_key(line: Mapping[str, Any]) -> tuple[str, str, int, int, str] | None:
    try:
        return (
            str(line["query_id"]),
            str(line["doc_id"]),
            int(line["start"]),
            int(line["end"]),
            str(line["document_sha256"]),
        )
    except (KeyError, TypeError, ValueError):
        return None
