"""Source versions: what makes the partitions (or the leaderboard) that read a source stale when it
changes: a chunk config's tokenizer file, the leaderboard's objective."""

from __future__ import annotations

from pathlib import Path

from rag_eval_pipeline.core.project.project_files import ProjectFiles
from rag_eval_pipeline.core.project.source_versions import (
    UNREADABLE,
    config_versions,
    leaderboard_settings_version,
)
from rag_eval_pipeline.core.settings.configs import ChunkConfig, PipelineConfigs, RetrievalProfile


def _versions(root: Path, *configs: ChunkConfig) -> dict[str, str]:
    chunk_configs, _ = config_versions(
        PipelineConfigs(configs, (RetrievalProfile("dense"),)), ProjectFiles(root=root)
    )
    return chunk_configs


def test_a_tokenizer_file_edit_changes_its_chunk_configs_version_only(tmp_path: Path) -> None:
    (tmp_path / "vocab").mkdir()
    tokenizer = tmp_path / "vocab" / "tokenizer.json"
    tokenizer.write_text('{"version": "1.0"}', encoding="utf-8")
    own = ChunkConfig("own-200", "token", 200, tokenizer="vocab/tokenizer.json")
    named = ChunkConfig("cl100k-200", "token", 200, tokenizer="cl100k_base")
    before = _versions(tmp_path, own, named)

    tokenizer.write_text('{"version": "1.0", "edited": true}', encoding="utf-8")
    after = _versions(tmp_path, own, named)

    assert after["own-200"] != before["own-200"]
    assert after["cl100k-200"] == before["cl100k-200"] == named.config_hash[:16]
    tokenizer.unlink()
    assert _versions(tmp_path, own)["own-200"] == UNREADABLE  # the chunks step then fails naming it


def test_the_leaderboard_objective_has_a_version_that_only_its_own_settings_move(tmp_path: Path) -> None:
    files = ProjectFiles(root=tmp_path)
    monitoring = tmp_path / "data" / "monitoring.yaml"
    default = leaderboard_settings_version(files)  # no file: the default objective
    monitoring.parent.mkdir()
    monitoring.write_text(
        "leaderboard:\n  rank_by: span_recall  # the default, spelled out\n", encoding="utf-8"
    )
    assert leaderboard_settings_version(files) == default
    monitoring.write_text("nightly: {cron: '0 3 * * *'}\n", encoding="utf-8")  # another section
    assert leaderboard_settings_version(files) == default
    monitoring.write_text("leaderboard: {rank_by: span_iou}\n", encoding="utf-8")
    edited = leaderboard_settings_version(files)
    assert edited not in (default, UNREADABLE)
    monitoring.write_text("leaderboard: {rank_by: nonsense}\n", encoding="utf-8")
    assert leaderboard_settings_version(files) == UNREADABLE  # the leaderboard step fails naming the key

    # the prices of the cost columns are the leaderboard's too (data/generation.yaml, llm.prices); the
    # rest of that file is not
    monitoring.write_text("leaderboard: {rank_by: span_iou}\n", encoding="utf-8")
    generation = tmp_path / "data" / "generation.yaml"
    generation.write_text("llm: {temperature: 0.0}\n", encoding="utf-8")
    assert leaderboard_settings_version(files) == edited
    generation.write_text("llm: {prices: {gpt-4o-mini: {input: 0.3, output: 1.2}}}\n", encoding="utf-8")
    assert leaderboard_settings_version(files) not in (edited, UNREADABLE)
