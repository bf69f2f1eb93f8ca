"""Answerers: the answer prompt, the LLM answerer against a scripted OpenAI server, the extractive one
with the real MiniLM."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from rag_eval_pipeline.core.answers import answering
from rag_eval_pipeline.core.answers.answering import (
    ANSWER_FORMAT_INSTRUCTION,
    DONT_KNOW,
    AnswerItem,
    ExtractiveAnswerer,
    LLMAnswerer,
    NoAnswers,
    build_answer_messages,
    confidence_for,
    scorable,
    sentence_answer_text,
)
from rag_eval_pipeline.core.answers.grounding import unanswered_reason
from rag_eval_pipeline.core.chunking.sentences import sentence_spans
from rag_eval_pipeline.core.embedding.base import Embedder
from rag_eval_pipeline.core.errors import ConfigError
from rag_eval_pipeline.core.llm.accounting import BudgetExceeded, Price
from rag_eval_pipeline.core.settings.configs import DEFAULT_SYSTEM_PROMPT
from rag_eval_pipeline.core.types import ChunkId, DocumentId, QuestionId, RetrievedChunk
from rag_eval_pipeline_tests.fakes import CountingEmbedder, HashingEmbedder
from rag_eval_pipeline_tests.openai_server import openai_server, scripted_client


def hit(rank: int, chunk_id: str, text: str, doc_id: str = "alpha/pumps.md") -> RetrievedChunk:
    return RetrievedChunk(
        QuestionId("q"), rank, ChunkId(chunk_id), DocumentId(doc_id), 0, len(text), 1.0 / rank, text
    )


PUMP = hit(1, "chunk_aaaaaaaaaaaa", "The main pump runs at 1,450 rpm and is serviced every 90 days.")
ALARM = hit(
    2,
    "chunk_bbbbbbbbbbbb",
    "## Alarms\n\nA pressure alarm fires when the outlet pressure exceeds 7.5 bar for ten seconds.",
)
VALVES = hit(
    1,
    "pa_chunk_cccccccccccc",
    "Every relief valve is tested in March. The test takes two technicians.",
    "alpha/valves.md",
)
STAFF = hit(
    1,
    "chunk_dddddddddddd",
    "Zoë Mbeki leads the night shift. Night shift starts at 22:00 and ends at 06:00.",
    "beta/staff.md",
)


# --- the answer prompt ---------------------------------------------------------------------------


def test_messages_hold_the_profile_prompt_the_format_and_the_passages_in_rank_order():
    messages = build_answer_messages("How fast is the pump?", [ALARM, PUMP], "Be brief.", 6000)
    assert [m.role for m in messages] == ["system", "user"]
    assert messages[0].content == f"Be brief.\n\n{ANSWER_FORMAT_INSTRUCTION}"
    assert "Confidence: HIGH" in ANSWER_FORMAT_INSTRUCTION
    user = messages[1].content
    assert user == (
        "Context passages:\n\n"
        f"[{PUMP.chunk_id}] (document: alpha/pumps.md)\n{PUMP.text}\n\n"
        f"[{ALARM.chunk_id}] (document: alpha/pumps.md)\n{ALARM.text}\n\n"
        "Question: How fast is the pump?"
    )


def test_context_keeps_whole_passages_then_cuts_one_and_drops_the_rest():
    hits = [hit(i, f"chunk_{i:012x}", c * 100) for i, c in ((1, "a"), (2, "b"), (3, "c"), (4, "d"))]
    user = build_answer_messages("q?", hits, "p", 250)[1].content
    assert "a" * 100 + "\n" in user and "b" * 100 + "\n" in user
    assert "c" * 50 + " …" in user and "c" * 51 not in user
    assert "chunk_000000000004" not in user and "dd" not in user
    exact = build_answer_messages("q?", hits, "p", 200)[1].content
    assert "b" * 100 + "\n" in exact and "…" not in exact and "chunk_000000000003" not in exact


def test_the_first_passage_is_never_dropped_and_no_hit_says_so():
    long_first = [hit(1, "chunk_000000000001", "x" * 500), hit(2, "chunk_000000000002", "y")]
    user = build_answer_messages("q?", long_first, "p", 40)[1].content
    assert "[chunk_000000000001]" in user and "x" * 40 + " …" in user
    assert "chunk_000000000002" not in user
    empty = build_answer_messages("q?", [], "p", 40)[1].content
    assert "(no passage was retrieved)" in empty and empty.endswith("Question: q?")


@pytest.mark.parametrize("bad", [0, -5, 2.5, True])
def test_max_context_chars_must_be_a_positive_integer(bad: Any):
    with pytest.raises(ConfigError, match="max_context_chars"):
        build_answer_messages("q?", [PUMP], "p", bad)


# --- the LLM answerer --------------------------------------------------------------------------------

ITEMS = [
    AnswerItem(QuestionId("q-pump"), "How fast does the main pump run?", (PUMP, ALARM)),
    AnswerItem(QuestionId("q-valve"), "When are relief valves tested?", (VALVES,)),
    AnswerItem(QuestionId("q-none"), "Who founded the plant?", ()),
]
REPLIES = {
    "How fast does the main pump run?": (
        f"It runs at 1,450 rpm [{PUMP.chunk_id}] [chunk_0123abcd].\nConfidence: HIGH"
    ),
    "When are relief valves tested?": f"In March [{VALVES.chunk_id}], by two technicians.\nconfidence: medium",
    "Who founded the plant?": "I don't know: the context does not contain it.\nConfidence: LOW",
}


def question_of(body: dict[str, Any]) -> str:
    return str(body["messages"][-1]["content"]).rsplit("Question: ", 1)[1]


def answerer_for(url: str, tmp_path: Path, **prices: Price) -> LLMAnswerer:
    return LLMAnswerer(scripted_client(url, tmp_path, prices=prices), DEFAULT_SYSTEM_PROMPT)


def test_llm_answers_are_parsed_sent_at_temperature_0_and_cached(tmp_path: Path):
    progress: list[tuple[str, int, int]] = []
    with openai_server() as (url, script):
        script.responder = lambda body: REPLIES[question_of(body)]
        answerer = answerer_for(url, tmp_path)
        answers = answerer.answer_all(ITEMS, lambda *a: progress.append(a))
        sent = len(script.chat_requests)
        again = answerer_for(url, tmp_path)
        repeated = again.answer_all(ITEMS)
        assert len(script.chat_requests) == sent == 3  # the second run came from the response cache
    assert answerer.last_estimate is not None and answerer.last_estimate.n_cached == 0
    assert again.last_estimate is not None and again.last_estimate.n_cached == 3
    assert repeated == answers
    pump, valve, none = answers
    assert pump.text == f"It runs at 1,450 rpm [{PUMP.chunk_id}] [chunk_0123abcd]."
    assert (pump.cited_chunk_ids, pump.invalid_citations) == ((PUMP.chunk_id,), ("chunk_0123abcd",))
    assert (pump.confidence, pump.abstained, pump.status) == ("HIGH", False, "ok")
    assert pump.answerer == answerer.model_id and pump.answerer.startswith("openai:gpt-4o-mini")
    assert (valve.cited_chunk_ids, valve.confidence) == ((VALVES.chunk_id,), "MEDIUM")
    assert none.abstained and none.cited_chunk_ids == () and none.confidence == "LOW"
    assert [a.question_id for a in answers] == ["q-pump", "q-valve", "q-none"]
    for request in script.chat_requests:
        assert request["temperature"] == 0.0 and request["max_tokens"] == 400
        assert request["messages"][0]["content"].startswith(DEFAULT_SYSTEM_PROMPT)
    by_question = {question_of(r): r for r in script.chat_requests}
    assert "(no passage was retrieved)" in by_question["Who founded the plant?"]["messages"][1]["content"]
    assert progress[0] == ("answers", 0, 3) and progress[-1] == ("answers", 3, 3)


def test_a_transient_server_error_is_retried(tmp_path: Path):
    with openai_server() as (url, script):
        script.faults = [(503, {})]
        script.responder = lambda body: REPLIES[question_of(body)]
        answerer = answerer_for(url, tmp_path)
        [answer] = answerer.answer_all(ITEMS[:1])
        assert len(script.chat_requests) == 2
    assert answer.status == "ok" and answer.cited_chunk_ids == (PUMP.chunk_id,)
    assert answerer.client.usage_snapshot().retries == 1


def test_a_question_that_keeps_failing_gets_a_failed_row_and_the_others_are_answered(tmp_path: Path):
    def responder(body: dict[str, Any]) -> str:
        question = question_of(body)
        if question == "When are relief valves tested?":
            raise RuntimeError("this question always breaks the server")
        return REPLIES[question]

    with openai_server() as (url, script):
        script.responder = responder
        answers = answerer_for(url, tmp_path).answer_all(ITEMS)
    assert [a.status for a in answers] == ["ok", "failed", "ok"]
    failed = answers[1]
    assert failed.question_id == "q-valve" and failed.text == "" and failed.cited_chunk_ids == ()
    assert failed.error.startswith("llm call failed") and "500" in failed.error
    assert answers[0].cited_chunk_ids == (PUMP.chunk_id,)


def test_a_refused_request_and_an_empty_reply_are_failed_rows(tmp_path: Path):
    with openai_server() as (url, script):
        script.faults = [(400, {})]  # permanent: not retried
        [refused] = answerer_for(url, tmp_path).answer_all(ITEMS[:1])
        assert len(script.chat_requests) == 1
        script.chat_contents = ["Confidence: HIGH"]
        [empty] = answerer_for(url, tmp_path).answer_all(ITEMS[1:2])
    assert refused.status == "failed" and "400" in refused.error
    assert empty.status == "failed" and "no answer" in empty.error


def test_the_budget_cap_refuses_before_any_request(tmp_path: Path):
    with openai_server() as (url, script):
        answerer = answerer_for(url, tmp_path, **{"gpt-4o-mini": Price(1000.0, 1000.0)})
        with pytest.raises(BudgetExceeded, match="exceeds the budget cap"):
            answerer.answer_all(ITEMS, budget_usd=0.01)
        assert script.chat_requests == []
    estimate = answerer.last_estimate
    assert estimate is not None and estimate.n_requests == 3 and estimate.n_cached == 0
    assert estimate.completion_tokens == 3 * 400
    assert len(answerer.requests(ITEMS)) == 3


# --- the extractive answerer -------------------------------------------------------------------------


TINY_ITEMS = [
    AnswerItem(QuestionId("pump"), "How fast does the main pump run?", (ALARM, PUMP, STAFF)),
    AnswerItem(QuestionId("alarm"), "When does the pressure alarm fire?", (PUMP, ALARM)),
    AnswerItem(QuestionId("unrelated"), "Who leads the night shift?", (VALVES,)),
    AnswerItem(QuestionId("nothing"), "Who leads the night shift?", ()),
]


def test_extractive_answers_cite_the_best_sentence_and_abstain_on_an_unrelated_context(minilm: Embedder):
    embedder = CountingEmbedder(minilm)
    answerer = ExtractiveAnswerer(embedder, max_sentences=1)
    pump, alarm, unrelated, nothing = answerer.answer_all(TINY_ITEMS)
    assert pump.text == f"{PUMP.text} [{PUMP.chunk_id}]"
    assert pump.cited_chunk_ids == (PUMP.chunk_id,) and pump.confidence in ("HIGH", "MEDIUM")
    assert alarm.text == (
        f"A pressure alarm fires when the outlet pressure exceeds 7.5 bar for ten seconds. [{ALARM.chunk_id}]"
    )  # the heading "## Alarms" is no candidate
    for abstention in (unrelated, nothing):
        assert abstention.abstained and abstention.text == DONT_KNOW
        assert abstention.cited_chunk_ids == () and abstention.confidence is None
    assert {a.answerer for a in (pump, nothing)} == {f"extractive:{minilm.model_id}"}
    assert all(a.status == "ok" and a.invalid_citations == () for a in (pump, alarm, unrelated, nothing))
    # One embed call, each text once: the repeated question and shared sentences are not re-sent.
    [sent] = embedder.calls
    assert len(sent) == len(set(sent))
    assert "Who leads the night shift?" in sent and "How fast does the main pump run?" in sent


def test_extractive_answers_are_deterministic_and_a_close_second_sentence_is_added(minilm: Embedder):
    first = ExtractiveAnswerer(minilm).answer_all(TINY_ITEMS)
    assert ExtractiveAnswerer(minilm).answer_all(TINY_ITEMS) == first
    wide = ExtractiveAnswerer(minilm, max_sentences=2, second_margin=2.0)
    [two] = wide.answer_all(TINY_ITEMS[1:2])
    assert two.text.startswith("A pressure alarm fires") and two.text.endswith(f"[{PUMP.chunk_id}]")
    assert two.cited_chunk_ids == (ALARM.chunk_id, PUMP.chunk_id)
    assert two.confidence == first[1].confidence


def test_ties_go_to_the_better_ranked_chunk(minilm: Embedder):
    copy = hit(2, "chunk_eeeeeeeeeeee", PUMP.text)
    item = AnswerItem(QuestionId("q"), "How fast does the main pump run?", (copy, PUMP))
    [answer] = ExtractiveAnswerer(minilm, second_margin=2.0).answer_all([item])
    # The same sentence in two chunks is quoted once, with the better-ranked chunk's citation.
    assert answer.text == f"{PUMP.text} [{PUMP.chunk_id}]" and answer.cited_chunk_ids == (PUMP.chunk_id,)


def test_a_chunk_retrieved_for_many_questions_is_split_into_sentences_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The sentences of a chunk are found once a process, whichever questions and profiles retrieve it;
    the answers are those of splitting it every time."""
    split: list[str] = []

    def counted(text: str, *args: Any) -> list[tuple[int, int]]:
        split.append(text)
        return sentence_spans(text, *args)

    answerer = ExtractiveAnswerer(HashingEmbedder(32))
    text = "The spare pump is stored in bay 4. It is checked before each winter. Ask the yard team."
    items = [
        AnswerItem(
            QuestionId(f"q{i}"), f"Where is the spare pump kept, question {i}?", (hit(1, "chunk_s", text),)
        )
        for i in range(6)
    ]
    expected = answerer.answer_all(items)
    monkeypatch.setattr(answering, "sentence_spans", counted)
    answering._quotable_sentences.cache_clear()
    assert answerer.answer_all(items) == expected
    assert answerer.answer_all(items[:2]) == expected[:2]  # another profile retrieving it
    assert split == [text]


