"""Synthetic evaluation datasets: token-level (chunker-independent) and chunk-level per chunk config.

Each is a Parquet table of every generated question, accepted or rejected with its reason, plus the
accepted ones as a JSONL dataset in the warehouse (and in LangSmith when configured).
"""

import json
from collections.abc import Sequence
from pathlib import Path
from typing import get_args

import dagster as dg
import pandas as pd

from ...core.corpus.corpus import Corpus
from ...core.generation.regeneration import GENERATED_RUN_ID, KeptQuestions, questions_to_keep, with_kept_rows
from ...core.generation.settings import GenerationSettings, OfflineGenerator
from ...core.generation.synthesis import Synthesized, synthesize_chunk_level, synthesize_token_level
from ...core.llm.client import LLMClient
from ...core.questions.datasets import TokenLevelDataset
from ...core.runs.run_tags import COMMAND_TAG, REGENERATE_COMMAND
from ...core.settings.configs import ChunkConfig
from ...core.tables import (
    chunk_questions_to_frame,
    chunks_from_frame,
    corpus_from_frame,
    generated_token_level_to_frame,
)
from ...lib.evaluation_runs import documents_to_regenerate, superseded_runs
from ...lib.freshness import READS_PROJECT_SETTINGS
from ...lib.io_managers import WarehouseResource
from ...lib.langsmith_sync import upload
from ...lib.partitions import CHUNK_CONFIG, chunk_config_partitions
from ...lib.provenance import now_utc, with_columns
from ...lib.question_sources import question_sources_for
from ...lib.resources import EmbedderResource, LangSmithResource, LLMResource, ProjectResource
from ...lib.step_failures import bad_input_failure, input_errors_fail_the_step
from ...lib.step_inputs import LLM_POOL, chunk_config_for, step_settings
from ...lib.step_progress import announce_for, progress_for
from ...lib.step_redaction import redacts_secrets


def llm_client(llm: LLMResource, settings: GenerationSettings, generator: str) -> LLMClient | None:
    if generator in get_args(OfflineGenerator):
        return None
    with input_errors_fail_the_step():
        return llm.client(settings.llm)


def generation_metadata(
    synthesized: Synthesized, client: LLMClient | None, jsonl: str
) -> "dict[str, dg.RawMetadataValue]":
    metadata: dict[str, dg.RawMetadataValue] = {
        "n_questions": len(synthesized.dataset),
        "n_rejected": len(synthesized.rejections),
        "rejected_by_reason": dg.MetadataValue.json(synthesized.rejected_by_reason),
        "removed_by_filter": dg.MetadataValue.json(synthesized.removed_by_filter),
        "filters": synthesized.describe_filters(),
        "generator": synthesized.generator,
        "model": client.model_id if client else "none",
        "dataset_sha256": synthesized.dataset.sha256,
        "jsonl": dg.MetadataValue.path(jsonl),
    }
    if client is not None:
        metadata.update(client.usage_snapshot().as_metadata())
    if synthesized.estimate is not None:
        metadata["llm_estimate"] = synthesized.estimate.describe()
    if synthesized.count is not None:  # how many were asked for and why, before the filters
        metadata.update(synthesized.count.as_metadata())
    return metadata


# The column types of a generated synthetic_questions table other than text ("str").
GENERATED_TYPES = {
    "created_at": "datetime64[us, UTC]",
    "n_documents": "int64",
    "relevant_spans": "object",
    "reference_answer": "object",
    "expected_keywords": "object",
    "source_doc_ids": "object",
}


def skipped_synthetic_questions(
    context: dg.AssetExecutionContext, settings: GenerationSettings, reason: str
) -> dg.MaterializeResult[pd.DataFrame]:
    """The table with no row (the columns and types of a generated one), and why, as metadata."""
    empty = TokenLevelDataset((), name="synthetic")
    generated = with_columns(
        generated_token_level_to_frame(empty, ()),
        run_id=context.run.run_id,
        created_at=now_utc(),
        generator=settings.token_level.generator,
        corpus_sha256="",
    )
    columns = [*map(str, generated.columns), GENERATED_RUN_ID]
    # a column built from no value is float64: give each the type it has in a generated table
    frame = pd.DataFrame({name: pd.Series([], dtype=GENERATED_TYPES.get(name, "str")) for name in columns})
    context.log.info(f"synthetic_questions {reason}")
    return dg.MaterializeResult(
        value=frame,
        metadata={
            "skipped": True,
            "skip_reason": reason,
            "n_questions": 0,
            "n_rejected": 0,
            "rejected_by_reason": dg.MetadataValue.json({}),
            "removed_by_filter": dg.MetadataValue.json({}),
            "generator": settings.token_level.generator,
            "model": "none",
        },
        data_version=dg.DataVersion(f"skipped-{empty.sha256[:16]}"),
    )


