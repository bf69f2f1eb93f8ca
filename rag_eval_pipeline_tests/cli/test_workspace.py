"""`rag-eval init` over a team's own folder of documents, then `rag-eval run` in it: the four formats
load with exact offsets, the questions are generated offline, the leaderboard prints, and every file the
run makes stays in the workspace (the bundled demo is not touched). `rag-eval --help` says where the
workspace is; a missing workspace says how to make one."""

from __future__ import annotations

import os
import signal
import subprocess
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from rag_eval_pipeline.core.project.project_files import ProjectFiles
from rag_eval_pipeline.core.project.workspace import WORKSPACE_FILE
from rag_eval_pipeline.core.store.warehouse import Warehouse
from rag_eval_pipeline_tests import forked_cli
from rag_eval_pipeline_tests.conftest import REPO
from rag_eval_pipeline_tests.dagster_dev import free_port, graphql, wait_until_served
from rag_eval_pipeline_tests.faults.entry_points import rag_eval_command, rag_eval_env

PARAGRAPH = (
    "Rotate the signing key every ninety days. The old key stays valid for one more week so that tokens "
    "issued just before the rotation keep working, and the security team records each rotation in the "
    "change log with the fingerprint of the new key and the name of the engineer who performed it."
)
KEYS = (
    "Zoë Ångström owns the rotation schedule for the payment gateway. When she is away, the deputy "
    "from the platform team takes over, and the hand-over note lists which environments still use the "
    "previous key, which monitoring alerts were silenced, and when they must be switched back on again."
)
ONCALL = (
    "The on-call engineer answers pages within fifteen minutes, day and night. A page that is not "
    "acknowledged within that time escalates to the secondary, then to the engineering manager; every "
    "escalation is reviewed in the weekly operations meeting, with the timeline taken from the pager log."
)
BACKUPS = (
    "Nightly backups of the customer database run at 01:30 and are kept for thirty-five days. Every "
    "quarter a restore is rehearsed on a scratch server, and the time it takes is compared with the "
    "recovery objective of four hours; a slower restore opens a ticket for the storage team to investigate."
)
NETWORK = (
    "The office VPN uses WireGuard on port 51820 &amp; rotates its peer keys monthly. Split tunnelling is "
    "off, so all traffic of a connected laptop leaves through the office firewall, and guests in the café "
    "use a separate wireless network that cannot reach any internal service or printer on the floor."
)

DOCUMENTS = {
    "handbook/keys.md": f"# Key rotation\n\n{PARAGRAPH}\n\n## Who\n\n{KEYS}\n",
    "handbook/ops/oncall.txt": f"On-call\n\n{ONCALL}\n\n{PARAGRAPH}\n",
    "reference/backup.rst": f"Backups\n=======\n\n{BACKUPS}\n\n* Restores are tested every quarter.\n",
    "reference/network.html": (
        "<!doctype html><html><head><title>Net</title><style>p {color: red}</style></head><body>"
        f"<h1>Network</h1><p>{NETWORK}</p><script>var tracking = 1;</script>"
        "<ul><li>Split tunnelling is off.</li><li>Guests use the café network.</li></ul></body></html>"
    ),
    "reference/diagram.pdf": "%PDF-1.4 not a format the corpus reads",
}


def write_documents(folder: Path) -> Path:
    for name, text in DOCUMENTS.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return folder


def user_env() -> dict[str, str]:
    """A user's shell: no workspace variable, no instance, no keys."""
    env = rag_eval_env(Path("."))
    del env["RAG_EVAL_PROJECT_DIR"]
    return env


