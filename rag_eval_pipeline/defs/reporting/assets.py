"""The leaderboard over every evaluated partition, and the HTML report beside it."""

import dagster as dg
import pandas as pd

from ...core.diagnostics.table import summaries_frame
from ...core.errors import InputError, StorageError
from ...core.generation.settings import GenerationSettings
from ...core.judging.store import JudgingStore
from ...core.judging.summary import JudgingSummary, judging_summary
from ...core.leaderboard.board import build_board
from ...core.leaderboard.pareto import front_names
from ...core.leaderboard.render_html import write_report
from ...core.leaderboard.render_judging import judging_markdown
from ...core.leaderboard.render_markdown import leaderboard_markdown, recommendation_markdown
from ...core.leaderboard.render_table import board_table
from ...core.leaderboard.render_waterfall import diagnostics_markdown
from ...core.leaderboard.view import board_facts, footnotes
from ...core.llm.accounting import PriceTable
from ...core.settings.monitoring_settings import MonitoringSettings
from ...lib.freshness import READS_LEADERBOARD_SETTINGS, READS_SETUPS
from ...lib.io_managers import WarehouseResource, warehouse_writes
from ...lib.metric_metadata import table_value, with_metric_values
from ...lib.provenance import now_utc, with_columns
from ...lib.resources import ProjectResource
from ...lib.step_inputs import configured_names, step_settings
from ...lib.step_redaction import redacts_secrets


@dg.asset(
    group_name="reporting",
    ins={
        "retrieval_metrics": dg.AssetIn(metadata={"allow_missing_partitions": True}),
        "answer_metrics": dg.AssetIn(metadata={"allow_missing_partitions": True}),
        "retrieval_diagnostics": dg.AssetIn(metadata={"allow_missing_partitions": True}),
    },
    deps=[*READS_SETUPS, *READS_LEADERBOARD_SETTINGS],
    kinds={"python", "parquet"},
)
@redacts_secrets
def leaderboard(
    context: dg.AssetExecutionContext,
    project: ProjectResource,
    warehouse: WarehouseResource,
    retrieval_metrics: dict[str, pd.DataFrame],
    answer_metrics: dict[str, pd.DataFrame],
    answer_judgements: pd.DataFrame,
    retrieval_diagnostics: dict[str, pd.DataFrame],
    question_set_health: pd.DataFrame,
) -> dg.Output[pd.DataFrame]:
    """The latest metrics of every evaluated partition, ranked by the objective of data/monitoring.yaml
    (leaderboard; by default span recall at a 1,000-token context budget) with statistical tiers and a
    recommendation (core/leaderboard/recommendation.py), with bootstrap 95% CIs;
    the answer columns (keyword, semantic, hybrid, production metrics, and the LLM judge for the pairs
    it judged) where answers were evaluated. Also an HTML report (table, recall vs precision scatter,
    trends from history/retrieval_metrics_summary, a waterfall per partition of where it loses its
    reference text, from `retrieval_diagnostics`, and the question set's health, from
    `question_set_health`, and, when the workspace judged real queries, the judging: queries judged,
    stale judgements, agreement per pair of judges, from data/judging and the documents as they are now):
    `reports/leaderboard.html` and `reports/history/{run_id}.html`.
    Partitions of a removed chunk config or profile, and rows on other questions or in another mode than
    most, are listed, not ranked (core/leaderboard/ranking.py says the rule)."""
    configured = configured_names(project, context.log)
    objective = step_settings(
        project, MonitoringSettings
    ).leaderboard  # a bad value fails the step naming file and key
    prices = PriceTable().with_overrides(step_settings(project, GenerationSettings).llm.prices)
    board = build_board(retrieval_metrics, answer_metrics, answer_judgements, configured, objective, prices)
    if board is None:
        raise dg.Failure(
            "no retrieval_metrics partition has been materialized yet: evaluate a partition first"
        )
    board = with_columns(board, run_id=context.run.run_id, created_at=now_utc())
    for line in footnotes(board):
        context.log.info(f"leaderboard: {line}")
    with warehouse_writes():  # a full or read-only disk fails the step naming the file
        diagnostics = summaries_frame(retrieval_diagnostics)  # why each setup misses
        # the question set's health: its section of the report (none before the asset existed)
        health = (
            {str(k): v for k, v in question_set_health.iloc[0].items()} if len(question_set_health) else None
        )
        judging = workspace_judging(project, context.log)  # None: no judgements in this workspace
        report = write_report(
            board,
            warehouse.layout(),
            context.run.run_id,
            diagnostics=diagnostics,
            health=health,
            judging=judging,
        )
    for problem in report.problems:
        context.log.warning(problem)
    snapshot, current = report.paths.snapshot.resolve(), report.paths.current.resolve()
    return dg.Output(
        board,
        metadata={
            # its size, the best pair, what its questions can detect (power_*: core/leaderboard/power.py),
            # and what the board cannot vouch for (removed, not comparable)
            **with_metric_values(board_facts(board)),
            # which setup to pick: the best by the objective, its statistical tier and the power behind it, a
            # cheaper tied one, its costs; and the setups no other beats on both the objective and context
            "recommendation": dg.MetadataValue.md(recommendation_markdown(board)),
            "pareto_front": front_names(board),
            # the board as a table the UI shows inline (rounded, CIs as text); the same as markdown to copy
            "leaderboard": table_value(board_table(board)),
            "leaderboard_markdown": dg.MetadataValue.md(leaderboard_markdown(board)),
            # this materialization's report (kept); reports/leaderboard.html is always the latest
            "report": dg.MetadataValue.url(snapshot.as_uri()),
            "report_path": dg.MetadataValue.path(str(snapshot)),
            "report_latest_path": dg.MetadataValue.path(str(current)),
            # where each setup loses its reference text, stage by stage, and the oracle bounds
            "diagnostics": dg.MetadataValue.md(diagnostics_markdown(diagnostics, board)),
            # the judging of real queries, as the report's section shows it (only where there is one)
            **({"judgements": dg.MetadataValue.md(judging_markdown(judging))} if judging else {}),
        },
    )


def workspace_judging(project: ProjectResource, log: dg.DagsterLogManager) -> JudgingSummary | None:
    """The judging of the workspace's real queries (core/judging/summary.py): its judging store
    (ProjectFiles.judging_dir) against the documents as they are now, loaded only when a judgement was
    stored. A judging file or document that does not read costs the report its section, not the
    leaderboard: the step warns with the file, the line and what to do."""
    files = project.files()
    try:
        return judging_summary(JudgingStore(files.path(files.judging_dir)), project.load_corpus)
    except (InputError, StorageError) as exc:
        log.warning(f"the report has no Judgements section: {exc}")
        return None
