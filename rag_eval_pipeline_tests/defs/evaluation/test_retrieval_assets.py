"""Retrieval profiles through Dagster: hybrid and keyword partitions, versions, reranking, rewriting."""

from __future__ import annotations

from pathlib import Path

import dagster as dg
import pandas as pd
import pytest

from rag_eval_pipeline.core.embedding.base import Embedder
from rag_eval_pipeline.core.store.warehouse import Warehouse
from rag_eval_pipeline.lib.resources import EmbedderResource, LLMResource
from rag_eval_pipeline_tests.conftest import TINY_QUESTIONS, latest_metadata, tiny_resources
from rag_eval_pipeline_tests.cross_encoder import build_minilm_cross_encoder
from rag_eval_pipeline_tests.evaluations import evaluate_board
from rag_eval_pipeline_tests.fakes import CountingEmbedder
from rag_eval_pipeline_tests.instances import instance_for_tests
from rag_eval_pipeline_tests.openai_server import openai_server

pytestmark = pytest.mark.slow

# Every embed call any run sent to the embedding model (not to its cache), across Dagster runs.
EMBED_CALLS: list[list[str]] = []


def embedded() -> list[str]:
    """The texts of every call in ``EMBED_CALLS``, in order."""
    return [text for call in EMBED_CALLS for text in call]


class CountingEmbedderResource(EmbedderResource):
    def model(self) -> Embedder:
        return CountingEmbedder(super().model(), calls=EMBED_CALLS)


def add_profiles(project: Path, text: str) -> None:
    path = project / "data/retrieval_profiles.yaml"
    path.write_text(path.read_text(encoding="utf-8") + text, encoding="utf-8")


def results(warehouse: Path, chunk_config: str, profile: str) -> pd.DataFrame:
    return pd.read_parquet(
        Warehouse(warehouse).current_path(
            "retrieval_results", {"chunk_config": chunk_config, "profile": profile}
        )
    )


def key(chunk_config: str, profile: str) -> dg.MultiPartitionKey:
    return dg.MultiPartitionKey({"chunk_config": chunk_config, "profile": profile})


HYBRID = """\
  - name: hybrid
    top_k: 3
    vector_weight: 0.6
    keyword_weight: 0.4
    rrf_k: 60
  - name: keyword
    top_k: 3
    vector_weight: 0
    keyword_weight: 1
"""


def test_new_profiles_embed_nothing_and_every_row_says_who_found_it(tiny_project: Path, tmp_path: Path):
    resources = {
        **tiny_resources(tiny_project, tmp_path),
        "embedder": CountingEmbedderResource(cache_path=str(tmp_path / "cache/embeddings.sqlite")),
    }
    warehouse = tmp_path / "warehouse"
    EMBED_CALLS.clear()
    with instance_for_tests() as instance:
        _, failures = evaluate_board(
            instance,
            chunk_configs=["fixed-60-0"],
            profiles=["top2"],
            resources=resources,
            show_progress=False,
        )
        assert failures == [] and len(embedded()) > 4  # the chunks and the four questions
        assert latest_metadata(instance, "chunk_index", "fixed-60-0")["keyword_index_rebuilt"] is True

        EMBED_CALLS.clear()
        add_profiles(tiny_project, HYBRID)
        board, failures = evaluate_board(
            instance, chunk_configs=["fixed-60-0"], resources=resources, show_progress=False
        )
        assert failures == [] and board is not None
        # a new profile embeds no chunk and no question again (only sentences its answers quote that
        # no earlier answer did: the extractive answerer embeds those once, through the same cache)
        chunks = Warehouse(warehouse).current_path("chunks", {"chunk_config": "fixed-60-0"})
        chunk_texts = set(pd.read_parquet(chunks)["text"])
        questions = {q for _, q, _ in TINY_QUESTIONS}
        assert not set(embedded()) & (chunk_texts | questions)
        assert len(embedded()) == len(set(embedded()))
        # and its chunk config is up to date: chunk_index does not run again (runner/up_to_date.py)
        assert len(instance.fetch_materializations(dg.AssetKey("chunk_index"), limit=5).records) == 1
        hybrid_meta = latest_metadata(instance, "retrieval_results", key("fixed-60-0", "hybrid"))
        assert hybrid_meta["query_texts_embedded"] == 0 and hybrid_meta["query_embedding_cache_hits"] == 4
        assert hybrid_meta["retrievers"] == "knn+bm25" and hybrid_meta["found_by_both"] > 0
        assert {"seconds_knn", "seconds_bm25", "seconds_fusion", "queries_per_s_fusion"} <= set(hybrid_meta)

        hybrid = results(warehouse, "fixed-60-0", "hybrid")
        assert set(hybrid["found_by"]) <= {"knn", "bm25", "both"} and "both" in set(hybrid["found_by"])
        for _, row in hybrid.iterrows():
            assert (row["found_by"] in ("knn", "both")) == (not pd.isna(row["knn_rank"]))
            assert (row["found_by"] in ("bm25", "both")) == (not pd.isna(row["bm25_rank"]))
            expected = sum(
                w / (60 + row[f"{side}_rank"])
                for side, w in (("knn", 0.6), ("bm25", 0.4))
                if not pd.isna(row[f"{side}_rank"])
            )
            assert row["score"] == pytest.approx(expected) == row["fused_score"]
        assert (hybrid["profile_version"] == 1).all() and (hybrid["retrievers"] == "knn+bm25").all()
        keyword = results(warehouse, "fixed-60-0", "keyword")
        assert (keyword["found_by"] == "bm25").all() and keyword["knn_rank"].isna().all()
        assert (keyword["score"] == keyword["bm25_score"]).all()

        by_profile = board.set_index("profile")
        assert by_profile.loc["hybrid", "retrievers"] == "knn+bm25"
        assert by_profile.loc["keyword", "retrievers"] == "bm25"
        assert by_profile.loc["top2", "retrievers"] == "knn"

        # editing a profile numbers a new version; results carry the version and the new hash
        first_hash = hybrid["profile_hash"].iloc[0]
        profiles = tiny_project / "data/retrieval_profiles.yaml"
        profiles.write_text(
            profiles.read_text(encoding="utf-8").replace("keyword_weight: 0.4", "keyword_weight: 0.5"),
            encoding="utf-8",
        )
        _, failures = evaluate_board(
            instance,
            chunk_configs=["fixed-60-0"],
            profiles=["hybrid"],
            resources=resources,
            show_progress=False,
        )
        assert failures == []
        edited = results(warehouse, "fixed-60-0", "hybrid")
        assert (edited["profile_version"] == 2).all() and edited["profile_hash"].iloc[0] != first_hash
        metrics = pd.read_parquet(
            Warehouse(warehouse).current_path(
                "retrieval_metrics", {"chunk_config": "fixed-60-0", "profile": "hybrid"}
            )
        )
        assert (metrics["profile_version"].astype(str) == "2").all()

        # a changed chunk config rebuilds its keyword index
        configs = tiny_project / "data/chunk_configs.yaml"
        configs.write_text(
            configs.read_text(encoding="utf-8").replace("chunk_size: 60", "chunk_size: 70"), encoding="utf-8"
        )
        _, failures = evaluate_board(
            instance,
            chunk_configs=["fixed-60-0"],
            profiles=["keyword"],
            resources=resources,
            show_progress=False,
        )
        assert failures == []
        assert latest_metadata(instance, "chunk_index", "fixed-60-0")["keyword_index_rebuilt"] is True


