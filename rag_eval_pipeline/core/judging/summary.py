"""How far the judging of real queries is, for the report: the queries imported, judged and exported as
questions, the judgements made stale by document edits, each judge's share, and the agreement of every
pair of judges (people and LLM judges alike).

Everything here is read from the judging store and the corpus, with the owners of each rule: the
judgements re-anchored by ``anchor_judgements`` (reanchor.py), layered per judge by ``judge_views``,
turned into questions by ``judged_questions`` (question_set.py) and compared by ``agreement``
(agreement.py). No retrieval: judged@k needs the setups' runs, which `rag-eval judgements status`
makes; the report says so instead of computing it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ..corpus.corpus import Corpus
from .agreement import PairAgreement, agreement
from .judge_views import judge_views
from .question_set import judged_questions
from .reanchor import StaleJudgement, anchor_judgements
from .store import JudgingStore
from .types import JudgeKind, JudgeName

JUDGED_AT_K_COMMAND = "rag-eval judgements status"


@dataclass(frozen=True)
class JudgeShare:
    """One judge: a person or an LLM judge, and the imported or not queries they judged (usable ones)."""

    judge: JudgeName
    kind: JudgeKind
    n_queries: int


@dataclass(frozen=True)
class JudgingSummary:
    n_queries: int  # imported (data/judging/queries.jsonl)
    n_judged: int  # imported queries with at least one usable judgement
    n_questions: int  # judged queries with an answer: the questions `rag-eval judgements export` writes
    n_judgements: int  # judgement lines stored, every judge, every revision
    stale: tuple[StaleJudgement, ...]  # answers lost to document edits: used nowhere
    reanchored: int  # usable judgements whose ranges moved with an edit
    not_imported: int  # judged queries no longer in queries.jsonl (their text unknown)
    judges: tuple[JudgeShare, ...]  # by name
    agreement: tuple[PairAgreement, ...]  # every pair of judges with a query in common, by names

    def kind_of(self, judge: str) -> JudgeKind | None:
        return next((j.kind for j in self.judges if j.judge == judge), None)


def judging_summary(store: JudgingStore, corpus: Callable[[], Corpus]) -> JudgingSummary | None:
    """The summary of the store's judgements against the corpus as it is now; None when no judgement was
    stored (no judging in this workspace: the report has no section). ``corpus`` is called only then.
    A line of the store that does not read is a DatasetError naming the file and the line."""
    judgements = store.read_judgements()
    if not judgements:
        return None
    documents = corpus()
    queries = store.read_queries()
    anchored = anchor_judgements(judgements, documents)
    views = judge_views(anchored.usable)
    questions = judged_questions(queries, judgements, documents)
    kinds: dict[JudgeName, JudgeKind] = {}
    counts: dict[JudgeName, int] = {}
    for query_views in views.values():
        for view in query_views:
            kinds[view.judge] = view.kind
            counts[view.judge] = counts.get(view.judge, 0) + 1
    return JudgingSummary(
        n_queries=len(queries),
        n_judged=sum(1 for q in queries if q.query_id in views),
        n_questions=len(questions.examples),
        n_judgements=len(judgements),
        stale=anchored.stale,
        reanchored=anchored.reanchored,
        not_imported=len(questions.not_imported),
        judges=tuple(JudgeShare(j, kinds[j], counts[j]) for j in sorted(kinds)),
        agreement=tuple(agreement(views, store.read_pool())),  # the views above: anchored once
    )
