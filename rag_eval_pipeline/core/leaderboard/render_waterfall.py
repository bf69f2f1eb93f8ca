"""Why each setup misses, drawn: a waterfall per partition from its retrieval_diagnostics summary
(core/diagnostics/table.py), for the HTML report, and the same shares as a markdown table for the
leaderboard's metadata.

A waterfall starts at the whole reference (1.0) and steps down by the mean share each stage lost, in
pipeline order, to the share retrieved (the mean span recall); where answers exist it steps on, down by
what the answers did not cite, got wrong or left unjudged, to the share a correct answer cited. The
oracle bounds are printed under it. Inline SVG, no script; user strings escaped.
"""

from __future__ import annotations

from html import escape

import pandas as pd

from ..diagnostics.stages import ANSWER_STAGES, LABELS, RETRIEVAL_STAGES, THRESHOLD
from ..text_table import markdown_table

# one colour per stage (chunking warm, the retrievers blue, ordering purple, the answer grey-green)
COLOURS = {
    "reference": "#9aa5b1",
    "chunking": "#d9822b",
    "dense_candidates": "#2f6fb0",
    "keyword_candidates": "#4aa3df",
    "fusion": "#8e5cc2",
    "rerank": "#c25c9a",
    "top_k": "#c23c3c",
    "retrieved": "#3f9142",
    "not_cited": "#b0a04a",
    "answer_wrong": "#7b6f3a",
    "answer_unjudged": "#c8ccd0",
    "answer_correct": "#2d6a30",
}
WIDTH, LABEL_W, BAR_W, ROW_H, TOP = 380, 132, 180, 18, 26


def e(value: object) -> str:
    return escape(str(value), quote=True)


def _ordered(summaries: pd.DataFrame, board: pd.DataFrame | None) -> pd.DataFrame:
    """The partitions in the board's order (those it does not list after them, by name)."""
    if summaries.empty or board is None or board.empty:
        return summaries
    place = {(str(r["chunk_config"]), str(r["profile"])): i for i, (_, r) in enumerate(board.iterrows())}
    key = [
        place.get((str(r["chunk_config"]), str(r["profile"])), len(place)) for _, r in summaries.iterrows()
    ]
    return (
        summaries.assign(_place=key)
        .sort_values(["_place", "chunk_config", "profile"], kind="stable")
        .drop(columns="_place")
    )


def _share(row: pd.Series, stage: str) -> float:
    value = row.get(f"{stage}_share")
    return 0.0 if value is None or pd.isna(value) else float(value)


def waterfall_svg(row: pd.Series) -> str:
    """One partition's waterfall (the module docstring)."""
    answers = bool(row.get("answers")) and not pd.isna(row.get("not_cited_share"))
    steps: list[tuple[str, float, float, str]] = [("reference", 0.0, 1.0, "1.000")]  # stage, from, to, text
    level = 1.0
    for retrieval_stage in RETRIEVAL_STAGES:
        share = _share(row, retrieval_stage)
        steps.append((retrieval_stage, level - share, level, _loss(share)))
        level -= share
    recall = _share(row, "retrieved")
    steps.append(("retrieved", 0.0, recall, f"{recall:.3f}"))
    if answers:
        level = recall
        for answer_stage in ("not_cited", "answer_wrong", "answer_unjudged"):
            share = _share(row, answer_stage)
            steps.append((answer_stage, level - share, level, _loss(share)))
            level -= share
        correct = _share(row, "answer_correct")
        steps.append(("answer_correct", 0.0, correct, f"{correct:.3f}"))
    height = TOP + ROW_H * len(steps) + 34
    partition = f"{row['chunk_config']}|{row['profile']}"
    out = [
        f'<svg class="waterfall" viewBox="0 0 {WIDTH} {height}" width="{WIDTH}" height="{height}" role="img" '
        f'data-partition="{e(partition)}" aria-label="where {e(partition)} loses its reference text">',
        f'<text class="panel-title" x="0" y="14">{e(row["chunk_config"])} × {e(row["profile"])}</text>',
    ]
    for i, (stage, low, high, text) in enumerate(steps):
        y = TOP + i * ROW_H
        x0, x1 = LABEL_W + max(0.0, low) * BAR_W, LABEL_W + max(0.0, high) * BAR_W
        label = {"reference": "reference", "retrieved": "retrieved (span recall)"}.get(
            stage, LABELS.get(stage, stage)
        )
        out.append(f'<text x="{LABEL_W - 6}" y="{y + 12}" text-anchor="end">{e(label)}</text>')
        out.append(
            f'<rect data-stage="{e(stage)}" data-share="{high - low:.6f}" x="{x0:.2f}" y="{y + 3}" '
            f'width="{max(0.0, x1 - x0):.2f}" height="{ROW_H - 6}" fill="{COLOURS[stage]}">'
            f"<title>{e(label)}: {e(text)}</title></rect>"
        )
        if stage == "dense_candidates" and _share(row, THRESHOLD) > 0:
            cut = _share(row, THRESHOLD)
            out.append(
                f'<rect data-stage="{THRESHOLD}" data-share="{cut:.6f}" x="{x0:.2f}" y="{y + 3}" '
                f'width="{cut * BAR_W:.2f}" height="{ROW_H - 6}" fill="#173a5e">'
                f"<title>{e(LABELS[THRESHOLD])}: −{cut:.3f}</title></rect>"
            )
        out.append(f'<text class="tick" x="{LABEL_W + BAR_W + 6}" y="{y + 12}">{e(text)}</text>')
    y = TOP + len(steps) * ROW_H + 14
    bounds = [
        f"oracle ranking {_fmt(row.get('oracle_ranking_recall'))}",
        f"oracle chunking {_fmt(row.get('oracle_chunking_recall'))}",
    ]
    median = row.get("oracle_k_median")
    k_text = "n/a" if median is None or pd.isna(median) else f"{float(median):g}"
    out.append(f'<text class="tick" x="0" y="{y}">{e(" · ".join(bounds))}</text>')
    k_line = f"oracle k: median {k_text} (top_k {row.get('top_k', 'n/a')})"
    out.append(f'<text class="tick" x="0" y="{y + 14}">{e(k_line)}</text>')
    out.append("</svg>")
    return "".join(out)


