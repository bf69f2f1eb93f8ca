"""Answers built from each partition's retrieved chunks, the threshold that judges them, their metrics,
and the LLM judge on the best pairs only."""

import dagster as dg
import pandas as pd

from ...core.answers.agreement import LabelledQuestion, method_agreement, no_labels_report
from ...core.answers.answering import AnswerItem, ExtractiveAnswerer, LLMAnswerer, NoAnswers, scorable
from ...core.answers.judge import JudgeItem, LLMJudge
from ...core.answers.labels import load_labels
from ...core.answers.methods import ScoringItem, score_answers, similarity_texts
from ...core.answers.pairs import rank_pairs
from ...core.answers.production import (
    LLMRecallJudge,
    ProductionItem,
    ProductionRun,
    agreement_texts,
    production_metrics,
)
from ...core.answers.settings import AnswerSettings
from ...core.answers.tables import (
    answer_metrics_frame,
    answers_from_frame,
    answers_to_frame,
    calibration_to_frame,
    cited_texts_from_frame,
    judgements_to_frame,
    outcome_summary,
    threshold_from_frame,
    traces_from_frame,
)
from ...core.answers.threshold import ThresholdChoice
from ...core.embedding.cache import CachedEmbedder
from ...core.embedding.prefetch import PrefetchEmbedder
from ...core.generation.settings import GenerationSettings
from ...core.llm.accounting import check_total_budget
from ...core.llm.client import LLMClient
from ...core.metrics.names import CITED_MEAN_RANK, CORRECTNESS_METRICS, PRODUCTION_METRICS
from ...core.questions.datasets import TokenLevelDataset
from ...core.settings.configs import RetrievalProfile
from ...core.store.warehouse import ANSWER_SUMMARY
from ...core.tables import questions_from_frame, records, retrieved_from_frame, stale_question_count
from ...core.text_table import markdown_table
from ...core.types import ChunkId, QuestionId
from ...lib.evaluation_runs import EvaluationModeResource, superseded_runs
from ...lib.freshness import READS_PROJECT_SETTINGS, READS_SETUPS
from ...lib.io_managers import WarehouseResource
from ...lib.metric_metadata import metric_value, with_metric_values
from ...lib.partitions import CHUNK_CONFIG, PROFILE, evaluation_key, evaluation_partitions
from ...lib.provenance import content_version, dataset_hashes, evaluation_columns, now_utc, with_columns
from ...lib.regression_checks import metrics_asset
from ...lib.resources import EmbedderResource, LLMResource, ProjectResource
from ...lib.step_failures import input_errors_fail_the_step
from ...lib.step_inputs import (
    LLM_POOL,
    configured_names,
    evaluated_questions,
    profile_for,
    required_llm_client,
    step_settings,
)
from ...lib.step_progress import announce_for, progress_for
from ...lib.step_redaction import redacts_secrets

# What the asset summarizes per run: correctness and the production scores (cited_mean_rank is a rank,
# not a score: not among them).
SUMMARY_METRICS = CORRECTNESS_METRICS + tuple(m for m in PRODUCTION_METRICS if m != CITED_MEAN_RANK)


def judge_client(
    project: ProjectResource, llm: LLMResource, settings: AnswerSettings, model: str | None = None
) -> LLMClient | None:
    with input_errors_fail_the_step():
        return llm.judge_client(step_settings(project, GenerationSettings).llm, settings.llm_judging, model)


def judge_for(client: LLMClient | None, settings: AnswerSettings) -> LLMJudge | None:
    if client is None:
        return None
    return LLMJudge(
        client, repair_attempts=settings.judge.repair_attempts, pass_score=settings.judge.pass_score
    )


