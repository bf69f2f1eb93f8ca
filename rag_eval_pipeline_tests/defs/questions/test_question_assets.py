"""Synthetic question assets on a real Dagster instance: the offline default, the LLM path through the
real `openai` client against a scripted local server (cache, usage, budget), and the dataset choice."""

import logging
from pathlib import Path

import dagster as dg
import pandas as pd
import pytest

from rag_eval_pipeline.core.corpus.corpus import Corpus
from rag_eval_pipeline.core.questions.datasets import read_chunk_level_jsonl, read_token_level_jsonl
from rag_eval_pipeline.core.store.warehouse import Warehouse
from rag_eval_pipeline.definitions import build_definitions
from rag_eval_pipeline.lib.resources import LLMResource
from rag_eval_pipeline_tests.conftest import tiny_resources
from rag_eval_pipeline_tests.core.generation.scripted_llm import token_level_reply
from rag_eval_pipeline_tests.instances import instance_for_tests
from rag_eval_pipeline_tests.openai_server import openai_server

pytestmark = pytest.mark.slow


def metadata_of(result: dg.ExecuteInProcessResult, asset: str) -> dict:
    (event,) = [e for e in result.get_asset_materialization_events() if e.asset_key == dg.AssetKey(asset)]
    return {k: v.value for k, v in event.materialization.metadata.items()}


def write_generation(project: Path, text: str) -> None:
    (project / "data" / "generation.yaml").write_text(text, encoding="utf-8")


def test_offline_default_makes_paraphrase_questions_and_evaluation_can_use_them(
    tiny_project: Path, tmp_path: Path
) -> None:
    write_generation(
        tiny_project, "evaluate_on: both\ntoken_level: {n_questions: 6, passage_min_chars: 40}\n"
    )
    defs = build_definitions(tiny_resources(tiny_project, tmp_path))
    with instance_for_tests() as instance:
        result = defs.resolve_job_def("ingestion_job").execute_in_process(instance=instance)
        generated = metadata_of(result, "synthetic_questions")
        evaluated = metadata_of(result, "eval_questions")
        questions = result.output_for_node("eval_questions")
        table = result.output_for_node("synthetic_questions")
    assert generated["generator"] == "paraphrase" and generated["model"] == "none"
    n = generated["n_questions"]
    assert 0 < n <= 6 and generated["n_rejected"] == len(table) - n
    # what each step removed: the generator's own checks, then each filter (retrievability off)
    removed = generated["removed_by_filter"]
    assert list(removed) == ["generator", "deduplicate", "retrievability"] and removed["retrievability"] == 0
    assert sum(removed.values()) == generated["n_rejected"]
    assert generated["filters"] == (
        f"generator (its own checks) {removed['generator']}, deduplicate (cosine >= 0.9) "
        f"{removed['deduplicate']}, retrievability (off) 0"
    )
    assert set(table["status"]) <= {"accepted", "rejected"}
    assert (table.loc[table["status"] == "rejected", "reason"] != "").all()
    assert evaluated["n_golden"] == 4 and evaluated["n_synthetic"] == n and len(questions) == 4 + n
    assert evaluated["evaluate_on"] == "both" and "off" in evaluated["langsmith"]
    corpus = Corpus.from_folder(tiny_project / "data" / "corpus")
    jsonl = read_token_level_jsonl(generated["jsonl"], corpus)  # every span valid against the corpus
    assert len(jsonl) == n and all(e.metadata["generator"] == "paraphrase-simulation" for e in jsonl)
    assert len(Warehouse(tmp_path / "warehouse").history_files("synthetic_questions")) == 1


