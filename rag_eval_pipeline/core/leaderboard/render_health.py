"""The report's "Question set health" section, from the ``question_set_health`` asset's row
(core/question_health/report.py): its warnings first, each saying what to do, then every measure (a
measure that warns is marked), the closest near-duplicate pairs and the largest documents and sections
no question is about. Every string is escaped: question texts and document names come from users."""

from __future__ import annotations

from collections.abc import Mapping
from html import escape
from typing import Any

from ..question_health.report import (
    DOCUMENT_GAPS_JSON,
    DUPLICATE_PAIRS_JSON,
    SECTION_GAPS_JSON,
    left_out_of,
    listed,
    measure_rows,
    warnings_of,
)


def e(value: object) -> str:
    return escape(str(value), quote=True)


def health_section(row: Mapping[str, Any]) -> str:
    """The section for one asset row."""
    warnings = warnings_of(row)
    warned = {w.measure for w in warnings}
    parts = [
        '<section id="question-health"><h2>Question set health</h2><p class="hint">How far the questions '
        "above can be trusted: the board is only as good as the questions it is measured on. Near-duplicates "
        "count once, keyword-trivial questions favour BM25, documents and sections without a question are "
        "not measured, and a question every setup scores the same cannot separate setups (the measures are "
        "defined in docs/question-health.md).</p>"
    ]
    if warnings:
        parts.append('<ul id="health-warnings">')
        parts += [f'<li data-measure="{e(w.measure)}">{e(w.text)}</li>' for w in warnings]
        parts.append("</ul>")
    else:
        parts.append('<p id="health-warnings" class="ok">No weakness found by these measures.</p>')
    parts.append('<table id="health-measures"><thead><tr><th>measure</th><th>value</th></tr></thead><tbody>')
    for measure, what, value in measure_rows(row):
        mark = ' class="warned"' if measure in warned else ""
        parts.append(
            f'<tr data-measure="{e(measure)}"{mark}><td>{e(what)}</td><td class="num">{e(value)}</td></tr>'
        )
    parts.append("</tbody></table>")
    pairs = listed(row, DUPLICATE_PAIRS_JSON)
    if pairs:
        parts.append(
            '<h3>Closest near-duplicate pairs</h3><table id="health-duplicates"><thead><tr><th>question</th>'
            "<th>near-duplicate</th><th>cosine</th></tr></thead><tbody>"
        )
        for p in pairs:
            parts.append(
                f'<tr data-first="{e(p["first"])}" data-second="{e(p["second"])}">'
                f"<td><code>{e(p['first'])}</code> {e(p.get('first_query', ''))}</td>"
                f"<td><code>{e(p['second'])}</code> {e(p.get('second_query', ''))}</td>"
                f'<td class="num">{float(p["cosine"]):.3f}</td></tr>'
            )
        parts.append("</tbody></table>")
    gaps = [("document", g) for g in listed(row, DOCUMENT_GAPS_JSON)]
    gaps += [("section", g) for g in listed(row, SECTION_GAPS_JSON)]
    if gaps:
        parts.append(
            '<h3>Largest parts without a question</h3><table id="health-gaps"><thead><tr><th>kind</th>'
            "<th>document or section</th><th>characters</th></tr></thead><tbody>"
        )
        parts += [
            f'<tr data-kind="{kind}"><td>{kind}</td><td>{e(g["name"])}</td>'
            f'<td class="num">{int(g["chars"]):,}</td></tr>'
            for kind, g in gaps
        ]
        parts.append("</tbody></table>")
    left_out = left_out_of(row)
    if left_out:
        named = "; ".join(f"{setup}: {why}" for setup, why in left_out.items())
        parts.append(f'<p class="hint" id="health-left-out">Setups not compared: {e(named)}.</p>')
    parts.append("</section>")
    return "\n".join(parts)
