"""The waterfalls of the HTML report (in headless Chromium) and the diagnostics table of the
leaderboard's metadata, from partition summaries of per-question diagnostics tables."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from rag_eval_pipeline.core.diagnostics.stages import RETRIEVAL_STAGES
from rag_eval_pipeline.core.diagnostics.table import summaries_frame
from rag_eval_pipeline.core.leaderboard.render_html import render_report, write_report
from rag_eval_pipeline.core.leaderboard.render_waterfall import diagnostics_markdown, waterfall_section
from rag_eval_pipeline.core.store.warehouse import Warehouse
from rag_eval_pipeline_tests.chromium import parse_dom, rendered_dom
from rag_eval_pipeline_tests.core.leaderboard.test_render_html import NOW, board_frame


def question(
    chunk_config: str, profile: str, size: int, lost: dict[str, int], answers: dict[str, int] | None
) -> dict:
    """One row of a retrieval_diagnostics table, as far as the summary reads it."""
    retrieved = size - sum(lost.get(s, 0) for s in RETRIEVAL_STAGES)  # dense_threshold: part of dense
    row: dict[str, object] = {
        "chunk_config": chunk_config,
        "profile": profile,
        "top_k": 2,
        "reference_chars": size,
        "retrieved_share": retrieved / size,
        "span_recall": retrieved / size,
        "dense_threshold_share": lost.get("dense_threshold", 0) / size,
        "lost_at": max(RETRIEVAL_STAGES, key=lambda s: lost.get(s, 0)) if retrieved < size else "none",
        "oracle_ranking_recall": 1.0,
        "oracle_candidates_recall": 0.9,
        "oracle_chunking_recall": 0.95,
        "reference_chunks_recall": 0.95,
        "oracle_k_recall": 1.0,
        "oracle_k": 3,
    }
    for stage in RETRIEVAL_STAGES:
        row[f"{stage}_share"] = lost.get(stage, 0) / size
    for stage in ("not_cited", "answer_wrong", "answer_correct", "answer_unjudged"):
        row[f"{stage}_chars"] = None if answers is None else answers.get(stage, 0)
        row[f"{stage}_share"] = None if answers is None else answers.get(stage, 0) / size
    return row


def tables() -> dict[str, pd.DataFrame]:
    """Per-question tables of two partitions: one with answers, one without."""
    return {
        "fixed-60-0|top2": pd.DataFrame(
            [
                question(
                    "fixed-60-0",
                    "top2",
                    100,
                    {"chunking": 20, "dense_candidates": 30, "dense_threshold": 10},
                    {"answer_correct": 30, "not_cited": 20},
                ),
                question("fixed-60-0", "top2", 50, {"top_k": 25}, {"answer_wrong": 25}),
            ]
        ),
        "recursive-120-20|top4": pd.DataFrame(
            [question("recursive-120-20", "top4", 80, {"fusion": 8}, None)]
        ),
    }


def test_the_partition_summary_is_the_mean_of_the_questions_shares():
    summaries = summaries_frame(tables())
    first = summaries.set_index(["chunk_config", "profile"]).loc[("fixed-60-0", "top2")]
    assert first["chunking_share"] == pytest.approx(0.1) and first["top_k_share"] == pytest.approx(0.25)
    assert first["retrieved_share"] == pytest.approx((0.5 + 0.5) / 2)
    shares = ["retrieved_share", *(f"{s}_share" for s in RETRIEVAL_STAGES)]
    assert summaries[shares].sum(axis=1).tolist() == pytest.approx([1.0, 1.0])
    assert first["answers"] and first["oracle_k_median"] == 3 and first["lost_at_top_k"] == 1
    second = summaries.set_index(["chunk_config", "profile"]).loc[("recursive-120-20", "top4")]
    assert not second["answers"] and pd.isna(second["not_cited_share"])
    assert summaries_frame({}).empty and summaries_frame({"x|y": pd.DataFrame()}).empty


def test_the_report_draws_a_waterfall_per_partition_in_the_boards_order(tmp_path: Path):
    board = board_frame()
    summaries = summaries_frame(tables())
    files = write_report(
        board, Warehouse(tmp_path / "warehouse"), "board-run", generated_at=NOW, diagnostics=summaries
    )
    dom = rendered_dom(files.paths.current, tmp_path)
    section = dom.find("section", id="diagnostics")
    charts = section.find_all("svg", class_="waterfall")
    # the board ranks recursive-120-20 x top2 first, which has no diagnostics: the two that have, in order
    assert [c.attrs["data-partition"] for c in charts] == ["fixed-60-0|top2", "recursive-120-20|top4"]
    first = charts[0]
    bars = {r.attrs["data-stage"]: r for r in first.find_all("rect")}
    expected = summaries.iloc[0]
    for stage in RETRIEVAL_STAGES:
        assert float(bars[stage].attrs["data-share"]) == pytest.approx(expected[f"{stage}_share"], abs=1e-6)
    assert float(bars["retrieved"].attrs["data-share"]) == pytest.approx(
        expected["retrieved_share"], abs=1e-6
    )
    assert float(bars["dense_threshold"].attrs["data-share"]) == pytest.approx(0.05, abs=1e-6)
    # each loss starts where the one before ended: a waterfall, left edge = right edge of the next
    x = {s: float(bars[s].attrs["x"]) for s in bars}
    w = {s: float(bars[s].attrs["width"]) for s in bars}
    assert x["chunking"] + w["chunking"] == pytest.approx(x["reference"] + w["reference"], abs=0.02)
    assert x["dense_candidates"] + w["dense_candidates"] == pytest.approx(x["chunking"], abs=0.02)
    assert w["retrieved"] / w["reference"] == pytest.approx(expected["retrieved_share"], abs=1e-3)
    # answers: from what was retrieved down to what a correct answer cited
    assert float(bars["answer_correct"].attrs["data-share"]) == pytest.approx(
        expected["answer_correct_share"], abs=1e-6
    )
    assert "not_cited" not in {r.attrs["data-stage"] for r in charts[1].find_all("rect")}
    assert "oracle ranking 1.000" in first.text() and "oracle k: median 3" in first.text()


def test_without_diagnostics_the_report_says_so_or_leaves_the_section_out():
    board = board_frame()
    empty = parse_dom(render_report(board, pd.DataFrame(), generated_at=NOW, diagnostics=pd.DataFrame()))
    assert "No retrieval diagnostics yet" in empty.find("section", id="diagnostics").text()
    assert not parse_dom(render_report(board, pd.DataFrame(), generated_at=NOW)).find_all(
        "section", id="diagnostics"
    )


def test_user_names_are_escaped_in_the_waterfall():
    frame = pd.DataFrame([question("<b>cfg</b>", "p&q", 10, {"chunking": 5}, None)])
    html = waterfall_section(summaries_frame({"k": frame}))
    assert "<b>cfg</b>" not in html and "&lt;b&gt;cfg&lt;/b&gt;" in html and "p&amp;q" in html


def test_the_leaderboard_metadata_table_lists_each_partitions_shares_in_the_boards_order():
    summaries = summaries_frame(tables())
    text = diagnostics_markdown(summaries, board_frame())
    lines = text.splitlines()
    assert lines[0].startswith("| chunk config | profile | chunking | dense candidates |")
    assert "not cited" in lines[0]  # a partition has answers
    assert lines[2].startswith("| fixed-60-0 | top2 | 0.100 | 0.150 |")
    assert lines[3].startswith("| recursive-120-20 | top4 | 0.000 | 0.000 | 0.000 | 0.100 |")
    assert diagnostics_markdown(pd.DataFrame()) == "No retrieval diagnostics yet."
