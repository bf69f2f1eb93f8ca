"""A full or read-only file system for the disk-fault tests, made in a private mount namespace
(`unshare --mount --propagation private`, then a small tmpfs) so nothing leaks to the machine, and gone
when the namespace's last process ends. Tests run as root here, so chmod cannot make a folder read-only:
a tmpfs remounted `ro` can.

``python -m rag_eval_pipeline_tests.faults.disk FOLDER`` (inside such a namespace) puts a tmpfs on FOLDER,
writes a first version with every writer of the project, then tries a second version on a full disk and
on a read-only one, and prints what each writer raised, what it left behind and whether the first
version survived, as JSON.
"""

from __future__ import annotations

import errno
import gc
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

UNSHARE = ("unshare", "--mount", "--propagation", "private")


def require_private_mounts() -> None:
    """Skips the test where a private mount namespace with a tmpfs cannot be made (no unshare, no
    permission), unless CI is set: there that is a failure, so CI cannot pass by skipping."""
    reason = _private_mount_problem()
    if reason is None:
        return
    if os.environ.get("CI"):
        pytest.fail(f"the disk-fault tests need a private mount namespace with a tmpfs in CI: {reason}")
    pytest.skip(f"no private mount namespace with a tmpfs here ({reason}); set CI=1 to make this a failure")


def _private_mount_problem() -> str | None:
    if shutil.which("unshare") is None or shutil.which("mount") is None:
        return "unshare or mount is not installed (util-linux)"
    with tempfile.TemporaryDirectory() as folder:
        probe = subprocess.run(
            [*UNSHARE, "mount", "-t", "tmpfs", "-o", "size=16k", "tmpfs", folder],
            capture_output=True,
            text=True,
            timeout=30,
        )
    if probe.returncode != 0:
        return f"`unshare --mount ... mount -t tmpfs` failed: {probe.stderr.strip() or probe.returncode}"
    return None


def in_private_namespace(
    script: str, args: Sequence[str] = (), env: Mapping[str, str] | None = None, timeout: float = 300
) -> subprocess.CompletedProcess[str]:
    """``sh -c script sh ARGS...`` in a new private mount namespace: its mounts vanish with it."""
    return subprocess.run(
        [*UNSHARE, "sh", "-euc", script, "sh", *args],
        env=dict(env) if env is not None else None,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


# ---------------------------------------------------------------------------------------------------
# Every writer of the project, each writing version 1 or 2 of its file(s) under a folder.

Writer = Callable[[Path, int], None]
Reader = Callable[[Path], object]


def _text(folder: Path, version: int) -> None:
    from rag_eval_pipeline.core.store.files import write_text_atomically

    write_text_atomically(folder / "report.html", f"v{version} " + "x" * 30_000 * version)


def _read_text(folder: Path) -> object:
    return (folder / "report.html").read_text(encoding="utf-8")[:3]


def _dataset(version: int) -> Any:
    from rag_eval_pipeline.core.questions.datasets import ChunkLevelDataset, ChunkLevelExample
    from rag_eval_pipeline.core.types import ChunkId, QuestionId

    examples = tuple(
        ChunkLevelExample(QuestionId(f"q{i}"), f"v{version} question {i} " + "x" * 200, (ChunkId("c1"),))
        for i in range(100 * version)
    )
    return ChunkLevelDataset(examples, "fingerprint")


def _jsonl(folder: Path, version: int) -> None:
    from rag_eval_pipeline.core.questions.datasets import write_jsonl

    write_jsonl(_dataset(version), folder / "datasets" / "current.jsonl")


def _read_jsonl(folder: Path) -> object:
    from rag_eval_pipeline.core.questions.datasets import read_chunk_level_jsonl

    return len(read_chunk_level_jsonl(folder / "datasets" / "current.jsonl"))


def _parquet(folder: Path, version: int) -> None:
    import pandas as pd

    from rag_eval_pipeline.core.store.warehouse import Warehouse

    rows = 5_000 * version
    frame = pd.DataFrame({"version": [version] * rows, "row": [f"row {i}" for i in range(rows)]})
    Warehouse(folder).write_table(frame, "table", {}, f"run-{version}")


def _read_parquet(folder: Path) -> object:
    from rag_eval_pipeline.core.store.warehouse import Warehouse

    warehouse = Warehouse(folder)
    current = warehouse.read_current("table")
    version = int(current["version"].iloc[0]) if current is not None else None
    return version, [p.name for p in warehouse.history_files("table")]


def _table_file(folder: Path) -> Path:
    from rag_eval_pipeline.core.store.warehouse import Warehouse

    return Warehouse(folder).current_path("table")


def _chunks(version: int) -> list[Any]:
    from rag_eval_pipeline.core.types import ChunkId, DocumentId, PositionAwareChunk

    texts = [f"version {version} passage {i} about disks and files " * 4 for i in range(20 * version**3)]
    return [PositionAwareChunk(ChunkId(f"c{i}"), DocumentId("d"), 0, len(t), t) for i, t in enumerate(texts)]


def _bm25(folder: Path, version: int) -> None:
    from rag_eval_pipeline.core.retrieval.keyword import KeywordIndex

    KeywordIndex.build(_chunks(version)).save(folder / "bm25" / "fixed")


def _read_bm25(folder: Path) -> object:
    from rag_eval_pipeline.core.retrieval.keyword import KeywordIndex

    return len(KeywordIndex.load(folder / "bm25" / "fixed").chunks)


def _embedding_cache(folder: Path, version: int) -> None:
    import numpy as np

    from rag_eval_pipeline.core.embedding.cache import EmbeddingCache

    cache = EmbeddingCache(folder / "cache" / "embeddings.sqlite")
    try:
        n = 50 * version**3
        cache.put_many("model", [f"v{version}-{i}" for i in range(n)], np.ones((n, 384), dtype=np.float32))
    finally:
        cache.close()


def _read_embedding_cache(folder: Path) -> object:
    from rag_eval_pipeline.core.embedding.cache import EmbeddingCache

    cache = EmbeddingCache(folder / "cache" / "embeddings.sqlite")
    try:
        return cache.count()
    finally:
        cache.close()


def _qdrant(folder: Path, version: int) -> None:
    import numpy as np

    from rag_eval_pipeline.core.vector_store.qdrant import QdrantVectorStore

    chunks = _chunks(version)
    vectors = np.ones((len(chunks), 384), dtype=np.float32)
    QdrantVectorStore(path=folder / "qdrant").replace_collection("collection", chunks, vectors, "fixed")


def _qdrant_edge(folder: Path, version: int) -> None:
    import numpy as np

    from rag_eval_pipeline.core.vector_store.edge import EdgeVectorStore

    chunks = _chunks(version)
    vectors = np.full((len(chunks), 384), float(version), dtype=np.float32)
    EdgeVectorStore(folder / "qdrant").replace_collection(
        "collection", chunks, vectors, "fixed", f"v{version}"
    )


WRITERS: dict[str, tuple[Writer, Reader | None, Callable[[Path], Path]]] = {
    # name: (writer, reader of what must survive a failed second version, the path the error names)
    "text": (_text, _read_text, lambda folder: folder / "report.html"),
    "jsonl": (_jsonl, _read_jsonl, lambda folder: folder / "datasets" / "current.jsonl"),
    "parquet": (_parquet, _read_parquet, _table_file),  # the current file: the first of the pair
    "bm25": (_bm25, _read_bm25, lambda folder: folder / "bm25" / "fixed"),
    "embedding_cache": (
        _embedding_cache,
        _read_embedding_cache,
        lambda folder: folder / "cache" / "embeddings.sqlite",
    ),
    # replace_collection drops the old collection first: the embedding cache is what survives
    "qdrant": (_qdrant, None, lambda folder: folder / "qdrant" / "collection"),
    # the embedded default (qdrant-edge): an update cut short leaves no fingerprint, so it is redone
    "qdrant_edge": (_qdrant_edge, None, lambda folder: folder / "qdrant" / "collection"),
}


def leftovers(folder: Path) -> list[str]:
    """Temporary files and staging or retired folders under ``folder``."""
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.name.endswith((".tmp", ".old")))