@dg.asset(group_name="questions", kinds={"python", "parquet"}, pool=LLM_POOL, deps=READS_PROJECT_SETTINGS)
@redacts_secrets
def synthetic_questions(
    context: dg.AssetExecutionContext,
    project: ProjectResource,
    embedder: EmbedderResource,
    llm: LLMResource,
    langsmith: LangSmithResource,
    warehouse: WarehouseResource,
    corpus: pd.DataFrame,
) -> dg.MaterializeResult[pd.DataFrame]:
    """Token-level questions generated from the corpus (data/generation.yaml, token_level), de-duplicated
    and checked for retrievability; rejected ones are kept as rows with their reason. Computed only when
    the evaluation uses it (core/generation/sources.py) or `rag-eval regenerate-questions` asks for it;
    otherwise an empty table whose metadata says why (no embedding, no LLM call). A regenerate run tagged
    with documents (`--document`) makes those documents' questions and keeps the others' as they were
    (core/generation/regeneration.py)."""
    settings = step_settings(project, GenerationSettings)
    if context.run.tags.get(COMMAND_TAG) != REGENERATE_COMMAND:  # regenerating makes them whatever is used
        unused = question_sources_for(project, settings).synthetic_unused()
        if unused:
            return skipped_synthetic_questions(context, settings, unused)
    loaded = corpus_from_frame(corpus, root=str(project.corpus_folder()))
    with input_errors_fail_the_step():
        documents = documents_to_regenerate(context.run.tags)
    kept = questions_kept_by(warehouse, loaded, documents) if documents is not None else None
    progress = progress_for(context)
    client = llm_client(llm, settings, settings.token_level.generator)
    with input_errors_fail_the_step():  # the budget cap, or a generator that needs an LLM nobody configured
        synthesized = synthesize_token_level(
            loaded,
            settings.token_level,
            embedder.get(progress, announce_for(context)),
            client,
            settings.llm,
            progress,
            documents=documents,
            kept=kept.examples if kept is not None else (),
            probe_configs=probe_configs(project, settings),
            root=Path(project.root),
        )
    jsonl = warehouse.write_dataset(
        synthesized.dataset,
        "synthetic_questions",
        {},
        context.run.run_id,
        superseded_runs(context.instance, context.run),
    )
    frame = with_columns(
        generated_token_level_to_frame(synthesized.dataset, synthesized.rejections),
        run_id=context.run.run_id,
        created_at=now_utc(),
        generator=synthesized.generator,
        corpus_sha256=loaded.sha256,
    )
    frame = with_kept_rows(frame, kept, context.run.run_id) if kept is not None else frame
    frame[GENERATED_RUN_ID] = frame.get(GENERATED_RUN_ID, context.run.run_id)
    generated = len(synthesized.generated or ()) if kept is not None else len(synthesized.dataset)
    if synthesized.count is not None:
        context.log.info(f"asked for {synthesized.count.describe()}")
    context.log.info(
        f"{len(synthesized.dataset)} synthetic questions ({synthesized.generator}); rejected: "
        f"{json.dumps(synthesized.rejected_by_reason)}; removed by: {synthesized.describe_filters()}"
        + (
            f"; regenerated {len(documents or ())} document(s): {generated} new questions, "
            f"{len(kept.examples)} kept from the other documents"
            if kept is not None
            else ""
        )
    )
    tl = settings.token_level
    if tl.generator != "llm" and not len(synthesized.dataset) + len(synthesized.rejections):
        context.log.warning(
            f"no question made from {len(loaded)} documents: the {tl.generator} generator asks about "
            f"passages of {tl.passage_min_chars} to {tl.passage_max_chars} characters and found none; "
            "lower token_level.passage_min_chars in data/generation.yaml"
        )
    metadata = generation_metadata(synthesized, client, str(jsonl))
    metadata["regenerated_documents"] = (
        dg.MetadataValue.json(list(documents)) if documents is not None else "all"
    )
    metadata["questions_generated"] = generated
    metadata["questions_kept"] = len(kept.examples) if kept is not None else 0
    metadata.update(
        upload(langsmith, synthesized.dataset, settings.langsmith.dataset("synthetic"), context.log)
    )
    return dg.MaterializeResult(
        value=frame, metadata=metadata, data_version=dg.DataVersion(synthesized.dataset.sha256)
    )


