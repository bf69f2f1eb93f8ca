"""Retrieval and its metrics per chunk config x retrieval profile."""

from collections.abc import Mapping, Sequence

import dagster as dg
import pandas as pd

from ...core.chunking import ChunkSet
from ...core.embedding.cache import CachedEmbedder
from ...core.evaluation.comparability import question_set
from ...core.evaluation.costs import INDEX_COLUMNS, index_columns, latency_percentiles, question_costs
from ...core.evaluation.evaluation import token_level_result
from ...core.generation.settings import GenerationSettings
from ...core.generation.sources import question_generators
from ...core.langsmith.experiments import ExperimentRow
from ...core.metrics.aggregate import MetricSummary, summary_columns
from ...core.metrics.names import HEADLINE_METRICS, weighted_mean_column
from ...core.metrics.reference_copies import ReferenceDuplication
from ...core.metrics.traffic import traffic_legend, weighted_mean_columns
from ...core.questions.question_catalog import UNSPECIFIED, question_type_of
from ...core.retrieval.base import Query, RetrievalRun
from ...core.retrieval.indexes import ChunkIndexes, open_indexes
from ...core.retrieval.profile_retriever import retrieve
from ...core.retrieval.rewrite import LLMQueryRewriter
from ...core.settings.configs import RetrievalProfile
from ...core.store.warehouse import RETRIEVAL_SUMMARY
from ...core.tables import (
    chunks_from_frame,
    corpus_from_frame,
    questions_from_frame,
    retrieved_from_frame,
    retrieved_to_frame,
    stale_question_count,
)
from ...core.text_table import markdown_table
from ...core.types import RetrievedChunk
from ...lib.evaluation_runs import EvaluationModeResource, superseded_runs
from ...lib.freshness import READS_PROFILE
from ...lib.io_managers import WarehouseResource
from ...lib.langsmith_sync import log_experiment
from ...lib.metric_metadata import metric_value
from ...lib.partitions import evaluation_key, evaluation_partitions
from ...lib.provenance import content_version, dataset_hashes, evaluation_columns, now_utc, with_columns
from ...lib.regression_checks import metrics_asset
from ...lib.resources import EmbedderResource, LangSmithResource, LLMResource, ProjectResource, QdrantResource
from ...lib.run_record import record_step_facts
from ...lib.step_failures import input_errors_fail_the_step
from ...lib.step_inputs import (
    document_scope,
    evaluated_questions,
    profile_for,
    required_llm_client,
    step_settings,
)
from ...lib.step_progress import progress_for
from ...lib.step_redaction import redacts_secrets


@dg.asset(
    group_name="evaluation",
    partitions_def=evaluation_partitions,
    kinds={"qdrant", "bm25", "parquet"},
    deps=READS_PROFILE,
)
@redacts_secrets
def retrieval_results(
    context: dg.AssetExecutionContext,
    project: ProjectResource,
    embedder: EmbedderResource,
    qdrant: QdrantResource,
    llm: LLMResource,
    evaluation: EvaluationModeResource,
    chunk_index: pd.DataFrame,
    chunks: pd.DataFrame,
    eval_questions: pd.DataFrame,
) -> dg.MaterializeResult[pd.DataFrame]:
    """The top k chunks of the profile for every evaluation question: dense, keyword or fused by weighted
    RRF, optionally rewritten and reranked; every row says which retrievers found it, at what rank.
    Steps 2 and 3 of an evaluation as the notebook API runs them: ``open_indexes`` (what ``chunk_index``
    built), then ``retrieve``."""
    chunk_config, profile_name = evaluation_key(context)
    profile = profile_for(project, profile_name)
    with input_errors_fail_the_step(f"{project.path(project.profiles_file)}: "):
        profile.check_fits(len(chunks), chunk_config)
    progress = progress_for(context)
    manifest = chunk_index.iloc[0]
    model = embedder.get(progress)
    indexes = searched_indexes(context, project, model, qdrant, chunk_index, chunks, profile)
    rewriter = query_rewriter(project, llm, profile)
    with input_errors_fail_the_step(f"{chunk_config} x {profile_name}: "):
        questions = evaluated_questions(project, evaluation, eval_questions, chunk_config)
        in_scope = document_scope(project, chunk_config).questions(questions_from_frame(eval_questions))
        sampled = len(questions) if evaluation.checked_mode() == "quick" else None
        record_step_facts(context, profile, len(in_scope), sampled)  # the run record (rag-eval status)
        run = retrieve(
            profile,
            indexes,
            [Query(e.question_id, e.query) for e in questions],
            reranker=project.reranker(profile),
            rewriter=rewriter,
            progress=progress,
        )
    frame = with_columns(
        retrieved_to_frame(run.hits, run.traces),
        run_id=context.run.run_id,
        **evaluation_columns(context, evaluation),
        created_at=now_utc(),
        chunk_config=chunk_config,
        profile=profile_name,
        chunk_config_hash=str(manifest["chunk_config_hash"]),
        profile_hash=profile.config_hash,
        profile_version=profile.version,
        retrievers="+".join(profile.retrievers),
        reranker=run.reranker,
        rewriter=run.rewriter,
        embedder_model_id=model.model_id,
        collection=str(manifest["collection"]),
        corpus_sha256=str(eval_questions["corpus_sha256"].iloc[0]),
        dataset_sha256=dataset_hashes(eval_questions)["dataset_sha256"],
        **index_costs(manifest, profile),
    )
    context.log.info(
        f"{chunk_config} x {profile_name} v{profile.version} ({'+'.join(profile.retrievers)}): "
        f"top {profile.top_k} for {len(questions)} questions"
    )
    metadata = retrieval_metadata(run, profile, len(frame))
    metadata["query_texts_embedded"] = run.query_embedding.texts_embedded
    metadata["query_embedding_cache_hits"] = run.query_embedding.cache_hits
    if rewriter is not None:
        metadata.update(rewriter.client.usage_snapshot().as_metadata())
    return dg.MaterializeResult(value=frame, metadata=metadata, data_version=content_version(frame))