def _attempt(folder: Path, writer: Writer) -> dict[str, Any]:
    try:
        writer(folder, 2)
    except Exception as exc:
        return {"raised": type(exc).__name__, "message": str(exc), "leftovers": leftovers(folder)}
    return {"raised": None, "message": "", "leftovers": leftovers(folder)}


def _intact(folder: Path, reader: Reader | None, before: object) -> bool | str | None:
    if reader is None:
        return None
    try:
        return reader(folder) == before
    except Exception as exc:
        return f"unreadable: {type(exc).__name__}: {exc}"


def _fill(folder: Path) -> None:
    """Use up every free byte of the file system of ``folder``."""
    with open(folder / "filler", "wb", buffering=0) as filler:
        try:
            while filler.write(b"\0" * 4096):
                pass
        except OSError as exc:
            if exc.errno != errno.ENOSPC:
                raise
    os.sync()


def main(folder: Path) -> dict[str, dict[str, Any]]:
    """Version 1 of every writer's files, then version 2 on a full disk, then on a read-only one; after
    each, whether version 1 is still there whole (read once the disk has room again)."""
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(folder)], check=True)
    firsts: dict[str, object] = {}
    for name, (writer, reader, _) in WRITERS.items():
        writer(folder / name, 1)
        firsts[name] = reader(folder / name) if reader is not None else None
    results: dict[str, dict[str, Any]] = {}
    _fill(folder)
    for name, (writer, _, _) in WRITERS.items():
        results[f"full/{name}"] = _attempt(folder / name, writer)
    (folder / "filler").unlink()
    for name, (_, reader, _) in WRITERS.items():
        results[f"full/{name}"]["intact"] = _intact(folder / name, reader, firsts[name])
    gc.collect()  # the failed writers' clients: a remount waits for no file open for writing
    subprocess.run(["mount", "-o", "remount,ro", str(folder)], check=True)
    for name, (writer, _, _) in WRITERS.items():
        results[f"read-only/{name}"] = _attempt(folder / name, writer)
    subprocess.run(["mount", "-o", "remount,rw", str(folder)], check=True)
    for name, (_, reader, _) in WRITERS.items():
        results[f"read-only/{name}"]["intact"] = _intact(folder / name, reader, firsts[name])
    return results


if __name__ == "__main__":
    print(json.dumps(main(Path(sys.argv[1]))))