def rag_eval_in(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return forked_cli.run(args, user_env(), cwd=cwd, timeout=900)


def demo_state() -> dict[str, float]:
    """Every file the demo workspace's runs write, with its modification time."""
    state = {}
    for folder in (REPO / "data" / "warehouse", REPO / ".dagster", REPO / "data" / "cache"):
        if folder.is_dir():
            state.update({str(p): p.stat().st_mtime for p in folder.rglob("*") if p.is_file()})
    return state


def test_help_says_where_the_workspace_is_and_a_missing_one_how_to_make_it(tmp_path: Path) -> None:
    helped = rag_eval_in(tmp_path, "--help")
    assert helped.returncode == 0
    text = " ".join(helped.stdout.split())
    assert "--workspace DIR; $RAG_EVAL_PROJECT_DIR; the current directory" in text
    assert "init" in text and "ui" in text
    missing = rag_eval_in(tmp_path, "--workspace", "nowhere", "list")
    assert missing.returncode == 2 and "Traceback" not in missing.stderr
    assert f"the workspace {tmp_path / 'nowhere'} (from --workspace) does not exist" in missing.stderr
    assert "rag-eval init DIR --corpus DOCS" in missing.stderr


def test_init_refuses_a_folder_without_documents_naming_it(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    done = rag_eval_in(tmp_path, "init", "ws", "--corpus", "empty")
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert str(tmp_path / "empty") in done.stderr
    assert not (tmp_path / "ws" / WORKSPACE_FILE).exists()


@pytest.mark.slow
def test_init_then_run_evaluates_your_documents_in_four_formats_and_leaves_the_demo_alone(
    tmp_path: Path,
) -> None:
    docs = write_documents(tmp_path / "docs")
    before = demo_state()

    init = rag_eval_in(tmp_path, "init", "ws", "--corpus", "docs")
    assert init.returncode == 0, init.stderr
    workspace = tmp_path / "ws"
    assert f"workspace {workspace}: 4 documents in {docs}" in init.stdout
    assert f"cd {workspace}" in init.stdout and "rag-eval run" in init.stdout
    assert "skipped, not a format the corpus reads: reference/diagram.pdf" in init.stdout

    inside = workspace / "data"  # a folder below the workspace finds it, as git finds a repository
    run = rag_eval_in(
        inside, "run", "--chunk-configs", "recursive-400-50", "--profiles", "dense-top5,keyword-top5"
    )
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    assert "Traceback" not in run.stderr
    board_lines = [line for line in run.stdout.splitlines() if "recursive-400-50" in line]
    assert {"dense-top5", "keyword-top5"} <= {w for line in board_lines for w in line.split()}
    # the offline default is the paraphrase generator: no known-item caveat under the board
    assert "questions: known-item" not in run.stdout
    assert "skipped 1 files with extensions the corpus does not read (.pdf 1)" in run.stderr

    files = ProjectFiles.in_project(workspace, {})
    corpus = files.load_corpus()
    assert sorted(d.doc_id for d in corpus) == sorted(n for n in DOCUMENTS if not n.endswith(".pdf"))
    html = corpus["reference/network.html"].text
    assert "WireGuard on port 51820 & rotates" in html and "tracking" not in html and "color" not in html
    questions = Warehouse.in_project(workspace, {}).read_current("eval_questions")
    assert questions is not None and len(questions) > 0
    checked = 0
    for row in questions.itertuples():
        for span in row.relevant_spans:
            assert corpus[span["doc_id"]].text[span["start"] : span["end"]] == span["text"]
            checked += 1
    assert checked >= len(questions)

    assert (workspace / ".dagster" / "storage").is_dir()  # the workspace's own instance
    leaderboard = Warehouse.in_project(workspace, {}).current_path("leaderboard")
    assert leaderboard.is_relative_to(workspace) and leaderboard.is_file()
    assert demo_state() == before
    assert not any(p.name == "warehouse" for p in docs.rglob("*"))  # the documents folder is only read
    assert sorted(os.listdir(docs)) == ["handbook", "reference"]


@pytest.mark.slow
def test_ui_serves_the_workspace_it_is_started_in_on_its_own_instance(tiny_project: Path) -> None:
    (tiny_project / WORKSPACE_FILE).write_text("corpus: data/corpus\n", encoding="utf-8")
    port = free_port()
    process = subprocess.Popen(
        rag_eval_command("ui", "--port", str(port)),
        cwd=tiny_project / "data",
        env=user_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        start_new_session=True,
    )
    try:
        assert process.stdout is not None
        first = process.stdout.readline()
        url = f"http://127.0.0.1:{port}"
        assert first.startswith(f"Dagster UI on workspace {tiny_project}: {url}")
        query = "{ assetNodes { assetKey { path } repository { location { name } } } }"
        nodes = wait_until_served(url, process, 180, query)
        assert {n["repository"]["location"]["name"] for n in nodes} == {"rag_eval_pipeline"}
        sensor = graphql(
            url,
            '{ sensorOrError(sensorSelector: {repositoryLocationName: "rag_eval_pipeline", '
            'repositoryName: "__repository__", sensorName: "document_sensor"}) '
            "{ ... on Sensor { sensorState { status } } } }",
        )
        assert sensor["data"]["sensorOrError"]["sensorState"]["status"] == "RUNNING"
        assert (tiny_project / ".dagster" / "storage").is_dir()  # the workspace's dagster.yaml
        process.send_signal(signal.SIGTERM)  # to `rag-eval ui` alone: it stops `dagster dev` with it
        assert process.wait(timeout=90) is not None
        with pytest.raises(urllib.error.URLError):
            urllib.request.urlopen(f"{url}/server_info", timeout=5)
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()


def test_a_folder_with_only_documents_says_how_to_make_it_a_workspace(tmp_path: Path) -> None:
    (tmp_path / "data" / "corpus").mkdir(parents=True)
    (tmp_path / "data" / "corpus" / "a.md").write_text("# A\n\nText.\n", encoding="utf-8")
    done = rag_eval_in(tmp_path, "--workspace", ".", "run")
    assert done.returncode == 2 and "Traceback" not in done.stderr
    message = " ".join(done.stderr.split())
    assert f"config file {tmp_path / 'data' / 'chunk_configs.yaml'} does not exist" in message
    assert "rag-eval init DIR --corpus DOCS" in message
    assert "--workspace DIR; $RAG_EVAL_PROJECT_DIR; the current directory" in message


def test_a_workspace_without_dagster_yaml_gets_an_instance_without_telemetry(tiny_project: Path) -> None:
    (tiny_project / "dagster.yaml").unlink()
    done = rag_eval_in(tiny_project, "--workspace", ".", "list")
    assert done.returncode == 0, done.stderr
    assert "no runs yet" in done.stdout
    assert "telemetry" not in (done.stdout + done.stderr).lower()
    assert (tiny_project / ".dagster" / "dagster.yaml").read_text(encoding="utf-8") == (
        "telemetry:\n  enabled: false\n"
    )
