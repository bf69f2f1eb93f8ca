"""A hand-made question set whose every health measure is known by construction (the comments say why
each value is what it is): shared by the core tests, the report section's test and the asset's test."""

from __future__ import annotations

import re

import numpy as np

from rag_eval_pipeline.core.corpus.corpus import Corpus
from rag_eval_pipeline.core.question_health.separation import SetupScores
from rag_eval_pipeline.core.questions.datasets import TokenLevelExample
from rag_eval_pipeline.core.types import (
    CharacterSpan,
    ChunkId,
    Document,
    DocumentId,
    PositionAwareChunk,
    QuestionId,
)

PUMPS = (
    "Intro text about the plant. The plant has two pumps.\n"
    "\n"
    "# Pumps\n"
    "\n"
    "The main pump runs at 1,450 rpm and is serviced every 90 days.\n"
    "\n"
    "## Alarms\n"
    "### Pressure\n"
    "\n"
    "A pressure alarm fires when the outlet pressure exceeds 7.5 bar.\n"
    "\n"
    "```python\n"
    "# not a heading: fenced code\n"
    "print('siren')\n"
    "```\n"
    "\n"
    "{* ../../docs_src/pumps/tutorial001.py hl[4] *}\n"
    "\n"
    "!!! note\n"
    '<div class="x">Hidden</div>\n'
    "\n"
    "Release notes: [#12](https://github.com/a/b/pull/12) by [@ann](https://github.com/ann)\n"
)
VALVES = (
    "# Valves\n\nEvery relief valve is tested in March. Valve V-12 feeds the cooling loop.\n\n"
    "# Staff\n\nZoë Mbeki leads the night shift.\n"
)
PLAIN = "Plain text without headings. The archive holds the yearly reports.\n"
CODE_ONLY = "```\nmake build\n```\n"
UNASKED = (
    "# Unasked\n\n" + "A long paragraph nobody asks about, about the loading dock and its ramps. " * 5 + "\n"
)
# more of q-valve's terms in fewer words than its reference's paragraph: BM25 ranks this first
COOLING = "The cooling loop valve feeds the cooling loop valve.\n"

DOCS = {
    "guide/pumps.md": PUMPS,
    "guide/valves.md": VALVES,
    "notes/plain.txt": PLAIN,
    "notes/code_only.md": CODE_ONLY,
    "notes/unasked.md": UNASKED,
    "notes/cooling.md": COOLING,
}


def corpus() -> Corpus:
    return Corpus(tuple(Document(DocumentId(d), t, d.split("/")[0]) for d, t in DOCS.items()))


def span(doc_id: str, excerpt: str) -> CharacterSpan:
    start = DOCS[doc_id].index(excerpt)
    return CharacterSpan(DocumentId(doc_id), start, start + len(excerpt), excerpt)


# (id, query, [(doc, excerpt)]): the comments say what each one is there for.
QUESTIONS: list[tuple[str, str, list[tuple[str, str]]]] = [
    # overlap {fast, main, pump, run} vs {main, pump, runs, ...}: 2 of 4 = 0.5; in section "Pumps"
    ("q-pump", "How fast does the main pump run?", [("guide/pumps.md", "The main pump runs at 1,450 rpm")]),
    # a near-duplicate of q-pump (its vector is planted close); same reference
    (
        "q-pump-2",
        "How fast does the main pump turn?",
        [("guide/pumps.md", "The main pump runs at 1,450 rpm")],
    ),
    # every content term in the reference, and only there: BM25 ranks it first -> keyword-trivial
    (
        "q-alarm",
        "pressure alarm fires outlet pressure exceeds",
        [("guide/pumps.md", "A pressure alarm fires when the outlet pressure exceeds 7.5 bar.")],
    ),
    # a reference that is an include directive
    (
        "q-include",
        "Which tutorial file is included?",
        [("guide/pumps.md", "{* ../../docs_src/pumps/tutorial001.py hl[4] *}")],
    ),
    # a reference over an admonition marker and an HTML line
    ("q-note", "What does the note say?", [("guide/pumps.md", '!!! note\n<div class="x">Hidden</div>')]),
    # a reference inside fenced code (its '#' line is no heading)
    ("q-code", "What does the siren script print?", [("guide/pumps.md", "print('siren')")]),
    # a reference of 4 characters: short
    ("q-short", "Which valve?", [("guide/valves.md", "V-12")]),
    # overlap {valve, feeds, cooling, loop} all in the reference, but BM25 ranks another passage first
    # (see ``windows``): not keyword-trivial
    (
        "q-valve",
        "Which valve feeds the cooling loop?",
        [("guide/valves.md", "Valve V-12 feeds the cooling loop.")],
    ),
    # a document without headings is one section; overlap {archive, hold} vs {archive, holds, ...}: 0.5
    (
        "q-plain",
        "What does the archive hold?",
        [("notes/plain.txt", "The archive holds the yearly reports.")],
    ),
]


