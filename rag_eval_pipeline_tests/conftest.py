from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from hypothesis import settings

# No wall-clock limit on a property test's examples: the machine is shared (a loaded CI ran the Pareto
# property 274 ms on one example against Hypothesis' default deadline of 200 ms). Speed is measured in
# benchmarks/, never asserted in a test.
settings.register_profile("rag_eval", deadline=None)
settings.load_profile("rag_eval")

REPO = Path(__file__).resolve().parents[1]

TINY_DOCS = {
    "alpha/pumps.md": (
        "# Pumps\n\nThe main pump runs at 1,450 rpm and is serviced every 90 days.\n\n"
        "## Alarms\n\nA pressure alarm fires when the outlet pressure exceeds 7.5 bar for ten seconds.\n"
    ),
    "alpha/valves.md": (
        "# Valves\n\nEvery relief valve is tested in March. The test takes two technicians.\n\n"
        "Valve V-12 feeds the cooling loop; it was replaced in 2021 after corrosion.\n"
    ),
    "beta/staff.md": (
        "# Staff\n\nZoë Mbeki leads the night shift. Night shift starts at 22:00 and ends at 06:00.\n\n"
        "- Day shift lead: Tomasz Wiśniewski\n- Maintenance lead: Amélie Durand\n"
    ),
}

TINY_QUESTIONS = [
    ("tiny-1", "How fast does the main pump run?", [("alpha/pumps.md", "The main pump runs at 1,450 rpm")]),
    (
        "tiny-2",
        "When does the pressure alarm fire?",
        [
            (
                "alpha/pumps.md",
                "A pressure alarm fires when the outlet pressure exceeds 7.5 bar for ten seconds.",
            )
        ],
    ),
    (
        "tiny-3",
        "Who leads the night shift and when does it start?",
        [("beta/staff.md", "Zoë Mbeki leads the night shift. Night shift starts at 22:00")],
    ),
    (
        "tiny-4",
        "Which valve feeds the cooling loop, and who leads maintenance?",
        [
            ("alpha/valves.md", "Valve V-12 feeds the cooling loop"),
            ("beta/staff.md", "Maintenance lead: Amélie Durand"),
        ],
    ),
]

# Reference answers and the keywords a correct answer must contain.
TINY_ANSWERS = {
    "tiny-1": ("The main pump runs at 1,450 rpm.", ["1,450 rpm"]),
    "tiny-2": ("It fires when the outlet pressure stays above 7.5 bar for ten seconds.", ["7.5 bar"]),
    "tiny-3": ("Zoë Mbeki leads the night shift, which starts at 22:00.", ["Mbeki", "22:00"]),
    "tiny-4": ("Valve V-12 feeds the cooling loop, and Amélie Durand leads maintenance.", ["V-12", "Durand"]),
}

# Human labels: (question id, answer, correct).
TINY_LABELS = [
    ("tiny-1", "The main pump turns at 1,450 revolutions per minute.", 1),
    ("tiny-1", "It runs at 1,450 rpm.", 1),
    ("tiny-1", "The main pump runs at 900 rpm.", 0),
    ("tiny-1", "I don't know.", 0),
    ("tiny-2", "When outlet pressure is above 7.5 bar for ten seconds.", 1),
    ("tiny-2", "The alarm fires when the outlet pressure exceeds 7.5 bar for ten seconds.", 1),
    ("tiny-2", "The alarm fires every 90 days.", 0),
    ("tiny-3", "Zoë Mbeki leads it; the night shift begins at 22:00.", 1),
    ("tiny-3", "Tomasz Wiśniewski leads the night shift.", 0),
    ("tiny-3", "The context does not say.", 0),
    ("tiny-4", "V-12 feeds the cooling loop; maintenance is led by Amélie Durand.", 1),
    ("tiny-4", "Valve V-7 feeds the cooling loop and Zoë Mbeki leads maintenance.", 0),
]

TINY_CHUNK_CONFIGS = """\
chunk_configs:
  - name: fixed-60-0
    chunker: fixed
    chunk_size: 60
  - name: recursive-120-20
    chunker: recursive
    chunk_size: 120
    chunk_overlap: 20
"""

TINY_PROFILES = """\
profiles:
  - name: top2
    top_k: 2
  - name: top4
    top_k: 4
"""


