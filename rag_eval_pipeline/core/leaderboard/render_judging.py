"""The report's "Judgements" section (and its markdown for the leaderboard's metadata), from the
workspace's judging store (core/judging/summary.py): how far the judging of real queries is, the
judgements made stale by document edits, and how far the judges agree, pair by pair, people and LLM
judges alike. judged@k needs retrieval runs: the section names the command that measures it. Every string
is escaped: judge names, queries and reasons come from users' files."""

from __future__ import annotations

from html import escape

from ..judging.agreement import PairAgreement
from ..judging.summary import JUDGED_AT_K_COMMAND, JudgingSummary

STALE_SHOWN = 20  # the stale judgements listed; the count says how many there are

COUNT_ROWS = (
    ("queries_imported", "queries imported (data/judging/queries.jsonl)"),
    ("queries_judged", "imported queries judged (by at least one judge)"),
    ("questions", "judged queries with an answer: the questions rag-eval judgements export writes"),
    ("judgements", "judgements stored (every judge, every revision)"),
    ("stale", "stale judgements: their answer is no longer in the documents (not used)"),
    ("reanchored", "judgements re-anchored after document edits"),
)

KAPPA_HINT = (
    "Cohen's kappa on binary relevance over the passages both judges read (a person: the passage holds "
    "a selected span; an LLM judge: graded 2 or more); 1 is full agreement, 0 what chance gives. "
    "Undefined when both put every passage in one class: the observed agreement says it then. Span "
    "overlap: the intersection over the union of the answering spans, cut to the text both read, mean over "
    "the queries where either selected one."
)


def e(value: object) -> str:
    return escape(str(value), quote=True)


def counts(summary: JudgingSummary) -> list[tuple[str, str, int]]:
    """(measure, what it is, value) for the count table, in order."""
    values = {
        "queries_imported": summary.n_queries,
        "queries_judged": summary.n_judged,
        "questions": summary.n_questions,
        "judgements": summary.n_judgements,
        "stale": len(summary.stale),
        "reanchored": summary.reanchored,
    }
    return [(measure, what, values[measure]) for measure, what in COUNT_ROWS]


def kappa_text(pair: PairAgreement) -> str:
    if not pair.table.n:
        return "no passage both read"
    return "undefined (one class for both)" if pair.kappa is None else f"{pair.kappa:.2f}"


def observed_text(pair: PairAgreement) -> str:
    observed = pair.table.observed
    return "n/a" if observed is None else f"{observed:.2f}"


def iou_text(pair: PairAgreement) -> str:
    return "no span selected" if pair.span_iou is None else f"{pair.span_iou:.2f}"


def md(text: str) -> str:
    """A markdown table cell: a ``|`` in a judge's name would end it."""
    return text.replace("|", "\\|")


def judge_label(summary: JudgingSummary, judge: str) -> str:
    """The judge's name, ``(LLM)`` after an LLM judge's."""
    return f"{judge} (LLM)" if summary.kind_of(judge) == "llm" else judge