def index_costs(manifest: pd.Series, profile: RetrievalProfile) -> dict[str, float]:
    """The profile's ``index_bytes`` and ``index_tokens`` from chunk_index's manifest (core/evaluation/costs.py);
    NaN for a manifest written before it recorded them."""
    if not {"dimension", "keyword_index_bytes", "chunk_tokens"} <= set(manifest.index):
        return dict.fromkeys(INDEX_COLUMNS, float("nan"))
    found = index_columns(
        profile.retrievers,
        n_vectors=int(manifest["n_points"]),
        dimension=int(manifest["dimension"]),
        keyword_bytes=int(manifest["keyword_index_bytes"]),
        chunk_tokens=int(manifest["chunk_tokens"]),
    )
    return {name: float(count) for name, count in found.items()}


def searched_indexes(
    context: dg.AssetExecutionContext,
    project: ProjectResource,
    model: CachedEmbedder,
    qdrant: QdrantResource,
    chunk_index: pd.DataFrame,
    chunks: pd.DataFrame,
    profile: RetrievalProfile,
) -> ChunkIndexes:
    """The indexes ``chunk_index`` built for this partition's chunk config, opened for the profile's
    retrievers (``open_indexes``); refused when the embedder is not the one the collection was built
    with."""
    chunk_config, _ = evaluation_key(context)
    progress = progress_for(context)
    manifest = chunk_index.iloc[0]
    if manifest["embedder_model_id"] != model.model_id:
        raise dg.Failure(
            f"chunk_index[{chunk_config}] was built with {manifest['embedder_model_id']}, but the embedder is now "
            f"{model.model_id}: re-materialize chunk_index for {chunk_config} first"
        )
    indexes = open_indexes(
        ChunkSet(chunk_config, tuple(chunks_from_frame(chunks))),
        model,
        qdrant.get(progress, context.log),
        collection=str(manifest["collection"]),
        keyword_folder=project.keyword_index_folder(chunk_config),
        retrievers=profile.retrievers,
        progress=progress,
    )
    if indexes.keyword_built:
        context.log.warning(f"the keyword index of {chunk_config} was missing or stale and was rebuilt")
    return indexes


def query_rewriter(
    project: ProjectResource, llm: LLMResource, profile: RetrievalProfile
) -> LLMQueryRewriter | None:
    if not profile.query_rewrite_enabled:
        return None
    client = required_llm_client(
        project,
        llm,
        f"profile {profile.name!r} rewrites queries",
        f"set query_rewrite_enabled: false in {project.profiles_file}",
    )
    return LLMQueryRewriter(
        client, profile.query_rewrite_prompt, step_settings(project, GenerationSettings).llm.budget_usd
    )


