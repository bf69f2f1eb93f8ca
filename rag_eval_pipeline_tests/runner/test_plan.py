"""The plan of `rag-eval run`: one run per job and partition, stage by stage, and the run config that
carries quick mode to the evaluation runs only."""

from pathlib import Path

import pytest

from rag_eval_pipeline.core.project.project_files import ProjectFiles
from rag_eval_pipeline.core.runs.run_tags import MULTI_PARTITION_TAG_PREFIX, PARTITION_TAG
from rag_eval_pipeline.runner.plan import plan_main_job, run_config_for


def test_plan_runs_stage_by_stage_and_only_evaluation_runs_get_the_mode(tiny_project: Path) -> None:
    configs = ProjectFiles(tiny_project).load_configs()
    plan = plan_main_job(configs, ["recursive-120-20"], None)
    assert [(r.job_name, r.partition_key) for r in plan] == [
        ("ingestion_job", None),
        ("chunking_job", "recursive-120-20"),
        ("evaluation_job", "recursive-120-20|top2"),
        ("evaluation_job", "recursive-120-20|top4"),
        ("leaderboard_job", None),
    ]
    assert plan[2].partition_tags() == {
        PARTITION_TAG: "recursive-120-20|top2",
        f"{MULTI_PARTITION_TAG_PREFIX}chunk_config": "recursive-120-20",
        f"{MULTI_PARTITION_TAG_PREFIX}profile": "top2",
    }
    assert plan[1].partition_tags() == {PARTITION_TAG: "recursive-120-20"}
    assert run_config_for(plan[2], "quick", 3) == {
        "resources": {"evaluation": {"config": {"mode": "quick", "sample_size": 3}}}
    }
    assert run_config_for(plan[1], "quick") == {}
    with pytest.raises(ValueError, match="unknown profile"):
        plan_main_job(configs, None, ["top2", "nope"])
