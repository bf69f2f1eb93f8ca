"""search_outcome (and the search_race partitions it materializes) on the bundled demo documents and
golden questions with the hashing embedder and embedded Qdrant under tmp_path: top 1 is planted to lose
(recall over k chunks of one ranking only grows with k), leaves the partition set and keeps its race in
the event log; the last search's winner makes way. The slow twin (test_search_assets.py) runs MiniLM."""

from __future__ import annotations

from pathlib import Path

import dagster as dg
import pandas as pd

from rag_eval_pipeline.core.corpus.corpus import Corpus
from rag_eval_pipeline.core.questions.datasets import read_token_level_jsonl
from rag_eval_pipeline.core.search.store import SEARCH_CANDIDATES, SEARCH_SCORES
from rag_eval_pipeline.core.store.warehouse import Warehouse
from rag_eval_pipeline.core.tables import corpus_to_frame, questions_to_frame
from rag_eval_pipeline.defs.search.assets import search_outcome, search_race
from rag_eval_pipeline.lib.partitions import SEARCH_CANDIDATE
from rag_eval_pipeline_tests.defs.conftest import hashing_resources
from rag_eval_pipeline_tests.defs.frames import FramesIOManager

REPO = Path(__file__).resolve().parents[3]
SPACE = """\
chunking: {chunker: [recursive], chunk_size: [200], overlap: [0]}
retrieval: {top_k: [1, 5, 10], keyword_weight: [0]}
racing: {first_sample: 20, growth: 2.0}
"""
OBJECTIVE = "leaderboard: {rank_by: span_recall, context_budget_tokens: null}\n"
K1, K5, K10 = (f"recursive-200-0-cl100k--k{k}-kw0" for k in (1, 5, 10))


def race_statuses(instance: dg.DagsterInstance, candidate: str) -> list[str]:
    records = instance.fetch_materializations(
        dg.AssetRecordsFilter(asset_key=search_race.key, asset_partitions=[candidate]), limit=10
    ).records
    return [str(r.asset_materialization.metadata["status"].value) for r in records if r.asset_materialization]


def test_the_losing_candidate_leaves_the_race_and_the_outcome_says_who_won(tmp_path: Path) -> None:
    project = tmp_path / "project"
    (project / "data").mkdir(parents=True)
    (project / "data/search.yaml").write_text(SPACE, encoding="utf-8")
    (project / "data/monitoring.yaml").write_text(OBJECTIVE, encoding="utf-8")
    corpus = Corpus.from_folder(REPO / "data/corpus")
    dataset = read_token_level_jsonl(REPO / "data/datasets/golden_token_level.jsonl", corpus)
    io_manager = FramesIOManager(
        {"corpus": corpus_to_frame(corpus), "eval_questions": questions_to_frame(dataset)}
    )
    with dg.DagsterInstance.ephemeral() as instance:
        instance.add_dynamic_partitions(SEARCH_CANDIDATE, ["an-older-search--k3"])  # a last search's winner
        result = dg.materialize(
            [search_outcome, search_race, dg.AssetSpec("corpus"), dg.AssetSpec("eval_questions")],
            resources={**hashing_resources(project, tmp_path), "io_manager": io_manager},
            instance=instance,
            selection=[search_outcome.key],
        )
        racing = sorted(instance.get_dynamic_partitions(SEARCH_CANDIDATE))
        k1_race = race_statuses(instance, K1)
    frame = io_manager.outputs["search_outcome"]
    assert isinstance(frame, pd.DataFrame)
    fates = frame.set_index("candidate")
    assert sorted(fates.index) == sorted([K1, K5, K10])
    assert fates.loc[K1, "fate"] == "eliminated" and fates.loc[K1, "beaten_by"] in (K5, K10)
    assert fates.loc[K1, "n_questions"] < len(dataset)  # left before the last round
    assert K1 not in racing and "an-older-search--k3" not in racing and racing  # the winning tier stays
    assert "eliminated" in k1_race and "racing" in k1_race
    (outcome,) = [
        m
        for m in result.asset_materializations_for_node("search_outcome")
        if m.asset_key == search_outcome.key
    ]
    metadata = {k: v.value for k, v in outcome.metadata.items()}
    assert metadata["n_candidates"] == 3 and metadata["eliminated"] >= 1
    assert K1 not in str(metadata["winning_tier"]) and str(metadata["winners"]) in (K5, K10)
    warehouse = Warehouse(tmp_path / "warehouse")
    scores = pd.read_parquet(warehouse.history_table_dir(SEARCH_SCORES))
    assert len(scores) == metadata["queries"]  # a row per query paid
    assert scores.loc[scores["candidate"] == K1, "question_id"].nunique() == fates.loc[K1, "n_questions"]
    assert set(pd.read_parquet(warehouse.history_table_dir(SEARCH_CANDIDATES))["candidate"]) == {K1, K5, K10}
