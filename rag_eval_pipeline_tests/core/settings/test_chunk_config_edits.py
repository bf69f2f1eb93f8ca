"""`chunk-configs apply NAME --document`: a configured config's documents list gains documents, edited in
the file's own style so every comment, inside the entry too, is kept."""

from pathlib import Path

import pytest

from rag_eval_pipeline.core.errors import ConfigError
from rag_eval_pipeline.core.settings.chunk_config_edits import apply_to_documents
from rag_eval_pipeline.core.settings.configs import ChunkConfig, load_chunk_configs

CONFIGS = """\
chunk_configs:
  - name: api-only
    chunker: fixed
    chunk_size: 60   # characters
    documents:       # the API reference first
      - api/auth.md
      - api/users.md
    chunk_overlap: 0
  - {name: flow, chunker: fixed, chunk_size: 80, documents: [ops/a.md]}  # one document
  - name: everything
    chunker: fixed
    chunk_size: 100
"""


@pytest.fixture
def target(tmp_path: Path) -> Path:
    path = tmp_path / "chunk_configs.yaml"
    path.write_text(CONFIGS, encoding="utf-8")
    return path


def test_a_block_list_gains_lines_in_its_own_indentation(target: Path) -> None:
    applied = apply_to_documents(target, "api-only", ["api/admin.md", "api/users.md"])
    assert applied.affected == ("api/admin.md",) and not applied.normalized
    assert (
        "    documents:       # the API reference first\n      - api/admin.md\n      - api/auth.md\n"
        in applied.text
    )
    assert "# characters" in applied.text and "chunk_overlap: 0" in applied.text
    target.write_text(applied.text, encoding="utf-8")
    config = next(c for c in load_chunk_configs(target) if c.name == "api-only")
    assert config.documents == ("api/admin.md", "api/auth.md", "api/users.md")


def test_a_flow_list_stays_a_flow_list(target: Path) -> None:
    applied = apply_to_documents(target, "flow", ["ops/b.md"])
    assert "documents: [ops/a.md, ops/b.md]}  # one document" in applied.text
    assert (applied.before, applied.after, applied.affected) == (
        ("ops/a.md",),
        ("ops/a.md", "ops/b.md"),
        ("ops/b.md",),
    )


def test_a_config_over_every_document_is_left_alone_and_an_unknown_one_is_named(target: Path) -> None:
    applied = apply_to_documents(target, "everything", ["ops/b.md"])
    assert (applied.after, applied.affected, applied.modified, applied.text) == (None, (), False, CONFIGS)
    with pytest.raises(
        ConfigError, match="no chunk config named 'nope' in .*; configured: api-only, flow, everything"
    ):
        apply_to_documents(target, "nope", ["ops/b.md"])


def test_documents_take_part_in_the_config_hash_but_not_in_how_a_document_is_cut() -> None:
    whole = ChunkConfig("c", "fixed", 60)
    some = ChunkConfig("c", "fixed", 60, documents=("b.md", "a.md"))
    assert some.documents == ("a.md", "b.md")  # the order written does not matter
    assert whole.config_hash != some.config_hash
    assert whole.cutting_hash == some.cutting_hash == whole.config_hash  # older configs keep their hash
    with pytest.raises(ConfigError, match="documents is an empty list"):
        ChunkConfig("c", "fixed", 60, documents=())
    with pytest.raises(ConfigError, match="documents lists a.md more than once"):
        ChunkConfig("c", "fixed", 60, documents=("a.md", "a.md"))