def test_the_default_number_of_questions_follows_the_corpus_and_says_why(
    tiny_project: Path, tmp_path: Path
) -> None:
    """Issue 31: 40 questions were asked for whatever the corpus; now the count is chosen from it (three
    documents share min_questions) and the metadata says how many and why, before the filters."""
    write_generation(
        tiny_project,
        "evaluate_on: synthetic\ntoken_level: {passage_min_chars: 40, retrievability_top_n: 0}\n",
    )
    defs = build_definitions(tiny_resources(tiny_project, tmp_path))
    with instance_for_tests() as instance:
        result = defs.resolve_job_def("ingestion_job").execute_in_process(instance=instance)
        generated = metadata_of(result, "synthetic_questions")
        logged = [
            e.message
            for e in instance.all_logs(result.run_id)
            if e.message and e.message.startswith("asked for ")
        ]
    assert generated["questions_asked"] == 102 and generated["question_count_rule"] == "auto"
    planned = generated["questions_planned"]
    assert 0 < generated["n_questions"] <= planned < 102  # three short documents hold a few passages
    described = generated["question_count"]
    assert described.startswith("102 questions (n_questions: auto, between 100 and 500): ")
    assert f"in 3 documents, 3 with prose, 34 a document; their passages give {planned}" in described
    assert logged == [f"asked for {described}"]


def test_llm_generation_counts_usage_hits_the_cache_on_rerun_and_respects_the_budget(
    tiny_project: Path, tmp_path: Path
) -> None:
    write_generation(
        tiny_project,
        "evaluate_on: synthetic\n"
        "token_level: {generator: llm, cross_document_pairs: 1, retrievability_top_n: 0}\n"
        "llm: {budget_usd: 1.0}\n",
    )
    with openai_server() as (url, script):
        script.responder = token_level_reply
        script.faults = [(429, {"Retry-After": "0"}), (500, {})]
        resources = tiny_resources(tiny_project, tmp_path)
        resources["llm"] = LLMResource(
            openai_api_key="sk-test-secret", openai_base_url=url, cache_path=str(tmp_path / "llm.sqlite")
        )
        defs = build_definitions(resources)
        with instance_for_tests() as instance:
            first = defs.resolve_job_def("ingestion_job").execute_in_process(instance=instance)
            sent = len(script.chat_requests)
            again = defs.resolve_job_def("ingestion_job").execute_in_process(instance=instance)
            assert len(script.chat_requests) == sent  # the re-run paid for nothing
            write_generation(
                tiny_project,
                "evaluate_on: synthetic\ntoken_level: {generator: llm}\nllm: {budget_usd: 0.0001}\n",
            )
            Path(tmp_path / "llm.sqlite").unlink()
            refused = defs.resolve_job_def("ingestion_job").execute_in_process(
                instance=instance, raise_on_error=False
            )
            assert len(script.chat_requests) == sent  # refused before sending anything
    meta = metadata_of(first, "synthetic_questions")
    assert meta["generator"] == "llm" and meta["model"].startswith("openai:gpt-4o-mini@127.0.0.1")
    assert meta["llm_calls"] == 4 + 2 and meta["llm_retries"] == 2 and meta["llm_cache_hits"] == 0
    assert meta["llm_prompt_tokens"] > 0 and meta["llm_cost_usd"] > 0
    # 7 questions located, 1 with an excerpt not in its document; look-alike questions are duplicates
    reasons = meta["rejected_by_reason"]
    assert reasons["excerpt_not_found"] == 1 and set(reasons) <= {"excerpt_not_found", "duplicate"}
    assert meta["n_questions"] + reasons.get("duplicate", 0) == 7
    table = first.output_for_node("synthetic_questions")
    assert len(table) == 8  # no row lost: every proposed question is a row, accepted or rejected
    missing = table[table["reason"] == "excerpt_not_found"]
    assert "valves" in missing["query"].iloc[0] and "alpha/valves.md" in missing["detail"].iloc[0]
    rerun = metadata_of(again, "synthetic_questions")
    assert rerun["llm_calls"] == 0 and rerun["llm_cache_hits"] == 4 and rerun["llm_cost_usd"] == 0
    assert metadata_of(first, "eval_questions")["n_synthetic"] == meta["n_questions"]
    assert not refused.success
    failure = next(e for e in refused.all_events if e.is_step_failure)
    message = failure.step_failure_data.error.message  # type: ignore[union-attr]
    assert "exceeds the budget cap $0.0001 by $" in message and "sk-test-secret" not in message
    for event in first.all_events:  # the key never reaches logs or metadata
        assert "sk-test-secret" not in str(event)


