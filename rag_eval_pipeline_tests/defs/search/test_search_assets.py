"""The search through Dagster on the bundled demo documents and golden questions (real MiniLM, real
embedded Qdrant): candidates are partitions while they race, an eliminated one leaves the partition set
and keeps its history, the winning tier stays."""

from __future__ import annotations

from pathlib import Path

import dagster as dg
import pandas as pd
import pytest

from rag_eval_pipeline.core.corpus.corpus import Corpus
from rag_eval_pipeline.core.questions.datasets import read_token_level_jsonl
from rag_eval_pipeline.core.search.store import SEARCH_CANDIDATES, SEARCH_SCORES
from rag_eval_pipeline.core.store.warehouse import Warehouse
from rag_eval_pipeline.core.tables import corpus_to_frame, questions_to_frame
from rag_eval_pipeline.defs.search.assets import search_outcome, search_race
from rag_eval_pipeline.lib.partitions import SEARCH_CANDIDATE
from rag_eval_pipeline_tests.conftest import tiny_resources
from rag_eval_pipeline_tests.defs.frames import FramesIOManager
from rag_eval_pipeline_tests.instances import instance_for_tests

pytestmark = pytest.mark.slow  # the real embedding model

REPO = Path(__file__).resolve().parents[3]
# One chunk config and three k: recall over k chunks can only grow with k on the same ranking, so k = 1
# is planted to lose; span recall over k chunks, not at a budget (where k would not matter)
SPACE = """\
chunking: {chunker: [recursive], chunk_size: [200], overlap: [0]}
retrieval: {top_k: [1, 5, 10], keyword_weight: [0]}
racing: {first_sample: 20, growth: 2.0}
"""
OBJECTIVE = "leaderboard: {rank_by: span_recall, context_budget_tokens: null}\n"


def demo_inputs() -> dict[str, pd.DataFrame]:
    corpus = Corpus.from_folder(REPO / "data/corpus")
    dataset = read_token_level_jsonl(REPO / "data/datasets/golden_token_level.jsonl", corpus)
    return {"corpus": corpus_to_frame(corpus), "eval_questions": questions_to_frame(dataset)}


def test_the_race_is_partitions_that_leave_when_eliminated(tmp_path: Path) -> None:
    project = tmp_path / "project"
    (project / "data").mkdir(parents=True)
    (project / "data/search.yaml").write_text(SPACE, encoding="utf-8")
    (project / "data/monitoring.yaml").write_text(OBJECTIVE, encoding="utf-8")
    resources = tiny_resources(project, tmp_path)
    io_manager = FramesIOManager(demo_inputs())
    with instance_for_tests() as instance:
        instance.add_dynamic_partitions(SEARCH_CANDIDATE, ["an-older-search--k3"])  # a last search's winner
        result = dg.materialize(
            [search_outcome, search_race, dg.AssetSpec("corpus"), dg.AssetSpec("eval_questions")],
            resources={**resources, "io_manager": io_manager},
            instance=instance,
            selection=[search_outcome.key],
        )
        assert result.success
        frame = io_manager.outputs["search_outcome"]
        assert isinstance(frame, pd.DataFrame)
        fates = frame.set_index("candidate")
        k1, k5, k10 = (f"recursive-200-0-cl100k--k{k}-kw0" for k in (1, 5, 10))
        assert fates.loc[k1, "fate"] == "eliminated" and fates.loc[k1, "beaten_by"] in (k5, k10)
        # three rounds (20, 40 and 80 questions: racing.max_sample), alpha split over them
        assert fates.loc[k1, "n_questions"] < 85 and fates.loc[k1, "p_value"] <= 0.05 / 3
        # k10 is confirmed on every question (racing.confirm: 1, the best of the race); k5 survived
        assert list(frame.loc[frame["tier"] == 1, "candidate"]) == [k10]
        assert fates.loc[k10, "n_questions"] == 85 and fates.loc[k5, "fate"] == "survived"
        assert fates.loc[k5, "n_questions"] == 80
        # the partition set is the winning tier, the survivors: the older search's winner and k1 left it
        assert sorted(instance.get_dynamic_partitions(SEARCH_CANDIDATE)) == [k10, k5]
        # k1's race stays in the event log though its partition is gone
        raced = instance.fetch_materializations(
            dg.AssetRecordsFilter(asset_key=dg.AssetKey("search_race"), asset_partitions=[k1]), limit=10
        ).records
        statuses = [
            r.asset_materialization.metadata["status"].value for r in raced if r.asset_materialization
        ]
        assert "eliminated" in statuses and statuses.count("racing") >= 1
        winner = instance.fetch_materializations(
            dg.AssetRecordsFilter(asset_key=dg.AssetKey("search_race"), asset_partitions=[k10]), limit=1
        ).records[0]
        assert winner.asset_materialization is not None
        assert winner.asset_materialization.metadata["status"].value == "tier 1"
        metadata = result.asset_materializations_for_node("search_outcome")
        outcome = next(m for m in metadata if m.asset_key == search_outcome.key).metadata
        assert outcome["n_candidates"].value == 3 and outcome["eliminated"].value >= 1
        queries = outcome["queries"].value
        assert "winning tier" in outcome["outcome_text"].value
        assert outcome["winning_tier"].value == f"{k10}, {k5}" and outcome["winners"].value == k10
        survivor = instance.fetch_materializations(
            dg.AssetRecordsFilter(asset_key=dg.AssetKey("search_race"), asset_partitions=[k5]), limit=1
        ).records[0]
        assert survivor.asset_materialization is not None
        assert survivor.asset_materialization.metadata["status"].value == "survived (not confirmed)"
    # the scores of every candidate, eliminated ones included, are search history in the warehouse
    warehouse = Warehouse(tmp_path / "warehouse")
    scores = pd.read_parquet(warehouse.history_table_dir(SEARCH_SCORES))
    assert set(scores["candidate"]) == {k1, k5, k10} and len(scores) == queries  # a row per query paid
    assert scores.loc[scores["candidate"] == k1, "question_id"].nunique() < 85  # k1 left early
    assert set(pd.read_parquet(warehouse.history_table_dir(SEARCH_CANDIDATES))["candidate"]) == {k1, k5, k10}