def retrieval_metadata(
    run: RetrievalRun, profile: RetrievalProfile, n_rows: int
) -> "dict[str, dg.RawMetadataValue]":
    """What the UI shows per partition: who found the chunks, what the threshold and rewriter did, and
    where the time went."""
    hits = [h for chunk_hits in run.hits.values() for h in chunk_hits]
    traces = list(run.traces.values())
    found_by = {name: sum(1 for h in hits if h.found_by == name) for name in ("knn", "bm25", "both")}
    metadata: dict[str, dg.RawMetadataValue] = {
        "n_questions": len(traces),
        "n_rows": n_rows,
        "top_k": profile.top_k,
        "profile_version": profile.version,
        "profile_hash": profile.config_hash,
        "retrievers": "+".join(profile.retrievers),
        "questions_without_hits": sum(1 for t in traces if not run.hits.get(t.question_id)),
        **{f"found_by_{name}": count for name, count in found_by.items()},
    }
    if profile.similarity_threshold is not None:
        metadata["knn_below_threshold"] = sum(t.knn_below_threshold for t in traces)
    if profile.query_rewrite_enabled:
        for status in ("rewritten", "unchanged", "failed"):
            metadata[f"rewrite_{status}"] = sum(1 for t in traces if t.rewrite_status == status)
    for stage, seconds in sorted(run.seconds.items()):
        metadata[f"seconds_{stage}"] = dg.MetadataValue.float(round(seconds, 4))
        if seconds > 0 and stage in ("knn", "bm25", "fusion", "rerank"):
            metadata[f"queries_per_s_{stage}"] = dg.MetadataValue.float(round(len(traces) / seconds, 1))
    return metadata


@metrics_asset(
    check_description="No retrieval metric (regression.metrics) dropped below the partition's baseline by "
    "more than the margin with its paired bootstrap interval below 0.",
    group_name="evaluation",
    kinds={"python", "parquet"},
)
def retrieval_metrics(
    context: dg.AssetExecutionContext,
    project: ProjectResource,
    warehouse: WarehouseResource,
    langsmith: LangSmithResource,
    evaluation: EvaluationModeResource,
    corpus: pd.DataFrame,
    chunks: pd.DataFrame,
    eval_questions: pd.DataFrame,
    retrieval_results: pd.DataFrame,
) -> dg.MaterializeResult[pd.DataFrame]:
    """Per-question token-level metrics (span recall/precision/IoU, Chroma variants, precision_omega),
    chunk-level metrics with ground truth derived for this chunk set, span metrics within context
    budgets (`span_recall_1000t`, ...) and the context's size (`context_tokens`); a summary row per run
    in history; a LangSmith experiment on the evaluation dataset when LangSmith is configured. Step 4 of
    an evaluation as the notebook API runs it: ``token_level_result``."""
    chunk_config, profile_name = evaluation_key(context)
    profile = profile_for(project, profile_name)
    questions = evaluated_questions(project, evaluation, eval_questions, chunk_config)
    result = token_level_result(
        questions.examples,
        retrieved_from_frame(retrieval_results),
        chunks_from_frame(chunks),
        profile.top_k,
        corpus_from_frame(corpus),
    )
    # ids, group, metrics and the duplication counts; the query text lives in retrieval_results
    per_question = pd.DataFrame(result.metric_rows()).drop(columns="query", errors="ignore")
    # what each question cost beside its metrics: its search latency, its tokens, its rewrite's tokens
    costs = question_costs({e.question_id: e.query for e in questions.examples}, retrieval_results)
    per_question = per_question.join(costs, on="question_id")
    types = {e.question_id: question_type_of(e.metadata) for e in questions}  # `rag-eval results` filters
    per_question.insert(1, "question_type", [types.get(q, UNSPECIFIED) for q in per_question["question_id"]])
    # references whose text occurs elsewhere in the corpus: position-exact metrics score such a copy 0
    duplication = result.duplication or ReferenceDuplication()
    # golden questions whose excerpt an edited document lost: not scored here (see eval_questions)
    n_stale = stale_question_count(eval_questions)
    provenance = {
        "run_id": context.run.run_id,
        **evaluation_columns(context, evaluation),
        "created_at": now_utc(),
        "chunk_config": chunk_config,
        "profile": profile_name,
        "top_k": profile.top_k,
        # "" for a chunk set over every document: rows of other scopes are not ranked with it
        "document_scope": document_scope(project, chunk_config).key,
        **{
            column: str(retrieval_results[column].iloc[0]) if len(retrieval_results) else ""
            for column in (
                "chunk_config_hash",
                "profile_hash",
                "profile_version",
                "retrievers",
                "embedder_model_id",
                "corpus_sha256",
                "dataset_sha256",
            )
        },
        "retrieval_run_id": str(retrieval_results["run_id"].iloc[0]) if len(retrieval_results) else "",
        "rewriter": first_value(retrieval_results, "rewriter", ""),
        **{column: float(str(first_value(retrieval_results, column, "nan"))) for column in INDEX_COLUMNS},
        "n_stale_questions": n_stale,
        # who made the questions: known-item ones favour keyword retrieval, the board says so
        "question_generators": question_generators(e.metadata for e in questions),
    }
    experiment_url, langsmith_metadata = log_experiment(
        langsmith,
        step_settings(project, GenerationSettings).langsmith.dataset(questions.name),
        f"{chunk_config} x {profile_name} {context.run.run_id[:8]}",
        [
            ExperimentRow(r.question_id, {"retrieved": retrieved_outputs(r.retrieved)}, dict(r.metrics))
            for r in result.raw_results
        ],
        {key: str(value) for key, value in provenance.items()},
        context.log,
    )
    provenance["experiment_url"] = experiment_url or ""
    frame = with_columns(per_question, **provenance)
    summaries = dict(result.metrics)
    summary = pd.DataFrame(
        [
            {
                **provenance,
                "n_questions": len(per_question),
                # the questions' sample: runs on other questions are not one trend (core/evaluation/comparability.py)
                "question_set": question_set(per_question),
                **duplication.run_columns(),
                **summary_columns(summaries),
                # traffic-weighted means beside the plain ones, when the questions carry counts
                **weighted_mean_columns(result.weighted_means),
                **latency_percentiles(per_question),
            }
        ]
    )
    warehouse.write_history(
        summary,
        RETRIEVAL_SUMMARY,
        {"chunk_config": chunk_config, "profile": profile_name},
        context.run.run_id,
        superseded_runs(context.instance, context.run),
    )
    context.log.info(
        f"{chunk_config} x {profile_name}: "
        + ", ".join(f"{m} {summaries[m].mean:.3f}" for m in HEADLINE_METRICS)
    )
    warning = duplication.describe(len(per_question))
    if warning:
        context.log.warning(f"{chunk_config} x {profile_name}: {warning}")
    metadata: dict[str, dg.RawMetadataValue] = {
        "n_questions": len(per_question),
        "n_stale_questions": n_stale,
        **duplication.run_columns(),
    }
    if warning:
        metadata["duplicated_reference_text"] = warning
    for name, s in summaries.items():
        metadata[name] = metric_value(s.mean)
    for name, mean in result.weighted_means.items():
        metadata[weighted_mean_column(name)] = metric_value(mean)
    for name, milliseconds in latency_percentiles(per_question).items():
        if not pd.isna(milliseconds):  # no question had hits: no latency was recorded
            metadata[name] = metric_value(milliseconds)
    metadata["confidence_intervals"] = dg.MetadataValue.md(summary_markdown(summaries, result.weighted_means))
    metadata.update(langsmith_metadata)
    return dg.MaterializeResult(value=frame, metadata=metadata, data_version=content_version(frame))