def answerer_for(
    project: ProjectResource,
    llm: LLMResource,
    embedder: CachedEmbedder,
    profile: RetrievalProfile,
    settings: AnswerSettings,
    questions: TokenLevelDataset,
) -> LLMAnswerer | ExtractiveAnswerer | NoAnswers:
    """The LLM when chosen (or on ``auto`` with an OpenAI-protocol endpoint), else the extractive one;
    none on ``off``, nor on ``auto`` offline when no question has what a correctness metric scores an
    extractive answer against (its answers would be embedded for nothing: every answer column n/a)."""
    where = project.answer_evaluation_file
    if settings.answerer == "off":
        return NoAnswers(f"answerer: off in {where}")
    llm_settings = step_settings(project, GenerationSettings).llm
    if settings.answerer == "extractive" or (settings.answerer == "auto" and not llm.is_remote(llm_settings)):
        if settings.answerer == "auto" and not any(
            scorable(q.reference_answer, q.expected_keywords) for q in questions
        ):
            return NoAnswers(
                "not built: no question has a reference answer or keywords to score an extractive answer "
                f"against (answerer: auto, no LLM); set answerer: extractive in {where} to build them anyway"
            )
        return ExtractiveAnswerer(embedder)
    client = required_llm_client(
        project,
        llm,
        f"answerer: llm in {where} asks an LLM to answer",
        "set answerer: auto",
    )
    return LLMAnswerer(client, profile.system_prompt, max_context_chars=settings.max_context_chars)


def usage_metadata(client: LLMClient | None, prefix: str = "llm_") -> "dict[str, dg.RawMetadataValue]":
    return dict(client.usage_snapshot().as_metadata(prefix)) if client is not None else {}


@dg.asset(group_name="answers", kinds={"python", "parquet"}, pool=LLM_POOL, deps=READS_PROJECT_SETTINGS)
@redacts_secrets
def answer_calibration(
    context: dg.AssetExecutionContext,
    project: ProjectResource,
    embedder: EmbedderResource,
    llm: LLMResource,
    eval_questions: pd.DataFrame,
) -> dg.MaterializeResult[pd.DataFrame]:
    """The threshold semantic_dynamic uses, fitted on the human labels file (0.50 to 0.90 in steps of
    0.05), or the fixed one with the reason; and how well each method agrees with the labels (accuracy,
    Cohen's kappa; semantic_dynamic cross-validated; the judge and hybrid when judging is on)."""
    settings = step_settings(project, AnswerSettings)
    semantic = settings.semantic
    questions = questions_from_frame(eval_questions)
    labels_file = project.path(semantic.labels)
    known = {
        e.question_id: LabelledQuestion(e.query, e.reference_answer, e.expected_keywords) for e in questions
    }
    if not labels_file.is_file():
        context.log.warning(f"no labels file at {labels_file}: semantic_dynamic uses the fixed threshold")
        report = no_labels_report(semantic.threshold, f"no labels file at {labels_file}", semantic.objective)
        n_labels = n_unmatched = 0
        client = None
    else:
        with input_errors_fail_the_step():
            labels = load_labels(labels_file)
        matched = [label for label in labels if label.question_id in known]
        n_labels, n_unmatched = len(labels), len(labels) - len(matched)
        if n_unmatched:
            context.log.warning(
                f"{n_unmatched} of {len(labels)} labels in {labels_file} are for questions outside the "
                f"evaluated set ({questions.name}); they are not used"
            )
        client = judge_client(project, llm, settings)
        with input_errors_fail_the_step("answer_calibration: "):
            report = method_agreement(
                matched,
                known,
                embedder.get(progress_for(context), announce_for(context)),
                fixed_threshold=semantic.threshold,
                objective=semantic.objective,
                min_labels=semantic.min_labels,
                folds=semantic.folds,
                judge=judge_for(client, settings),
                hybrid_margin=settings.hybrid.margin,
                budget_usd=step_settings(project, GenerationSettings).llm.budget_usd,
                progress=progress_for(context),
                source=str(labels_file),
            )
    frame = with_columns(
        calibration_to_frame(report, str(labels_file), n_labels, n_unmatched),
        run_id=context.run.run_id,
        created_at=now_utc(),
        dataset_sha256=questions.sha256,
        answers_sha256=questions.answers_sha256,
    )
    threshold = report.threshold
    context.log.info(f"semantic_dynamic threshold {threshold.threshold:.2f}: {threshold.reason}")
    metadata: dict[str, dg.RawMetadataValue] = {
        "threshold": metric_value(threshold.threshold),
        "threshold_how": threshold.how,
        "threshold_reason": threshold.reason,
        "n_labels": n_labels,
        "n_labels_unmatched": n_unmatched,
        "agreement": dg.MetadataValue.md(agreement_markdown(frame)),
    }
    for agreement in report.agreements:
        if agreement.accuracy is not None:
            metadata[f"{agreement.method}_accuracy"] = metric_value(agreement.accuracy)
        if agreement.cohen_kappa is not None:
            metadata[f"{agreement.method}_kappa"] = metric_value(agreement.cohen_kappa)
    metadata.update(usage_metadata(client))
    return dg.MaterializeResult(value=frame, metadata=metadata, data_version=content_version(frame))


