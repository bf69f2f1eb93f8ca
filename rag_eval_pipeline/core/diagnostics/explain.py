"""`rag-eval explain`'s text: one question's way through one partition's stages, from its row of
``retrieval_diagnostics`` (the row keeps each stage's ranks and scores, so nothing is replayed), or its
outcome across partitions."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..metrics.names import PRECISION_OMEGA, SPAN_RECALL
from ..text_table import format_table
from .stages import ANSWER_STAGES, LABELS, RETRIEVAL_STAGES, THRESHOLD
from .table import NO_LOSS, reference_spans_of, segments_of, trace_of

_EXCERPT = 70


def _excerpt(text: str) -> str:
    flat = " ".join(text.split())
    return repr(flat if len(flat) <= _EXCERPT else flat[: _EXCERPT - 1] + "…")


def _num(value: Any, digits: int = 3) -> str:
    return "n/a" if value is None or value != value else f"{float(value):.{digits}f}"


def _int(value: Any) -> int:
    return 0 if value is None or value != value else int(value)


def explain_question(row: Mapping[str, Any], documents: Mapping[str, str] | None = None) -> str:
    """One partition's diagnosis of one question: the question, its reference spans, where each part
    of the reference went, what each stage returned (ranks, scores) and the oracle bounds.
    ``documents`` (doc id -> text) gives the excerpts of the segments; without it they are left out."""
    k = _int(row["top_k"])
    size, got = _int(row["reference_chars"]), _int(row["retrieved_chars"])
    lines = [
        f"question {row['question_id']}: {row['question']}",
        f"partition {row['chunk_config']} x {row['profile']} (top_k {k}), run {row['run_id']}",
    ]
    if str(row["query"]) != str(row["question"]):
        lines.append(f"searched as: {row['query']}")
    spans = reference_spans_of(row)
    lines += ["", f"reference: {size} characters in {len(spans)} span{'s' if len(spans) != 1 else ''}"]
    lines += [f"  {doc}[{start}:{end}] {_excerpt(text)}" for doc, start, end, text in spans]
    lines += ["", f"retrieved {got} of {size} reference characters (span recall {_num(row[SPAN_RECALL])})"]
    missed = size - got
    if missed:
        lost_at = str(row["lost_at"])
        lines.append(f"missed {missed}, lost at (most: {LABELS.get(lost_at, lost_at)}):")
        for stage in RETRIEVAL_STAGES:
            chars = _int(row[f"{stage}_chars"])
            if chars:
                extra = ""
                if stage == "dense_candidates" and _int(row[f"{THRESHOLD}_chars"]):
                    extra = f" (of which the similarity threshold removed {_int(row[f'{THRESHOLD}_chars'])})"
                lines.append(f"  {LABELS[stage]:<20} {chars:>6}  {chars / size:6.1%}{extra}")
    if row.get("answer_judged_by"):
        parts = [f"{LABELS[s]} {_int(row[f'{s}_chars'])}" for s in ANSWER_STAGES]
        lines.append(f"answer (verdict: {row['answer_judged_by']}): " + ", ".join(parts))
    lines += ["", "where each part of the reference went:"]
    for doc, start, end, stage, threshold in segments_of(row):
        label = LABELS.get(stage, stage) + (" (threshold)" if threshold else "")
        text = f" {_excerpt(documents[doc][start:end])}" if documents and doc in documents else ""
        lines.append(f"  {doc}[{start}:{end}] {label}{text}")
    lines += ["", *_stages(trace_of(row), k)]
    lines += [
        "",
        "oracles (upper bounds of the span recall):",
        f"  ranking   {_num(row['oracle_ranking_recall'])}  the best {k} chunks of this chunk set"
        f" (of the candidates found: {_num(row['oracle_candidates_recall'])})",
        f"  chunking  {_num(row['oracle_chunking_recall'])}  the reference spans as chunks, same profile"
        f" (that replay alone: {_num(row['reference_chunks_recall'])})",
        f"  k         {_num(row['oracle_k_recall'])}  "
        + (
            f"reached at k = {_int(row['oracle_k'])}"
            if row["oracle_k"] is not None and row["oracle_k"] == row["oracle_k"]
            else "the ranking holds no reference text"
        ),
        f"  {PRECISION_OMEGA} {_num(row[PRECISION_OMEGA])} (1: the chunks holding the reference hold nothing else)",
    ]
    return "\n".join(lines)


def _stages(trace: Sequence[Mapping[str, Any]], k: int) -> list[str]:
    """Each stage's list: its first k and every chunk holding reference text (marked *), by rank."""
    lines = ["what each stage returned (rank, score; * holds reference text, with its characters):"]
    columns = (
        ("dense", "dense_rank", "dense_score"),
        ("keyword", "keyword_rank", "keyword_score"),
        ("fused", "fused_rank", "fused_score"),
        ("reranked", "rerank_rank", "rerank_score"),
        ("returned", "final_rank", None),
    )
    both_sides = any(c["dense_rank"] is not None for c in trace) and any(
        c["keyword_rank"] is not None for c in trace
    )
    for name, rank_key, score_key in columns:
        listed = sorted((c for c in trace if c[rank_key] is not None), key=lambda c: c[rank_key])
        if not listed or (name == "fused" and not both_sides):  # one retriever: its list is the ranking
            continue
        lines.append(f"  {name}:")
        for c in listed:
            score = f" {c[score_key]:.4f}" if score_key and c[score_key] is not None else ""
            held = f" *{c['reference_chars']}" if c["reference_chars"] else ""
            cut = " (below the threshold)" if name == "dense" and c["below_threshold"] else ""
            lines.append(
                f"    {c[rank_key]:>3} {c['chunk_id']}{score}{held}  {c['doc_id']}[{c['start']}:{c['end']}]{cut}"
            )
    missing = [c for c in trace if c["reference_chars"] and c["lost_at"]]
    if missing:
        lines.append("  chunks holding reference text the top k did not return:")
        for c in missing:
            lines.append(
                f"    {c['chunk_id']} *{c['reference_chars']}  {c['doc_id']}[{c['start']}:{c['end']}]  "
                f"lost at {LABELS.get(c['lost_at'], c['lost_at'])}"
            )
    return lines


def explain_across(rows: Sequence[Mapping[str, Any]]) -> str:
    """One question in several partitions: a line each, recall, where it was lost, the oracles."""
    first = rows[0]
    header = ["chunk_config", "profile", "k", "recall", "lost at", *(LABELS[s] for s in RETRIEVAL_STAGES)]
    header += ["oracle ranking", "oracle chunking", "oracle k"]
    table = []
    for row in rows:
        size = _int(row["reference_chars"])
        lost = str(row["lost_at"])
        table.append(
            [
                str(row["chunk_config"]),
                str(row["profile"]),
                str(_int(row["top_k"])),
                _num(row[SPAN_RECALL]),
                "-" if lost == NO_LOSS else LABELS.get(lost, lost),
                *(f"{_int(row[f'{s}_chars']) / size:.3f}" for s in RETRIEVAL_STAGES),
                _num(row["oracle_ranking_recall"]),
                _num(row["oracle_chunking_recall"]),
                str(_int(row["oracle_k"]))
                if row["oracle_k"] == row["oracle_k"] and row["oracle_k"] is not None
                else "n/a",
            ]
        )
    return "\n".join(
        [
            f"question {first['question_id']}: {first['question']}",
            f"reference: {_int(first['reference_chars'])} characters; shares of it lost at each stage:",
            "",
            format_table(header, table),
        ]
    )