def test_a_cross_encoder_from_a_local_folder_reranks_the_candidates(tiny_project: Path, tmp_path: Path):
    model_path = build_minilm_cross_encoder(tmp_path / "cross-encoder")
    add_profiles(
        tiny_project,
        f"  - name: reranked\n    top_k: 2\n    reranker: {model_path}\n    rerank_depth: 4\n",
    )
    resources = tiny_resources(tiny_project, tmp_path)
    with instance_for_tests() as instance:
        _, failures = evaluate_board(
            instance,
            chunk_configs=["fixed-60-0"],
            profiles=["top4", "reranked"],
            resources=resources,
            show_progress=False,
        )
    assert failures == []
    reranked = results(tmp_path / "warehouse", "fixed-60-0", "reranked")
    candidates = results(tmp_path / "warehouse", "fixed-60-0", "top4")  # the dense top 4 = the pool
    assert reranked["reranker"].str.startswith("cross-encoder:").all()
    from sentence_transformers import CrossEncoder  # torch: only where the test needs it

    model = CrossEncoder(str(model_path))
    for qid, rows in reranked.groupby("question_id"):
        pool = candidates[candidates["question_id"] == qid]
        question = rows["query"].iloc[0]
        predicted = model.predict([(question, text) for text in pool["text"]])
        expected = [cid for _, cid in sorted(zip(-predicted, pool["chunk_id"], strict=True))][:2]
        assert list(rows.sort_values("rank")["chunk_id"]) == expected
        assert rows["rerank_score"].notna().all() and (rows["score"] == rows["rerank_score"]).all()
        assert rows["knn_rank"].notna().all()


def test_rewritten_queries_are_searched_and_cached_across_partitions(tiny_project: Path, tmp_path: Path):
    add_profiles(
        tiny_project,
        "  - name: rewritten\n    top_k: 2\n    vector_weight: 0\n    keyword_weight: 1\n"
        "    query_rewrite_enabled: true\n",
    )
    # the LLM rewrites queries only: answers and judgements stay offline (they have tests of their own)
    (tiny_project / "data/answer_evaluation.yaml").write_text(
        "answerer: extractive\nllm_judging: off\n", encoding="utf-8"
    )
    with openai_server() as (url, script):
        script.responder = lambda body: "search: " + body["messages"][-1]["content"].rstrip("?") + " lead"
        resources = {
            **tiny_resources(tiny_project, tmp_path),
            "llm": LLMResource(
                provider="openai",
                openai_api_key="sk-rewrite-secret",
                openai_base_url=url,
                cache_path=str(tmp_path / "cache/llm_responses.sqlite"),
            ),
        }
        with instance_for_tests() as instance:
            _, failures = evaluate_board(
                instance, profiles=["rewritten"], resources=resources, show_progress=False
            )
            assert failures == []
            first = latest_metadata(instance, "retrieval_results", key("fixed-60-0", "rewritten"))
            second = latest_metadata(instance, "retrieval_results", key("recursive-120-20", "rewritten"))
            logs = [str(e) for run in instance.get_runs() for e in instance.all_logs(run.run_id)]
    assert first["rewrite_rewritten"] == 4 and first["rewrite_failed"] == 0
    # the other chunk config asks the same questions: all four come from the response cache
    assert sorted([first["llm_calls"], second["llm_calls"]]) == [0, 4]
    assert sorted([first["llm_cache_hits"], second["llm_cache_hits"]]) == [0, 4]
    rows = results(tmp_path / "warehouse", "fixed-60-0", "rewritten")
    assert rows["query"].str.startswith("search: ").all() and rows["query"].str.endswith(" lead").all()
    assert (rows["rewrite_status"] == "rewritten").all()
    assert rows["rewriter"].str.startswith("openai:gpt-4o-mini").all()
    assert not any("sk-rewrite-secret" in line for line in logs)
    assert "sk-rewrite-secret" not in rows.to_csv()
