"""`rag-eval run` skips what is up to date: a second evaluation with nothing changed runs nothing; an
edited profile re-runs only its partitions; an edited document re-runs what reads it; another mode
re-runs the evaluation runs only; ``force`` runs everything. Judged by Dagster's own code and data
versions (lib/freshness.py), so the sources appear as observed assets and each materialization records
what it read."""

import dagster as dg
import pytest

from rag_eval_pipeline.lib.freshness import RETRIEVAL_PROFILE_SETTINGS
from rag_eval_pipeline.runner.outcome import EvaluationOutcome
from rag_eval_pipeline_tests.conftest import TINY_DOCS, TINY_PROFILES, TinyRunFactory
from rag_eval_pipeline_tests.evaluations import evaluate_here

pytestmark = pytest.mark.slow


def ran(outcome: EvaluationOutcome) -> list[str]:
    assert not outcome.failures, outcome.failures
    return sorted(r.planned.label for r in outcome.runs if r.state == "succeeded")


def test_a_second_run_skips_what_is_up_to_date(tiny_run: TinyRunFactory) -> None:
    run = tiny_run()  # the first evaluation, over every partition, without failures
    tiny_project, resources = run.project, run.resources()
    with run.instance() as instance:

        def evaluate(**kwargs: object) -> EvaluationOutcome:
            return evaluate_here(instance, show_progress=False, resources=resources, **kwargs)  # type: ignore[arg-type]

        # the first evaluation ran everything: ingestion, 2 chunkings, 4 evaluations, the leaderboard
        first = instance.get_runs()
        assert len(first) == 1 + 2 + 4 + 1
        assert {r.status for r in first} == {dg.DagsterRunStatus.SUCCESS}
        # every asset of each job was stale: the runs are of the jobs as they are, with no selection
        assert [r.asset_selection for r in first] == [frozenset()] * len(first)

        runs_before = len(instance.get_runs())
        again = evaluate()
        assert ran(again) == []
        assert {r.state for r in again.runs} == {"up to date"}
        assert len(instance.get_runs()) == runs_before, "an up-to-date evaluation starts no Dagster run"
        assert "8 up to date" in again.counts()

        # one profile edited: only its two partitions, and the leaderboard that reads them
        profiles = tiny_project / "data/retrieval_profiles.yaml"
        profiles.write_text(TINY_PROFILES.replace("top_k: 4", "top_k: 3"), encoding="utf-8")
        edited = evaluate()
        assert ran(edited) == [
            "evaluate fixed-60-0 x top4",
            "evaluate recursive-120-20 x top4",
            "leaderboard",
        ]
        observed = instance.get_latest_data_version_record(
            RETRIEVAL_PROFILE_SETTINGS, True, partition_key="top4"
        )
        assert observed is not None, "the profile's new version is an observation of its source asset"

        # another mode: the evaluation runs again, chunking and ingestion do not
        quick = evaluate(mode="quick", sample_size=2)
        assert [label for label in ran(quick) if not label.startswith("evaluate")] == ["leaderboard"]
        assert len(ran(quick)) == 4 + 1

        # one document edited: the corpus changes, so everything that reads it runs
        doc_id, text = next(iter(TINY_DOCS.items()))
        (tiny_project / "data/corpus" / doc_id).write_text(
            text + "\n\nOne more sentence.\n", encoding="utf-8"
        )
        changed = evaluate(mode="quick", sample_size=2)
        assert "corpus and questions" in ran(changed)
        assert {"chunks + index fixed-60-0", "chunks + index recursive-120-20"} <= set(ran(changed))

        forced = evaluate(mode="quick", sample_size=2, force=True)
        assert len(ran(forced)) == len(forced.runs)
