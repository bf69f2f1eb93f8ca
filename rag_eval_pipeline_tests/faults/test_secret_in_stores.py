"""A server that echoes the API key into its replies (status 200: a debugging proxy, a broken gateway),
through `rag-eval run` and `rag-eval regenerate-questions` with OPENAI_API_KEY set: the key reaches no
store the project writes. The replies are cached (data/cache/llm_responses.sqlite), so the cache holds
the marker where the key was; every file under the workspace (SQLite caches, Parquet, JSONL, the
Dagster instance's storage and compute logs, reports) is searched for the key and for pieces of it.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from rag_eval_pipeline_tests.defs.answers.test_answer_assets import llm_project
from rag_eval_pipeline_tests.faults.entry_points import rag_eval
from rag_eval_pipeline_tests.openai_server import EchoKeyInReply, openai_server

pytestmark = pytest.mark.slow

KEY = "sk-proj-Wc47TnQz2Lp9Rx5Vb8Jm3Kd6Hs1Fy0Ga7Ue4Oi"
MARK = "[redacted OPENAI_API_KEY]"


def test_a_key_echoed_into_completions_is_stored_nowhere(tiny_project: Path):
    llm_project(tiny_project)
    generation = tiny_project / "data/generation.yaml"
    generation.write_text(
        "evaluate_on: golden\ntoken_level: {generator: llm}\n" + generation.read_text(encoding="utf-8"),
        encoding="utf-8",
    )
    env = {"OPENAI_API_KEY": KEY}
    with openai_server() as (url, script):
        script.fault_for = lambda body: EchoKeyInReply()
        env["OPENAI_BASE_URL"] = url
        done = rag_eval(tiny_project, "run", "--chunk-configs", "fixed-60-0", "--profiles", "top2", env=env)
        # the evaluation uses only the golden set, so the run skipped synthetic_questions: generate them
        regenerated = rag_eval(tiny_project, "regenerate-questions", env=env)
        echoed = len(script.chat_requests)
    terminal = done.stdout + done.stderr + regenerated.stdout + regenerated.stderr
    assert done.returncode == 0 and regenerated.returncode == 0, terminal
    assert echoed > 0 and set(script.auth_headers) == {f"Bearer {KEY}"}  # the server did see the key

    cache = tiny_project / "data" / "cache" / "llm_responses.sqlite"
    with sqlite3.connect(cache) as db:
        rows = db.execute("SELECT text, model FROM responses").fetchall()
    assert len(rows) > 0  # the replies were cached ...
    assert all(MARK in text and model == MARK for text, model in rows)  # ... with the marker

    leaks = (KEY, KEY[:12], KEY[-12:])  # a partial echo counts too
    assert not any(leak in terminal for leak in leaks)
    files = [path for path in tiny_project.rglob("*") if path.is_file()]
    assert any(path.suffix == ".db" for path in files)  # the Dagster instance's storage is searched too
    leaked = [str(path) for path in files if any(leak.encode() in path.read_bytes() for leak in leaks)]
    assert not leaked