def agreement_markdown(frame: pd.DataFrame) -> str:
    rows = []
    for row in records(frame):
        accuracy, kappa = row["accuracy"], row["cohen_kappa"]
        rows.append(
            (
                str(row["method"]),
                str(row["n"]),
                "n/a" if pd.isna(accuracy) else f"{accuracy:.3f}",
                "n/a" if pd.isna(kappa) else f"{kappa:.3f}",
            )
        )
    return markdown_table(("method", "n", "accuracy", "Cohen's kappa"), rows)


@dg.asset(
    group_name="answers",
    partitions_def=evaluation_partitions,
    kinds={"openai", "parquet"},
    pool=LLM_POOL,
    deps=READS_PROJECT_SETTINGS,
)
@redacts_secrets
def answers(
    context: dg.AssetExecutionContext,
    project: ProjectResource,
    embedder: EmbedderResource,
    llm: LLMResource,
    evaluation: EvaluationModeResource,
    eval_questions: pd.DataFrame,
    retrieval_results: pd.DataFrame,
) -> dg.MaterializeResult[pd.DataFrame]:
    """An answer to every question from its retrieved chunks, in the profile's system prompt, citing the
    chunk ids it used; offline the extractive answerer quotes the closest retrieved sentence. A failed
    answer keeps its row with the error."""
    chunk_config, profile_name = evaluation_key(context)
    profile = profile_for(project, profile_name)
    settings = step_settings(project, AnswerSettings)
    progress = progress_for(context)
    questions = evaluated_questions(project, evaluation, eval_questions, chunk_config)
    answerer = answerer_for(
        project, llm, embedder.get(progress, announce_for(context)), profile, settings, questions
    )
    hits = retrieved_from_frame(retrieval_results)
    items = [AnswerItem(e.question_id, e.query, tuple(hits.get(e.question_id, []))) for e in questions]
    with input_errors_fail_the_step(f"{chunk_config} x {profile_name}: "):
        answered = answerer.answer_all(
            items, progress, step_settings(project, GenerationSettings).llm.budget_usd
        )
    if answerer.last_estimate is not None:
        context.log.info(f"answers: {answerer.last_estimate.describe()}")
    by_id = {e.question_id: e for e in questions}
    frame = answers_to_frame(answered, hits)
    frame.insert(1, "query", [by_id[QuestionId(q)].query for q in frame["question_id"]])
    frame["reference_answer"] = [by_id[QuestionId(q)].reference_answer for q in frame["question_id"]]
    frame = with_columns(
        frame,
        run_id=context.run.run_id,
        **evaluation_columns(context, evaluation),
        created_at=now_utc(),
        chunk_config=chunk_config,
        profile=profile_name,
        profile_version=profile.version,
        profile_hash=profile.config_hash,
        retrieval_run_id=str(retrieval_results["run_id"].iloc[0]) if len(retrieval_results) else "",
        corpus_sha256=str(eval_questions["corpus_sha256"].iloc[0]),
        **dataset_hashes(eval_questions),
    )
    ok = frame["status"] == "ok"
    metadata: dict[str, dg.RawMetadataValue] = {
        "n_questions": len(frame),
        "answerer": answerer.model_id,
        "n_answered": int((ok & ~frame["abstained"]).sum()),
        "n_abstained": int((ok & frame["abstained"]).sum()),
        "n_failed": int((frame["status"] == "failed").sum()),
        "n_skipped": int((frame["status"] == "skipped").sum()),
        "mean_citations": metric_value(float(frame.loc[ok, "n_cited"].mean()) if ok.any() else 0.0),
        "invalid_citations": int(frame["invalid_citations"].map(len).sum()),
    }
    if answerer.last_estimate is not None:
        metadata["llm_estimate"] = answerer.last_estimate.describe()
    if isinstance(answerer, LLMAnswerer):
        metadata.update(usage_metadata(answerer.client))
    context.log.info(
        f"{chunk_config} x {profile_name}: {metadata['n_answered']} answered, {metadata['n_abstained']} "
        f"abstained, {metadata['n_failed']} failed ({answerer.model_id})"
    )
    if isinstance(answerer, NoAnswers):
        metadata["skipped_reason"] = answerer.reason
        context.log.info(f"{chunk_config} x {profile_name}: no answers: {answerer.reason}")
    if metadata["n_failed"]:
        # the reason in the UI and the run log, not only in the table: a bad key fails every row alike
        first = frame.loc[frame["status"] == "failed"].iloc[0]
        metadata["first_failure"] = f"{first['question_id']}: {first['error']}"
        context.log.warning(
            f"{chunk_config} x {profile_name}: {metadata['n_failed']} of {len(frame)} answers failed and "
            f"are kept as failed rows; the first: {metadata['first_failure']}"
        )
    return dg.MaterializeResult(value=frame, metadata=metadata, data_version=content_version(frame))


