"""`rag-eval judgements llm` on the tiny project against the scripted OpenAI-protocol server."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from rag_eval_pipeline.cli import main
from rag_eval_pipeline.core.judging.store import JudgingStore
from rag_eval_pipeline.core.judging.types import ImportedQuery, PooledPassage, query_id_for
from rag_eval_pipeline.core.types import CharacterSpan, DocumentId, sha256_hex
from rag_eval_pipeline_tests.conftest import TINY_DOCS
from rag_eval_pipeline_tests.openai_server import openai_server

QUERY = "how fast does the main pump run"
QID = query_id_for(QUERY)


def pooled(doc_id: str, sentence: str) -> PooledPassage:
    text = TINY_DOCS[doc_id]
    start = text.index(sentence)
    span = CharacterSpan(DocumentId(doc_id), start, start + len(sentence), sentence)
    return PooledPassage(QID, span, sha256_hex(text), ("fixed-200-0 x dense-top5 #1",))


PUMP = pooled("alpha/pumps.md", "The main pump runs at 1,450 rpm and is serviced every 90 days.")
VALVE = pooled("alpha/valves.md", "Every relief valve is tested in March.")


@pytest.fixture
def judging(project: Path, monkeypatch: pytest.MonkeyPatch) -> JudgingStore:
    for name in ("OPENAI_BASE_URL", "RAG_EVAL_LLM_PROVIDER", "RAG_EVAL_LLM_MODEL"):  # the shell's LLM
        monkeypatch.delenv(name, raising=False)
    store = JudgingStore(project / "data" / "judging")
    store.write_queries([ImportedQuery(QID, QUERY, count=3)])
    store.write_pool([PUMP, VALVE])
    # no pacing between requests, one retry: the test's server answers at once
    (project / "data" / "generation.yaml").write_text(
        "llm:\n  requests_per_minute: null\n  max_attempts: 2\n", encoding="utf-8"
    )
    return store


def respond(body: dict[str, Any]) -> str:
    shown = body["messages"][1]["content"]
    if "main pump" in shown.split("Passage:")[1]:
        return json.dumps({"grade": 3, "excerpt": "The main pump runs at 1,450 rpm"})
    return json.dumps({"grade": 0, "excerpt": ""})


def test_without_an_llm_it_exits_2_saying_what_to_set(
    judging: JudgingStore, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["judgements", "llm"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: the LLM judge needs an LLM") and "OPENAI_API_KEY" in err
    assert "OPENAI_BASE_URL" in err and "RAG_EVAL_LLM_MODEL" in err
    assert not judging.judgements_path.exists()


def test_it_judges_the_pool_prints_a_summary_and_a_rerun_sends_nothing(
    judging: JudgingStore, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    with openai_server() as (url, script):
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
        monkeypatch.setenv("OPENAI_BASE_URL", url)
        script.responder = respond
        assert main(["judgements", "llm", "--limit", "1"]) == 0
        out = capsys.readouterr().out
        assert "1 passages judged now, 0 judged before; 1 left for the next run (--limit)" in out
        assert "graded:   1 (grade 0: 0, grade 1: 0, grade 2: 0, grade 3: 1)" in out
        assert "1 quotes located in the documents" in out and "errors:   none" in out
        assert "agreement: no person has judged these queries yet (`rag-eval annotate`)" in out
        assert "1 calls, 0 from the cache, 0 retries, 0 failed" in out
        assert main(["judgements", "llm"]) == 0
        assert "1 passages judged now, 1 judged before" in capsys.readouterr().out
        sent = len(script.chat_requests)
        assert main(["judgements", "llm"]) == 0
        assert "0 passages judged now, 2 judged before" in capsys.readouterr().out
        assert len(script.chat_requests) == sent
    pump, valve = judging.read_judgements()
    [span] = pump.spans
    assert TINY_DOCS["alpha/pumps.md"][span.start : span.end] == "The main pump runs at 1,450 rpm"
    assert (pump.verdict, pump.grade, valve.verdict, valve.grade) == ("answers", 3, "not-answerable", 0)


def test_errors_are_counted_listed_and_the_exit_code_is_1(
    judging: JudgingStore, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    with openai_server() as (url, script):
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
        monkeypatch.setenv("OPENAI_BASE_URL", url)
        script.responder = lambda body: json.dumps(
            {"grade": 2, "excerpt": "pumps are painted green on Sundays"}
        )
        assert main(["judgements", "llm"]) == 1
    out = capsys.readouterr().out
    assert "0 quotes located in the documents, 2 not located" in out
    assert "errors:   2 (not-located 2)" in out and "judge_errors.jsonl" in out
    assert not judging.read_judgements()


def test_an_empty_pool_says_what_to_do(
    project: Path, capsys: pytest.CaptureFixture[str], monkeypatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    assert main(["judgements", "llm"]) == 1
    assert "holds no pooled passage" in capsys.readouterr().err


def test_provider_openai_without_a_key_exits_2_naming_the_variable(
    judging: JudgingStore, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("RAG_EVAL_LLM_PROVIDER", "openai")
    assert main(["judgements", "llm"]) == 2
    assert "llm.provider 'openai' needs OPENAI_API_KEY" in capsys.readouterr().err
