"""The annotation server's JSON API and its guards, without a browser (Starlette's test client)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from rag_eval_pipeline.annotate.app import create_app
from rag_eval_pipeline.core.judging.annotation_source import AnnotationSource
from rag_eval_pipeline.core.judging.hole_focus import FocusQuery, HoleFocus
from rag_eval_pipeline.core.judging.store import JudgingStore
from rag_eval_pipeline.core.judging.types import Judgement, JudgeName
from rag_eval_pipeline_tests.core.judging.annotation_fixtures import (
    ALARM_LINE,
    DOCS,
    NIGHT_ID,
    PUMP_ID,
    PUMPS,
    STAFF,
    corpus,
    pool,
    span_of,
    write_judging_files,
)

LOOPBACK = "http://127.0.0.1:8377"
AT = "2026-12-02T10:00:00Z"


@pytest.fixture
def store(tmp_path: Path) -> JudgingStore:
    return write_judging_files(tmp_path / "judging")


@pytest.fixture
def client(store: JudgingStore) -> TestClient:
    return TestClient(create_app(AnnotationSource(store, corpus()), "ann"), base_url=LOOPBACK)


def shown(task: dict[str, Any]) -> list[dict[str, Any]]:
    return [{k: p[k] for k in ("doc_id", "start", "end", "document_sha256")} for p in task["passages"]]


def test_the_page_and_its_files_are_served_with_a_policy_that_loads_nothing_from_elsewhere(
    client: TestClient,
) -> None:
    page = client.get("/")
    assert page.status_code == 200 and "annotate.js" in page.text
    assert page.headers["content-security-policy"].startswith("default-src 'self'")
    assert "selectedSpans" in client.get("/static/annotate.js").text
    assert client.get("/static/annotate.css").status_code == 200
    for path in ("annotate.js", "annotate.css", "index.html"):
        text = (Path(__file__).parents[2] / "rag_eval_pipeline/annotate/static" / path).read_text(
            encoding="utf-8"
        )
        assert "http://" not in text and "https://" not in text  # no CDN, nothing fetched from elsewhere


def test_another_host_name_is_refused(client: TestClient) -> None:
    assert client.get("/api/state", headers={"host": "evil.example:8377"}).status_code == 400
    assert client.get("/api/state", headers={"host": "localhost:8377"}).status_code == 200


def test_an_annotator_judges_and_resumes_at_the_next_query(client: TestClient, store: JudgingStore) -> None:
    state = client.get("/api/state").json()
    assert state["default_annotator"] == "ann" and state["progress"] is None and state["total"] == 2
    assert state["focus"] == ""  # the whole pool (`--holes` says why it offers less)
    state = client.get("/api/state", params={"annotator": "ann"}).json()
    assert state["progress"]["text"] == "0 of 2 queries judged by ann" and state["resume"] == 0
    task = client.get("/api/task/1", params={"annotator": "ann"}).json()
    assert task["query"]["query_id"] == NIGHT_ID and task["mine"] is None
    night = span_of(STAFF, "22:00")
    body = {
        "annotator": "ann",
        "query_id": NIGHT_ID,
        "verdict": "answers",
        "spans": [{"doc_id": STAFF, "start": night.start, "end": night.end, "text": "22:00"}],
        "shown": shown(task),
    }
    saved = client.post("/api/judgements", json=body)
    assert saved.status_code == 200, saved.text
    assert saved.json()["progress"]["text"] == "1 of 2 queries judged by ann"
    assert saved.json()["resume"] == 0  # the first query is still to judge
    (judgement,) = store.read_judgements()
    assert [DOCS[s.doc_id][s.start : s.end] for s in judgement.spans] == ["22:00"]
    again = client.get("/api/task/1", params={"annotator": "ann"}).json()
    assert again["mine"]["spans"][0]["text"] == "22:00" and again["judged_by"] == ["ann"]
    assert client.get("/api/state", params={"annotator": "bob"}).json()["resume"] == 0
    assert client.get("/api/task/7").status_code == 404


def test_a_refused_save_says_why_and_stores_nothing(client: TestClient, store: JudgingStore) -> None:
    task = client.get("/api/task/0").json()
    body = {
        "annotator": "ann",
        "query_id": PUMP_ID,
        "verdict": "answers",
        "spans": [{"doc_id": STAFF, "start": 0, "end": 7, "text": "# Staff"}],
        "shown": shown(task),
    }
    refused = client.post("/api/judgements", json=body)
    assert refused.status_code == 400
    assert "is not inside a passage shown for this query" in refused.json()["error"]
    assert store.read_judgements() == []


def test_a_save_from_another_site_or_not_as_json_is_refused(client: TestClient, store: JudgingStore) -> None:
    task = client.get("/api/task/0").json()
    body = {"annotator": "ann", "query_id": PUMP_ID, "verdict": "unclear", "spans": [], "shown": shown(task)}
    cross = client.post("/api/judgements", json=body, headers={"origin": "http://evil.example"})
    assert cross.status_code == 403 and "only the annotation page itself" in cross.json()["error"]
    form = client.post(
        "/api/judgements", content="a=1", headers={"content-type": "application/x-www-form-urlencoded"}
    )
    assert form.status_code == 403
    assert client.post("/api/judgements", json=body, headers={"origin": LOOPBACK}).status_code == 200
    assert len(store.read_judgements()) == 1


def test_a_broken_judging_file_is_named(client: TestClient, store: JudgingStore) -> None:
    store.judgements_path.write_text("{not json\n", encoding="utf-8")
    answer = client.get("/api/state", params={"annotator": "ann"})
    assert answer.status_code == 500 and "judgements.jsonl:1" in answer.json()["error"]


def test_agreement_rows_are_served_for_doubly_judged_queries(client: TestClient) -> None:
    assert client.get("/api/agreement").json() == {"rows": []}
    task = client.get("/api/task/0").json()
    for name in ("ann", "bob"):
        body = {
            "annotator": name,
            "query_id": PUMP_ID,
            "verdict": "not-answerable",
            "spans": [],
            "shown": shown(task),
        }
        assert client.post("/api/judgements", json=body).status_code == 200
    (row,) = client.get("/api/agreement").json()["rows"]
    assert row["judges"] == "ann / bob" and row["queries"] == 1 and row["kappa"] is None
    assert row["summary"].startswith("ann / bob: 1 queries both judged")


def test_passages_pooled_after_a_judgement_are_offered_as_new(
    client: TestClient, store: JudgingStore
) -> None:
    pooled = store.read_pool()
    store.write_pool(pooled[:-1])  # the night query without the canteen note
    task = client.get("/api/task/1").json()
    body = {"annotator": "ann", "query_id": NIGHT_ID, "verdict": "unclear", "spans": [], "shown": shown(task)}
    assert client.post("/api/judgements", json=body).json()["queries"][1]["judged"] is True
    store.write_pool(pooled)  # a new run pooled the canteen note
    state = client.get("/api/state", params={"annotator": "ann"}).json()
    assert state["queries"][1]["judged"] is False and state["progress"]["judged"] == 0
    task = client.get("/api/task/1", params={"annotator": "ann"}).json()
    assert task["new_since_judged"] == [1] and task["mine"]["verdict"] == "unclear"


def test_the_page_ships_in_the_package() -> None:
    import fnmatch
    import tomllib

    from rag_eval_pipeline.annotate.app import STATIC

    package = STATIC.parents[1]
    pyproject = tomllib.loads((package.parent / "pyproject.toml").read_text(encoding="utf-8"))
    globs = pyproject["tool"]["setuptools"]["package-data"]["rag_eval_pipeline"]
    files = [p.relative_to(package).as_posix() for p in STATIC.iterdir()]
    assert sorted(files) == [
        "annotate/static/annotate.css",
        "annotate/static/annotate.js",
        "annotate/static/index.html",
    ]
    assert all(any(fnmatch.fnmatch(f, g) for g in globs) for f in files)


def test_with_holes_the_queue_says_why_and_an_earlier_judgement_prefills_only_what_is_shown(
    store: JudgingStore,
) -> None:
    alarm, pump_line = pool()[0], pool()[1]
    rpm = span_of(PUMPS, "1,450 rpm")
    sha = corpus()[PUMPS].sha256
    earlier = [
        # ann read both pump passages and answered in the pump line; bob read only the pump line
        Judgement(
            PUMP_ID,
            JudgeName("ann"),
            "human",
            "answers",
            (rpm,),
            (pump_line.span, alarm.span),
            AT,
            {PUMPS: sha},
        ),
        Judgement(PUMP_ID, JudgeName("bob"), "human", "answers", (rpm,), (pump_line.span,), AT, {PUMPS: sha}),
    ]
    store.append_judgements(earlier)
    focus = HoleFocus((), (FocusQuery(PUMP_ID, (alarm,), "passages x retrieved that nobody read"),), ())
    client = TestClient(create_app(AnnotationSource(store, corpus(), focus)), base_url=LOOPBACK)
    state = client.get("/api/state", params={"annotator": "bob"}).json()
    assert state["focus"] == focus.describe() and state["total"] == 1 and state["resume"] == 0
    task = client.get("/api/task/0", params={"annotator": "bob"}).json()
    assert task["reason"] == "passages x retrieved that nobody read"
    assert [p["text"] for p in task["passages"]] == [ALARM_LINE]
    assert task["mine"] is None  # bob's judgement read none of it: nothing to start from
    mine = client.get("/api/task/0", params={"annotator": "ann"}).json()["mine"]
    assert mine["verdict"] == "answers" and mine["spans"] == []  # the rpm span is not shown: not sent back