@metrics_asset(
    check_description="No answer metric (regression.answer_metrics) dropped below the partition's baseline "
    "by more than the margin with its paired bootstrap interval below 0; only questions where the metric is "
    "ok in both runs count.",
    group_name="answers",
    kinds={"python", "parquet"},
    pool=LLM_POOL,
    deps=READS_PROJECT_SETTINGS,
)
def answer_metrics(
    context: dg.AssetExecutionContext,
    project: ProjectResource,
    embedder: EmbedderResource,
    llm: LLMResource,
    warehouse: WarehouseResource,
    evaluation: EvaluationModeResource,
    eval_questions: pd.DataFrame,
    retrieval_results: pd.DataFrame,
    answers: pd.DataFrame,
    answer_calibration: pd.DataFrame,
) -> dg.MaterializeResult[pd.DataFrame]:
    """Per question: keyword, semantic (fixed and fitted threshold) and hybrid correctness, and the
    production-style metrics, with context_recall_llm only where the heuristic flags a concern. A metric
    that fails on a row is marked failed there and never fails the partition. A summary row per run."""
    chunk_config, profile_name = evaluation_key(context)
    profile = profile_for(project, profile_name)
    settings = step_settings(project, AnswerSettings)
    budget = step_settings(project, GenerationSettings).llm.budget_usd
    progress = progress_for(context)
    model = embedder.get(progress, announce_for(context))
    questions = evaluated_questions(project, evaluation, eval_questions, chunk_config)
    answered = {a.question_id: a for a in answers_from_frame(answers)}
    cited = cited_texts_from_frame(answers)
    hits = retrieved_from_frame(retrieval_results)
    traces = traces_from_frame(retrieval_results, {e.question_id: e.query for e in questions})
    threshold = threshold_from_frame(answer_calibration)
    client = judge_client(project, llm, settings, profile.judge_model)
    scoring = [
        ScoringItem(
            e.question_id,
            e.query,
            answered[e.question_id],
            e.reference_answer,
            e.expected_keywords,
            cited.get(e.question_id, ()),
        )
        for e in questions
    ]
    grounding = [
        ProductionItem(
            e.question_id,
            e.query,
            answered[e.question_id],
            tuple(hits.get(e.question_id, [])),
            traces[e.question_id],
        )
        for e in questions
    ]
    # both metric families' texts in one call to the model (each distinct text once, cached on disk)
    step_embedder = PrefetchEmbedder(model, [*similarity_texts(scoring), *agreement_texts(grounding)])
    with input_errors_fail_the_step(f"{chunk_config} x {profile_name}: "):
        scores = score_answers(
            scoring,
            step_embedder,
            fixed_threshold=settings.semantic.threshold,
            threshold=threshold,
            hybrid_margin=settings.hybrid.margin,
            judge=judge_for(client, settings),
            budget_usd=budget,
            progress=progress,
        )
        production = production_metrics(
            grounding,
            step_embedder,
            top_k=profile.top_k,
            candidate_depth=profile.candidate_depth,
            retrievers=profile.retrievers,
            recall_threshold=settings.production.recall_threshold,
            recall_judge=LLMRecallJudge(client, repair_attempts=settings.judge.repair_attempts)
            if client is not None
            else None,
            budget_usd=budget,
            progress=progress,
        )
    provenance: dict[str, object] = {
        "run_id": context.run.run_id,
        **evaluation_columns(context, evaluation),
        "created_at": now_utc(),
        "chunk_config": chunk_config,
        "profile": profile_name,
        "top_k": profile.top_k,
        "n_stale_questions": stale_question_count(eval_questions),
        "profile_version": profile.version,
        "profile_hash": profile.config_hash,
        "answerer": str(answers["answerer"].iloc[0]) if len(answers) else "",
        "answers_run_id": str(answers["run_id"].iloc[0]) if len(answers) else "",
        "judge_model": client.model_id if client is not None else "",
        "threshold": threshold.threshold,
        "threshold_how": threshold.how,
        "embedder_model_id": model.model_id,
        "corpus_sha256": str(eval_questions["corpus_sha256"].iloc[0]),
        **dataset_hashes(eval_questions),
    }
    frame = with_columns(answer_metrics_frame(scores, production.rows), **provenance)
    summary = {
        **provenance,
        "n_questions": len(frame),
        "n_answers_failed": int((answers["status"] == "failed").sum()),
        **outcome_summary(frame, SUMMARY_METRICS),
        **{f"semantic_validation_{v}": int((frame["semantic_validation"] == v).sum()) for v in VERDICTS},
        **{f"agreement_{p}": int((frame["agreement_pattern"] == p).sum()) for p in PATTERNS},
        **production.as_metadata(),
        "threshold_reason": threshold.reason,
    }
    warehouse.write_history(
        pd.DataFrame([summary]),
        ANSWER_SUMMARY,
        {CHUNK_CONFIG: chunk_config, PROFILE: profile_name},
        context.run.run_id,
        superseded_runs(context.instance, context.run),
    )
    context.log.info(
        f"{chunk_config} x {profile_name}: "
        + ", ".join(f"{m} {summary[f'{m}_mean']:.3f}" for m in CORRECTNESS_METRICS)
        + f"; {production.n_escalated} of {production.n_questions} questions escalated to context_recall_llm"
    )
    return dg.MaterializeResult(
        value=frame,
        metadata=answer_metrics_metadata(summary, threshold, production, client),
        data_version=content_version(frame),
    )


