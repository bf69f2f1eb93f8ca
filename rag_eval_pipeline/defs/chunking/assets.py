"""Chunk sets and their vector indexes, one partition per chunk config."""

from pathlib import Path

import dagster as dg
import pandas as pd

from ...core.chunking import ChunkSet, build_chunker
from ...core.chunking.reuse import KnownChunks, cut_reusing, known_chunks
from ...core.chunking.tokenization import cl100k_tokenizer
from ...core.embedding.base import Embedder
from ...core.errors import StorageError
from ...core.evaluation.costs import folder_bytes
from ...core.evaluation.document_scope import DocumentScope
from ...core.retrieval.indexes import build_indexes
from ...core.tables import chunks_from_frame, chunks_to_frame, corpus_from_frame
from ...core.types import sha256_hex
from ...lib.freshness import READS_CHUNK_CONFIG
from ...lib.io_managers import WarehouseResource
from ...lib.partitions import CHUNK_CONFIG, chunk_config_partitions
from ...lib.provenance import content_version, with_columns
from ...lib.resources import EmbedderResource, ProjectResource, QdrantResource
from ...lib.step_failures import bad_input_failure, input_errors_fail_the_step
from ...lib.step_inputs import chunk_config_for
from ...lib.step_progress import announce_for, progress_for
from ...lib.step_redaction import redacts_secrets


@dg.asset(
    group_name="chunking",
    partitions_def=chunk_config_partitions,
    kinds={"python", "parquet"},
    deps=READS_CHUNK_CONFIG,
)
@redacts_secrets
def chunks(
    context: dg.AssetExecutionContext,
    project: ProjectResource,
    embedder: EmbedderResource,
    warehouse: WarehouseResource,
    corpus: pd.DataFrame,
) -> dg.MaterializeResult[pd.DataFrame]:
    """The corpus cut by one chunk config (or the documents it is applied to: ``documents``), every
    chunk with its exact character offsets (step 1 of an evaluation, ``cut_corpus``, as the notebook API
    runs it). A document cut before by the same chunker and not changed since keeps its chunks: only
    the others are cut (``documents_cut``, ``documents_reused``)."""
    config = chunk_config_for(project, context.partition_key)
    scope = DocumentScope.of(config)
    loaded = corpus_from_frame(corpus)
    missing = scope.missing(loaded)
    documents = scope.corpus(loaded)
    if missing:
        context.log.warning(
            f"{config.name}: documents {', '.join(missing)} of its documents list are not in the corpus "
            f"(deleted or renamed): remove them from {project.chunk_configs_file}"
        )
    if not len(documents):
        raise bad_input_failure(
            f"{config.name} applies to documents none of which is in the corpus ({', '.join(missing)}): "
            f"fix its documents list in {project.chunk_configs_file}"
        )
    semantic_embedder: Embedder | None = (
        embedder.get(progress_for(context), announce_for(context)) if config.chunker == "semantic" else None
    )
    with input_errors_fail_the_step():  # a tokenizer.json path that names no file
        chunker = build_chunker(config, embedder=semantic_embedder, root=Path(project.root))
    try:
        known = previous_chunks(warehouse, config.name, chunker.fingerprint)
    except StorageError as exc:  # a damaged current file: nothing to reuse, every document is cut again
        context.log.warning(f"chunks: cannot read {exc.path} ({exc.reason}): every document is cut again")
        known = {}
    incremental = cut_reusing(chunker, documents, known)
    cut = incremental.chunks
    sizes = pd.Series([c.end - c.start for c in cut], dtype="float64")
    sha_of = {d.doc_id: d.sha256 for d in documents}
    frame = with_columns(
        chunks_to_frame(cut),
        chunk_config=config.name,
        chunk_config_hash=config.config_hash,
        chunker_fingerprint=chunker.fingerprint,
        corpus_sha256=loaded.sha256,
    )
    frame["doc_sha256"] = [sha_of[c.doc_id] for c in cut]
    context.log.info(
        f"{config.name}: {len(cut)} chunks from {len(documents)} documents"
        + ("" if scope.is_whole_corpus else f" of {len(loaded)} (the documents it applies to)")
        + f"; {len(incremental.cut)} cut, {len(incremental.reused)} unchanged since they were last cut"
    )
    return dg.MaterializeResult(
        value=frame,
        metadata={
            "n_chunks": len(cut),
            "n_documents": len(documents),
            "documents_cut": len(incremental.cut),
            "documents_reused": len(incremental.reused),
            "document_scope": scope.describe(),
            "mean_chunk_chars": float(sizes.mean()) if len(sizes) else 0.0,
            "max_chunk_chars": int(sizes.max()) if len(sizes) else 0,
            "chunker": chunker.fingerprint,
            "chunk_config_hash": config.config_hash,
        },
        data_version=dg.DataVersion(sha256_hex(f"{documents.sha256}:{config.config_hash}")[:16]),
    )


