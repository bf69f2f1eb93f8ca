"""Issue 30, found by a newcomer on a real documentation set: questions' references held include
directives, admonition markers and release-notes link lists; and editing one document changed the
questions about other documents."""

from __future__ import annotations

from pathlib import Path

import pytest

from rag_eval_pipeline.core.corpus.corpus import Corpus
from rag_eval_pipeline.core.generation.known_item import KnownItemGenerator
from rag_eval_pipeline.core.generation.llm_chunk_level import sample_tasks
from rag_eval_pipeline.core.generation.markup import is_markup
from rag_eval_pipeline.core.generation.passages import (
    candidate_passages,
    document_quotas,
    select_passages,
)
from rag_eval_pipeline.core.types import ChunkId, Document, DocumentId, PositionAwareChunk

from .docs_site import PAGES, markup_lines, write_docs_site

DEMO = Path(__file__).resolve().parents[3] / "data" / "corpus"


@pytest.fixture
def site(tmp_path: Path) -> Corpus:
    return Corpus.from_folder(write_docs_site(tmp_path / "docs"))


@pytest.mark.parametrize(
    "line",
    [
        "{* ../../docs_src/first_steps/tutorial001.py hl[3] *}",
        "{! ../../docs_src/app/main.py !}",
        "{% include 'snippet.md' %}",
        '--8<-- "includes/abbreviations.md"',
        "/// warning",
        "/// note | Technical Details",
        "///",
        '!!! warning "Renewal"',
        "??? tip",
        "::: mkdocstrings.handler",
        ".. code-block:: python",
        "<!-- more -->",
        '<div class="diagram">',
        '<img src="/img/https01.svg">',
        "</div>",
        "---",
        "* ⬆️ Bump ruff from 0.1.1 to 0.1.2. PR [#1001](https://github.com/example/webkit/pull/1001) by "
        "[@dependabot[bot]](https://github.com/apps/dependabot).",
    ],
)
def test_directives_markers_html_and_link_lists_are_markup(line: str) -> None:
    assert is_markup(line)


@pytest.mark.parametrize(
    "line",
    [
        "The development server listens on port 8000 unless you pass another port.",
        "See the [settings guide](https://example.com/settings) for every variable the server reads at startup.",
        "| port | 8000 | the default port of the development server |",
        "- Certificates expire after about three months and must be renewed.",
        "    A certificate that is not renewed in time makes every browser refuse the connection.",
    ],
)
def test_prose_with_a_link_a_table_row_or_an_indent_stays_prose(line: str) -> None:
    assert not is_markup(line)


def test_no_passage_holds_markup_and_release_notes_give_none(site: Corpus) -> None:
    candidates = candidate_passages(site, min_chars=120, max_chars=600)
    assert {p.span.doc_id for p in candidates} == set(PAGES)  # every page, not the release notes
    assert [markup_lines(p.span.text) for p in candidates if markup_lines(p.span.text)] == []
    for passage in candidates:
        assert site[passage.span.doc_id].text[passage.span.start : passage.span.end] == passage.span.text


def test_known_item_references_hold_no_markup(site: Corpus) -> None:
    result = KnownItemGenerator(min_chars=120).generate_token_level(site, 12)
    assert result.examples
    for example in result.examples:
        (span,) = example.relevant_spans
        assert markup_lines(span.text) == [], span.text
        assert span.doc_id != "release-notes.md"


def edited(corpus: Corpus, doc_id: str, old: str, new: str) -> Corpus:
    documents = []
    for doc in corpus:
        text = doc.text.replace(old, new) if doc.doc_id == doc_id else doc.text
        assert doc.doc_id != doc_id or text != doc.text
        documents.append(Document(doc.doc_id, text, doc.group))
    return Corpus(tuple(documents), root=corpus.root)


def by_document(examples: object) -> dict[str, list[tuple[str, str, tuple[object, ...]]]]:
    grouped: dict[str, list[tuple[str, str, tuple[object, ...]]]] = {}
    for e in examples:  # type: ignore[attr-defined]
        grouped.setdefault(e.relevant_spans[0].doc_id, []).append((e.question_id, e.query, e.relevant_spans))
    return grouped