def probe_configs(project: ProjectResource, settings: GenerationSettings) -> tuple[ChunkConfig, ...]:
    """The configured chunk configs, whose chunks the retrievability probe searches; none read when the
    probe is off (the chunk configs file is then not this step's input)."""
    if settings.token_level.retrievability_top_n == 0:
        return ()
    with input_errors_fail_the_step():
        return project.load_configs().chunk_configs


def questions_kept_by(
    warehouse: WarehouseResource, corpus: Corpus, documents: Sequence[str]
) -> KeptQuestions:
    """What a regeneration of ``documents`` keeps of the current table: the other documents' questions,
    still valid against the corpus; a bad-input failure when there is nothing to keep from or a document
    is not in the corpus."""
    unknown = [d for d in documents if d not in corpus]
    if unknown:
        raise bad_input_failure(
            f"cannot regenerate the questions of {', '.join(unknown)}: not a document of the corpus ("
            f"ids are paths relative to the corpus folder, e.g. {next(iter(corpus)).doc_id})"
        )
    previous = warehouse.layout().read_current("synthetic_questions")
    if previous is None or previous.empty or "status" not in previous.columns:
        raise bad_input_failure(
            "there are no synthetic questions to keep yet (none were generated, or the evaluation used the "
            "golden set only): generate them for every document first, `rag-eval regenerate-questions --all`"
        )
    with input_errors_fail_the_step():
        return questions_to_keep(previous, corpus, documents)


@dg.asset(
    group_name="questions",
    partitions_def=chunk_config_partitions,
    kinds={"python", "parquet"},
    pool=LLM_POOL,
    deps=READS_PROJECT_SETTINGS,
)
@redacts_secrets
def chunk_level_questions(
    context: dg.AssetExecutionContext,
    project: ProjectResource,
    embedder: EmbedderResource,
    llm: LLMResource,
    langsmith: LangSmithResource,
    warehouse: WarehouseResource,
    chunks: pd.DataFrame,
) -> dg.MaterializeResult[pd.DataFrame]:
    """Chunk-level questions for one chunk config (data/generation.yaml, chunk_level): ground truth is
    this config's chunk ids, with question type, keywords and source chunks in each example's metadata."""
    chunk_config = context.partition_key
    config = chunk_config_for(project, chunk_config)
    settings = step_settings(project, GenerationSettings)
    progress = progress_for(context)
    client = llm_client(llm, settings, settings.chunk_level.generator)
    if "chunker_fingerprint" not in chunks.columns or chunks.empty:
        raise dg.Failure(
            f"chunks[{chunk_config}] was stored before chunks recorded their chunker: re-materialize chunks "
            f"for {chunk_config} first"
        )
    fingerprint = str(chunks["chunker_fingerprint"].iloc[0])
    with input_errors_fail_the_step():
        synthesized = synthesize_chunk_level(
            chunks_from_frame(chunks),
            fingerprint,
            settings.chunk_level,
            embedder.get(progress, announce_for(context)),
            client,
            settings.llm,
            progress,
            name=f"chunk-level-{chunk_config}",
        )
    jsonl = warehouse.write_dataset(
        synthesized.dataset,
        "chunk_level_questions",
        {CHUNK_CONFIG: chunk_config},
        context.run.run_id,
        superseded_runs(context.instance, context.run),
    )
    frame = with_columns(
        chunk_questions_to_frame(synthesized.dataset, synthesized.rejections),
        run_id=context.run.run_id,
        created_at=now_utc(),
        chunk_config=chunk_config,
        chunk_config_hash=config.config_hash,
        generator=synthesized.generator,
    )
    context.log.info(
        f"{chunk_config}: {len(synthesized.dataset)} chunk-level questions ({synthesized.generator})"
    )
    metadata = generation_metadata(synthesized, client, str(jsonl))
    name = settings.langsmith.dataset(f"chunk-level-{chunk_config}")
    metadata.update(upload(langsmith, synthesized.dataset, name, context.log))
    return dg.MaterializeResult(
        value=frame, metadata=metadata, data_version=dg.DataVersion(synthesized.dataset.sha256)
    )