def previous_chunks(
    warehouse: WarehouseResource, chunk_config: str, fingerprint: str
) -> dict[str, KnownChunks]:
    """The chunks this partition stored last time, per document, when the same chunker cut them (tables
    written before chunks recorded their document's hash give none)."""
    stored = warehouse.layout().read_current("chunks", {CHUNK_CONFIG: chunk_config})
    if stored is None or stored.empty or not {"doc_sha256", "chunker_fingerprint"} <= set(stored.columns):
        return {}
    stored = stored[stored["chunker_fingerprint"] == fingerprint]
    hashes = dict(zip(stored["doc_id"].astype(str), stored["doc_sha256"].astype(str), strict=True))
    return known_chunks(chunks_from_frame(stored), hashes)


@dg.asset(group_name="chunking", partitions_def=chunk_config_partitions, kinds={"qdrant", "bm25", "parquet"})
@redacts_secrets
def chunk_index(
    context: dg.AssetExecutionContext,
    project: ProjectResource,
    embedder: EmbedderResource,
    qdrant: QdrantResource,
    chunks: pd.DataFrame,
) -> dg.MaterializeResult[pd.DataFrame]:
    """A Qdrant collection holding exactly this chunk set (embeddings come from the on-disk cache), and
    its BM25 index, rebuilt only when the chunks changed (step 2, ``build_indexes``, as the notebook API
    runs it)."""
    progress = progress_for(context)
    model = embedder.get(progress, announce_for(context))
    store = qdrant.get(progress, context.log)
    chunk_config = context.partition_key
    folder = project.keyword_index_folder(chunk_config)
    indexes = build_indexes(
        ChunkSet(chunk_config, tuple(chunks_from_frame(chunks))),
        model,
        store,
        keyword_folder=folder,
        progress=progress,
    )
    collection, embedding = indexes.collection, indexes.embedding
    n_points = len(chunks) if indexes.dense is not None else 0  # what the collection holds
    context.log.info(
        f"{collection}: {n_points} points at {store.location} "
        + (f"updated, {indexes.n_points} written" if indexes.dense_built else "unchanged, reused")
        + f"; embedded {embedding.texts_embedded} new "
        f"texts, {embedding.cache_hits} from the cache; keyword index {folder} "
        + ("built" if indexes.keyword_built else "unchanged, reused")
    )
    manifest = pd.DataFrame(
        {
            "chunk_config": [chunk_config],
            "chunk_config_hash": [chunks["chunk_config_hash"].iloc[0] if len(chunks) else ""],
            "collection": [collection],
            "location": [store.location],
            "embedder_model_id": [model.model_id],
            "n_points": [n_points],
            "texts_embedded": [embedding.texts_embedded],
            "cache_hits": [embedding.cache_hits],
            "keyword_index": [str(folder)],
            "keyword_index_fingerprint": [indexes.keyword_fingerprint],
            # what the indexes cost (core/evaluation/costs.py): the vectors' dimension, the BM25 folder's bytes and
            # the chunk texts' cl100k tokens (what embedding them through an API costs)
            "dimension": [model.dimension],
            "keyword_index_bytes": [folder_bytes(folder)],
            "chunk_tokens": [sum(cl100k_tokenizer().count_tokens(list(chunks["text"])))],
        }
    )
    return dg.MaterializeResult(
        value=manifest,
        metadata={
            "collection": collection,
            "n_points": n_points,
            "points_written": indexes.n_points,
            "collection_rebuilt": indexes.dense_built,
            "texts_embedded": embedding.texts_embedded,
            "embedding_cache_hits": embedding.cache_hits,
            "embedder": model.model_id,
            "keyword_index": dg.MetadataValue.path(str(folder)),
            "keyword_index_rebuilt": indexes.keyword_built,
            "keyword_index_bytes": int(manifest["keyword_index_bytes"].iloc[0]),
            "chunk_tokens": int(manifest["chunk_tokens"].iloc[0]),
        },
        data_version=content_version(manifest),
    )
