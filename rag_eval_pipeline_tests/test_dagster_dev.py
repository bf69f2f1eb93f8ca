"""`dagster dev` serves the project's assets in the UI (its GraphQL API answers what the UI shows)."""

import os
from pathlib import Path

import pytest

from rag_eval_pipeline_tests.dagster_dev import graphql, running_dagster_dev

pytestmark = pytest.mark.slow


def test_dagster_dev_shows_the_assets(tiny_project: Path):
    env = {k: v for k, v in os.environ.items() if k != "DAGSTER_HOME"}
    env["RAG_EVAL_PROJECT_DIR"] = str(tiny_project)
    with running_dagster_dev(tiny_project, env=env) as url:
        nodes = graphql(url, "{ assetNodes { assetKey { path } groupName } }")["data"]["assetNodes"]
        shown = {tuple(n["assetKey"]["path"]): n["groupName"] for n in nodes}
        assert shown == {
            ("corpus",): "ingestion",
            ("synthetic_questions",): "ingestion",
            ("eval_questions",): "ingestion",
            ("answer_calibration",): "ingestion",
            ("chunks",): "chunking",
            ("chunk_index",): "chunking",
            ("chunk_level_questions",): "chunking",
            ("retrieval_results",): "evaluation",
            ("retrieval_metrics",): "evaluation",
            ("answers",): "evaluation",
            ("answer_metrics",): "evaluation",
            ("answer_judgements",): "reporting",
            ("leaderboard",): "reporting",
        }
        assert (tiny_project / ".dagster" / "storage").is_dir()  # the root dagster.yaml was used