def test_chunk_level_questions_are_made_per_chunk_config(tiny_project: Path, tmp_path: Path) -> None:
    write_generation(tiny_project, "chunk_level: {max_chunks: 5}\n")
    defs = build_definitions(tiny_resources(tiny_project, tmp_path))
    with instance_for_tests() as instance:
        instance.add_dynamic_partitions("chunk_config", ["recursive-120-20"])
        defs.resolve_job_def("ingestion_job").execute_in_process(instance=instance)
        result = defs.resolve_job_def("chunking_job").execute_in_process(
            instance=instance, partition_key="recursive-120-20"
        )
        chunks = result.output_for_node("chunks")
        table: pd.DataFrame = result.output_for_node("chunk_level_questions")
    meta = metadata_of(result, "chunk_level_questions")
    dataset = read_chunk_level_jsonl(meta["jsonl"])
    assert len(dataset) == meta["n_questions"] > 0
    assert dataset.chunker_fingerprint == chunks["chunker_fingerprint"].iloc[0]
    assert {c for e in dataset for c in e.relevant_chunk_ids} <= set(chunks["chunk_id"])
    assert all(3 <= len(e.metadata["keywords"]) <= 5 for e in dataset)
    assert set(table["chunk_config"]) == {"recursive-120-20"}


def test_the_probe_embeds_chunks_its_chunk_index_finds_cached_and_long_embeddings_are_announced(
    tiny_project: Path, tmp_path: Path
) -> None:
    """Issue 34: with the retrievability probe on, synthetic_questions embeds the chunks of the chunk
    config nearest the probe's size (recursive-120-20 here), so that config's chunk_index embeds nothing
    more; and, the announcement threshold set to 0 s, each step says what it embeds before it starts."""
    from rag_eval_pipeline.lib.resources import EmbedderResource

    write_generation(
        tiny_project,
        "evaluate_on: both\ntoken_level: {n_questions: 6, passage_min_chars: 40, retrievability_top_n: 3}\n",
    )
    resources = tiny_resources(tiny_project, tmp_path)
    resources["embedder"] = EmbedderResource(
        cache_path=str(tmp_path / "cache" / "embeddings.sqlite"), announce_after_s=0
    )
    defs = build_definitions(resources)
    with instance_for_tests() as instance:
        instance.add_dynamic_partitions("chunk_config", ["recursive-120-20"])
        ingestion = defs.resolve_job_def("ingestion_job").execute_in_process(instance=instance)
        chunking = defs.resolve_job_def("chunking_job").execute_in_process(
            instance=instance, partition_key="recursive-120-20"
        )
        announced = [
            (e.step_key, e.user_message)
            for run in (ingestion, chunking)
            for e in instance.all_logs(run.run_id)
            if e.level == logging.WARNING and e.user_message.startswith("embedding ")
        ]
    generated = metadata_of(ingestion, "synthetic_questions")
    assert generated["filters"].endswith(
        "retrievability (source in the top 3 of sentence-transformers/all-MiniLM-L6-v2) "
        + str(generated["removed_by_filter"]["retrievability"])
    )
    index = metadata_of(chunking, "chunk_index")
    assert index["texts_embedded"] == 0 and index["embedding_cache_hits"] == index["n_points"] > 0
    steps = [step for step, _ in announced]
    # before they started: the generator's words and sentences, then the questions and probe passages
    assert steps.count("synthetic_questions") == 2 and "chunk_index" not in steps  # nothing left there
    assert all(" texts (sentence-transformers/all-MiniLM-L6-v2): about " in m for _, m in announced)
