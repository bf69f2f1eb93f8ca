"""The HTTP API (`rag-eval serve`) against a real server: a `rag-eval serve --port 0` process on the tiny
project after its first `rag-eval run`, reached over the loopback interface, with tokens made by
`rag-eval tokens create`. Every route refuses a request without a valid token (401) or with a role
that may not (403), listed from the app's own routes; each endpoint answers what its command answers
(a profile cloned over HTTP is the CLI's clone; a run started over HTTP is in `rag-eval status`); no
token's text is left in any file of the workspace or in the server's output."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from rag_eval_pipeline.api.app import MAX_BODY, PREFIX, create_app
from rag_eval_pipeline.api.evaluations import EvaluationRecord, EvaluationRecords
from rag_eval_pipeline.api.tokens import TokenStore
from rag_eval_pipeline.core.runs.processes import ProcessIdentity
from rag_eval_pipeline_tests.conftest import CliRun
from rag_eval_pipeline_tests.faults.entry_points import rag_eval, rag_eval_command, rag_eval_env
from rag_eval_pipeline_tests.held_collection import held_collection


@dataclass
class Served:
    project: Path
    url: str  # .../api/v1/eval
    admin: str
    viewer: str
    super_user: str
    log: Path  # the server's stdout and stderr

    def call(
        self, method: str, path: str, body: Any = None, token: str | None = "admin", raw: bytes | None = None
    ) -> tuple[int, Any]:
        """(status, JSON answer) of ``method path`` with the token of that role (None: no header;
        anything else: that text as the token)."""
        headers = {"Content-Type": "application/json"}
        text = {"admin": self.admin, "viewer": self.viewer, "super-user": self.super_user}.get(
            token or "", token
        )
        if text is not None:
            headers["Authorization"] = f"Bearer {text}"
        data = raw if raw is not None else (None if body is None else json.dumps(body).encode())
        request = urllib.request.Request(self.url + path, data=data, method=method, headers=headers)
        try:
            with urllib.request.urlopen(request, timeout=60) as response:
                return response.status, json.loads(response.read())
        except urllib.error.HTTPError as error:
            return error.code, json.loads(error.read())


def _start(project: Path, log: Path) -> tuple[subprocess.Popen[bytes], str]:
    out = open(log, "wb")  # noqa: SIM115 (closed when the server stops)
    server = subprocess.Popen(
        rag_eval_command("serve", "--port", "0"), env=rag_eval_env(project), stdout=out, stderr=out
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        found = re.search(r"(http://127\.0\.0\.1:\d+/api/v1/eval) ", log.read_text(errors="replace"))
        if found:
            return server, found.group(1)
        assert server.poll() is None, log.read_text()
        time.sleep(0.1)
    server.kill()
    raise AssertionError(f"the server did not start: {log.read_text()}")


@pytest.fixture(scope="module")
def served(_cli_runs: Callable[..., CliRun], tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    import shutil

    built = _cli_runs((), {})  # the tiny project after `rag-eval run` (shared with the CLI tests)
    project = Path(shutil.copytree(built.project, tmp_path_factory.mktemp("api") / "project", symlinks=True))
    made = rag_eval(project, "tokens", "create", "ops-admin", "--role", "admin")
    assert made.returncode == 0, made.stderr
    assert "shown this once" in made.stderr
    admin = made.stdout.strip()
    store = TokenStore(project)
    log = project.parent / "server.log"
    server, url = _start(project, log)
    try:
        yield Served(
            project,
            url,
            admin,
            store.create("dashboard", "viewer"),
            store.create("root-ops", "super-user"),
            log,
        )
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait(timeout=30)


def _routes(project: Path) -> list[tuple[str, str]]:
    """(method, path) of every API route of the app, its {params} filled in."""
    routes = []
    for route in create_app(project).routes:
        path = getattr(route, "path", "")
        if not path.startswith(PREFIX):
            continue
        for method in sorted(getattr(route, "methods", None) or ()):
            if method != "HEAD":
                routes.append((method, re.sub(r"{\w+}", "x", path[len(PREFIX) :])))
    return routes


def test_every_route_refuses_a_request_without_a_valid_token_or_role(served: Served) -> None:
    routes = _routes(served.project)
    assert len(routes) >= 20 and ("DELETE", "/runs/x") in routes
    for method, path in routes:
        for token in (None, "rge_not-a-token", served.admin + "x"):
            status, answer = served.call(method, path, {}, token=token)
            assert status == 401, (method, path, answer)
            assert "Authorization: Bearer" in answer["error"]
        status, answer = served.call(method, path, {}, token="viewer")
        if method == "GET":
            assert status != 401 and status != 403, (method, path, answer)
        else:
            assert status == 403, (method, path, answer)
            assert answer["error"] == "token 'dashboard' has role viewer; this needs admin or super-user"
    # a path that is no route: 401 too, then 404
    assert served.call("GET", "/nowhere", token=None)[0] == 401
    assert served.call("GET", "/nowhere")[0] == 404


def test_the_openapi_document_lists_every_route(served: Served) -> None:
    status, document = served.call("GET", "/openapi.json", token="viewer")
    assert status == 200 and document["openapi"].startswith("3.")
    listed = {
        (method.upper(), re.sub(r"{\w+}", "x", path[len(PREFIX) :]))
        for path, operations in document["paths"].items()
        for method in operations
    }
    assert listed == set(_routes(served.project))
    assert document["components"]["securitySchemes"]["bearer"]["scheme"] == "bearer"


def test_runs_list_status_and_results_answer_as_the_commands(served: Served) -> None:
    status, listing = served.call("GET", "/runs?limit=5")
    assert status == 200 and listing["total"] >= 1 and listing["limit"] == 5 and listing["offset"] == 0
    evaluation = listing["items"][0]
    ref = evaluation["id"]
    assert evaluation["status"] == "completed" and evaluation["trigger"] == "cli"
    status, detail = served.call("GET", f"/runs/{ref}", token="viewer")
    assert status == 200
    progress = detail["progress"]
    assert progress["current_phase"] == "done"
    assert progress["completed"] == progress["total_questions"] == 4 * 4  # 4 questions x 4 partitions
    assert progress["completed_runs"] == progress["total_runs"] == len(detail["runs"]) == 8
    assert {r["status"] for r in detail["runs"]} == {"SUCCESS"}
    cli = json.loads(rag_eval(served.project, "status", ref, "--format", "json").stdout)
    assert [r["run_id"] for r in cli] == [r["run_id"] for r in detail["runs"]]
    # errors: the CLI's messages
    status, answer = served.call("GET", "/runs/nope")
    assert status == 404
    assert (
        answer["error"]
        == "no run and no evaluation matches 'nope': `rag-eval list` shows the recent evaluations"
    )
    assert served.call("GET", "/runs/a;b")[0] == 400
    assert served.call("GET", "/runs?limit=0")[0] == 400
    # results: paged, filtered
    status, page = served.call("GET", f"/runs/{ref}/results?limit=3&offset=2&config_profile_id=top2")
    assert status == 200 and page["total"] == 2 * 4 and len(page["items"]) == 3 and page["offset"] == 2
    assert {row["profile"] for row in page["items"]} == {"top2"}
    status, answer = served.call("GET", f"/runs/{ref}/results?question_type=nope")
    assert status == 400 and "nope" in answer["error"]


def test_leaderboard_questions_stats_history_compare_and_baselines(served: Served) -> None:
    status, board = served.call("GET", "/leaderboard", token="viewer")
    assert status == 200 and board["total"] == 4 and {"chunk_config", "profile"} <= set(board["items"][0])
    status, questions = served.call("GET", "/questions?limit=2&offset=1")
    assert status == 200 and questions["total"] == 4 and len(questions["items"]) == 2
    status, about = served.call("GET", "/questions?document=beta/staff.md")
    assert status == 200 and {q["question_id"] for q in about["items"]} == {"tiny-3", "tiny-4"}
    status, answer = served.call("GET", "/questions?type=nope")
    assert status == 400 and answer["error"].startswith("--type nope: no question has that type")
    status, stats = served.call("GET", "/questions/stats")
    assert status == 200 and stats["total"] == 4 and stats["by_document"]["beta/staff.md"] == 2
    status, history = served.call("GET", "/metrics/span_iou/history?partition=fixed-60-0|top2")
    assert status == 200 and history["total"] == 1 and history["items"][0]["profile"] == "top2"
    assert served.call("GET", "/metrics/nope/history")[0] == 400
    ref = served.call("GET", "/runs")[1]["items"][0]["id"]
    status, compared = served.call("GET", f"/compare?a={ref}&b={ref}&metrics=span_iou")
    assert status == 200 and len(compared["items"]) == 4
    assert {d["delta"] for d in compared["items"]} == {0.0}
    assert served.call("GET", f"/compare?a={ref}")[0] == 400
    status, pinned = served.call("POST", "/baselines", {"ref": ref, "partition": "fixed-60-0|top2"})
    assert status == 200 and [p["changed"] for p in pinned["items"]] == [True]
    status, baselines = served.call("GET", "/baselines", token="viewer")
    assert status == 200 and [b["partition"] for b in baselines["items"]] == ["fixed-60-0|top2"]
    assert served.call("POST", "/baselines", {"ref": "nope"})[0] == 400
    assert served.call("POST", "/baselines", {})[0] == 422


def test_a_profile_cloned_over_http_is_the_clis_clone(served: Served) -> None:
    status, cloned = served.call(
        "POST", "/profiles/top2/clone", {"name": "top2-http", "settings": {"top_k": 3}}
    )
    assert status == 201 and cloned["action"] == "cloned" and cloned["version"] == 1
    assert "top2-http" in cloned["partitions_added"]
    done = rag_eval(served.project, "profiles", "clone", "top2", "top2-cli", "--set", "top_k=3")
    assert done.returncode == 0, done.stderr
    by_name = {p["name"]: p for p in served.call("GET", "/profiles", token="viewer")[1]["items"]}
    assert by_name["top2-http"]["settings"] == by_name["top2-cli"]["settings"]
    assert by_name["top2-http"]["hash"] == by_name["top2-cli"]["hash"]
    entries = {
        e["name"]: {k: v for k, v in e.items() if k != "name"}
        for e in yaml.safe_load((served.project / "data" / "retrieval_profiles.yaml").read_text())["profiles"]
    }
    assert entries["top2-http"] == entries["top2-cli"] == {"top_k": 3}
    # errors: taken (409), missing (404), a bad name (400), a body of the wrong shape (422)
    status, answer = served.call("POST", "/profiles/top2/clone", {"name": "top2-cli"})
    assert status == 409 and "already has a profile named 'top2-cli'" in answer["error"]
    assert served.call("POST", "/profiles/nope/clone", {"name": "n2"})[0] == 404
    assert served.call("POST", "/profiles/top2/clone", {"name": "a|b"})[0] == 400
    assert served.call("POST", "/profiles/top2/clone", {"name": 3})[0] == 422
    assert served.call("POST", "/profiles/top2/clone", {"name": "n3", "extra": 1})[0] == 422
    assert served.call("POST", "/profiles/top2/clone", raw=b"{not json")[0] == 422


def test_profiles_create_show_update_delete(served: Served) -> None:
    profiles = served.project / "data" / "retrieval_profiles.yaml"
    status, created = served.call(
        "POST", "/profiles", {"name": "wide", "settings": {"top_k": 6}}, token="super-user"
    )
    assert status == 201 and created["settings"]["top_k"] == 6
    assert served.call("POST", "/profiles", {"name": "wide"})[0] == 409
    before = profiles.read_text()
    status, answer = served.call("POST", "/profiles", {"name": "bad", "settings": {"top_k": "many"}})
    assert status == 400 and "top_k" in answer["error"]
    assert profiles.read_text() == before  # a refused edit leaves the file as it was
    status, updated = served.call("PUT", "/profiles/wide", {"settings": {"top_k": 7}})
    assert status == 200 and updated["version"] == 2 and updated["settings"]["top_k"] == 7
    status, shown = served.call("GET", "/profiles/wide", token="viewer")
    assert status == 200 and [v["version"] for v in shown["versions"]] == [1, 2]
    assert served.call("PUT", "/profiles/wide", {})[0] == 400  # nothing to update: the CLI's message
    status, deleted = served.call("DELETE", "/profiles/wide")
    assert status == 200 and deleted["action"] == "deleted"
    assert served.call("GET", "/profiles/wide")[0] == 404
    assert served.call("DELETE", "/profiles/wide")[0] == 404
    status, answer = served.call("POST", "/profiles", raw=b"[" + b" " * MAX_BODY + b"]")
    assert status == 413 and str(MAX_BODY) in answer["error"]
    assert "wide" not in profiles.read_text()


def test_chunk_configs_list_and_apply_to_documents(served: Served) -> None:
    configs = served.project / "data" / "chunk_configs.yaml"
    configs.write_text(
        configs.read_text() + "  - name: pumps-only\n    chunker: fixed\n    chunk_size: 80\n"
        "    documents: [alpha/pumps.md]\n"
    )
    status, listed = served.call("GET", "/chunk-configs", token="viewer")
    assert status == 200 and [c["name"] for c in listed["items"]] == [
        "fixed-60-0",
        "recursive-120-20",
        "pumps-only",
    ]
    status, applied = served.call("POST", "/chunk-configs/pumps-only/apply", {"document_ids": ["beta/*.md"]})
    assert status == 200 and applied["affected_documents"] == 1 and applied["added"] == ["beta/staff.md"]
    assert "beta/staff.md" in configs.read_text()
    cli = rag_eval(served.project, "chunk-configs", "apply", "pumps-only", "--document", "beta/staff.md")
    assert cli.returncode == 0 and "affected_documents: 0" in cli.stdout
    assert (
        served.call("POST", "/chunk-configs/pumps-only/apply", {"document_ids": ["beta/staff.md"]})[1][
            "affected_documents"
        ]
        == 0
    )
    status, answer = served.call("POST", "/chunk-configs/pumps-only/apply", {"document_ids": ["nope.md"]})
    assert status == 400 and "nope.md" in answer["error"]
    assert served.call("POST", "/chunk-configs/nope/apply", {"document_ids": ["beta/staff.md"]})[0] == 404
    assert served.call("POST", "/chunk-configs/pumps-only/apply", {})[0] == 422
    configs.write_text(configs.read_text().split("  - name: pumps-only")[0])  # as the other tests expect


def test_chunk_configs_merged_from_a_body_as_from_a_file(served: Served) -> None:
    configs = served.project / "data" / "chunk_configs.yaml"
    before = configs.read_text()
    entry = {"name": "fixed-90-0", "chunker": "fixed", "chunk_size": 90}
    status, merged = served.call("POST", "/chunk-configs", {"chunk_configs": [entry]})
    assert (
        status == 200 and merged["added"] == ["fixed-90-0"] and merged["partitions_added"] == ["fixed-90-0"]
    )
    status, again = served.call("POST", "/chunk-configs", {"chunk_configs": [entry]})
    assert status == 200 and again["unchanged"] == ["fixed-90-0"] and again["added"] == []
    status, answer = served.call("POST", "/chunk-configs", {"chunk_configs": [{**entry, "chunk_size": "x"}]})
    assert (
        status == 400 and answer["error"].startswith("the request body") and "chunk_size" in answer["error"]
    )
    assert served.call("POST", "/chunk-configs", {"chunk_configs": ["fixed"]})[0] == 422
    assert (
        served.call("POST", "/chunk-configs", {"chunk_configs": []})[0] == 400
    )  # the CLI's "non-empty list"
    configs.write_text(before)


def _wait_for(
    served: Served, ref: str, done: Callable[[dict[str, Any]], bool], timeout: float = 240
) -> list[dict[str, Any]]:
    """Every answer of GET /runs/{ref} until ``done`` holds for one."""
    seen = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        status, detail = served.call("GET", f"/runs/{ref}", token="viewer")
        assert status == 200, detail
        seen.append(detail)
        if done(detail):
            return seen
        time.sleep(0.5)
    raise AssertionError(f"not done after {timeout} s: {seen[-1]}")


@pytest.mark.slow
def test_a_run_started_over_http_is_a_dagster_run_whose_progress_advances(served: Served) -> None:
    status, answer = served.call("POST", "/runs", {"profiles": ["nope"]})
    assert status == 400 and answer["error"].startswith("unknown profile(s) nope; configured: top2, top4")
    assert served.call("POST", "/runs", {"mode": "fast"})[0] == 422
    assert served.call("POST", "/runs", {"sample_size": 2})[0] == 400  # quick mode only, as the CLI says
    body = {
        "chunk_configs": ["fixed-60-0"],
        "profiles": ["top2"],
        "mode": "quick",
        "sample_size": 2,
        "force": True,
    }
    status, started = served.call("POST", "/runs", body)
    assert (
        status == 202
        and started["status"] in ("pending", "running")
        and started["triggered_by"] == "ops-admin"
    )
    ref = started["id"]
    seen = _wait_for(served, ref, lambda d: d["status"] not in ("pending", "running"))
    final = seen[-1]
    assert final["status"] == "completed", final
    assert final["trigger"] == "api" and final["triggered_by"] == "ops-admin"
    completed = [d["progress"]["completed_runs"] for d in seen]
    assert completed == sorted(completed) and completed[-1] == final["progress"]["total_runs"] == 4
    assert len(set(completed)) >= 2  # it advanced while we watched
    assert final["progress"]["total_questions"] == final["progress"]["completed"] == 2
    status_text = rag_eval(served.project, "status", ref).stdout
    assert f"evaluation {ref} (quick): 4 runs, 4 succeeded" in status_text
    assert "trigger: api by ops-admin" in status_text
    listed = rag_eval(served.project, "list", "--format", "json").stdout
    assert ref in {e["evaluation_id"] for e in json.loads(listed)}


@pytest.mark.slow
def test_cancelling_a_run_over_http(served: Served) -> None:
    body = {
        "chunk_configs": ["fixed-60-0", "recursive-120-20"],
        "mode": "quick",
        "sample_size": 2,
        "force": True,
    }
    # held, the first step that opens the collection waits: the cancel cannot come after the end
    with held_collection(served.project, "fixed-60-0"):
        status, started = served.call("POST", "/runs", body)
        assert status == 202
        ref = started["id"]
        _wait_for(served, ref, lambda d: d["status"] == "running" and len(d["runs"]) >= 1)
        assert served.call("DELETE", f"/runs/{ref}", token="viewer")[0] == 403
        status, cancel = served.call("DELETE", f"/runs/{ref}")
    assert status == 202 and cancel["status"] in ("cancelling", "cancelled"), cancel
    seen = _wait_for(served, ref, lambda d: d["status"] not in ("running", "cancelling"))
    final = seen[-1]
    assert final["status"] == "cancelled", final
    assert final["cancel_requested"].endswith(" by ops-admin")
    assert "CANCELED" in {r["status"] for r in final["runs"]}
    assert final["progress"]["current_phase"] == "done"
    status, answer = served.call("DELETE", f"/runs/{ref}")
    assert status == 409 and answer["error"].startswith("nothing to cancel")
    assert "status: cancelled" in rag_eval(served.project, "status", ref).stdout
    # cancelled before its first run: its worker is interrupted while it plans
    with held_collection(served.project, "fixed-60-0"):
        status, started = served.call("POST", "/runs", body)
        status, cancel = served.call("DELETE", f"/runs/{started['id']}")
    assert status == 202 and cancel["status"] in ("cancelling", "cancelled"), cancel
    final = _wait_for(
        served, started["id"], lambda d: d["status"] not in ("pending", "running", "cancelling")
    )[-1]
    assert final["status"] == "cancelled", final


def test_an_evaluation_between_two_runs_is_cancelled_before_its_next(served: Served) -> None:
    """Every run so far has ended while its worker goes on to the next: the request is accepted and
    tagged on the runs, which the worker reads before it starts another (runner/cancel.py). Once the
    worker is gone there is nothing to cancel."""
    listing = served.call("GET", "/runs?limit=50")[1]
    ref = next(e["id"] for e in listing["items"] if e["trigger"] == "cli" and e["status"] == "completed")
    records = EvaluationRecords(served.project)
    worker = subprocess.Popen(["sleep", "60"])  # the evaluation's worker, between two runs
    try:
        identity = ProcessIdentity.of_pid(worker.pid).to_text()
        records.write(EvaluationRecord(ref, "ops-admin", "2026-12-05T00:00:00+00:00", worker=identity))
        status, cancel = served.call("DELETE", f"/runs/{ref}")
        assert status == 202 and cancel["status"] == "cancelling", cancel
        assert {r["action"] for r in cancel["runs"]} == {"ended before"}
        assert served.call("GET", f"/runs/{ref}")[1]["cancel_requested"].endswith(" by ops-admin")
        worker.kill()
        worker.wait()
        status, answer = served.call("DELETE", f"/runs/{ref}")
        assert status == 409 and answer["error"].startswith("nothing to cancel"), answer
    finally:
        worker.kill()
        worker.wait()
        records.path(ref).unlink(missing_ok=True)


@pytest.mark.slow
def test_questions_regenerated_over_http(served: Served) -> None:
    status, answer = served.call("POST", "/questions/regenerate", {"document_ids": ["nope.md"]})
    assert status == 400 and "nope.md" in answer["error"]
    assert served.call("POST", "/questions/regenerate", {"generator": "nope"})[0] == 422
    settings = "evaluate_on: both\ntoken_level:\n  n_questions: 6\n  passage_min_chars: 40\n"
    (served.project / "data/generation.yaml").write_text(settings, encoding="utf-8")  # as cli/test_runs.py
    known_item = {"generator": "known-item"}
    for body, documents in (
        (known_item, "all"),
        ({**known_item, "document_ids": ["beta/*.md"]}, ["beta/staff.md"]),
    ):
        status, started = served.call("POST", "/questions/regenerate", body)
        assert status == 202 and started["id"].startswith("regen-") and started["kind"] == "regeneration"
        final = _wait_for(served, started["id"], lambda d: d["status"] not in ("pending", "running"))[-1]
        assert final["status"] == "completed", final
        assert final["result"]["documents"] == documents
        assert [r["job"] for r in final["runs"]] == ["ingestion_job"]
        assert "trigger: api by ops-admin" in rag_eval(served.project, "status", started["id"]).stdout


def test_a_revoked_token_is_refused_and_no_token_text_is_left_anywhere(served: Served) -> None:
    done = rag_eval(served.project, "tokens", "revoke", "dashboard")
    assert done.returncode == 0 and "revoked" in done.stdout
    assert served.call("GET", "/profiles", token="viewer")[0] == 401
    listed = rag_eval(served.project, "tokens", "list", "--format", "json")
    assert [t["name"] for t in json.loads(listed.stdout)] == ["ops-admin", "root-ops"]
    secrets = [t.encode() for t in (served.admin, served.viewer, served.super_user)]
    assert all(len(s) > 40 for s in secrets)
    for path in [served.log, *served.project.rglob("*")]:
        if path.is_file():
            data = path.read_bytes()
            assert not any(s in data for s in secrets), path
