"""Paths built from user-chosen names stay one component under their parent."""

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rag_eval_pipeline.core.errors import ConfigError
from rag_eval_pipeline.core.settings.configs import NAME_PATTERN
from rag_eval_pipeline.core.store.paths import child_path, is_one_component


@pytest.mark.parametrize("name", [".", "..", "", "a/b", "../x", "a/../..", "/etc", "a\0b"])
def test_names_that_are_not_one_component_are_refused(tmp_path: Path, name: str):
    with pytest.raises(ConfigError, match="must be one path component"):
        child_path(tmp_path, name)


def test_a_child_that_is_a_link_out_of_the_parent_is_refused(tmp_path: Path):
    parent, outside = tmp_path / "bm25", tmp_path / "elsewhere"
    parent.mkdir()
    outside.mkdir()
    (parent / "cfg").symlink_to(outside)
    with pytest.raises(ConfigError, match="resolves to .*elsewhere, outside"):
        child_path(parent, "cfg")


def test_children_are_joined_as_given(tmp_path: Path):
    assert child_path(tmp_path, "tables", "chunk_config=a.b", "x.parquet") == (
        tmp_path / "tables" / "chunk_config=a.b" / "x.parquet"
    )
    (tmp_path / "real").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "real")  # a parent that is itself a link is fine
    assert child_path(tmp_path / "link", "cfg") == tmp_path / "link" / "cfg"


@given(st.text(max_size=70))
def test_every_valid_config_name_is_one_component(name: str):
    if NAME_PATTERN.fullmatch(name):
        assert is_one_component(name) and name not in (".", "..") and not name.startswith(".")
