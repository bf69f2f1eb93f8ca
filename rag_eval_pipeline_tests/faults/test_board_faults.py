"""Faults the leaderboard must survive and say: a chunk config or profile removed from the config files
(it must block nothing, and its rows are listed but not ranked), and rows computed on other questions
(listed apart, not ranked) or with another answer threshold than the rest (kept ranked, marked in the
Parquet, the table and the HTML).

One tiny project tells the story through `rag-eval` (`main`, in process, on the project's own Dagster
instance, so the model loads once; the read-only commands as subprocesses): each step keeps what it
printed and wrote, and the tests look at those snapshots.
"""

from __future__ import annotations

import contextlib
import io
import json
import shutil
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import dagster as dg
import pandas as pd
import pytest

from rag_eval_pipeline.cli import main
from rag_eval_pipeline.core.store.warehouse import LEADERBOARD, Warehouse
from rag_eval_pipeline.definitions import build_definitions
from rag_eval_pipeline.lib.io_managers import ParquetIOManagerFactory, WarehouseResource
from rag_eval_pipeline.lib.resources import LLMResource, default_resources
from rag_eval_pipeline.runner.instance import project_instance
from rag_eval_pipeline_tests.chromium import Node, rendered_dom
from rag_eval_pipeline_tests.conftest import (
    TINY_CHUNK_CONFIGS,
    TINY_PROFILES,
    latest_metadata,
    write_tiny_project,
)
from rag_eval_pipeline_tests.faults.entry_points import rag_eval
from rag_eval_pipeline_tests.openai_server import openai_server

pytestmark = pytest.mark.slow

JUDGEMENT = {
    "score": 0.8,
    "semantic_coverage": {"score": 0.9, "explanation": "covers the reference"},
    "factual_coverage": {"score": 0.8, "explanation": "the facts match"},
    "hallucination": {"score": 0.0, "explanation": "nothing invented"},
    "citation_accuracy": {"score": 1.0, "explanation": "the cited chunk says it"},
}

ONLY_FIXED = "chunk_configs:\n  - name: fixed-60-0\n    chunker: fixed\n    chunk_size: 60\n"
ONLY_TOP2 = "profiles:\n  - name: top2\n    top_k: 2\n"
PAIRS = [("fixed-60-0", "top2"), ("fixed-60-0", "top4"), ("recursive-120-20", "top2")]


@dataclass
class Snapshot:
    """What one step left: the exit code and output of `rag-eval run`, the leaderboard Parquet, the
    HTML report (copied, as later steps replace both) and the leaderboard materialization's metadata."""

    code: int
    out: str
    err: str
    board: pd.DataFrame
    report: Path
    metadata: dict[str, object]


@dataclass(frozen=True)
class JobRun:
    """A `leaderboard_job` run (answer_judgements + leaderboard): its outcome, what both assets wrote
    and how many requests reached the LLM."""

    success: bool
    judgements_metadata: dict[str, object]
    judgements: pd.DataFrame
    board_metadata: dict[str, object]
    board: pd.DataFrame
    chat_requests: int


@dataclass
class Story:
    project: Path
    steps: dict[str, Snapshot] = field(default_factory=dict)
    commands: dict[str, tuple[int, str, str]] = field(default_factory=dict)
    judged: JobRun | None = None
    unreadable: JobRun | None = None


def rag_eval_in_process(*args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(args))
    return code, out.getvalue(), err.getvalue()


def run_step(story: Story, name: str, *args: str) -> Snapshot:
    code, out, err = rag_eval_in_process("run", *args)
    report = story.project.parent / f"report-{name}.html"
    with project_instance(story.project) as instance:
        metadata = latest_metadata(instance, "leaderboard")
    shutil.copy(metadata["report_latest_path"], report)  # the latest report, replaced by every board
    warehouse = Warehouse.in_project(story.project)
    board = pd.read_parquet(warehouse.current_path(LEADERBOARD))
    snapshot = Snapshot(code, out, err, board, report, metadata)
    story.steps[name] = snapshot
    return snapshot


