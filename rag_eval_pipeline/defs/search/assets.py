"""A search over the space of data/search.yaml (core/search/): the race as the partitions of
``search_race``, one per candidate while it races, and its outcome as a table with history.

Candidates become partitions of their own set (``search_candidate``) when a search starts and leave it
when they are eliminated, so the UI's partition view of ``search_race`` shows who is still racing, and
each round materializes every racing candidate's partition with its standing (mean, questions, and for
the eliminated, who beat it and the p-value): the history of an eliminated candidate stays in the event
log and in the warehouse (``search_scores``, ``search_candidates``) after its partition is gone. The
winning tier (the race's survivors) stays in the set when the search ends; a survivor confirmed on the
whole corpus in a lower tier than the winner's leaves it. The config files' chunk configs and profiles are not
touched (their cap holds) until `rag-eval search --apply` writes the winners into them.
"""

from collections.abc import Sequence

import dagster as dg
import pandas as pd

from ...core.generation.settings import GenerationSettings
from ...core.retrieval.rewrite import LLMQueryRewriter
from ...core.search.candidates import Candidate
from ...core.search.fidelity import Round
from ...core.search.outcome import format_outcome
from ...core.search.race import RoundReport
from ...core.search.search import run_search
from ...core.search.settings import SearchSettings
from ...core.search.store import SEARCH_CANDIDATES
from ...core.settings.configs import DEFAULT_QUERY_REWRITE_PROMPT
from ...core.settings.monitoring_settings import MonitoringSettings
from ...core.tables import corpus_from_frame, questions_from_frame
from ...lib.io_managers import WarehouseResource
from ...lib.metric_metadata import metric_value
from ...lib.partitions import SEARCH_CANDIDATE, search_candidate_partitions
from ...lib.provenance import now_utc, with_columns
from ...lib.resources import EmbedderResource, LLMResource, ProjectResource, QdrantResource
from ...lib.step_failures import input_errors_fail_the_step
from ...lib.step_inputs import required_llm_client, step_settings
from ...lib.step_progress import progress_for
from ...lib.step_redaction import redacts_secrets

search_race = dg.AssetSpec(
    "search_race",
    group_name="search",
    partitions_def=search_candidate_partitions,
    kinds={"python"},
    description="One partition per candidate of the running search while it races: each round "
    "materializes its standing (mean objective, questions, fate); an eliminated candidate leaves the "
    "partition set, its materializations stay. Materialized by `search_outcome`.",
)