def _loss(share: float) -> str:
    return f"−{share:.3f}" if share > 0 else "0"


def _fmt(value: object) -> str:
    if not isinstance(value, int | float) or value != value:  # None, NaN, pd.NA
        return "n/a"
    return f"{float(value):.3f}"


def waterfall_section(summaries: pd.DataFrame | None, board: pd.DataFrame | None = None) -> str:
    """The report's section: a waterfall per partition, in the board's order."""
    parts = [
        '<section id="diagnostics"><h2>Why setups miss</h2><p class="hint">Per partition, the mean share of '
        "the reference text each stage lost, in pipeline order: chunking (more reference than k chunks can "
        "hold), the dense and keyword candidate lists (dark: removed by the similarity threshold), fusion, "
        "reranking and the top-k cut; what is left is the span recall. Where answers exist, what the answer "
        "did not cite, got wrong or left unjudged. Under each: the oracle bounds (the best k chunks of this "
        "chunk set; the reference spans as chunks; the median smallest k reaching full recall). "
        "<code>rag-eval explain QUESTION_ID</code> shows one question.</p>"
    ]
    if summaries is None or summaries.empty:
        parts.append('<p class="empty">No retrieval diagnostics yet.</p></section>')
        return "\n".join(parts)
    parts.append('<div class="waterfalls" style="display:flex;flex-wrap:wrap;gap:18px 28px">')
    parts += [waterfall_svg(row) for _, row in _ordered(summaries, board).iterrows()]
    parts.append("</div></section>")
    return "\n".join(parts)


def diagnostics_markdown(summaries: pd.DataFrame, board: pd.DataFrame | None = None) -> str:
    """The stage shares and oracle bounds per partition as a markdown table (the leaderboard's
    metadata), in the board's order; the answer stages where some partition has answers."""
    if summaries.empty:
        return "No retrieval diagnostics yet."
    answers = "answers" in summaries.columns and bool(summaries["answers"].astype(bool).any())
    stages: list[str] = [*RETRIEVAL_STAGES, "retrieved", *(ANSWER_STAGES if answers else ())]
    head = ["chunk config", "profile", *(LABELS.get(s, "span recall") for s in stages)]
    head += ["oracle ranking", "oracle chunking", "oracle k (median)"]
    rows = []
    for _, row in _ordered(summaries, board).iterrows():
        median = row.get("oracle_k_median")
        cells = [
            str(row["chunk_config"]),
            str(row["profile"]),
            *(_fmt(row.get(f"{s}_share")) for s in stages),
            _fmt(row.get("oracle_ranking_recall")),
            _fmt(row.get("oracle_chunking_recall")),
            "n/a" if median is None or pd.isna(median) else f"{float(median):g}",
        ]
        rows.append(cells)
    return markdown_table(head, rows)