VERDICTS = ("pass", "fail", "skipped", "failed")
PATTERNS = ("unanimous", "majority", "mixed", "conflicting")


def answer_metrics_metadata(
    summary: dict[str, object],
    threshold: ThresholdChoice,
    production: ProductionRun,
    client: LLMClient | None,
) -> "dict[str, dg.RawMetadataValue]":
    """Means the UI plots over time, the counts behind them, the threshold and what escalation saved."""
    metadata: dict[str, dg.RawMetadataValue] = {"n_questions": summary["n_questions"]}
    for name in SUMMARY_METRICS:
        mean = summary[f"{name}_mean"]
        if isinstance(mean, float) and mean == mean:  # not NaN
            metadata[name] = metric_value(mean)
        metadata[f"{name}_n_failed"] = summary[f"{name}_n_failed"]
    metadata["threshold"] = metric_value(threshold.threshold)
    metadata["threshold_reason"] = threshold.reason
    for verdict in VERDICTS:
        metadata[f"semantic_validation_{verdict}"] = summary[f"semantic_validation_{verdict}"]
    # the escalated fraction and the cost estimates rounded like the means
    produced = {key: value for key, value in production.as_metadata().items() if value is not None}
    metadata.update(with_metric_values(produced))
    metadata.update(usage_metadata(client))
    return metadata