@dg.asset(
    group_name="search",
    kinds={"qdrant", "bm25", "parquet"},
    ins={"corpus": dg.AssetIn(), "eval_questions": dg.AssetIn()},
)
@redacts_secrets
def search_outcome(
    context: dg.AssetExecutionContext,
    project: ProjectResource,
    embedder: EmbedderResource,
    qdrant: QdrantResource,
    llm: LLMResource,
    warehouse: WarehouseResource,
    corpus: pd.DataFrame,
    eval_questions: pd.DataFrame,
) -> dg.MaterializeResult[pd.DataFrame]:
    """The candidates of data/search.yaml raced on the evaluation's questions for the leaderboard's
    objective (core/search/race.py): one row per candidate with its fate (the winning tier, or when and
    by whom it was eliminated, with the numbers), its cost, and whether it is on the Pareto front; the
    compute saved against the full grid in the metadata. A killed search resumes from its stored scores."""
    settings = step_settings(project, SearchSettings)
    leaderboard = step_settings(project, MonitoringSettings).leaderboard
    progress = progress_for(context)
    instance = context.instance

    def on_start(search_id: str, candidates: Sequence[Candidate], rounds: Sequence[Round]) -> None:
        keys = [c.key for c in candidates]
        present = set(instance.get_dynamic_partitions(SEARCH_CANDIDATE))
        for stale in sorted(present - set(keys)):  # the last search's winners make way
            instance.delete_dynamic_partition(SEARCH_CANDIDATE, stale)
        instance.add_dynamic_partitions(SEARCH_CANDIDATE, [k for k in keys if k not in present])
        context.log.info(
            f"{search_id}: {len(keys)} candidates, {len(rounds)} rounds of "
            f"{', '.join(str(len(r.questions)) for r in rounds)} questions"
        )

    def on_round(report: RoundReport) -> None:
        out = {fate.key: fate for fate in report.eliminated}
        for key in report.racing:
            fate = out.get(key)
            metadata: dict[str, dg.RawMetadataValue] = {
                "round": report.round.number,
                "n_questions": len(report.round.questions),
                "mean": metric_value(report.means[key]),
                "status": "eliminated" if fate else "racing",
                "whole_corpus": report.round.full_corpus,
            }
            if fate is not None:
                metadata |= {"beaten_by": str(fate.beaten_by), "p_value": metric_value(fate.p_value or 0.0)}
            context.log_event(dg.AssetMaterialization("search_race", partition=key, metadata=metadata))
        for fate in report.eliminated:
            instance.delete_dynamic_partition(SEARCH_CANDIDATE, fate.key)
        context.log.info(
            f"round {report.round.number}: {len(report.round.questions)} questions, {len(report.racing)} "
            f"racing, {len(report.eliminated)} eliminated"
        )

    rewriter = None
    if any(settings.retrieval.query_rewrite):
        client = required_llm_client(
            project, llm, "data/search.yaml rewrites queries", "set retrieval.query_rewrite: [false]"
        )
        rewriter = LLMQueryRewriter(
            client, DEFAULT_QUERY_REWRITE_PROMPT, step_settings(project, GenerationSettings).llm.budget_usd
        )
    with input_errors_fail_the_step():
        outcome = run_search(
            corpus_from_frame(corpus),
            questions_from_frame(eval_questions).examples,
            settings,
            objective=leaderboard.column,
            tier_alpha=leaderboard.alpha,
            embedder=embedder.get(progress),
            store=qdrant.get(progress, context.log),
            warehouse=warehouse.layout(),
            reranker_for=project.reranker,
            rewriter=rewriter,
            root=project.files().root,
            progress=progress,
            on_start=on_start,
            on_round=on_round,
        )
    race = outcome.race
    for key, fate in race.fates.items():  # the survivors' last standing; only the winning tier stays
        if fate.status in ("tier", "survived"):
            context.log_event(
                dg.AssetMaterialization(
                    "search_race",
                    partition=key,
                    metadata={
                        "status": f"tier {fate.tier}"
                        if fate.status == "tier"
                        else "survived (not confirmed)",
                        "mean": metric_value(fate.mean),
                        "n_questions": fate.n_questions,
                        "whole_corpus": fate.status == "tier",
                    },
                )
            )
            if fate.status == "tier" and fate.tier != 1:  # told apart from the winner on the whole corpus
                instance.delete_dynamic_partition(SEARCH_CANDIDATE, key)
    frame = with_columns(outcome.candidates_frame(), run_id=context.run.run_id, created_at=now_utc())
    warehouse.layout().write_history(
        frame, SEARCH_CANDIDATES, {"search": outcome.search_id}, context.run.run_id
    )
    texts_saved, queries_saved = outcome.saved()
    text = format_outcome(outcome)
    return dg.MaterializeResult(
        value=frame,
        metadata={
            "search_id": outcome.search_id,
            "status": race.status,
            "stopped_because": race.stopped_because,
            "objective": outcome.objective,
            "n_candidates": len(outcome.candidates),
            "winning_tier": ", ".join(outcome.winning_tier) or "none",
            "winners": ", ".join(outcome.winners) or "none",
            "pareto_front": ", ".join(outcome.front()) or "none",
            "eliminated": sum(1 for f in race.fates.values() if f.status == "eliminated"),
            "texts_indexed": race.spend.texts_indexed,
            "texts_embedded": race.spend.texts_embedded,
            "grid_texts": outcome.grid.texts,
            "queries": race.spend.queries,
            "grid_queries": outcome.grid.queries,
            "texts_saved": metric_value(texts_saved),
            "queries_saved": metric_value(queries_saved),
            "llm_usd": metric_value(race.spend.llm_usd),
            "seconds": metric_value(race.spend.seconds),
            "resumed_units": outcome.resumed_units,
            "outcome": dg.MetadataValue.md(f"```\n{text}\n```"),
            "outcome_text": text,
        },
    )