@pytest.mark.parametrize("seed", [13, 1, 2])
def test_editing_one_document_leaves_every_other_documents_questions_as_they_were(
    site: Corpus, seed: int
) -> None:
    """A new question about deployment/https.md appeared after tutorial/static-files.md changed."""
    generator = KnownItemGenerator(seed=seed, min_chars=120)
    before = by_document(generator.generate_token_level(site, 10).examples)
    changed = edited(
        site,
        "tutorial/static-files.md",
        "images and style sheets need no handler of their own.",
        "images, fonts, scripts and style sheets need no handler of their own, and browsers cache them.",
    )
    after = by_document(generator.generate_token_level(changed, 10).examples)
    others = (set(before) | set(after)) - {"tutorial/static-files.md"}
    assert others and {d: before.get(d) for d in others} == {d: after.get(d) for d in others}
    # the edit reached the generator: the selection over the edited document could change
    assert changed["tutorial/static-files.md"].sha256 != site["tutorial/static-files.md"].sha256


def test_the_demo_corpus_keeps_every_other_documents_passages_when_one_grows() -> None:
    corpus = Corpus.from_folder(DEMO)
    target = sorted(d.doc_id for d in corpus)[3]
    grown = Corpus(
        tuple(
            Document(
                d.doc_id,
                d.text + ("\nA new paragraph about rotation keys. " * 30 if d.doc_id == target else ""),
            )
            for d in corpus
        ),
        root=corpus.root,
    )
    before = [p for p in select_passages(corpus, 40, 13) if p.span.doc_id != target]
    after = [p for p in select_passages(grown, 40, 13) if p.span.doc_id != target]
    assert before == after


def test_quotas_depend_on_the_document_ids_and_n_only() -> None:
    ids = [f"d{i}.md" for i in range(7)]
    quotas = document_quotas(ids, 10, seed=13)
    assert sum(quotas.values()) == 10 and sorted(quotas.values()) == [1, 1, 1, 1, 2, 2, 2]
    assert document_quotas(list(reversed(ids)), 10, seed=13) == quotas  # not the corpus's order
    # which documents get the odd questions is drawn by the seed
    assert len({frozenset(d for d, q in document_quotas(ids, 3, seed=s).items() if q) for s in range(8)}) > 1


def test_chunk_level_questions_of_other_documents_stay_when_one_document_changes() -> None:
    def chunk(doc: str, i: int, text: str) -> PositionAwareChunk:
        start = 1000 * i
        return PositionAwareChunk(
            ChunkId(f"{doc}-{i}-{len(text)}"), DocumentId(doc), start, start + len(text), text
        )

    pages = {doc: [p for p in text.split("\n\n") if len(p) > 80] for doc, text in PAGES.items()}
    chunks = [chunk(doc, i, p) for doc, ps in pages.items() for i, p in enumerate(ps)]
    generator = KnownItemGenerator(seed=13)
    before = generator.generate_chunk_level(chunks, 8).examples
    target = "tutorial/first-steps.md"
    changed = [
        chunk(c.doc_id, i, c.text + " It also reloads on changes to templates.") if c.doc_id == target else c
        for i, c in enumerate(chunks)
    ]
    after = generator.generate_chunk_level(changed, 8).examples
    keep = {c.chunk_id for c in chunks if c.doc_id != target}
    assert [e for e in before if set(e.relevant_chunk_ids) <= keep] == [
        e for e in after if set(e.relevant_chunk_ids) <= keep
    ]


def test_the_llm_chunk_sample_of_other_documents_stays_when_one_document_grows() -> None:
    """Sampled by index over every chunk, four more chunks in d0.md shifted every later index."""

    def chunks_of(doc: str, n: int) -> list[PositionAwareChunk]:
        text = f"Paragraph of {doc} number "
        return [
            PositionAwareChunk(
                ChunkId(f"{doc}#{i}"), DocumentId(doc), 100 * i, 100 * i + len(text) + 2, f"{text}{i:02d}"
            )
            for i in range(n)
        ]

    docs = [f"d{d}.md" for d in range(5)]
    chunks = [c for doc in docs for c in chunks_of(doc, 6)]
    grown = [c for doc in docs for c in chunks_of(doc, 10 if doc == "d0.md" else 6)]
    for seed in range(5):
        before = [t.chunk for t in sample_tasks(chunks, 12, seed)]
        after = [t.chunk for t in sample_tasks(grown, 12, seed)]
        lost = [c for c in before if c.doc_id != "d0.md" and c not in after]
        gained = sum(c.doc_id == "d0.md" for c in after) - sum(c.doc_id == "d0.md" for c in before)
        assert len(lost) <= max(gained, 0), seed  # only a new d0.md chunk can take another's place
    assert sample_tasks(chunks, len(chunks), seed=3) == sample_tasks(chunks, 10**6, seed=3)  # all of them