def leaderboard_job(project: Path, judge: bool) -> JobRun:
    """`leaderboard_job` on the project's instance, as the UI or the automation sensor launches it;
    ``judge``: with a local OpenAI-protocol server as the LLM (it answers every request with ``JUDGEMENT``),
    else with no LLM at all."""
    warehouse = Warehouse.in_project(project)
    with openai_server() as (url, script), project_instance(project) as instance:
        script.responder = lambda body: json.dumps(JUDGEMENT)
        cache = str(project.parent / "llm.sqlite")
        llm = (
            LLMResource(openai_api_key="sk-test", openai_base_url=url, cache_path=cache)
            if judge
            else LLMResource(cache_path=cache)
        )
        resources = {
            **default_resources(),
            "llm": llm,
            "io_manager": ParquetIOManagerFactory(),
            "warehouse": WarehouseResource(),
        }
        job = build_definitions(resources).resolve_job_def("leaderboard_job")
        result = job.execute_in_process(instance=instance, raise_on_error=False)
        return JobRun(
            result.success,
            latest_metadata(instance, "answer_judgements") if result.success else {},
            pd.read_parquet(warehouse.current_path("answer_judgements")),
            latest_metadata(instance, "leaderboard") if result.success else {},
            pd.read_parquet(warehouse.current_path(LEADERBOARD)),
            len(script.chat_requests),
        )


def judge_the_top_pairs(project: Path) -> JobRun:
    """The leaderboard job with `llm_judging: on` and a top N of 5, more than the pairs there are."""
    settings = project / "data" / "answer_evaluation.yaml"
    generation = project / "data" / "generation.yaml"
    settings.write_text("llm_judging: on\njudge:\n  top_n: 5\n", encoding="utf-8")
    generation.write_text("llm:\n  requests_per_minute: null\n", encoding="utf-8")
    try:
        return leaderboard_job(project, judge=True)
    finally:
        settings.unlink()
        generation.unlink()


def evaluation_id(out: str) -> str:
    first = out.splitlines()[0]
    assert first.startswith("evaluation eval-"), out
    return first.split()[1]


@pytest.fixture(scope="module")
def story(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Story]:
    project = write_tiny_project(tmp_path_factory.mktemp("board") / "project")
    data = project / "data"
    story = Story(project)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("RAG_EVAL_PROJECT_DIR", str(project))
        for name in (
            "DAGSTER_HOME",
            "OPENAI_API_KEY",
            "QDRANT_URL",
            "LANGSMITH_API_KEY",
            "RAG_EVAL_WAREHOUSE_DIR",
        ):
            patch.delenv(name, raising=False)
        patch.chdir(project)  # main() changes to the project; this changes back afterwards

        # three partitions, all on the same questions and threshold
        code, out, err = rag_eval_in_process(
            "run", "--chunk-configs", "fixed-60-0", "--profiles", "top2,top4"
        )
        assert code == 0, err
        setup_id = evaluation_id(out)
        code, _, err = rag_eval_in_process("run", "--chunk-configs", "recursive-120-20", "--profiles", "top2")
        assert code == 0, err

        # a profile and a chunk config leave the files; the next run must not trip over them
        (data / "retrieval_profiles.yaml").write_text(ONLY_TOP2, encoding="utf-8")
        (data / "chunk_configs.yaml").write_text(ONLY_FIXED, encoding="utf-8")
        # (forced: the partition is up to date, and its history and `compare` need a new run of it)
        removed = run_step(story, "removed", "--force", "--chunk-configs", "fixed-60-0", "--profiles", "top2")
        removed_id = evaluation_id(removed.out)
        for command in (
            ("leaderboard",),
            ("status", removed_id),
            ("history", "span_iou"),
            ("compare", setup_id, removed_id),
            (
                "query",
                "select chunk_config, profile, count(*) as n from retrieval_metrics_summary group by all",
            ),
        ):
            result = rag_eval(project, *command, timeout=120)
            story.commands[command[0]] = (result.returncode, result.stdout, result.stderr)

        # a judge whose top N holds every pair: the removed ones are left out, never looked up
        story.judged = judge_the_top_pairs(project)

        # a profiles file that cannot be read: the board cannot tell what was removed, ranks all, says so
        profiles = (data / "retrieval_profiles.yaml").read_text(encoding="utf-8")
        (data / "retrieval_profiles.yaml").write_text("profiles:\n  - name: top2\n    top_k: 0\n")
        story.unreadable = leaderboard_job(project, judge=False)
        (data / "retrieval_profiles.yaml").write_text(profiles, encoding="utf-8")

        # back in the files; then a different answer threshold for one partition (no labels: the fixed
        # threshold 0.75 instead of the fitted 0.70) ...
        (data / "retrieval_profiles.yaml").write_text(TINY_PROFILES, encoding="utf-8")
        (data / "chunk_configs.yaml").write_text(TINY_CHUNK_CONFIGS, encoding="utf-8")
        (data / "datasets" / "golden_answer_labels.jsonl").unlink()
        run_step(story, "threshold", "--chunk-configs", "fixed-60-0", "--profiles", "top4")

        # ... and other questions for another: a deleted document makes two golden questions stale
        (data / "corpus" / "beta" / "staff.md").unlink()
        run_step(story, "questions", "--chunk-configs", "recursive-120-20", "--profiles", "top2")
        yield story