def first_value(frame: pd.DataFrame, column: str, default: object) -> object:
    """The column's value on the first row; ``default`` for an empty table or one written before it."""
    if not len(frame) or column not in frame.columns or pd.isna(frame[column].iloc[0]):
        return default
    return frame[column].iloc[0]


def retrieved_outputs(hits: Sequence[RetrievedChunk]) -> list[dict[str, object]]:
    """What the experiment shows per question: the ranked chunks and where they lie."""
    return [
        {"rank": h.rank, "chunk_id": h.chunk_id, "doc_id": h.doc_id, "start": h.start, "end": h.end}
        for h in hits
    ]


def summary_markdown(summaries: dict[str, MetricSummary], weighted: Mapping[str, float] | None = None) -> str:
    """Per metric: mean, sample std (ddof=1), population std (ddof=0) and the bootstrap 95% CI; with
    ``weighted`` (the questions carry traffic counts), the traffic-weighted mean too, and a line saying
    which is which."""
    header = [
        "metric",
        "mean",
        *(["traffic-weighted mean"] if weighted else []),
        "std",
        "std (population)",
        "95% CI",
    ]
    rows = [
        [
            s.name,
            f"{s.mean:.4f}",
            *([f"{weighted.get(s.name, float('nan')):.4f}"] if weighted else []),
            f"{s.std:.4f}",
            f"{s.std_population:.4f}",
            f"[{s.ci_low:.4f}, {s.ci_high:.4f}]",
        ]
        for s in summaries.values()
    ]
    table = markdown_table(header, rows)
    return "\n".join([table, "", traffic_legend("mean", "traffic-weighted mean")]) if weighted else table
