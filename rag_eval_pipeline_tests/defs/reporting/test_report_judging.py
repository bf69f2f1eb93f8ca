"""The leaderboard asset's report in a workspace that judges real queries: the "Judgements" section (the
counts, the agreement of two people and an LLM judge) from data/judging and the documents, and the same
as markdown in the metadata; none in a workspace without judgements; a judging file that does not read
costs the section (a warning naming the line), not the leaderboard."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from rag_eval_pipeline.core.judging.store import JudgingStore
from rag_eval_pipeline.core.judging.types import ImportedQuery, Judgement, JudgeName, QueryId, query_id_for
from rag_eval_pipeline.core.project.project_files import ProjectFiles
from rag_eval_pipeline.core.types import CharacterSpan, DocumentId
from rag_eval_pipeline.defs.reporting.assets import leaderboard, workspace_judging
from rag_eval_pipeline.lib.resources import ProjectResource
from rag_eval_pipeline_tests.chromium import parse_dom
from rag_eval_pipeline_tests.conftest import TINY_DOCS, tiny_resources
from rag_eval_pipeline_tests.core.leaderboard.test_board import retrieval_metrics
from rag_eval_pipeline_tests.defs.frames import run_with_frames

PUMPS = DocumentId("alpha/pumps.md")
QUERY = "how often is the main pump serviced?"


def piece(text: str) -> CharacterSpan:
    start = TINY_DOCS[PUMPS].index(text)
    return CharacterSpan(PUMPS, start, start + len(text), text)


def write_judging(project: Path) -> JudgingStore:
    """One imported query judged by ann and bob (people, who agree) and by an LLM judge that graded the
    same paragraph not relevant."""
    files = ProjectFiles(project)
    store = JudgingStore(files.path(files.judging_dir))
    query = query_id_for(QUERY)
    store.write_queries(
        [ImportedQuery(query, QUERY, count=12), ImportedQuery(query_id_for("alarms?"), "alarms?")]
    )
    paragraph = piece("The main pump runs at 1,450 rpm and is serviced every 90 days.")
    alarms = piece("A pressure alarm fires when the outlet pressure exceeds 7.5 bar for ten seconds.")
    sha = files.load_corpus()[PUMPS].sha256

    def judged(
        judge: str,
        kind: str,
        spans: tuple[CharacterSpan, ...],
        read: tuple[CharacterSpan, ...],
        grade: int | None = None,
    ) -> Judgement:
        return Judgement(
            QueryId(query),
            JudgeName(judge),
            kind,  # type: ignore[arg-type]
            "answers" if spans else "not-answerable",
            spans,
            read,
            "2026-12-02T10:00:00Z",
            {PUMPS: sha},
            grade,  # type: ignore[arg-type]
        )

    answer = (piece("serviced every 90 days"),)
    store.append_judgements(
        [
            judged("ann", "human", answer, (paragraph, alarms)),
            judged("bob", "human", answer, (paragraph, alarms)),
            judged("llm:fake", "llm", (), (paragraph,), grade=1),
        ]
    )
    return store


def test_the_report_has_a_judgements_section_when_the_workspace_judged_queries(
    tiny_project: Path, tmp_path: Path
):
    # a partition of the tiny project's, on questions taken from traffic: asked 3, 1 and 1 times
    metrics = retrieval_metrics("fixed-60-0", [0.5, 0.2, 0.9], "r1").assign(
        span_recall_1000t=[1.0, 0.0, 0.5], query_count=[3, 1, 1]
    )
    resources = tiny_resources(tiny_project, tmp_path)
    write_judging(tiny_project)
    board, metadata = run_with_frames(
        leaderboard,
        {
            "retrieval_metrics": {"fixed-60-0|top2": metrics},
            "answer_metrics": {},
            "answer_judgements": pd.DataFrame(),
            "retrieval_diagnostics": {},
            "question_set_health": pd.DataFrame(),
        },
        {k: resources[k] for k in ("project", "warehouse")},
    )
    dom = parse_dom(Path(str(metadata["report_path"])).read_text(encoding="utf-8"))
    section = dom.find("section", id="judgements")
    counts = section.find("table", id="judging-counts").find("tbody").find_all("tr")
    values = {r.attrs["data-measure"]: r.find_all("td")[1].text() for r in counts}
    assert (values["queries_imported"], values["queries_judged"], values["questions"]) == ("2", "1", "1")
    assert values["stale"] == "0"
    pairs = section.find("table", id="judging-agreement").find("tbody").find_all("tr")
    # no pool: the items are the stretches both read. ann and bob: two paragraphs, one relevant for both,
    # one for neither: p_o 1, p_e 0.5, kappa 1. A person and the LLM judge: the one paragraph the LLM
    # graded, relevant for the person only: p_o 0, p_e 1 * 0 + 0 * 1 = 0, kappa 0
    assert [[td.text() for td in p.find_all("td")] for p in pairs] == [
        ["ann", "bob", "1", "2", "1.00", "1.00", "1", "1.00"],
        ["ann", "llm:fake (LLM)", "1", "1", "0.00", "0.00", "1", "0.00"],
        ["bob", "llm:fake (LLM)", "1", "1", "0.00", "0.00", "1", "0.00"],
    ]
    assert "| ann | bob | 1 | 2 | 1.00 | 1.00 |" in str(metadata["judgements"])

    # the traffic-weighted mean of the objective beside its mean: (3 * 1 + 0 + 0.5) / 5 = 0.7, mean 0.5
    assert board["span_recall_1000t_weighted_mean"].tolist() == [0.7]
    cell = dom.find("table", id="leaderboard").find("td", data_metric="span_recall_1000t_weighted_mean")
    assert cell.text() == "0.700" and dom.find_all("p", id="traffic-legend")
    assert "span_recall_1000t weighted" in str(metadata["leaderboard_markdown"])


class Log:
    def __init__(self) -> None:
        self.warnings: list[str] = []

    def warning(self, message: str) -> None:
        self.warnings.append(message)


def test_no_judgements_no_section_and_an_unreadable_file_only_costs_the_section(tiny_project: Path) -> None:
    project = ProjectResource(root=str(tiny_project))
    log = Log()
    assert workspace_judging(project, log) is None and log.warnings == []  # type: ignore[arg-type]
    store = write_judging(tiny_project)
    assert workspace_judging(project, log) is not None  # type: ignore[arg-type]
    with store.judgements_path.open("a", encoding="utf-8") as file:
        file.write("{not json\n")
    assert workspace_judging(project, log) is None  # type: ignore[arg-type]
    (warning,) = log.warnings
    assert warning.startswith("the report has no Judgements section: ") and "judgements.jsonl:4:" in warning
