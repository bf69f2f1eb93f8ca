"""What the per-definition tests share: the tiny project's inputs as the upstream assets would hand them
over (each made by its own asset, run with frames), and resources whose embedder is the hashing
bag-of-words model (the real MiniLM takes about 10 s to load; the slow tests use it)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import pytest

from rag_eval_pipeline.core.embedding.base import Embedder
from rag_eval_pipeline.core.tables import corpus_to_frame, retrieved_to_frame
from rag_eval_pipeline.core.types import ChunkId, DocumentId, QuestionId, RetrievedChunk
from rag_eval_pipeline.defs.chunking.assets import chunk_index, chunks
from rag_eval_pipeline.defs.ingestion.assets import eval_questions
from rag_eval_pipeline.defs.questions.assets import synthetic_questions
from rag_eval_pipeline.lib.resources import EmbedderResource
from rag_eval_pipeline_tests.conftest import tiny_corpus, tiny_resources, write_tiny_project
from rag_eval_pipeline_tests.defs.frames import run_with_frames
from rag_eval_pipeline_tests.fakes import HashingEmbedder

CHUNK_CONFIG = "fixed-60-0"


class HashingEmbedderResource(EmbedderResource):
    """The embedder resource (its on-disk cache included) over the hashing model."""

    def model(self) -> Embedder:
        return HashingEmbedder()


def hashing_resources(project: Path, work: Path) -> dict[str, object]:
    """The tiny project's resources, every file under ``work``, with the hashing embedder."""
    return {
        **tiny_resources(project, work),
        "embedder": HashingEmbedderResource(cache_path=str(work / "cache" / "embeddings.sqlite")),
    }


@dataclass(frozen=True)
class Upstream:
    """The frames an evaluation partition reads, each made by its asset for the tiny project."""

    resources: dict[str, object]
    corpus: pd.DataFrame
    chunks: pd.DataFrame
    eval_questions: pd.DataFrame
    chunk_index: pd.DataFrame


@pytest.fixture(scope="session")
def tiny_frames(tmp_path_factory: pytest.TempPathFactory) -> dict[str, pd.DataFrame]:
    """corpus, chunks[fixed-60-0] and eval_questions (the golden set) of the tiny project, each made by
    its asset once per session: they hold no path, so every test can take them as they are."""
    work = tmp_path_factory.mktemp("tiny_frames")
    resources = hashing_resources(write_tiny_project(work / "project"), work)
    corpus = corpus_to_frame(tiny_corpus())
    cut, _ = run_with_frames(chunks, {"corpus": corpus}, resources, {"chunk_config": CHUNK_CONFIG})
    synthetic, _ = run_with_frames(synthetic_questions, {"corpus": corpus}, resources)
    questions, _ = run_with_frames(
        eval_questions, {"corpus": corpus, "synthetic_questions": synthetic}, resources
    )
    return {"corpus": corpus, "chunks": cut, "eval_questions": questions}


@pytest.fixture
def upstream(tiny_project: Path, tmp_path: Path, tiny_frames: dict[str, pd.DataFrame]) -> Upstream:
    """The session's frames (copies) and chunk_index[fixed-60-0] built by its asset for this test:
    embedded Qdrant and the BM25 folder under tmp_path."""
    resources = hashing_resources(tiny_project, tmp_path)
    cut = tiny_frames["chunks"].copy()
    manifest, _ = run_with_frames(chunk_index, {"chunks": cut}, resources, {"chunk_config": CHUNK_CONFIG})
    return Upstream(
        resources, tiny_frames["corpus"].copy(), cut, tiny_frames["eval_questions"].copy(), manifest
    )


def chunk_holding(cut: pd.DataFrame, text: str) -> str:
    """The id of the first chunk whose text holds ``text``."""
    return str(cut.loc[cut["text"].str.contains(text, regex=False), "chunk_id"].iloc[0])


def scripted_results(cut: pd.DataFrame, picks: Mapping[str, Sequence[str]]) -> pd.DataFrame:
    """A retrieval_results table in which each question found the chunks named, in that order (a
    question left out found nothing), with the provenance the later steps read."""
    by_id = cut.set_index("chunk_id")
    hits = {
        QuestionId(qid): [
            RetrievedChunk(
                QuestionId(qid),
                rank,
                ChunkId(chunk_id),
                DocumentId(str(by_id.loc[chunk_id, "doc_id"])),
                int(by_id.loc[chunk_id, "start"]),
                int(by_id.loc[chunk_id, "end"]),
                1 / rank,
                str(by_id.loc[chunk_id, "text"]),
            )
            for rank, chunk_id in enumerate(chunk_ids, start=1)
        ]
        for qid, chunk_ids in picks.items()
    }
    return retrieved_to_frame(hits).assign(run_id="retrieval-run", collection="scripted")