def rows_by_pair(board: pd.DataFrame) -> dict[tuple[str, str], pd.Series]:
    return {(str(r["chunk_config"]), str(r["profile"])): r for _, r in board.iterrows()}


def table_line(out: str, chunk_config: str, profile: str) -> list[str]:
    """The printed leaderboard row of a pair, split on whitespace (rank first, then the tier if any)."""
    for line in out.splitlines():
        cells = line.split()
        if len(cells) > 4 and [chunk_config, profile] in (cells[1:3], cells[2:4]):
            return cells
    raise AssertionError(f"no row {chunk_config} x {profile} in:\n{out}")


def html_rows(story: Story, step: str) -> dict[tuple[str, str], Node]:
    dom = rendered_dom(story.steps[step].report, story.project.parent / f"chromium-{step}")
    rows = dom.find("table", id="leaderboard").find("tbody").find_all("tr")
    return {(r.attrs["data-chunk-config"], r.attrs["data-profile"]): r for r in rows}


def cell(row: Node, column: str) -> str:
    return row.find(None, data_column=column).text().strip()


def ui_rows(metadata: dict[str, object]) -> dict[tuple[str, str], dict[str, object]]:
    """The rows of the leaderboard's table metadata (what the Dagster UI shows), by pair."""
    table = metadata["leaderboard"]
    assert isinstance(table, dg.TableMetadataValue)
    return {(str(r.data["chunk config"]), str(r.data["profile"])): dict(r.data) for r in table.records}


# ---------------------------------------------------------------------------------------------------
# removed chunk configs and profiles


def test_a_removed_profile_and_chunk_config_block_no_run(story: Story) -> None:
    step = story.steps["removed"]
    assert step.code == 0, step.err
    assert "FAILED" not in step.err
    assert "no retrieval profile named" not in step.err + step.out


def test_removed_rows_are_listed_not_ranked_in_parquet_table_and_html(story: Story) -> None:
    step = story.steps["removed"]
    rows = rows_by_pair(step.board)
    assert sorted(rows) == sorted(PAIRS)  # nothing is dropped: the history of the removed ones stays
    assert list(step.board["rank"].astype("object")) == [1, pd.NA, pd.NA]
    assert list(step.board["removed"]) == [False, True, True]
    assert rows[("fixed-60-0", "top2")]["note"] == ""
    assert rows[("fixed-60-0", "top4")]["note"] == "profile removed"
    assert rows[("recursive-120-20", "top2")]["note"] == "chunk config removed"

    assert table_line(step.out, "fixed-60-0", "top2")[0] == "1"
    assert table_line(step.out, "fixed-60-0", "top4")[0] == "-"
    assert "profile removed" in table_line_text(step.out, "fixed-60-0", "top4")
    assert "chunk config removed" in table_line_text(step.out, "recursive-120-20", "top2")
    assert "rank -: removed" in step.out

    html = html_rows(story, "removed")
    assert cell(html[("fixed-60-0", "top2")], "rank") == "1"
    assert cell(html[("fixed-60-0", "top4")], "rank") == "-"
    assert "removed" in html[("fixed-60-0", "top4")].attrs["class"].split()
    assert cell(html[("recursive-120-20", "top2")], "note") == "chunk config removed"
    assert "rank -: removed" in step.report.read_text(encoding="utf-8")

    assert step.metadata["removed"] == "recursive-120-20 x top2, fixed-60-0 x top4"
    assert step.metadata["best"] == "fixed-60-0 x top2" and step.metadata["n_ranked"] == 1
    ui = ui_rows(step.metadata)  # the asset's table in the UI
    assert (
        ui[("fixed-60-0", "top4")]["rank"] == "-" and ui[("fixed-60-0", "top4")]["note"] == "profile removed"
    )
    assert "| - | fixed-60-0 | top4 |" in str(step.metadata["leaderboard_markdown"])


def test_history_commands_work_with_removed_configs(story: Story) -> None:
    for name, (code, _, err) in story.commands.items():
        assert code == 0, f"rag-eval {name}: {err}"
    leaderboard = story.commands["leaderboard"][1]
    assert table_line(leaderboard, "fixed-60-0", "top2")[0] == "1"
    assert table_line(leaderboard, "fixed-60-0", "top4")[0] == "-"
    assert table_line(leaderboard, "fixed-60-0", "top4")[-2:] == ["profile", "removed"]
    assert "recursive-120-20" in story.commands["history"][1]
    assert "recursive-120-20" in story.commands["query"][1]
    assert "succeeded" in story.commands["status"][1]