def examples() -> list[TokenLevelExample]:
    return [
        TokenLevelExample(QuestionId(q), query, tuple(span(d, x) for d, x in refs))
        for q, query, refs in QUESTIONS
    ]


def vectors() -> np.ndarray:
    """One 3-d vector per question, in order: q-pump and q-pump-2 at 20 degrees (cosine 0.940 >= 0.9),
    the others far apart (one axis each, some scaled: cosine normalises)."""
    angle = np.radians(20)
    rows = [
        [1.0, 0.0, 0.0],  # q-pump
        [np.cos(angle), np.sin(angle), 0.0],  # q-pump-2
        [0.0, 0.0, 5.0],  # q-alarm
        [0.0, 1.0, -1.0],  # q-include: cosine with q-pump-2 0.24, with q-alarm -0.71
        [-1.0, 0.0, 0.0],  # q-note
        [0.0, -1.0, 0.0],  # q-code
        [0.0, 0.0, -1.0],  # q-short
        [-1.0, -1.0, 0.0],  # q-valve
        [0.0, 0.0, 0.0],  # q-plain: a zero vector is similar to nothing (cosine 0)
    ]
    return np.array(rows, dtype=np.float32)


# Sections of the corpus that hold prose (the expected ``coverage``): (name, covered by)
SECTIONS = {
    "guide/pumps.md": None,  # the text before "# Pumps": no question
    "guide/pumps.md § Pumps": "q-pump",
    # "## Alarms" is followed at once by "### Pressure": no prose, no section
    "guide/pumps.md § Pressure": "q-alarm",
    "guide/valves.md § Valves": "q-valve",
    "guide/valves.md § Staff": None,
    "notes/plain.txt": "q-plain",
    "notes/unasked.md § Unasked": None,
    "notes/cooling.md": None,
}


def windows() -> list[PositionAwareChunk]:
    """The passages BM25 searches in these tests: every paragraph (text between blank lines)."""
    found = []
    for doc_id, text in DOCS.items():
        for match in re.finditer(r"[^\n]+(?:\n[^\n]+)*", text):
            found.append(
                PositionAwareChunk(
                    ChunkId(f"w{len(found)}"), DocumentId(doc_id), match.start(), match.end(), match.group()
                )
            )
    return found


# Three setups' objective per question (q-valve missing in c: not compared), and what follows:
SCORES = {
    "a x p": {
        "q-pump": 1.0,
        "q-pump-2": 1.0,
        "q-alarm": 1.0,
        "q-include": 0.0,
        "q-note": 0.0,
        "q-code": 0.5,
        "q-short": 1.0,
        "q-valve": 1.0,
        "q-plain": 0.25,
    },
    "b x p": {
        "q-pump": 1.0,
        "q-pump-2": 0.5,
        "q-alarm": 1.0,
        "q-include": 0.0,
        "q-note": 0.0,
        "q-code": 0.5,
        "q-short": 0.0,
        "q-valve": 1.0,
        "q-plain": 0.75,
    },
    "c x p": {
        "q-pump": 1.0,
        "q-pump-2": 1.0,
        "q-alarm": 1.0,
        "q-include": 0.0,
        "q-note": 0.0,
        "q-code": 0.5,
        "q-short": 1.0,
        "q-plain": 1.0,
    },
}
COMPARED = ["q-pump", "q-pump-2", "q-alarm", "q-include", "q-note", "q-code", "q-short", "q-plain"]
NO_SETUP = ["q-include", "q-note"]  # 0 everywhere
EVERY_SETUP = ["q-pump", "q-alarm"]  # 1 everywhere
SAME_SCORE = ["q-pump", "q-alarm", "q-include", "q-note", "q-code"]  # and q-code's 0.5 everywhere
# groups holding a question that separates setups: {q-pump, q-pump-2} (q-pump-2 does), q-short, q-plain
EFFECTIVE_SAMPLE_SIZE = 3


def scores() -> SetupScores:
    return SetupScores(
        "span_recall_1000t",
        {setup: {QuestionId(q): v for q, v in values.items()} for setup, values in SCORES.items()},
        {},
    )
