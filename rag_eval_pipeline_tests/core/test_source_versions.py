"""A chunk config's source version: what makes its partitions stale when it changes."""

from __future__ import annotations

from pathlib import Path

from rag_eval_pipeline.core.configs import ChunkConfig, PipelineConfigs, RetrievalProfile
from rag_eval_pipeline.core.project_files import ProjectFiles
from rag_eval_pipeline.core.source_versions import UNREADABLE, config_versions


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