def test_the_abstention_threshold_and_confidence_bands(minilm: Embedder):
    strict = ExtractiveAnswerer(minilm, abstain_below=0.99, medium_at=0.99, high_at=0.99)
    assert strict.answer_all(TINY_ITEMS[:1])[0].abstained
    lenient = ExtractiveAnswerer(minilm, abstain_below=-1.0, medium_at=-1.0, high_at=-1.0)
    [unrelated] = lenient.answer_all(TINY_ITEMS[2:3])
    assert not unrelated.abstained and unrelated.confidence == "HIGH"
    assert unrelated.cited_chunk_ids == (VALVES.chunk_id,)
    assert [confidence_for(c, 0.5, 0.65) for c in (0.7, 0.65, 0.6, 0.5, 0.45)] == [
        "HIGH",
        "HIGH",
        "MEDIUM",
        "MEDIUM",
        "LOW",
    ]
    with pytest.raises(ConfigError, match="abstain_below"):
        ExtractiveAnswerer(minilm, abstain_below=0.7, medium_at=0.5)


@pytest.mark.parametrize(
    ("sentence", "text"),
    [
        (
            "| Perch and Quill | Platform Identity | #kestrel-identity |\n",
            "Perch and Quill; Platform Identity; #kestrel-identity",
        ),
        ("ng team | Team channel |", "ng team; Team channel"),
        ("|---|---|---|\n", None),
        ("## Service level objectives\n\n", None),
        ("- **Heron** — the ingestion gateway. ", "Heron — the ingestion gateway."),
        ("1. ", None),
        ("Run `make __init__` now.  ", "Run `make __init__` now."),
    ],
)
def test_sentence_answer_text(sentence: str, text: str | None):
    assert sentence_answer_text(sentence) == text


# --- no answers ----------------------------------------------------------------------------------------


def test_no_answers_keeps_every_row_skipped_with_its_reason_and_the_metrics_say_it():
    answered = NoAnswers("answerer: off in data/answer_evaluation.yaml").answer_all(ITEMS)
    assert [a.question_id for a in answered] == [i.question_id for i in ITEMS]
    assert {(a.status, a.text, a.cited_chunk_ids, a.abstained) for a in answered} == {
        ("skipped", "", (), False)
    }
    assert unanswered_reason(answered[0]) == "no answer: answerer: off in data/answer_evaluation.yaml"


@pytest.mark.parametrize(
    ("reference", "keywords", "expected"),
    [("It runs at 1,450 rpm.", (), True), (None, ("1,450 rpm",), True), ("  ", (), False), (None, (), False)],
)
def test_an_answer_is_scorable_with_a_reference_answer_or_keywords(
    reference: str | None, keywords: tuple[str, ...], expected: bool
):
    assert scorable(reference, keywords) is expected
