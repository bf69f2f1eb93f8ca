"""`dagster dev` serves the project's assets in the UI (its GraphQL API answers what the UI shows)."""

import os
from pathlib import Path

import pytest

from rag_eval_pipeline_tests.dagster_dev import graphql, running_dagster_dev

pytestmark = pytest.mark.slow


def test_dagster_dev_shows_the_assets(tiny_project: Path):
    """Started with no arguments in the project root (`make ui`): pyproject.toml names the location."""
    env = {k: v for k, v in os.environ.items() if k != "DAGSTER_HOME"}
    env["RAG_EVAL_PROJECT_DIR"] = str(tiny_project)
    with running_dagster_dev(tiny_project, env=env) as url:
        query = "{ assetNodes { assetKey { path } groupName repository { name location { name } } } }"
        nodes = graphql(url, query)["data"]["assetNodes"]
        assert {n["repository"]["location"]["name"] for n in nodes} == {"rag_eval_pipeline"}
        shown = {tuple(n["assetKey"]["path"]): n["groupName"] for n in nodes}
        # grouped by the stage folder under defs/ that defines them
        assert shown == {
            ("corpus",): "ingestion",
            ("eval_questions",): "ingestion",
            ("synthetic_questions",): "questions",
            ("chunk_level_questions",): "questions",
            ("chunks",): "chunking",
            ("chunk_index",): "chunking",
            ("retrieval_results",): "evaluation",
            ("retrieval_metrics",): "evaluation",
            ("retrieval_diagnostics",): "evaluation",
            ("answer_calibration",): "answers",
            ("answers",): "answers",
            ("answer_metrics",): "answers",
            ("answer_judgements",): "answers",
            ("question_set_health",): "reporting",
            ("leaderboard",): "reporting",
            ("search_outcome",): "search",
            ("search_race",): "search",
            # what the pipeline reads from outside, observed (defs/ingestion/sources.py)
            ("documents",): "ingestion",
            ("project_settings",): "ingestion",
            ("chunk_config_settings",): "ingestion",
            ("retrieval_profile_settings",): "ingestion",
            ("configured_setups",): "ingestion",
            ("leaderboard_settings",): "ingestion",
        }
        assert (tiny_project / ".dagster" / "storage").is_dir()  # the root dagster.yaml was used
