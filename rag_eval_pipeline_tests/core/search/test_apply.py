"""`rag-eval search --apply`: the winning tier joins the config files in place, comments kept, within the
file's cap on chunk configs; what is configured already is left alone."""

from __future__ import annotations

from pathlib import Path

from rag_eval_pipeline.core.search.apply import apply_winners
from rag_eval_pipeline.core.search.candidates import candidates
from rag_eval_pipeline.core.search.settings import ChunkingChoices, RetrievalChoices, SearchSettings
from rag_eval_pipeline.core.settings.configs import load_chunk_configs, load_profiles

CHUNK_CONFIGS = """\
# our chunk configs
max_chunk_configs: 3
chunk_configs:
  - name: fixed-200-0   # the first one
    chunker: fixed
    chunk_size: 200
  - name: recursive-200-0-cl100k
    chunker: recursive
    chunk_size: 200
    length: tokens
    tokenizer: cl100k_base
"""
PROFILES = """\
profiles:
  - name: dense-top5   # the default
    top_k: 5
"""


def test_winners_join_the_files_best_first_within_the_cap(tmp_path: Path) -> None:
    chunk_file, profile_file = tmp_path / "chunk_configs.yaml", tmp_path / "retrieval_profiles.yaml"
    chunk_file.write_text(CHUNK_CONFIGS, encoding="utf-8")
    profile_file.write_text(PROFILES, encoding="utf-8")
    space = SearchSettings(
        chunking=ChunkingChoices(chunker=("recursive",), chunk_size=(200, 400, 800), overlap=(0.0,)),
        retrieval=RetrievalChoices(top_k=(5,), keyword_weight=(0.0, 0.5)),
    )
    by_key = {c.key: c for c in candidates(space)}
    winners = [
        by_key["recursive-400-0-cl100k--k5-kw0.5-rrf60"],  # a new config: the one place left under the cap
        by_key["recursive-200-0-cl100k--k5-kw0"],  # its config is there already
        by_key["recursive-800-0-cl100k--k5-kw0"],  # no room left
    ]
    applied = apply_winners(winners, chunk_file, profile_file)
    assert applied.chunk_configs_added == ("recursive-400-0-cl100k",)
    assert applied.profiles_added == ("k5-kw0.5-rrf60", "k5-kw0")
    assert applied.already_configured == ("recursive-200-0-cl100k",)
    assert applied.left_out == ("recursive-800-0-cl100k--k5-kw0",)
    text = chunk_file.read_text(encoding="utf-8")
    assert "# our chunk configs" in text and "# the first one" in text  # edited in place
    configs = {c.name: c for c in load_chunk_configs(chunk_file)}
    assert configs["recursive-400-0-cl100k"] == winners[0].chunk_config
    assert "# the default" in profile_file.read_text(encoding="utf-8")
    profiles = {p.name: p for p in load_profiles(profile_file)}
    for winner in winners[:2]:
        got, want = profiles[winner.profile.name], winner.profile
        assert (got.top_k, got.vector_weight, got.keyword_weight, got.rrf_k) == (
            want.top_k,
            want.vector_weight,
            want.keyword_weight,
            want.rrf_k,
        )
        assert got.config_hash == want.config_hash  # the same settings: the leaderboard measures the winner

    again = apply_winners(winners[:2], chunk_file, profile_file)
    assert (again.chunk_configs_added, again.profiles_added) == ((), ())  # nothing twice
    assert "max_chunk_configs of" in applied.describe(
        "data/chunk_configs.yaml", "data/retrieval_profiles.yaml"
    )
