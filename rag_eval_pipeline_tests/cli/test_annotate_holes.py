"""`rag-eval annotate --holes` on the tiny project (hashing embedder): it serves exactly the pooled text
the flagged setups retrieved and nobody read, judging it lifts their judged@k so `judgements status`
flags nothing more, and text the pool lacks is said with the command that pools it (exit 2)."""

from __future__ import annotations

import re
import socket
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from starlette.applications import Starlette
from starlette.testclient import TestClient

from rag_eval_pipeline.annotate import server
from rag_eval_pipeline.cli import main
from rag_eval_pipeline.core.judging.types import query_id_for
from rag_eval_pipeline.core.project.project_files import ProjectFiles
from rag_eval_pipeline.core.spans import Merged, merge_intervals
from rag_eval_pipeline.runner.judging import workspace_status

from .test_judgements import PUMP, excerpt, judge_everything, workspace  # noqa: F401 (the fixture)

ANSWER = {query_id_for(PUMP): excerpt("alpha/pumps.md", "The main pump runs at 1,450 rpm")}


def judged_shallow_pooled_deep(project: Path) -> None:
    """Everything pooled at depth 1 judged, then pooled at depth 4: the setups' top k holds text nobody
    read, and the pool has it."""
    assert main(["pool", "build", "--depth", "1"]) == 0
    judge_everything(project, "ann", ANSWER)
    assert main(["pool", "build", "--depth", "4"]) == 0


def serving(monkeypatch: pytest.MonkeyPatch, use: Callable[[TestClient], None]) -> None:
    """`serve` replaced by ``use`` on the app the command built (through its JSON API)."""

    def serve(app: Starlette, sock: socket.socket) -> None:
        use(TestClient(app, base_url="http://127.0.0.1:8377"))

    monkeypatch.setattr(server, "serve", serve)


def by_query(rows: list[tuple[str, Any]]) -> dict[str, Merged]:
    found: dict[str, list[Any]] = {}
    for query_id, span in rows:
        found.setdefault(query_id, []).append(span)
    return {q: merge_intervals(spans) for q, spans in found.items()}


@pytest.mark.slow  # retrieves with every setup seven times (~8 s)
def test_holes_serves_exactly_the_flagged_text_and_judging_it_clears_the_flags(
    workspace: Path,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    judged_shallow_pooled_deep(workspace)
    capsys.readouterr()
    assert main(["judgements", "status"]) == 0
    out = capsys.readouterr().out
    assert "flagged" in out and "judge them, `rag-eval annotate --holes` offers exactly those" in out
    status = workspace_status(ProjectFiles(workspace))
    assert status.holes and all(h.in_pool for h in status.holes)
    expected = by_query([(p.query_id, p.span) for h in status.holes for p in h.passages])
    worst = min(status.holes, key=lambda h: (h.judged.judged_share, h.judged.setup)).judged

    served: list[tuple[str, Any]] = []
    reasons: list[str] = []

    def judge_them(client: TestClient) -> None:
        state = client.get("/api/state", params={"annotator": "cy"}).json()
        assert state["focus"].startswith("Only the passages that flagged setups retrieved and nobody read")
        assert state["resume"] == 0 and state["progress"]["judged"] == 0
        for index in range(state["total"]):
            task = client.get(f"/api/task/{index}", params={"annotator": "cy"}).json()
            reasons.append(task["reason"])
            served.extend((task["query"]["query_id"], _Span(p)) for p in task["passages"])
            shown = [
                {k: p[k] for k in ("doc_id", "start", "end", "document_sha256")} for p in task["passages"]
            ]
            body = {
                "annotator": "cy",
                "query_id": task["query"]["query_id"],
                "verdict": "not-answerable",
                "spans": [],
                "shown": shown,
            }
            saved = client.post("/api/judgements", json=body)
            assert saved.status_code == 200, saved.text
        assert client.get("/api/state", params={"annotator": "cy"}).json()["resume"] is None

    serving(monkeypatch, judge_them)
    assert main(["annotate", "--holes", "--port", "0", "--annotator", "cy"]) == 0
    captured = capsys.readouterr()
    assert "finding the setups with unjudged results: retrieving the imported queries" in captured.err
    assert (
        "Only the passages that flagged setups retrieved and nobody read, worst setup first" in captured.out
    )
    assert by_query(served) == expected  # exactly the flagged text, nothing else of the pool
    assert reasons[0] == (
        f"passages {worst.setup} retrieved that nobody read: judged@{worst.k} {worst.judged_share:.2f}"
    )

    assert main(["judgements", "status"]) == 0
    out = capsys.readouterr().out
    assert "flagged" not in out
    for hole in status.holes:  # their top k is all read now: judged@k 1.00
        assert re.search(rf"{re.escape(hole.judged.setup)}\s+{hole.judged.k}\s+1\.00\s+0 of ", out), out
    assert main(["annotate", "--holes", "--port", "0"]) == 0
    assert "nothing to fill: no setup is flagged" in capsys.readouterr().out


def test_holes_the_pool_lacks_exit_2_with_the_command_that_pools_them(
    workspace: Path,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["pool", "build", "--depth", "1"]) == 0
    judge_everything(workspace, "ann", ANSWER)  # everything pooled is read; the top 4 reaches past it
    serving(monkeypatch, lambda client: pytest.fail("an empty page was served"))
    capsys.readouterr()
    assert main(["annotate", "--holes", "--port", "0"]) == 2
    err = capsys.readouterr().err
    assert "nobody read is not in the pool" in err
    assert "pool it first, `rag-eval pool build --depth 4`, then run `rag-eval annotate --holes` again" in err


@pytest.mark.slow  # retrieves with every setup five times (~5 s)
def test_setup_names_a_setup_and_needs_holes(
    workspace: Path,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    judged_shallow_pooled_deep(workspace)
    capsys.readouterr()
    assert main(["annotate", "--setup", "fixed-60-0 x top2", "--port", "0"]) == 2
    assert "--setup and --threshold choose the holes to judge: add --holes" in capsys.readouterr().err
    assert main(["annotate", "--holes", "--setup", "nope x top2", "--port", "0"]) == 2
    err = capsys.readouterr().err
    assert (
        "--setup 'nope x top2' is not a configured setup: give one of" in err and "fixed-60-0 x top2" in err
    )
    served: list[str] = []
    serving(
        monkeypatch,
        lambda client: served.extend(
            client.get(f"/api/task/{i}").json()["reason"]
            for i in range(client.get("/api/state").json()["total"])
        ),
    )
    status = workspace_status(ProjectFiles(workspace))
    only = status.holes[-1].judged.setup
    assert main(["annotate", "--holes", "--setup", only, "--port", "0"]) == 0
    assert served and all(reason.startswith(f"passages {only} retrieved") for reason in served)
    assert main(["annotate", "--holes", "--setup", only, "--threshold", "0.99", "--port", "0"]) == 0
    assert (
        f"nothing to fill: {only} not flagged (more than 99% of its top k unjudged)"
        in capsys.readouterr().out
    )


class _Span:
    """A served passage as a range merge_intervals reads."""

    def __init__(self, passage: dict[str, Any]) -> None:
        self.doc_id, self.start, self.end = passage["doc_id"], passage["start"], passage["end"]
