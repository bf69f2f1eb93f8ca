"""Every way out of the process goes through core/redaction.py: what a step hands to Dagster (metadata,
check results, failures, log lines), with every asset, check and op wrapped, and the table writers."""

import json
from collections.abc import Iterator
from pathlib import Path

import dagster as dg
import pandas as pd
import pytest

from rag_eval_pipeline.core.questions.datasets import TokenLevelDataset, TokenLevelExample, write_jsonl
from rag_eval_pipeline.core.store.warehouse import Warehouse
from rag_eval_pipeline.core.types import CharacterSpan, DocumentId, QuestionId
from rag_eval_pipeline.definitions import defs
from rag_eval_pipeline.lib.step_redaction import redacts_secrets, step_redacts_secrets
from rag_eval_pipeline_tests.instances import instance_for_tests

KEY = "sk-proj-Tq7Wm2Xc9Vb4Nz1Lk8Jh5Gf3Ds6Ap0"
MARK = "[redacted OPENAI_API_KEY]"


def test_every_asset_check_and_op_of_the_project_redacts_what_it_hands_to_dagster():
    """Fails when someone adds an asset, check or op without ``@redacts_secrets`` under its decorator."""
    ops = {
        node.name: node
        for job in defs().resolve_all_job_defs()
        for node in job.all_node_defs
        if isinstance(node, dg.OpDefinition)
    }
    assert {"answers", "leaderboard", "apply_history_retention"} <= set(ops)  # assets, checks and ops alike
    assert len(ops) >= 16
    bypassing = sorted(name for name, op in ops.items() if not step_redacts_secrets(op))
    assert bypassing == [], f"add @redacts_secrets under the decorator of {bypassing}"


@dg.asset
@redacts_secrets
def leaky(context: dg.AssetExecutionContext) -> dg.Output[int]:
    context.log.info(f"the gateway said: Incorrect API key provided: {KEY}")
    return dg.Output(
        1,
        metadata={
            "reason": f"refused: {KEY}",
            "detail": dg.MetadataValue.md(f"**{KEY[:16]}**"),
            "body": dg.MetadataValue.json({"error": {"message": KEY}}),
            "n": 3,
        },
    )


@dg.asset_check(asset=leaky)
@redacts_secrets
def leaky_check() -> dg.AssetCheckResult:
    return dg.AssetCheckResult(passed=False, description=f"saw {KEY}", metadata={"seen": KEY})


@dg.asset
@redacts_secrets
def failing() -> None:
    try:
        raise ValueError(f"401 Incorrect API key provided: {KEY}")
    except ValueError as exc:
        raise dg.Failure(f"the call failed: {exc}", metadata={"server": str(exc)}) from exc


def test_metadata_check_results_failures_and_log_lines_reach_the_event_log_redacted(
    monkeypatch: pytest.MonkeyPatch,
):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    with instance_for_tests() as instance:
        done = dg.materialize([leaky, leaky_check], instance=instance)
        broken = dg.materialize([failing], instance=instance, raise_on_error=False)
        assert done.success and not broken.success
        stored = [
            entry.user_message + (dg.serialize_value(entry.dagster_event) if entry.dagster_event else "")
            for run in (done, broken)
            for entry in instance.all_logs(run.run_id)
        ]
    everything = "\n".join(stored)
    assert KEY[:12] not in everything and KEY[-12:] not in everything
    metadata = {k: v.value for k, v in done.asset_materializations_for_node("leaky")[0].metadata.items()}
    assert metadata["reason"] == f"refused: {MARK}" and metadata["detail"] == f"**{MARK}**"
    assert metadata["body"] == {"error": {"message": MARK}} and metadata["n"] == 3
    (evaluation,) = done.get_asset_check_evaluations()
    assert evaluation.description == f"saw {MARK}" and evaluation.metadata["seen"].value == MARK
    failure = next(e for e in broken.all_events if e.is_step_failure).step_failure_data
    assert failure.error is not None and f"Incorrect API key provided: {MARK}" in failure.error.message
    assert failure.user_failure_data is not None
    assert failure.user_failure_data.description == f"the call failed: 401 Incorrect API key provided: {MARK}"
    assert f"Incorrect API key provided: {MARK}" in everything  # the log line, redacted, not dropped


@dg.multi_asset(specs=[dg.AssetSpec("first"), dg.AssetSpec("second")])
@redacts_secrets
def yielding() -> Iterator[dg.MaterializeResult]:
    yield dg.MaterializeResult(asset_key="first", metadata={"said": f"key {KEY}"})
    yield dg.MaterializeResult(asset_key="second", metadata={"said": "fine"})


@dg.multi_asset(specs=[dg.AssetSpec("third")])
@redacts_secrets
def yielding_then_failing() -> Iterator[dg.MaterializeResult]:
    yield dg.MaterializeResult(asset_key="third")
    raise ValueError(f"401 Incorrect API key provided: {KEY}")


def test_a_yielding_body_has_each_result_and_its_failure_redacted(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    with instance_for_tests() as instance:
        done = dg.materialize([yielding], instance=instance)
        broken = dg.materialize([yielding_then_failing], instance=instance, raise_on_error=False)
    materializations = [e.materialization for e in done.get_asset_materialization_events()]
    said = {m.asset_key.path[0]: m.metadata["said"].value for m in materializations}
    assert said == {"first": f"key {MARK}", "second": "fine"}
    failure = next(e for e in broken.all_events if e.is_step_failure).step_failure_data
    assert failure.error is not None
    error = failure.error.to_string()
    assert KEY[:12] not in error and f"Incorrect API key provided: {MARK}" in error


def test_the_wrapper_refuses_a_coroutine():
    async def coroutine() -> int:
        return 1

    with pytest.raises(TypeError, match="plain functions and generators"):
        redacts_secrets(coroutine)


def test_the_table_writers_redact_what_they_write(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    frame = pd.DataFrame({"detail": [f"401: {KEY}", "fine"], "raw": [[KEY[:14]], []], "n": [1, 2]})
    w = Warehouse(tmp_path)
    w.write_table(frame, "answers", {}, "r1")
    for path in (w.current_path("answers"), w.history_path("answers", {}, "r1")):
        back = pd.read_parquet(path)
        assert back["detail"].tolist() == [f"401: {MARK}", "fine"] and list(back["raw"][0]) == [MARK]
    assert frame["detail"][0] == f"401: {KEY}"  # the caller's frame is left alone

    span = CharacterSpan(DocumentId("a.md"), 0, 4, "text")
    example = TokenLevelExample(QuestionId("q1"), "a question", (span,), {"raw": f"echo {KEY}"})
    write_jsonl(TokenLevelDataset((example,)), tmp_path / "set.jsonl")
    (line,) = (tmp_path / "set.jsonl").read_text(encoding="utf-8").splitlines()
    assert KEY[:12] not in line and json.loads(line)["metadata"]["raw"] == f"echo {MARK}"
