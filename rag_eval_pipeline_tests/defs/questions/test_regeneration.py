"""Regenerating the synthetic questions of one document through Dagster (the run `rag-eval
regenerate-questions --document` makes: the ingestion job tagged with the documents), against the real
`openai` client and a scripted local server that counts every prompt: only the regenerated document is
asked about, the other documents' questions are kept as they were, and a kept question that no longer
matches its edited document is refused with the remedy."""

from pathlib import Path

import pandas as pd
import pytest

from rag_eval_pipeline.core.corpus.corpus import Corpus
from rag_eval_pipeline.core.generation.llm_token_level import plan_tasks
from rag_eval_pipeline.core.generation.regeneration import GENERATED_RUN_ID
from rag_eval_pipeline.definitions import build_definitions
from rag_eval_pipeline.lib.evaluation_runs import regenerate_tags
from rag_eval_pipeline.lib.resources import LLMResource
from rag_eval_pipeline.runner.run_failures import failure_of_result
from rag_eval_pipeline_tests.conftest import tiny_resources
from rag_eval_pipeline_tests.core.generation.scripted_llm import (
    DOCUMENT,
    first_user_message,
    token_level_reply,
)
from rag_eval_pipeline_tests.instances import instance_for_tests
from rag_eval_pipeline_tests.openai_server import openai_server

pytestmark = pytest.mark.slow

STAFF = "beta/staff.md"
GENERATION = (
    "evaluate_on: synthetic\n"
    "token_level: {generator: llm, questions_per_document: 2, cross_document_pairs: 1, retrievability_top_n: 0}\n"
    "llm: {budget_usd: 1.0}\n"
)


def accepted(table: pd.DataFrame) -> pd.DataFrame:
    return table[table["status"] == "accepted"].set_index("question_id")


def about(table: pd.DataFrame, doc_id: str) -> pd.Series:
    return table["relevant_spans"].map(lambda spans: any(s["doc_id"] == doc_id for s in spans))


def test_one_documents_questions_are_regenerated_and_every_other_question_is_kept(
    tiny_project: Path, tmp_path: Path
) -> None:
    (tiny_project / "data/generation.yaml").write_text(GENERATION, encoding="utf-8")
    cache = tmp_path / "llm.sqlite"
    with openai_server() as (url, script):
        script.responder = token_level_reply
        resources = tiny_resources(tiny_project, tmp_path)
        resources["llm"] = LLMResource(openai_api_key="sk-test", openai_base_url=url, cache_path=str(cache))
        job = build_definitions(resources).resolve_job_def("ingestion_job")
        with instance_for_tests() as instance:
            first = job.execute_in_process(instance=instance, tags=regenerate_tags())
            before = first.output_for_node("synthetic_questions")
            asked_first = len(script.chat_requests)

            # the staff page is edited; its questions are regenerated, the others' must not be
            staff = tiny_project / "data/corpus" / STAFF
            staff.write_text(
                staff.read_text(encoding="utf-8")
                + "\nThe night shift hands over at 06:15 in the control room.\n",
                encoding="utf-8",
            )
            cache.unlink()  # nothing is answered from the cache: every prompt reaches the server
            second = job.execute_in_process(instance=instance, tags=regenerate_tags([STAFF]))
            after = second.output_for_node("synthetic_questions")
            asked = [first_user_message(body) for body in script.chat_requests[asked_first:]]
            evaluated = second.output_for_node("eval_questions")

    # counted: the prompts of a whole generation, then only those that show the staff page
    corpus = Corpus.from_folder(tiny_project / "data/corpus")
    tasks = plan_tasks(corpus, 2, 1, 12_000)
    staff_tasks = [t for t in tasks if STAFF in t.doc_ids]
    assert asked_first == len(tasks) > len(staff_tasks) == len(asked) >= 1
    assert all(STAFF in [doc for doc, _ in DOCUMENT.findall(prompt)] for prompt in asked)

    old, new = accepted(before), accepted(after)
    kept_ids = old.index[~about(old, STAFF)]
    assert len(kept_ids) > 0
    assert set(kept_ids) <= set(new.index)  # every other question is still there, unchanged
    for column in ("query", "metadata_json", "generator"):
        assert new.loc[kept_ids, column].equals(old.loc[kept_ids, column])
    assert [list(s) for s in new.loc[kept_ids, "relevant_spans"]] == [
        list(s) for s in old.loc[kept_ids, "relevant_spans"]
    ]
    assert set(new.loc[kept_ids, GENERATED_RUN_ID]) == {first.run_id}  # and says which run made it
    assert set(after["run_id"]) == {second.run_id}  # the table was written by the second run
    regenerated = new[about(new, STAFF)]
    assert len(regenerated) > 0 and set(regenerated[GENERATED_RUN_ID]) == {second.run_id}
    text = corpus[STAFF].text
    for spans in regenerated["relevant_spans"]:  # anchored in the edited page
        assert all(text[s["start"] : s["end"]] == s["text"] for s in spans if s["doc_id"] == STAFF)
    # rejected rows of the other documents are kept too (the scripted 'Valves' quote is not in its text)
    rejected = after[after["status"] == "rejected"]
    assert "Who painted the valves?" in set(rejected["query"])
    assert set(rejected.loc[rejected["query"] == "Who painted the valves?", GENERATED_RUN_ID]) == {
        first.run_id
    }

    meta = {
        k: v.value
        for k, v in second.asset_materializations_for_node("synthetic_questions")[0].metadata.items()
    }
    assert meta["regenerated_documents"] == [STAFF]
    assert meta["questions_kept"] == len(kept_ids) and meta["questions_generated"] == len(regenerated)
    assert meta["llm_calls"] == len(staff_tasks)
    assert len(evaluated) == len(new)  # the evaluation uses the kept and the new questions


def test_a_kept_question_whose_document_changed_or_an_unknown_document_is_refused(
    tiny_project: Path, tmp_path: Path
) -> None:
    (tiny_project / "data/generation.yaml").write_text(
        "evaluate_on: synthetic\ntoken_level: {n_questions: 6, passage_min_chars: 40, retrievability_top_n: 0}\n",
        encoding="utf-8",
    )
    job = build_definitions(tiny_resources(tiny_project, tmp_path)).resolve_job_def("ingestion_job")
    with instance_for_tests() as instance:
        nothing_yet = job.execute_in_process(
            instance=instance, tags=regenerate_tags([STAFF]), raise_on_error=False
        )
        first = job.execute_in_process(instance=instance, tags=regenerate_tags())
        table = first.output_for_node("synthetic_questions")
        valves = tiny_project / "data/corpus/alpha/valves.md"
        valves.write_text(valves.read_text(encoding="utf-8").replace("March", "April"), encoding="utf-8")
        stale = job.execute_in_process(instance=instance, tags=regenerate_tags([STAFF]), raise_on_error=False)
        unknown = job.execute_in_process(
            instance=instance, tags=regenerate_tags(["beta/nope.md"]), raise_on_error=False
        )
    assert about(accepted(table), "alpha/valves.md").any()  # valves.md had questions to keep
    for result, message in (
        (nothing_yet, "there are no synthetic questions to keep yet"),
        (stale, "the synthetic questions of alpha/valves.md no longer match the corpus"),
        (unknown, "cannot regenerate the questions of beta/nope.md: not a document of the corpus"),
    ):
        failure = failure_of_result(result)
        assert not result.success and failure.bad_input and message in failure.message, failure
    assert "--document alpha/valves.md" in failure_of_result(stale).message