def test_a_judge_leaves_removed_pairs_out_of_its_top_n(story: Story) -> None:
    judged = story.judged
    assert judged is not None and judged.success
    assert judged.judgements_metadata["pairs_judged"] == "fixed-60-0 x top2"
    assert judged.judgements_metadata["pairs_removed"] == "fixed-60-0 x top4, recursive-120-20 x top2"
    assert set(zip(judged.judgements["chunk_config"], judged.judgements["profile"], strict=True)) == {
        ("fixed-60-0", "top2")
    }
    assert judged.chat_requests == 4  # the four questions of the one configured pair, nothing else
    rows = rows_by_pair(judged.board)
    assert rows[("fixed-60-0", "top2")]["llm_judge_mean"] == pytest.approx(0.8)
    assert pd.isna(rows[("fixed-60-0", "top4")]["llm_judge_mean"])


def test_unreadable_config_files_rank_every_row_and_say_why(story: Story) -> None:
    unreadable = story.unreadable
    assert unreadable is not None and unreadable.success
    assert unreadable.board["rank"].notna().all() and unreadable.board["removed"].isna().all()
    assert unreadable.board_metadata["removed"] == "unknown: the config files could not be read"
    assert "the config files could not be read" in str(unreadable.board_metadata["leaderboard_markdown"])
    assert unreadable.chat_requests == 0


# ---------------------------------------------------------------------------------------------------
# rows that are not comparable with the rest


def test_a_row_with_another_threshold_is_marked(story: Story) -> None:
    step = story.steps["threshold"]
    assert step.code == 0, step.err
    rows = rows_by_pair(step.board)
    assert list(step.board["removed"]) == [False, False, False]  # back in the files: ranked again
    assert step.board["rank"].notna().all()
    assert [rows[p]["other_threshold"] for p in PAIRS] == [False, True, False]
    assert not step.board["other_dataset"].any()
    assert rows[("fixed-60-0", "top4")]["note"] == "threshold 0.75 (fixed) vs 0.70 (fitted)"

    assert table_line(step.out, "fixed-60-0", "top4")[0].endswith("*")
    assert "threshold 0.75 (fixed) vs 0.70 (fitted)" in table_line_text(step.out, "fixed-60-0", "top4")
    assert "rank N*: not comparable" in step.out and "threshold 0.70" in step.out
    assert not table_line(step.out, "fixed-60-0", "top2")[0].endswith("*")

    html = html_rows(story, "threshold")
    assert cell(html[("fixed-60-0", "top4")], "rank").endswith("*")
    assert "not-comparable" in html[("fixed-60-0", "top4")].attrs["class"].split()
    assert cell(html[("fixed-60-0", "top4")], "note") == "threshold 0.75 (fixed) vs 0.70 (fitted)"
    assert step.metadata["not_comparable"] == "fixed-60-0 x top4"
    assert (
        ui_rows(step.metadata)[("fixed-60-0", "top4")]["rank"] == f"{rows[('fixed-60-0', 'top4')]['rank']}*"
    )


def test_a_row_on_other_questions_is_marked(story: Story) -> None:
    step = story.steps["questions"]
    assert step.code == 0, step.err
    rows = rows_by_pair(step.board)
    recursive = rows[("recursive-120-20", "top2")]
    assert recursive["n_questions"] == 2 and recursive["n_stale_questions"] == 2
    assert [rows[p]["other_dataset"] for p in PAIRS] == [False, False, True]
    assert recursive["note"].startswith("other questions: 2 vs 4")
    # two rows now have the fixed threshold 0.75: it is the reference, and the fitted one stands out
    assert rows[("fixed-60-0", "top2")]["note"] == "threshold 0.70 (fitted) vs 0.75 (fixed)"
    assert not rows[("fixed-60-0", "top4")]["note"]
    assert pd.isna(recursive["rank"])  # listed apart, not ranked with the others

    assert table_line(step.out, "recursive-120-20", "top2")[0] == "*"
    assert "other questions: 2 vs 4" in table_line_text(step.out, "recursive-120-20", "top2")
    assert "reference: 4 questions" in step.out

    html = html_rows(story, "questions")
    assert cell(html[("recursive-120-20", "top2")], "rank") == "*"
    assert cell(html[("recursive-120-20", "top2")], "note").startswith("other questions: 2 vs 4")
    assert "reference: 4 questions" in step.report.read_text(encoding="utf-8")


def table_line_text(out: str, chunk_config: str, profile: str) -> str:
    return " ".join(table_line(out, chunk_config, profile))
