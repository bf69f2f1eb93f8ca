"""Questions from the local SmolLM2 model on two demo documents: the whole LLM path offline.

The 135M model writes well-formed but weakly grounded questions, so this asserts what the pipeline
guarantees (every passage ends as an accepted question or a rejection with its reason, spans exact,
the cache makes a re-run free), not the questions' quality.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from rag_eval_pipeline.core.corpus.corpus import Corpus
from rag_eval_pipeline.core.generation.llm_excerpt_first import ExcerptFirstGenerator
from rag_eval_pipeline.core.llm.cache import ResponseCache
from rag_eval_pipeline.core.llm.client import LLMClient
from rag_eval_pipeline.core.llm.local_smollm import SmolLM2ChatModel, smollm2_available
from rag_eval_pipeline.core.llm.rate_limit import RateLimiter

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[3]
DEMO_DOCUMENTS = ("operations/release_process.md", "policies/data_retention.md")


def test_smollm2_writes_one_question_per_passage_of_two_demo_documents(tmp_path: Path) -> None:
    assert smollm2_available(), "make setup installs the local model (make local-llm)"
    full = Corpus.from_folder(REPO / "data" / "corpus")
    corpus = Corpus(tuple(full[doc_id] for doc_id in DEMO_DOCUMENTS))
    cache = ResponseCache(tmp_path / "responses.sqlite")
    client = LLMClient(SmolLM2ChatModel(), cache=cache, limiter=RateLimiter(max_concurrency=1))
    generator = ExcerptFirstGenerator(client, n_questions=4, seed=5)
    passages = generator.passages(corpus)
    assert len(passages) == 4 and {p.span.doc_id for p in passages} == set(DEMO_DOCUMENTS)

    result = generator.generate(corpus)

    assert len(result.examples) + len(result.rejections) == len(passages)
    assert len(result.examples) >= 2, [r.detail for r in result.rejections]
    for example in result.examples:
        assert example.query.endswith("?") and len(example.query.split()) >= 3
        (span,) = example.relevant_spans
        assert full[span.doc_id].text[span.start : span.end] == span.text
        assert example.metadata["model"].startswith("local:smollm2")
        # an answer, or the reason there is none: a tiny model often leaves it out
        assert (example.reference_answer is None) == ("reference_answer_missing" in example.metadata)
    for rejection in result.rejections:
        assert rejection.reason in ("invalid_reply", "llm_failed") and rejection.detail
    usage = client.usage_snapshot()
    assert usage.calls >= 4 and usage.cost_usd == 0.0

    again = LLMClient(SmolLM2ChatModel(), cache=cache)
    rerun = ExcerptFirstGenerator(again, n_questions=4, seed=5).generate(corpus)
    assert [e.query for e in rerun.examples] == [e.query for e in result.examples]
    assert again.usage_snapshot().calls == 0
