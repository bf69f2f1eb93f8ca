"""`dagster dev` serves the project's assets in the UI (its GraphQL API answers what the UI shows)."""

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[1]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def restore_default_signals() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)


def graphql(url: str, query: str) -> dict:
    request = urllib.request.Request(
        f"{url}/graphql",
        data=json.dumps({"query": query}).encode(),
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.loads(response.read())


def test_dagster_dev_shows_the_assets(tiny_project: Path):
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    env = {k: v for k, v in os.environ.items() if k != "DAGSTER_HOME"}
    env["RAG_EVAL_PROJECT_DIR"] = str(tiny_project)
    dagster = Path(sys.executable).with_name("dagster")
    process = subprocess.Popen(
        [str(dagster), "dev", "-m", "rag_eval_pipeline.definitions", "-h", "127.0.0.1", "-p", str(port)],
        cwd=tiny_project,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        preexec_fn=restore_default_signals,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 180
        while True:
            assert process.poll() is None, process.stderr.read().decode() if process.stderr else ""
            try:
                with urllib.request.urlopen(f"{url}/server_info", timeout=5):
                    break
            except (urllib.error.URLError, ConnectionError):
                assert time.monotonic() < deadline, "dagster dev did not answer within 180 s"
                time.sleep(0.5)
        nodes: list = []
        while time.monotonic() < deadline:  # the code location loads after the webserver answers
            data = graphql(url, "{ assetNodes { assetKey { path } groupName } }").get("data") or {}
            nodes = data.get("assetNodes") or []
            if nodes:
                break
            time.sleep(1)
        shown = {tuple(n["assetKey"]["path"]): n["groupName"] for n in nodes}
        assert shown == {
            ("corpus",): "ingestion",
            ("synthetic_questions",): "ingestion",
            ("eval_questions",): "ingestion",
            ("answer_calibration",): "ingestion",
            ("chunks",): "chunking",
            ("chunk_index",): "chunking",
            ("chunk_level_questions",): "chunking",
            ("retrieval_results",): "evaluation",
            ("retrieval_metrics",): "evaluation",
            ("answers",): "evaluation",
            ("answer_metrics",): "evaluation",
            ("answer_judgements",): "reporting",
            ("leaderboard",): "reporting",
        }
        assert (tiny_project / ".dagster" / "storage").is_dir()  # the root dagster.yaml was used
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
