"""`rag-eval annotate`: what it refuses before serving, and the server it starts, as a user starts it (a
subprocess on a free port of 127.0.0.1, stopped with Ctrl-C)."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from rag_eval_pipeline.cli import main
from rag_eval_pipeline.core.judging.store import JudgingStore
from rag_eval_pipeline_tests.core.judging.annotation_fixtures import write_corpus, write_judging_files


def judging_workspace(project: Path) -> JudgingStore:
    write_corpus(project / "data" / "corpus")
    return write_judging_files(project / "data" / "judging")


def test_with_nothing_pooled_it_says_what_to_do_first(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["annotate", "--port", "0"]) == 2
    err = capsys.readouterr().err
    assert "error: no pooled query to judge in" in err and "pool.jsonl" in err and "pool them first" in err


def test_a_bad_name_or_port_is_refused_before_serving(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    judging_workspace(project)
    assert main(["annotate", "--port", "0", "--annotator", "a\tb"]) == 2
    assert "type your name" in capsys.readouterr().err
    assert main(["annotate", "--port", "70000"]) == 2
    assert "--port 70000 is not a port" in capsys.readouterr().err
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        assert main(["annotate", "--port", str(port)]) == 2
    assert f"cannot listen on 127.0.0.1:{port}" in capsys.readouterr().err


def test_a_broken_judging_file_is_named_before_serving(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = judging_workspace(project)
    store.pool_path.write_text("{}\n", encoding="utf-8")
    assert main(["annotate", "--port", "0"]) == 2
    assert "pool.jsonl:1: missing field 'query_id'" in capsys.readouterr().err


@pytest.mark.slow  # a subprocess that imports the command line (~3 s)
def test_the_page_is_served_on_loopback_and_says_its_url(project: Path) -> None:
    judging_workspace(project)
    env = {k: v for k, v in os.environ.items() if k not in ("DAGSTER_HOME", "OPENAI_API_KEY")}
    env["RAG_EVAL_PROJECT_DIR"] = str(project)
    env["PYTHONPATH"] = str(Path(__file__).resolve().parents[2])
    server = subprocess.Popen(
        [sys.executable, "-m", "rag_eval_pipeline", "annotate", "--port", "0", "--annotator", "ann"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert server.stdout is not None
        line = server.stdout.readline()
        assert line.startswith("Annotation page for 2 queries of workspace "), line + server.stderr.read()
        url = line.split(": ", 1)[1].split()[0]
        assert url.startswith("http://127.0.0.1:") and url.endswith("/?annotator=ann")
        base = url.split("?")[0]
        with urllib.request.urlopen(base + "api/state?annotator=ann", timeout=10) as answer:
            state = json.load(answer)
        assert state["progress"]["text"] == "0 of 2 queries judged by ann"
        assert state["default_annotator"] == "ann"
        other_host = urllib.request.Request(base + "api/state", headers={"Host": "attacker.example"})
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(other_host, timeout=10)
        assert refused.value.code == 400
    finally:
        server.send_signal(signal.SIGINT)  # Ctrl-C
        out, err = server.communicate(timeout=20)
    assert server.returncode == 0, err
    assert "Stopped. Judgements are in" in out and "Traceback" not in err
