"""Numbers that must not depend on accidents (issue 30), through `rag-eval` on the tiny project: a k no
chunk set can fill is refused with its reason, and does not hang the diagnostics; synthetic questions
are made from prose, never markup, and editing one document leaves the other documents' questions as
they were."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pandas as pd
import pytest

from rag_eval_pipeline.core.store.warehouse import Warehouse
from rag_eval_pipeline_tests.core.generation.docs_site import markup_lines, write_docs_site
from rag_eval_pipeline_tests.faults.entry_points import rag_eval

pytestmark = pytest.mark.slow

PROFILES = Path("data/retrieval_profiles.yaml")
FIXED_60_CHUNKS = 9  # the tiny corpus cut by fixed-60-0


def add_profile(project: Path, entry: str) -> Path:
    path = project / PROFILES
    path.write_text(path.read_text(encoding="utf-8") + entry, encoding="utf-8")
    return path


def test_a_top_k_beyond_the_chunks_is_refused_naming_profile_field_and_count(tiny_project: Path):
    """`top_k: 100000` with `rerank_depth: 100000` was accepted and hung the run in the diagnostics;
    one more than the chunks was accepted too, its k silently meaning fewer."""
    profiles = add_profile(tiny_project, "  - {name: wide, top_k: 10}\n")
    run = rag_eval(tiny_project, "run", "--chunk-configs", "fixed-60-0", "--profiles", "top2,wide")
    assert run.returncode == 2, run.stdout + run.stderr
    assert (
        f"{profiles}: retrieval profile 'wide': top_k is 10, but chunk config 'fixed-60-0' has "
        f"{FIXED_60_CHUNKS} chunks, so no retrieval can return 10: set top_k to at most {FIXED_60_CHUNKS}"
    ) in run.stderr
    assert "Traceback" not in run.stderr
    # nothing already computed is lost: the chunks, and the other profile's evaluation
    warehouse = Warehouse(tiny_project / "data" / "warehouse")
    config = {"chunk_config": "fixed-60-0"}
    assert len(pd.read_parquet(warehouse.current_path("chunks", config))) == FIXED_60_CHUNKS
    assert warehouse.current_path("retrieval_metrics", {**config, "profile": "top2"}).is_file()
    assert not warehouse.current_path("retrieval_results", {**config, "profile": "wide"}).exists()

    add_profile(tiny_project, "  - {name: huge, top_k: 100000, rerank_depth: 100000}\n")
    run = rag_eval(tiny_project, "run", "--chunk-configs", "fixed-60-0", "--profiles", "huge", timeout=300)
    assert run.returncode == 2, run.stdout + run.stderr
    assert (
        "retrieval profile 'huge': top_k is 100000, but chunk config 'fixed-60-0' has 9 chunks" in run.stderr
    )


SYNTHETIC = "data/warehouse/datasets/synthetic_questions/current.jsonl"


def synthetic_questions(project: Path) -> dict[str, list[dict[str, object]]]:
    """The accepted synthetic questions `rag-eval regenerate-questions` wrote, by document."""
    by_document: dict[str, list[dict[str, object]]] = {}
    for line in (project / SYNTHETIC).read_text(encoding="utf-8").splitlines():
        example = json.loads(line)
        spans = example["outputs"]["relevant_spans"]
        by_document.setdefault(spans[0]["doc_id"], []).append(
            {"id": example["metadata"]["question_id"], "query": example["inputs"]["query"], "spans": spans}
        )
    return by_document


def test_questions_come_from_prose_and_one_edit_changes_one_documents_questions(tiny_project: Path):
    """A documentation site with include directives, admonition blocks, HTML and release notes: no
    reference holds a markup line; then tutorial/static-files.md is edited and the questions regenerated:
    every other document's questions are what they were (a new question about deployment/https.md had
    appeared)."""
    corpus = tiny_project / "data" / "corpus"
    shutil.rmtree(corpus)
    write_docs_site(corpus)
    (tiny_project / "data" / "generation.yaml").write_text(
        "evaluate_on: synthetic\ntoken_level: {n_questions: 10, passage_min_chars: 120, seed: 1}\n",
        encoding="utf-8",
    )
    first = rag_eval(tiny_project, "regenerate-questions", "--all")
    assert first.returncode == 0, first.stderr
    before = synthetic_questions(tiny_project)
    assert len(before) == 4 and "release-notes.md" not in before
    for questions in before.values():
        for question in questions:
            for span in question["spans"]:  # type: ignore[union-attr]
                assert markup_lines(span["text"]) == [], span["text"]  # type: ignore[index]

    page = corpus / "tutorial" / "static-files.md"
    page.write_text(
        page.read_text(encoding="utf-8").replace(
            "images and style sheets need no handler",
            "images, fonts, scripts and style sheets need no handler",
        ),
        encoding="utf-8",
    )
    second = rag_eval(tiny_project, "regenerate-questions", "--all")
    assert second.returncode == 0, second.stderr
    after = synthetic_questions(tiny_project)
    others = (set(before) | set(after)) - {"tutorial/static-files.md"}
    assert {d: before.get(d) for d in others} == {d: after.get(d) for d in others}
