"""The LLM judge of pooled passages through the real `openai` client against the scripted local server:
grades, quotes located as spans in the documents, scripted faults, nothing dropped, re-runs free."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from rag_eval_pipeline.core.corpus.corpus import Corpus
from rag_eval_pipeline.core.errors import DatasetError
from rag_eval_pipeline.core.judging.agreement import judgements_agreement
from rag_eval_pipeline.core.judging.llm_judge import (
    JudgeErrors,
    LLMPassageJudge,
    judge_pool,
    locate_in_passage,
    validate_reply,
)
from rag_eval_pipeline.core.judging.store import JudgingStore
from rag_eval_pipeline.core.judging.types import (
    ImportedQuery,
    Judgement,
    JudgeName,
    PooledPassage,
    query_id_for,
)
from rag_eval_pipeline.core.llm.accounting import BudgetExceeded, Price
from rag_eval_pipeline.core.llm.cache import ResponseCache
from rag_eval_pipeline.core.llm.client import LLMClient
from rag_eval_pipeline.core.llm.json_reply import InvalidReply
from rag_eval_pipeline.core.llm.openai_chat import OpenAIChatModel
from rag_eval_pipeline.core.llm.retry import RetryPolicy
from rag_eval_pipeline.core.types import CharacterSpan, Document, DocumentId
from rag_eval_pipeline_tests.openai_server import Slow, openai_server, scripted_client

DEPLOY = DocumentId("ops/deploy.md")
DEPLOY_TEXT = (
    "# Deploying\n\nDeploys happen on Tuesdays after the 10:00 stand-up. "
    'A rollback needs two approvals from the "release" group.\n\n'
    "The office plant is watered on Fridays."
)
CATS = DocumentId("cats.md")
CATS_TEXT = "Cats sleep up to sixteen hours a day. Kittens sleep even longer."
QUERY = "when do deploys happen"
QID = query_id_for(QUERY)
NOW = datetime(2026, 12, 2, 10, 0, tzinfo=UTC)


def passage(doc: DocumentId, text: str, start: int, end: int, document: str | None = None) -> PooledPassage:
    return PooledPassage(
        QID,
        CharacterSpan(doc, start, end, text[start:end]),
        Document(doc, document or text).sha256,
        ("dense #1",),
    )


DEPLOY_PARA = passage(DEPLOY, DEPLOY_TEXT, 13, 124)  # the two sentences on deploys
PLANT = passage(DEPLOY, DEPLOY_TEXT, 126, len(DEPLOY_TEXT))
CATS_ALL = passage(CATS, CATS_TEXT, 0, len(CATS_TEXT))


def reply(grade: Any, excerpt: str = "") -> str:
    return json.dumps({"grade": grade, "excerpt": excerpt})


def by_passage(replies: dict[str, str]) -> Any:
    """A responder answering by which passage the request shows (the first key found in it)."""

    def respond(body: dict[str, Any]) -> str:
        shown = body["messages"][1]["content"]
        return next(answer for key, answer in replies.items() if key in shown)

    return respond


def make_store(tmp_path: Path, passages: list[PooledPassage]) -> JudgingStore:
    store = JudgingStore(tmp_path / "judging")
    store.write_queries([ImportedQuery(QID, QUERY, count=7)])
    store.write_pool(passages)
    return store


CORPUS = Corpus((Document(DEPLOY, DEPLOY_TEXT), Document(CATS, CATS_TEXT)))


def judge_for(client: LLMClient) -> LLMPassageJudge:
    return LLMPassageJudge(client, clock=lambda: NOW)


def test_grades_and_located_quotes_become_span_judgements(tmp_path: Path) -> None:
    store = make_store(tmp_path, [DEPLOY_PARA, PLANT, CATS_ALL])
    with openai_server() as (url, script):
        script.responder = by_passage(
            {
                "Deploys happen": reply(3, "Deploys happen on Tuesdays after the 10:00 stand-up."),
                "office plant": reply(1),
                # loosely quoted: case, curly quotes; still placed on the document's own text
                "Cats sleep": reply(2, "CATS SLEEP up to sixteen hours a day"),
            }
        )
        run = judge_pool(store, CORPUS, judge_for(scripted_client(url, tmp_path)))
    assert [o.status for o in run.outcomes] == ["located", "not-relevant", "located"]
    judgements = store.read_judgements()
    assert len(judgements) == 3
    first, plant, cats = judgements
    assert first.judge == "llm:openai:gpt-4o-mini@" + url.split("/")[2]
    assert (first.kind, first.verdict, first.grade) == ("llm", "answers", 3)
    assert first.read == (DEPLOY_PARA.span,) and first.documents == {DEPLOY: DEPLOY_PARA.document_sha256}
    [span] = first.spans
    assert (
        DEPLOY_TEXT[span.start : span.end]
        == span.text
        == "Deploys happen on Tuesdays after the 10:00 stand-up."
    )
    assert first.note == "Deploys happen on Tuesdays after the 10:00 stand-up."
    assert first.judged_at == NOW.isoformat()
    assert (plant.verdict, plant.grade, plant.spans, plant.read) == ("not-answerable", 1, (), (PLANT.span,))
    [cat_span] = cats.spans
    assert cat_span == CharacterSpan(CATS, 0, 36, "Cats sleep up to sixteen hours a day")
    assert run.grades() == {0: 0, 1: 1, 2: 1, 3: 1}
    assert run.errors == 0 and not JudgeErrors(store.folder).read()


def test_a_500_is_retried_with_backoff_then_judged(tmp_path: Path) -> None:
    store = make_store(tmp_path, [DEPLOY_PARA])
    with openai_server() as (url, script):
        script.faults = [(500, {})]
        script.chat_contents = [reply(3, "A rollback needs two approvals")]
        run = judge_pool(store, CORPUS, judge_for(scripted_client(url, tmp_path)))
        assert len(script.chat_requests) == 2
    assert [o.status for o in run.outcomes] == ["located"]
    assert run.usage.retries == 1 and run.usage.failures == 0


def timeout_client(url: str, tmp_path: Path, max_attempts: int) -> LLMClient:
    model = OpenAIChatModel("gpt-4o-mini", api_key="sk-test", base_url=url, timeout=0.3)
    return LLMClient(
        model,
        cache=ResponseCache(tmp_path / "responses.sqlite"),
        retry=RetryPolicy(max_attempts=max_attempts, base_delay_s=0.01),
    )


def test_a_timeout_is_retried(tmp_path: Path) -> None:
    store = make_store(tmp_path, [DEPLOY_PARA])
    with openai_server() as (url, script):
        script.faults = [Slow(0.8)]
        script.chat_contents = [reply(3, "Deploys happen on Tuesdays")]
        run = judge_pool(store, CORPUS, judge_for(timeout_client(url, tmp_path, max_attempts=3)))
    assert [o.status for o in run.outcomes] == ["located"] and run.usage.retries == 1


def test_a_timeout_that_persists_is_an_error_line_then_retried_on_the_next_run(tmp_path: Path) -> None:
    store = make_store(tmp_path, [DEPLOY_PARA])
    with openai_server() as (url, script):
        script.faults = [Slow(0.8), Slow(0.8)]
        script.chat_contents = [reply(3, "Deploys happen on Tuesdays")]
        run = judge_pool(store, CORPUS, judge_for(timeout_client(url, tmp_path, max_attempts=2)))
        [outcome] = run.outcomes
        assert outcome.status == "llm-failed" and "timed out" in outcome.reason
        assert not store.read_judgements()
        [line] = JudgeErrors(store.folder).read()
        assert (line["status"], line["query_id"], line["start"], line["end"]) == ("llm-failed", QID, 13, 124)
        assert "gave up after 2 attempts" in line["reason"]
        # the next run sends what is missing, and the judgement replaces the error line
        rerun = judge_pool(store, CORPUS, judge_for(timeout_client(url, tmp_path, max_attempts=2)))
    assert [o.status for o in rerun.outcomes] == ["located"]
    assert len(store.read_judgements()) == 1 and not JudgeErrors(store.folder).read()


def test_a_reply_that_is_not_json_is_repaired_and_one_never_json_is_kept_as_an_error(tmp_path: Path) -> None:
    store = make_store(tmp_path, [DEPLOY_PARA, CATS_ALL])
    with openai_server() as (url, script):

        def respond(body: dict[str, Any]) -> str:
            if "Deploys happen" in body["messages"][1]["content"]:
                # first an answer in prose, then after the repair prompt the JSON
                return reply(3, "Deploys happen on Tuesdays") if len(body["messages"]) > 2 else "Grade: 3!"
            return "I would say it is relevant."

        script.responder = respond
        run = judge_pool(store, CORPUS, judge_for(scripted_client(url, tmp_path)))
        repair = script.chat_requests[-1]["messages"][-1]["content"]
    deploy, cats = run.outcomes
    assert (deploy.status, deploy.attempts) == ("located", 2)
    assert cats.status == "invalid-reply" and "not a JSON object" in cats.reason
    assert "That reply cannot be used" in repair
    [line] = JudgeErrors(store.folder).read()
    assert (line["status"], line["doc_id"], line["grade"]) == ("invalid-reply", CATS, None)


def test_a_quote_not_in_the_passage_keeps_its_grade_with_the_reason_and_no_span(tmp_path: Path) -> None:
    store = make_store(tmp_path, [DEPLOY_PARA])
    invented = "Deploys happen every Monday at noon sharp"
    with openai_server() as (url, script):
        script.responder = lambda body: reply(3, invented)
        run = judge_pool(store, CORPUS, judge_for(scripted_client(url, tmp_path)))
        asked = script.chat_requests
    [outcome] = run.outcomes
    assert (outcome.status, outcome.grade, outcome.excerpt) == ("not-located", 3, invented)
    assert "not in the passage" in outcome.reason and "longest prefix" in outcome.reason
    assert len(asked) == 2 and "word for word" in asked[1]["messages"][-1]["content"]  # one repair prompt
    assert not store.read_judgements()  # a read range without a span would say "not relevant"
    [line] = JudgeErrors(store.folder).read()
    assert (line["status"], line["grade"], line["excerpt"]) == ("not-located", 3, invented)
    assert run.grades()[3] == 1 and run.errors == 1


def test_a_grade_out_of_range_is_sent_back_and_the_repaired_grade_kept(tmp_path: Path) -> None:
    store = make_store(tmp_path, [PLANT])
    with openai_server() as (url, script):
        script.chat_contents = [reply(5), reply(0)]
        run = judge_pool(store, CORPUS, judge_for(scripted_client(url, tmp_path)))
        repair = script.chat_requests[1]["messages"][-1]["content"]
    assert '"grade" must be one of 0, 1, 2, 3, got 5' in repair
    [outcome] = run.outcomes
    assert (outcome.status, outcome.grade, outcome.attempts) == ("not-relevant", 0, 2)


def test_a_rerun_sends_only_what_is_not_judged_and_cached_replies_cost_nothing(tmp_path: Path) -> None:
    store = make_store(tmp_path, [DEPLOY_PARA, PLANT, CATS_ALL])
    with openai_server() as (url, script):
        script.responder = by_passage(
            {
                "Deploys happen": reply(3, "Deploys happen on Tuesdays"),
                "office plant": reply(0),
                "Cats": reply(2, "nope"),
            }
        )
        first = judge_pool(
            store,
            CORPUS,
            judge_for(scripted_client(url, tmp_path, prices={"gpt-4o-mini": Price(1.0, 2.0)})),
            limit=2,
        )
        assert (len(first.outcomes), first.left, first.already_judged) == (2, 1, 0)
        assert first.usage.calls == 2 and first.usage.cost_usd is not None and first.usage.cost_usd > 0
        second = judge_pool(store, CORPUS, judge_for(scripted_client(url, tmp_path)))
        assert [o.passage for o in second.outcomes] == [CATS_ALL] and second.already_judged == 2
        assert second.outcomes[0].status == "not-located"
        sent = len(script.chat_requests)
        # the not-located passage is tried again on every run, from the response cache: free
        third = judge_pool(store, CORPUS, judge_for(scripted_client(url, tmp_path)))
        assert len(script.chat_requests) == sent
    assert [o.status for o in third.outcomes] == ["not-located"]
    assert third.usage.calls == 0 and third.usage.cache_hits == 2  # the first request and its repair
    assert len(store.read_judgements()) == 2 and len(JudgeErrors(store.folder).read()) == 1


def test_a_passage_whose_document_changed_is_not_sent_and_is_listed(tmp_path: Path) -> None:
    edited = passage(DEPLOY, DEPLOY_TEXT, 13, 124, document=DEPLOY_TEXT + " (old version)")
    store = make_store(tmp_path, [edited])
    with openai_server() as (url, script):
        run = judge_pool(store, CORPUS, judge_for(scripted_client(url, tmp_path)))
        assert not script.chat_requests
        [outcome] = run.outcomes
        assert outcome.status == "document-changed" and "pool the queries again" in outcome.reason
        assert [line["status"] for line in JudgeErrors(store.folder).read()] == ["document-changed"]
        # pooled again on the current document: the old passage's error line goes, the new one is judged
        store.write_pool([DEPLOY_PARA])
        script.chat_contents = [reply(1)]
        rerun = judge_pool(store, CORPUS, judge_for(scripted_client(url, tmp_path)))
    assert [o.status for o in rerun.outcomes] == ["not-relevant"] and not JudgeErrors(store.folder).read()


def test_the_budget_is_checked_before_anything_is_sent(tmp_path: Path) -> None:
    store = make_store(tmp_path, [DEPLOY_PARA, PLANT])
    with openai_server() as (url, script):
        client = scripted_client(url, tmp_path, prices={"gpt-4o-mini": Price(1000.0, 1000.0)})
        with pytest.raises(BudgetExceeded):
            judge_pool(store, CORPUS, judge_for(client), budget_usd=0.01)
        assert not script.chat_requests


@pytest.mark.parametrize(
    ("obj", "problem"),
    [
        ({}, '"grade" is missing'),
        ({"grade": 4}, "must be one of 0, 1, 2, 3"),
        ({"grade": 2.5}, "must be one of 0, 1, 2, 3"),
        ({"grade": True}, "must be one of 0, 1, 2, 3"),
        ({"grade": 3, "excerpt": ""}, 'needs the "excerpt"'),
        ({"grade": 2, "excerpt": 7}, '"excerpt" must be a string'),
    ],
)
def test_invalid_replies_say_what_is_wrong(obj: dict[str, Any], problem: str) -> None:
    with pytest.raises(InvalidReply, match=problem.replace('"', ".").replace("(", ".")):
        validate_reply(obj)


def test_a_grade_as_text_and_a_missing_excerpt_below_relevance_are_accepted() -> None:
    assert validate_reply({"grade": "1"}).grade == 1
    assert validate_reply({"grade": 0, "excerpt": None}).excerpt == ""


def test_a_short_quote_is_placed_when_the_passage_holds_it_once_and_refused_when_twice() -> None:
    [span] = locate_in_passage(DEPLOY_PARA, "Tuesdays")  # type: ignore[misc]
    assert DEPLOY_TEXT[span.start : span.end] == "Tuesdays"
    text = "Run it. Run it. Then stop."
    twice = PooledPassage(QID, CharacterSpan(CATS, 0, len(text), text), "x", ())
    assert (
        locate_in_passage(twice, "Run it")
        == "the excerpt occurs 2 times in the passage: it does not say which"
    )


def test_no_request_when_nothing_is_left(tmp_path: Path) -> None:
    store = make_store(tmp_path, [])
    with openai_server() as (url, script):
        run = judge_pool(store, CORPUS, judge_for(scripted_client(url, tmp_path)))
        assert not script.chat_requests
    assert run.outcomes == () and not store.judgements_path.exists()


def test_passages_of_queries_not_imported_are_refused_naming_the_files(tmp_path: Path) -> None:
    store = make_store(tmp_path, [DEPLOY_PARA])
    store.write_queries([ImportedQuery(query_id_for("something else"), "something else")])
    with openai_server() as (url, script):
        with pytest.raises(DatasetError, match=r"pool.jsonl: passages of queries not in .*queries.jsonl"):
            judge_pool(store, CORPUS, judge_for(scripted_client(url, tmp_path)))
        assert not script.chat_requests


def human(
    name: str, read: tuple[PooledPassage, ...], spans: tuple[CharacterSpan, ...], verdict: str = "answers"
) -> Judgement:
    return Judgement(
        QID,
        JudgeName(name),
        "human",
        verdict,  # type: ignore[arg-type]
        spans,
        tuple(p.span for p in read),
        "2026-12-02T09:00:00+00:00",
        {p.span.doc_id: p.document_sha256 for p in read},
    )


def test_the_llm_judge_s_agreement_with_a_person_is_cohen_s_kappa_over_the_passages_both_read(
    tmp_path: Path,
) -> None:
    store = make_store(tmp_path, [DEPLOY_PARA, PLANT, CATS_ALL])
    with openai_server() as (url, script):
        script.responder = by_passage(
            {
                "Deploys happen": reply(3, "Deploys happen on Tuesdays"),
                "office plant": reply(2, "watered on Fridays"),
                "Cats": reply(0),
            }
        )
        run = judge_pool(store, CORPUS, judge_for(scripted_client(url, tmp_path)))
    tuesday = DEPLOY_TEXT.index("Deploys happen on Tuesdays")
    answer = CharacterSpan(DEPLOY, tuesday, tuesday + 26, DEPLOY_TEXT[tuesday : tuesday + 26])
    # ann read all three passages and found the answer in the deploy one only
    store.append_judgements([human("ann", (DEPLOY_PARA, PLANT, CATS_ALL), (answer,))])
    (pair,) = judgements_agreement(store.read_judgements(), CORPUS, store.read_pool())
    assert (pair.judge_a, pair.judge_b) == ("ann", run.judge)
    # deploy: both relevant; plant: the LLM only (grade 2); cats: neither. p_o = 2/3, p_e = 1/3 * 2/3 +
    # 2/3 * 1/3 = 4/9, kappa = (2/3 - 4/9) / (1 - 4/9) = 0.4
    assert (pair.table.both, pair.table.only_a, pair.table.only_b, pair.table.neither) == (1, 0, 1, 1)
    assert pair.kappa == pytest.approx(0.4)
