from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import langsmith
import pytest

from rag_eval_pipeline.core.chunking import FixedSizeChunker, chunk_corpus
from rag_eval_pipeline.core.corpus.corpus import Corpus
from rag_eval_pipeline.core.langsmith import LangSmithSettings
from rag_eval_pipeline.core.questions.datasets import (
    ChunkLevelDataset,
    TokenLevelDataset,
    read_token_level_jsonl,
)
from rag_eval_pipeline_tests.langsmith_server import API_KEY, LangSmithState, langsmith_server


@pytest.fixture(params=[True, False], ids=["multipart-examples", "legacy-examples"])
def server(request: pytest.FixtureRequest) -> Iterator[tuple[str, LangSmithState]]:
    """Both example protocols the SDK speaks, chosen by the server's /info flags."""
    with langsmith_server(multipart_examples=request.param) as pair:
        yield pair


@pytest.fixture
def state(server: tuple[str, LangSmithState]) -> LangSmithState:
    return server[1]


@pytest.fixture
def settings(server: tuple[str, LangSmithState]) -> LangSmithSettings:
    return LangSmithSettings(api_key=API_KEY, api_url=server[0], timeout_s=2.0, max_retries=1)


@pytest.fixture
def client(settings: LangSmithSettings) -> Iterator[langsmith.Client]:
    client = settings.client()
    yield client
    client.close()


@pytest.fixture
def corpus(tiny_project: Path) -> Corpus:
    return Corpus.from_folder(tiny_project / "data" / "corpus")


@pytest.fixture
def token_dataset(tiny_project: Path, corpus: Corpus) -> TokenLevelDataset:
    return read_token_level_jsonl(tiny_project / "data" / "datasets" / "golden_token_level.jsonl", corpus)


@pytest.fixture
def chunk_dataset(token_dataset: TokenLevelDataset, corpus: Corpus) -> ChunkLevelDataset:
    chunker = FixedSizeChunker(40, 0)
    return token_dataset.to_chunk_level(chunk_corpus(chunker, corpus), chunker.fingerprint)