@dg.asset(
    group_name="answers",
    ins={
        "answer_metrics": dg.AssetIn(metadata={"allow_missing_partitions": True}),
        "answers": dg.AssetIn(metadata={"allow_missing_partitions": True}),
    },
    kinds={"openai", "parquet"},
    pool=LLM_POOL,
    deps=[*READS_PROJECT_SETTINGS, *READS_SETUPS],
)
@redacts_secrets
def answer_judgements(
    context: dg.AssetExecutionContext,
    project: ProjectResource,
    llm: LLMResource,
    answer_metrics: dict[str, pd.DataFrame],
    answers: dict[str, pd.DataFrame],
) -> dg.MaterializeResult[pd.DataFrame]:
    """The LLM judge (temperature 0) on the answers of the top N chunk config x profile pairs by a
    cheaper metric: a score in {0, 0.2, ..., 1} with semantic and factual coverage, hallucination and
    citation accuracy, each explained. The cost is estimated, logged and checked against the budget
    before any call; an unparseable judgement is asked again, then kept as failed (never as 0)."""
    settings = step_settings(project, AnswerSettings)
    # A removed chunk config or profile is no longer a choice: its pairs are not judged, and the top N
    # is chosen among the configured pairs (their metrics and history stay on the leaderboard).
    configured = configured_names(project, context.log)
    removed: dict[str, str] = {}
    for key, frame in answer_metrics.items():
        if configured is not None and not frame.empty:
            reason = configured.removal(str(frame["chunk_config"].iloc[0]), str(frame["profile"].iloc[0]))
            if reason:
                removed[key] = reason
    if removed:
        context.log.info(
            "answer_judgements: not judged, no longer configured: "
            + ", ".join(f"{pair_label(answer_metrics[k])} ({r})" for k, r in removed.items())
        )
    ranking = rank_pairs(
        {k: f for k, f in answer_metrics.items() if k not in removed}, settings.judge.rank_by
    )
    selected = ranking[ranking["selected_rank"].fillna(0).between(1, settings.judge.top_n)]
    answers_by_pair = {
        (str(f["chunk_config"].iloc[0]), str(f["profile"].iloc[0])): f
        for f in answers.values()
        if not f.empty
    }
    # no judge configured: nothing to plan, and no profile is looked up
    judging = judge_client(project, llm, settings) is not None
    plans: list[tuple[str, str, LLMJudge, list[JudgeItem]]] = []
    for row in records(selected) if judging else []:
        pair = (str(row["chunk_config"]), str(row["profile"]))
        if pair not in answers_by_pair:
            continue
        judge = judge_for(
            judge_client(project, llm, settings, profile_for(project, pair[1]).judge_model), settings
        )
        if judge is None:
            continue
        plans.append((*pair, judge, judge_items(answers_by_pair[pair])))
    estimates = [judge.estimate(items) for _, _, judge, items in plans]
    for estimate in estimates:
        context.log.info(f"answer_judgements: {estimate.describe()}")
    with input_errors_fail_the_step("answer_judgements: "):
        check_total_budget(estimates, step_settings(project, GenerationSettings).llm.budget_usd)
    frames = [pd.DataFrame()]
    for chunk_config, profile_name, judge, items in plans:
        judgements = judge.judge_all(items, progress_for(context))
        frames.append(
            with_columns(
                judgements_to_frame(judgements, settings.judge.pass_score),
                chunk_config=chunk_config,
                profile=profile_name,
                answers_run_id=str(answers_by_pair[(chunk_config, profile_name)]["run_id"].iloc[0]),
            )
        )
    judged = pd.concat(frames, ignore_index=True) if plans else empty_judgements(settings.judge.pass_score)
    frame = with_columns(judged, run_id=context.run.run_id, created_at=now_utc())
    if not plans:
        if ranking.empty:
            reason = "no configured pair has answer metrics yet"
        elif not judging:
            reason = "no judge LLM configured (llm_judging)"
        else:
            reason = "the selected pairs have no answers to judge"
        context.log.warning(f"answer_judgements: nothing judged: {reason}")
    metadata: dict[str, dg.RawMetadataValue] = {
        "rank_by": settings.judge.rank_by,
        "top_n": settings.judge.top_n,
        "pairs_judged": ", ".join(f"{c} x {p}" for c, p, _, _ in plans) or "none",
        "pairs_removed": ", ".join(pair_label(answer_metrics[k]) for k in removed) or "none",
        "n_judged": int((frame["status"] == "ok").sum()) if len(frame) else 0,
        "n_failed": int((frame["status"] == "failed").sum()) if len(frame) else 0,
        "ranking": dg.MetadataValue.md(ranking_markdown(ranking, settings.judge.top_n)),
    }
    if estimates:
        metadata["llm_estimate"] = "; ".join(e.describe() for e in estimates)
    usages = [usage_metadata(judge.client) for _, _, judge, _ in plans]  # calls, retries, failures, cost
    for key in usages[0] if usages else {}:
        values = [usage[key] for usage in usages]
        metadata[key] = None if None in values else sum(v for v in values if isinstance(v, int | float))
    return dg.MaterializeResult(value=frame, metadata=metadata, data_version=content_version(frame))