def write_tiny_project(root: Path) -> Path:
    """A small project folder laid out like the real one: data/corpus, config files, golden dataset."""
    corpus = root / "data" / "corpus"
    for rel, text in TINY_DOCS.items():
        path = corpus / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    (root / "data" / "chunk_configs.yaml").write_text(TINY_CHUNK_CONFIGS, encoding="utf-8")
    (root / "data" / "retrieval_profiles.yaml").write_text(TINY_PROFILES, encoding="utf-8")
    lines = []
    for qid, query, excerpts in TINY_QUESTIONS:
        spans = []
        for doc_id, excerpt in excerpts:
            start = TINY_DOCS[doc_id].index(excerpt)
            spans.append({"doc_id": doc_id, "start": start, "end": start + len(excerpt), "text": excerpt})
        lines.append(
            json.dumps(
                {
                    "inputs": {"query": query},
                    "outputs": {
                        "relevant_spans": spans,
                        "reference_answer": TINY_ANSWERS[qid][0],
                        "expected_keywords": TINY_ANSWERS[qid][1],
                    },
                    "metadata": {"question_id": qid},
                },
                ensure_ascii=False,
            )
        )
    dataset = root / "data" / "datasets" / "golden_token_level.jsonl"
    dataset.parent.mkdir(parents=True, exist_ok=True)
    dataset.write_text("\n".join(lines) + "\n", encoding="utf-8")
    labels = [
        json.dumps({"question_id": q, "answer": a, "correct": c}, ensure_ascii=False)
        for q, a, c in TINY_LABELS
    ]
    (dataset.parent / "golden_answer_labels.jsonl").write_text("\n".join(labels) + "\n", encoding="utf-8")
    shutil.copy(REPO / "dagster.yaml", root / "dagster.yaml")
    return root


@pytest.fixture
def tiny_project(tmp_path: Path) -> Path:
    return write_tiny_project(tmp_path / "project")


def tiny_resources(project: Path, work: Path) -> dict[str, object]:
    """Resources that keep every file of a test run under tmp: inputs, cache, Qdrant, warehouse."""
    from rag_eval_pipeline.lib.evaluation_runs import EvaluationModeResource
    from rag_eval_pipeline.lib.io_managers import ParquetIOManagerFactory, WarehouseResource
    from rag_eval_pipeline.lib.resources import (
        EmbedderResource,
        LangSmithResource,
        LLMResource,
        ProjectResource,
        QdrantResource,
    )

    return {
        "project": ProjectResource(root=str(project)),
        "embedder": EmbedderResource(cache_path=str(work / "cache" / "embeddings.sqlite")),
        "qdrant": QdrantResource(local_path=str(work / "qdrant")),
        "io_manager": ParquetIOManagerFactory(base_dir=str(work / "warehouse")),
        "warehouse": WarehouseResource(base_dir=str(work / "warehouse")),
        "llm": LLMResource(cache_path=str(work / "cache" / "llm_responses.sqlite")),
        "langsmith": LangSmithResource(),
        "evaluation": EvaluationModeResource(),
    }


@pytest.fixture(scope="session")
def minilm() -> object:
    """The real MiniLM embedder, loaded once per test session (about 10 s)."""
    from rag_eval_pipeline.core.embedding.local import SentenceTransformerEmbedder

    return SentenceTransformerEmbedder()


def tiny_corpus() -> object:
    from rag_eval_pipeline.core.corpus import Corpus
    from rag_eval_pipeline.core.types import Document, DocumentId

    return Corpus(tuple(Document(DocumentId(k), v, k.split("/")[0]) for k, v in TINY_DOCS.items()))


def latest_metadata(instance: object, asset: str, partition: str | None = None) -> dict:
    """The metadata values of an asset's (partition's) latest materialization on ``instance``."""
    import dagster as dg

    assert isinstance(instance, dg.DagsterInstance)
    records = instance.fetch_materializations(
        dg.AssetRecordsFilter(
            asset_key=dg.AssetKey(asset), asset_partitions=[partition] if partition else None
        ),
        limit=1,
    ).records
    assert records and records[0].asset_materialization is not None
    return {k: v.value for k, v in records[0].asset_materialization.metadata.items()}
