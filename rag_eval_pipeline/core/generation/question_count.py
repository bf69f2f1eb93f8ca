"""How many synthetic questions the settings ask of a corpus, and why: before anything is generated.

``default_question_count(corpus, settings)`` is what a plan shows (``rag-eval questions plan``) and
what ``synthetic_questions`` logs and records: the same quotas the generation draws its passages for
(core/generation/quotas.py), or, for the ``llm`` generator, the questions its prompts ask for.
"""

from __future__ import annotations

from collections import Counter

from ..corpus.corpus import Corpus
from .llm_token_level import plan_tasks
from .passages import plan_passages
from .quotas import QuestionCount
from .settings import TokenLevelSettings


def default_question_count(corpus: Corpus, settings: TokenLevelSettings) -> QuestionCount:
    """The questions ``settings`` ask of ``corpus`` (``describe()`` says why; ``as_metadata()`` for an
    asset): for ``known-item``, ``excerpt-first`` and every generator that draws passages, the quotas of
    ``n_questions`` and the passages drawn for them (``planned``); for ``llm``, its prompts' questions."""
    if settings.generator == "llm":
        return llm_question_count(corpus, settings)
    return plan_passages(
        corpus,
        settings.question_target(),
        settings.seed,
        settings.passage_min_chars,
        settings.passage_max_chars,
    ).count


def llm_question_count(corpus: Corpus, settings: TokenLevelSettings) -> QuestionCount:
    """``questions_per_document`` for every section of every document (a long document is sent in
    sections of ``max_document_chars``), plus one question for each related pair of documents."""
    tasks = plan_tasks(
        corpus, settings.questions_per_document, settings.cross_document_pairs, settings.max_document_chars
    )
    quotas: Counter[str] = Counter()
    cross = 0
    for task in tasks:
        if len(task.sections) == 1:
            quotas[task.doc_ids[0]] += task.n_questions
        else:
            cross += task.n_questions
    sections = sum(1 for task in tasks if len(task.sections) == 1)
    return QuestionCount(
        "per-section",
        {doc.doc_id: quotas[doc.doc_id] for doc in sorted(corpus, key=lambda d: d.doc_id)},
        {doc.doc_id: len(doc.text) for doc in corpus},
        f"generator llm: {settings.questions_per_document} for each of {sections} sections of at most "
        f"{settings.max_document_chars:,} characters, {cross} about two documents",
        cross_document=cross,
    )