def pair_label(frame: pd.DataFrame) -> str:
    return f"{frame['chunk_config'].iloc[0]} x {frame['profile'].iloc[0]}"


def judge_items(frame: pd.DataFrame) -> list[JudgeItem]:
    """The answers worth judging: answered (not failed) and with a reference answer to judge against."""
    return [
        JudgeItem(
            QuestionId(str(r["question_id"])),
            str(r["query"]),
            str(r["reference_answer"]),
            str(r["answer"]),
            tuple(
                (ChunkId(str(c)), str(t)) for c, t in zip(r["cited_chunk_ids"], r["cited_texts"], strict=True)
            ),
        )
        for r in records(frame)
        if r["status"] == "ok" and isinstance(r["reference_answer"], str) and r["reference_answer"].strip()
    ]


def ranking_markdown(ranking: pd.DataFrame, top_n: int) -> str:
    rows = []
    for row in records(ranking):
        rank, value = row["selected_rank"], row["rank_value"]
        rows.append(
            (
                "-" if pd.isna(rank) else str(rank),
                str(row["chunk_config"]),
                str(row["profile"]),
                "n/a" if pd.isna(value) else f"{value:.3f}",
                "yes" if not pd.isna(rank) and rank <= top_n else "no",
            )
        )
    return markdown_table(("rank", "chunk config", "profile", "mean", "in top n"), rows)


def empty_judgements(pass_score: float) -> pd.DataFrame:
    return with_columns(judgements_to_frame([], pass_score), chunk_config="", profile="", answers_run_id="")