def judging_section(summary: JudgingSummary) -> str:
    parts = [
        '<section id="judgements"><h2>Judgements</h2><p class="hint" id="judging-intro">Real queries judged as character '
        "spans in the documents (data/judging): by people on the annotation page (`rag-eval annotate`) and "
        "by LLM judges (`rag-eval judgements llm`). Judged queries with an answer become questions with "
        "`rag-eval judgements export`. judged@k, the share of each setup's top k some judge read, needs "
        f"retrieval runs and is not computed here: run <code>{e(JUDGED_AT_K_COMMAND)}</code>.</p>",
        '<table id="judging-counts"><thead><tr><th>measure</th><th>value</th></tr></thead><tbody>',
    ]
    parts += [
        f'<tr data-measure="{measure}"><td>{e(what)}</td><td class="num">{value:,}</td></tr>'
        for measure, what, value in counts(summary)
    ]
    parts.append("</tbody></table>")
    if summary.not_imported:
        parts.append(
            f'<p class="hint" id="judging-not-imported">{summary.not_imported:,} judged queries are no '
            "longer among the imported queries: their text is unknown, so they are no question.</p>"
        )
    if summary.judges:
        parts.append(
            '<h3>Judges</h3><table id="judging-judges"><thead><tr><th>judge</th><th>kind</th>'
            "<th>queries judged</th></tr></thead><tbody>"
        )
        parts += [
            f'<tr data-judge="{e(j.judge)}" data-kind="{e(j.kind)}"><td>{e(j.judge)}</td>'
            f'<td>{"LLM" if j.kind == "llm" else "person"}</td><td class="num">{j.n_queries:,}</td></tr>'
            for j in summary.judges
        ]
        parts.append("</tbody></table>")
    parts.append(f'<h3>Agreement between judges</h3><p class="hint">{e(KAPPA_HINT)}</p>')
    if summary.agreement:
        parts.append(
            '<table id="judging-agreement"><thead><tr><th>judge</th><th>judge</th>'
            "<th>queries both judged</th><th>passages both read</th><th>observed agreement</th>"
            "<th>Cohen's kappa</th><th>queries with a span</th><th>span overlap (IoU)</th></tr></thead><tbody>"
        )
        for pair in summary.agreement:
            parts.append(
                f'<tr data-judge-a="{e(pair.judge_a)}" data-judge-b="{e(pair.judge_b)}">'
                f"<td>{e(judge_label(summary, pair.judge_a))}</td>"
                f"<td>{e(judge_label(summary, pair.judge_b))}</td>"
                f'<td class="num">{pair.n_queries:,}</td><td class="num">{pair.table.n:,}</td>'
                f'<td class="num" data-column="observed">{observed_text(pair)}</td>'
                f'<td class="num" data-column="kappa">{kappa_text(pair)}</td>'
                f'<td class="num">{pair.n_span_queries:,}</td>'
                f'<td class="num" data-column="span_iou">{iou_text(pair)}</td></tr>'
            )
        parts.append("</tbody></table>")
    else:
        parts.append(
            '<p id="judging-agreement" class="hint">No query judged by two judges yet: agreement needs '
            "queries judged twice (a second annotator, or an LLM judge on the queries people judged).</p>"
        )
    if summary.stale:
        parts.append(
            f'<h3>Stale judgements</h3><p class="hint">{len(summary.stale):,} judgements whose answer is no '
            "longer in the documents: used nowhere, their passages are offered again on the annotation "
            "page.</p>"
            '<ul id="judging-stale">'
        )
        parts += [
            f'<li data-query="{e(s.judgement.query_id)}" data-judge="{e(s.judgement.judge)}">'
            f"{e(s.describe())}</li>"
            for s in summary.stale[:STALE_SHOWN]
        ]
        more = len(summary.stale) - STALE_SHOWN
        parts += (
            [f"<li>and {more:,} more: <code>{e(JUDGED_AT_K_COMMAND)}</code> lists them all</li>"]
            if more > 0
            else []
        )
        parts.append("</ul>")
    parts.append("</section>")
    return "\n".join(parts)


def judging_markdown(summary: JudgingSummary) -> str:
    """The same in markdown, for the leaderboard's metadata: the counts, then a table of the pairs."""
    lines = [f"- {what}: {value:,}" for _, what, value in counts(summary)]
    if summary.agreement:
        lines += [
            "",
            "| judge | judge | queries both judged | passages both read | kappa | span overlap (IoU) |",
            "|---|---|---|---|---|---|",
        ]
        lines += [
            f"| {md(judge_label(summary, p.judge_a))} | {md(judge_label(summary, p.judge_b))} | {p.n_queries} | "
            f"{p.table.n} | {kappa_text(p)} | {iou_text(p)} |"
            for p in summary.agreement
        ]
    else:
        lines += ["", "No query judged by two judges yet."]
    lines += ["", f"judged@k per setup: `{JUDGED_AT_K_COMMAND}`"]
    return "\n".join(lines)
