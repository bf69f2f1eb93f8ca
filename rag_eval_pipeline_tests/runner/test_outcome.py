"""What an evaluation's outcome says: which runs did not start because a run they need failed, the exact
counts, and the exit code (2 when a failure is bad input)."""

from pathlib import Path

from rag_eval_pipeline.core.project.project_files import ProjectFiles
from rag_eval_pipeline.core.runs.run_tags import PLAN_CHUNK_CONFIGS_TAG
from rag_eval_pipeline.runner.outcome import EvaluationOutcome, RunOutcome, blocked_reason
from rag_eval_pipeline.runner.plan import EvaluationRequest, plan_main_job
from rag_eval_pipeline.runner.run_failures import RunFailure


def test_runs_that_need_what_failed_do_not_start_and_the_outcome_counts_them(tiny_project: Path) -> None:
    configs = ProjectFiles(tiny_project).load_configs()
    plan = plan_main_job(configs, None, ["top2"])
    ingestion, chunk_fixed, chunk_recursive, eval_fixed, eval_recursive, board = plan
    bad_config = RunFailure("chunk config 'recursive-120-20': unknown chunker", bad_input=True)
    done = [
        RunOutcome(ingestion, "succeeded", "r1"),
        RunOutcome(chunk_fixed, "succeeded", "r2"),
        RunOutcome(chunk_recursive, "failed", "r3", bad_config),
    ]
    assert blocked_reason(eval_fixed, done) == ""
    assert blocked_reason(eval_recursive, done) == "chunking recursive-120-20 failed"
    done += [
        RunOutcome(eval_fixed, "failed", "r4", RunFailure("OSError: [Errno 28] No space left on device")),
        RunOutcome(eval_recursive, "not run", blocked_by="chunking recursive-120-20 failed"),
    ]
    assert blocked_reason(board, done) == "no evaluation run succeeded"
    assert blocked_reason(board, done, evaluated_before=True) == ""  # a resume: earlier ones did
    outcome = EvaluationOutcome(
        EvaluationRequest.of_plan(plan, "eval-x", "full", None),
        (*done, RunOutcome(board, "not run", blocked_by="no evaluation run succeeded")),
    )
    assert outcome.counts() == "6 runs planned, 4 ran (2 succeeded, 2 failed), 2 not run"
    assert outcome.not_run_lines() == [
        "chunking recursive-120-20 failed, so 1 run did not start: evaluate recursive-120-20 x top2",
        "no evaluation run succeeded, so 1 run did not start: leaderboard",
    ]
    assert outcome.exit_code == 2  # one failure is bad input
    assert EvaluationOutcome(outcome.request, (done[0], done[1], done[3])).exit_code == 1
    assert outcome.request.tags()[PLAN_CHUNK_CONFIGS_TAG] == "fixed-60-0,recursive-120-20"
    assert EvaluationRequest.of_tags(outcome.request.tags()) == outcome.request
