"""How far the evaluation questions can be trusted: the question-set health report
(core/question_health/), after the evaluation partitions, before the leaderboard that shows it."""

import dagster as dg
import pandas as pd

from ...core.generation.settings import GenerationSettings
from ...core.generation.sources import PROVIDED, question_generators
from ...core.question_health.report import (
    QUESTIONS_TABLE,
    assess,
    health_warnings,
    measures_markdown,
    percent,
    question_frame,
    summary_row,
)
from ...core.question_health.separation import setup_scores
from ...core.settings.monitoring_settings import MonitoringSettings
from ...core.tables import corpus_from_frame, questions_from_frame
from ...lib.evaluation_runs import evaluation_id_of, superseded_runs
from ...lib.freshness import READS_LEADERBOARD_SETTINGS, READS_PROJECT_SETTINGS, READS_SETUPS
from ...lib.io_managers import WarehouseResource
from ...lib.metric_metadata import with_metric_values
from ...lib.provenance import content_version, dataset_hashes, now_utc, with_columns
from ...lib.resources import EmbedderResource, ProjectResource
from ...lib.step_inputs import configured_names, step_settings
from ...lib.step_progress import progress_for
from ...lib.step_redaction import redacts_secrets


@dg.asset(
    group_name="reporting",
    ins={"retrieval_metrics": dg.AssetIn(metadata={"allow_missing_partitions": True})},
    # the objective (separation), the setups configured, the generators' dedup_threshold
    deps=[*READS_SETUPS, *READS_LEADERBOARD_SETTINGS, *READS_PROJECT_SETTINGS],
    kinds={"python", "parquet"},
)
@redacts_secrets
def question_set_health(
    context: dg.AssetExecutionContext,
    project: ProjectResource,
    embedder: EmbedderResource,
    warehouse: WarehouseResource,
    corpus: pd.DataFrame,
    eval_questions: pd.DataFrame,
    retrieval_metrics: dict[str, pd.DataFrame],
) -> dg.MaterializeResult[pd.DataFrame]:
    """One row per run: near-duplicate questions (embedding cosine >= token_level.dedup_threshold),
    keyword-trivial questions (every content term in the reference, BM25 ranks it first), the lexical
    overlap of question and reference, coverage of documents and Markdown sections, reference lengths,
    markup in references, the questions no setup / every setup answers (from every evaluated partition's
    objective, as the leaderboard ranks it), the effective sample size, and a warning where the set is
    weak, each saying what to do. Beside it, one row per question in history/question_set_health_questions.
    The questions' vectors come from the embedding cache (retrieval and generation embedded them)."""
    questions = questions_from_frame(eval_questions)
    loaded = corpus_from_frame(corpus, root=str(project.corpus_folder()))
    threshold = step_settings(project, GenerationSettings).token_level.dedup_threshold
    objective = step_settings(
        project, MonitoringSettings
    ).leaderboard  # a bad value fails the step naming file and key
    dataset_sha256 = dataset_hashes(eval_questions)["dataset_sha256"]
    scores = setup_scores(
        retrieval_metrics,
        objective.column,
        objective.rank_by,
        dataset_sha256,
        configured_names(project, context.log),
    )
    model = embedder.get(progress_for(context))
    vectors = model.embed([e.query for e in questions])
    health = assess(questions.examples, loaded, vectors, threshold, scores)
    generators = question_generators(e.metadata for e in questions)
    # the advice names the generator's settings when some questions were generated, else the golden set
    warnings = health_warnings(health, generated=generators != PROVIDED)
    for warning in warnings:
        context.log.warning(warning.text)
    provenance = {
        "run_id": context.run.run_id,
        "evaluation_id": evaluation_id_of(context.run),
        "created_at": now_utc(),
        "corpus_sha256": loaded.sha256,
        "dataset_sha256": dataset_sha256,
        "dataset": questions.name,
        "question_generators": generators,
        "embedder_model_id": model.model_id,
    }
    row = summary_row(health, warnings)
    frame = pd.DataFrame([{**provenance, **row}])
    warehouse.write_history(
        with_columns(question_frame(health, questions.examples), **provenance),
        QUESTIONS_TABLE,
        {},
        context.run.run_id,
        superseded_runs(context.instance, context.run),
    )
    context.log.info(
        f"{health.n_questions} questions: {row['n_keyword_trivial']} keyword-trivial, "
        f"{row['n_duplicate_pairs']} near-duplicate pair(s), documents covered "
        f"{percent(row['n_documents_covered'], row['n_documents'])}, effective sample size "
        f"{health.effective_sample_size}"
    )
    return dg.MaterializeResult(
        value=frame,
        metadata={
            **with_metric_values({k: v for k, v in row.items() if isinstance(v, int | float) or v is None}),
            "effective_sample_size_basis": row["effective_sample_size_basis"],
            "separation_metric": row["separation_metric"],
            "warnings": dg.MetadataValue.md(
                "\n".join(f"- {w.text}" for w in warnings) or "none: the set shows no weakness measured here"
            ),
            "health": dg.MetadataValue.md(measures_markdown(row)),
            # the questions' vectors: from the cache unless no step embedded them before
            "question_texts_embedded": model.texts_embedded,
            "question_texts_cached": model.cache_hits,
        },
        data_version=content_version(frame),
    )
