"""Why each partition's retrieval missed what it missed: the per-question failure waterfall and the
oracle bounds (core/diagnostics)."""

import dagster as dg
import pandas as pd

from ...core.diagnostics.answers import answer_outcomes
from ...core.diagnostics.diagnose import Diagnosis, diagnose
from ...core.diagnostics.replay import ReplayMismatch
from ...core.diagnostics.stages import LABELS, RETRIEVAL_STAGES
from ...core.diagnostics.table import ORACLE_COLUMNS, SUMMARY_SHARES, diagnosis_to_frame, partition_summary
from ...core.store.warehouse import DIAGNOSTICS_SUMMARY
from ...core.tables import chunks_from_frame, corpus_from_frame, retrieved_from_frame
from ...lib.evaluation_runs import EvaluationModeResource, superseded_runs
from ...lib.freshness import READS_PROFILE
from ...lib.io_managers import WarehouseResource
from ...lib.metric_metadata import metric_value
from ...lib.partitions import CHUNK_CONFIG, PROFILE, evaluation_key, evaluation_partitions
from ...lib.provenance import content_version, dataset_hashes, evaluation_columns, now_utc, with_columns
from ...lib.resources import EmbedderResource, LLMResource, ProjectResource, QdrantResource
from ...lib.step_failures import input_errors_fail_the_step
from ...lib.step_inputs import evaluated_questions, profile_for
from ...lib.step_progress import progress_for
from ...lib.step_redaction import redacts_secrets
from .assets import query_rewriter, searched_indexes


@dg.asset(
    group_name="evaluation",
    partitions_def=evaluation_partitions,
    kinds={"qdrant", "bm25", "parquet"},
    deps=READS_PROFILE,
)
@redacts_secrets
def retrieval_diagnostics(
    context: dg.AssetExecutionContext,
    project: ProjectResource,
    embedder: EmbedderResource,
    qdrant: QdrantResource,
    llm: LLMResource,
    warehouse: WarehouseResource,
    evaluation: EvaluationModeResource,
    corpus: pd.DataFrame,
    chunks: pd.DataFrame,
    chunk_index: pd.DataFrame,
    eval_questions: pd.DataFrame,
    retrieval_results: pd.DataFrame,
    answers: pd.DataFrame,
    answer_metrics: pd.DataFrame,
) -> dg.MaterializeResult[pd.DataFrame]:
    """Per question, where the reference text the top k missed was lost: chunking, dense or keyword
    candidates (and the similarity threshold), fusion, reranking or the top-k cut, in characters and as
    shares of the reference; of what was retrieved, what the answer did not cite or got wrong. With the
    oracle bounds: oracle ranking (the best k chunks of this chunk set), oracle k, oracle chunking (the
    reference spans as chunks, retrieved by the same profile). A replay of the profile from the same
    indexes and the embedding cache, checked against `retrieval_results`; a summary row per run in
    history (`retrieval_diagnostics_summary`)."""
    chunk_config, profile_name = evaluation_key(context)
    profile = profile_for(project, profile_name)
    progress = progress_for(context)
    model = embedder.get(progress)
    indexes = searched_indexes(context, project, model, qdrant, chunk_index, chunks, profile)
    where = f"{chunk_config} x {profile_name}: "
    with input_errors_fail_the_step(where):
        questions = evaluated_questions(project, evaluation, eval_questions, chunk_config)
        outcomes = answer_outcomes(answers, answer_metrics)
        try:
            diagnosis = diagnose(
                questions.examples,
                chunks_from_frame(chunks),
                corpus_from_frame(corpus),
                profile,
                indexes,
                reranker=project.reranker(profile),
                rewriter=query_rewriter(project, llm, profile),
                answers=outcomes,
                recorded=retrieved_from_frame(retrieval_results),
                progress=progress,
            )
        except ReplayMismatch as exc:
            raise dg.Failure(f"{where}{exc}") from exc
    provenance = {
        "run_id": context.run.run_id,
        **evaluation_columns(context, evaluation),
        "created_at": now_utc(),
        "chunk_config": chunk_config,
        "profile": profile_name,
        "profile_version": profile.version,
        "profile_hash": profile.config_hash,
        "chunk_config_hash": str(chunk_index["chunk_config_hash"].iloc[0]),
        "embedder_model_id": model.model_id,
        "retrieval_run_id": str(retrieval_results["run_id"].iloc[0]) if len(retrieval_results) else "",
        "corpus_sha256": str(eval_questions["corpus_sha256"].iloc[0]),
        **dataset_hashes(eval_questions),
    }
    frame = with_columns(diagnosis_to_frame(diagnosis, profile.top_k), **provenance)
    summary = partition_summary(frame)
    costs = diagnostics_costs(diagnosis)
    warehouse.write_history(
        pd.DataFrame([{**provenance, "top_k": profile.top_k, **summary, **costs}]),
        DIAGNOSTICS_SUMMARY,
        {CHUNK_CONFIG: chunk_config, PROFILE: profile_name},
        context.run.run_id,
        superseded_runs(context.instance, context.run),
    )
    shares = ", ".join(
        f"{LABELS[c.removesuffix('_share')]} {summary[c]:.3f}"
        for c in SUMMARY_SHARES
        if c != "retrieved_share" and summary[c] == summary[c] and summary[c] > 0
    )
    context.log.info(
        f"{chunk_config} x {profile_name}: span recall {summary['retrieved_share']:.3f}; lost to "
        f"{shares or 'nothing'}; oracle ranking {summary['oracle_ranking_recall']:.3f}, oracle chunking "
        f"{summary['oracle_chunking_recall']:.3f}, oracle k median {summary['oracle_k_median']}"
    )
    metadata: dict[str, dg.RawMetadataValue] = {"n_questions": len(frame)}
    for column in (*SUMMARY_SHARES, *ORACLE_COLUMNS):
        if summary[column] == summary[column]:  # NaN: the answer stages of a partition without answers
            metadata[column] = metric_value(summary[column])
    if summary["oracle_k_median"] == summary["oracle_k_median"]:
        metadata["oracle_k_median"] = dg.MetadataValue.float(summary["oracle_k_median"])
    metadata.update({f"lost_at_{s}": summary[f"lost_at_{s}"] for s in RETRIEVAL_STAGES})
    metadata.update(costs)
    return dg.MaterializeResult(value=frame, metadata=metadata, data_version=content_version(frame))


def diagnostics_costs(diagnosis: Diagnosis) -> "dict[str, float | int]":
    """What the diagnostics cost: seconds per part, and the reference texts oracle chunking scored
    (sent to the model: only those not in the embedding cache yet)."""
    costs: dict[str, float | int] = {
        f"seconds_{part}": round(seconds, 4) for part, seconds in sorted(diagnosis.seconds.items())
    }
    costs["reference_texts"] = diagnosis.reference_texts
    costs["reference_texts_embedded"] = diagnosis.reference_embedding.texts_embedded
    costs["reference_texts_cached"] = diagnosis.reference_embedding.cache_hits
    return costs
